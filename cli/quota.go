package cli

// skein quota describe|alter, on kadm: client quotas (DescribeClientQuotas,
// AlterClientQuotas), as kafka-configs --entity-type users|clients|ips
// manages them.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newQuotaCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("quota", "Describe and alter client quotas", environ, stdout, newQuotaDescribeCommand, newQuotaAlterCommand)
}

// parseQuotaEntity reads an entity as kafka-configs and this command
// print it: type=name parts, comma-separated, of user, client-id and ip;
// a name of <default> (or default) is the default entity of its type.
func parseQuotaEntity(s string) (kadm.ClientQuotaEntity, error) {
	var out kadm.ClientQuotaEntity
	for part := range strings.SplitSeq(s, ",") {
		typ, name, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || !slices.Contains([]string{"user", "client-id", "ip"}, typ) {
			return nil, usageError(fmt.Sprintf("entity %q: want user=NAME, client-id=NAME, ip=ADDRESS or both of the first two, comma-separated (NAME <default> for the default)", s))
		}
		c := kadm.ClientQuotaEntityComponent{Type: typ}
		if name != "<default>" && name != "default" {
			c.Name = &name
		}
		out = append(out, c)
	}
	return out, nil
}

// entityString writes an entity as parseQuotaEntity reads it.
func entityString(e kadm.ClientQuotaEntity) string {
	parts := make([]string, len(e))
	for i, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ",")
}

// quotaView is an entity's quotas as -o json and yaml print them.
type quotaView struct {
	// Entity is written as the commands' argument: user=alice,client-id=app.
	Entity     string             `json:"entity"`
	Components []quotaComponent   `json:"components"`
	Quotas     map[string]float64 `json:"quotas"`
}

// quotaComponent is one part of an entity: a user, client id or IP, or
// (Default) the default one.
type quotaComponent struct {
	Type    string `json:"type"`
	Name    string `json:"name,omitempty"`
	Default bool   `json:"default,omitempty"`
}

func newQuotaDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		strict bool
		out    *output
	)
	cmd := &cobra.Command{
		Use:     "describe [ENTITY] [--strict]",
		Aliases: []string{"list"},
		Short:   "Show client quotas (DescribeClientQuotas)",
		Long: "Show the quotas of the entities ENTITY selects, every entity without it:\n" +
			"user=alice selects alice's, alone or with a client id (only alone with\n" +
			"--strict); user=<default> the default user's.",
		Example: "  skein quota describe\n  skein quota describe user=alice --strict",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var entity kadm.ClientQuotaEntity
			if len(args) == 1 {
				var err error
				if entity, err = parseQuotaEntity(args[0]); err != nil {
					return err
				}
			}
			var comps []kadm.DescribeClientQuotaComponent
			for _, p := range entity {
				c := kadm.DescribeClientQuotaComponent{Type: p.Type, MatchName: p.Name}
				if p.Name == nil {
					c.MatchType = 1 // the default
				}
				comps = append(comps, c)
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeClientQuotas(ctx, strict, comps)
				if err != nil {
					return err
				}
				described = slices.Clone(described)
				slices.SortStableFunc(described, func(a, b kadm.DescribedClientQuota) int {
					return strings.Compare(entityString(a.Entity), entityString(b.Entity))
				})
				views := []quotaView{}
				for _, d := range described {
					v := quotaView{Entity: entityString(d.Entity), Components: []quotaComponent{}, Quotas: map[string]float64{}}
					for _, c := range d.Entity {
						qc := quotaComponent{Type: c.Type, Default: c.Name == nil}
						if c.Name != nil {
							qc.Name = *c.Name
						}
						v.Components = append(v.Components, qc)
					}
					for _, q := range d.Values {
						v.Quotas[q.Key] = q.Value
					}
					views = append(views, v)
				}
				return out.write(stdout, views, func() error {
					rows := [][]string{{"ENTITY", "QUOTA", "VALUE"}}
					for _, d := range described {
						values := slices.Clone(d.Values)
						slices.SortFunc(values, func(a, b kadm.ClientQuotaValue) int { return strings.Compare(a.Key, b.Key) })
						for _, v := range values {
							rows = append(rows, []string{entityString(d.Entity), v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64)})
						}
					}
					return printTable(stdout, rows)
				})
			})
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "only entities with exactly the parts given")
	out = addOutputFlag(cmd)
	return cmd
}

func newQuotaAlterCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var sets, deletes []string
	cmd := &cobra.Command{
		Use:   "alter ENTITY (--set key=value | --delete key)...",
		Short: "Set and remove client quotas (AlterClientQuotas)",
		Long: "Set and remove one entity's quotas: producer_byte_rate, consumer_byte_rate,\n" +
			"request_percentage and controller_mutation_rate for a user, a client id or\n" +
			"both (user=alice,client-id=app); connection_creation_rate for an IP\n" +
			"address (ip=10.0.0.5). The name <default> is the default entity of a type,\n" +
			"which applies to those without their own.",
		Example: "  skein quota alter client-id=app --set producer_byte_rate=1048576\n" +
			"  skein quota alter user=<default> --set consumer_byte_rate=10485760",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			entity, err := parseQuotaEntity(args[0])
			if err != nil {
				return err
			}
			var ops []kadm.AlterClientQuotaOp
			for _, s := range sets {
				key, val, ok := strings.Cut(s, "=")
				v, err := strconv.ParseFloat(val, 64)
				if !ok || key == "" || err != nil {
					return usageError(fmt.Sprintf("--set %q: want key=number", s))
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: key, Value: v})
			}
			for _, key := range deletes {
				ops = append(ops, kadm.AlterClientQuotaOp{Key: key, Remove: true})
			}
			if len(ops) == 0 {
				return usageError("nothing to change: give --set key=value or --delete key")
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
				if err != nil {
					return err
				}
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("alter the quotas of %s: %w", entityString(r.Entity), kafkaError(r.Err, r.ErrMessage))
					}
				}
				fmt.Fprintf(stdout, "altered the quotas of %s\n", entityString(entity))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "set a quota, key=value (repeatable)")
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "remove a quota (repeatable)")
	return cmd
}
