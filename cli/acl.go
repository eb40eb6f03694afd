package cli

// skein acl create|list|delete, on kadm: Kafka's ACLs (CreateAcls,
// DescribeAcls, DeleteAcls), as kafka-acls manages them. A broker answers
// them only with an authorizer on (authorizer.class.name); without one,
// SECURITY_DISABLED.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newACLCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("acl", "Create, list and delete ACLs (the brokers must have an authorizer)", environ, stdout,
		newACLCreateCommand, newACLListCommand, newACLDeleteCommand)
}

// aclResources are the resource flags every acl command shares: the
// resources an ACL names (create) or a filter selects (list, delete).
type aclResources struct {
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
}

// register adds the resource flags; verb says what the command does with
// them. Names are repeated rather than comma-separated (StringArray): a
// group or transactional id may contain a comma.
func (r *aclResources) register(fs *pflag.FlagSet, verb, patternDefault, patternHelp string) {
	fs.StringArrayVar(&r.topics, "topic", nil, verb+" the ACLs of this topic (repeatable)")
	fs.StringArrayVar(&r.groups, "group", nil, verb+" the ACLs of this group (repeatable)")
	fs.BoolVar(&r.cluster, "cluster", false, verb+" the ACLs of the cluster (kafka-cluster)")
	fs.StringArrayVar(&r.txnIDs, "transactional-id", nil, verb+" the ACLs of this transactional id (repeatable)")
	fs.StringVar(&r.pattern, "resource-pattern-type", patternDefault, patternHelp)
}

// named reports whether a resource flag was given.
func (r *aclResources) named() bool {
	return len(r.topics)+len(r.groups)+len(r.txnIDs) > 0 || r.cluster
}

// check refuses an empty name, which Kafka would take for a resource
// named "" rather than for the mistake it is.
func (r *aclResources) check() error {
	for _, f := range []struct {
		flag  string
		names []string
	}{{"--topic", r.topics}, {"--group", r.groups}, {"--transactional-id", r.txnIDs}} {
		if slices.Contains(f.names, "") {
			return usageError(f.flag + ": empty name")
		}
	}
	return nil
}

// apply sets the named resources on b. The Maybe forms never widen to
// "every topic" when a flag is absent.
func (r *aclResources) apply(b *kadm.ACLBuilder) {
	b.MaybeTopics(r.topics...).MaybeGroups(r.groups...).MaybeClusters(r.cluster).MaybeTransactionalIDs(r.txnIDs...)
}

// parsePattern parses --resource-pattern-type, in any case, as one of
// allowed.
func parsePattern(s string, allowed ...kadm.ACLPattern) (kadm.ACLPattern, error) {
	p, err := kmsg.ParseACLResourcePatternType(s)
	if err != nil || !slices.Contains(allowed, p) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = strings.ToLower(a.String())
		}
		return 0, usageError(fmt.Sprintf("--resource-pattern-type %q: want %s", s, strings.Join(names, ", ")))
	}
	return p, nil
}

// parseOperations parses --operation values: Kafka's names in any case,
// Read or READ, ClusterAction or CLUSTER_ACTION. Any is a filter's
// wildcard, refused unless filter is set.
func parseOperations(values []string, filter bool) ([]kadm.ACLOperation, error) {
	var ops []kadm.ACLOperation
	for _, v := range values {
		op, err := kmsg.ParseACLOperation(v)
		if err != nil || op == kadm.OpAny && !filter {
			want := "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All"
			if filter {
				want += " (or Any)"
			}
			return nil, usageError(fmt.Sprintf("--operation %q: want %s", v, want))
		}
		if !slices.Contains(ops, op) {
			ops = append(ops, op)
		}
	}
	return ops, nil
}

// checkPrincipals refuses a principal that is not Kafka's TYPE:NAME
// (User:alice, User:*), which a broker would refuse one ACL at a time.
func checkPrincipals(flag string, principals []string) error {
	for _, p := range principals {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return usageError(fmt.Sprintf("%s %q: want TYPE:NAME, as User:alice or User:*", flag, p))
		}
	}
	return nil
}

// aclEntry is one ACL as the commands print it, whichever response it
// came from.
type aclEntry struct {
	Type       kmsg.ACLResourceType
	Name       string
	Pattern    kadm.ACLPattern
	Principal  string
	Host       string
	Operation  kadm.ACLOperation
	Permission kmsg.ACLPermissionType
}

var aclHeader = []string{"RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"}

func (e aclEntry) row() []string {
	return []string{e.Type.String(), e.Name, e.Pattern.String(), e.Principal, e.Host, e.Operation.String(), e.Permission.String()}
}

// aclView is an ACL as -o json and yaml print it.
type aclView struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func (e aclEntry) view() aclView {
	r := e.row()
	return aclView{r[0], r[1], r[2], r[3], r[4], r[5], r[6]}
}

// String is the ACL as a line: ALLOW User:alice READ on TOPIC orders
// (LITERAL) from host *.
func (e aclEntry) String() string {
	return fmt.Sprintf("%s %s %s on %s %s (%s) from host %s", e.Permission, e.Principal, e.Operation, e.Type, e.Name, e.Pattern, e.Host)
}

func newACLCreateCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		res                   aclResources
		allow, deny           []string
		allowHosts, denyHosts []string
		operations            []string
	)
	cmd := &cobra.Command{
		Use:   "create (--allow-principal P | --deny-principal P)... --operation OP... (--topic T | --group G | --cluster | --transactional-id ID)...",
		Short: "Create ACLs (CreateAcls)",
		Long: "Create an ACL for every combination of the principals, hosts, operations and\n" +
			"resources given, as kafka-acls --add does. Principals are TYPE:NAME (User:alice,\n" +
			"User:* for everyone); --allow-host and --deny-host default to * (every host).\n" +
			"Operations are Kafka's, in any case: Read, Write, Create, Delete, Alter,\n" +
			"Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite,\n" +
			"CreateTokens, DescribeTokens, All. --resource-pattern-type prefixed makes each\n" +
			"name a prefix (--topic orders- covers orders-eu, orders-us). It prints each ACL\n" +
			"created; if the broker refuses any, it says which and why, and exits 1.",
		Example: "  skein acl create --allow-principal User:alice --operation Read --operation Describe --topic orders --group billing\n" +
			"  skein acl create --deny-principal User:bob --deny-host 10.0.0.7 --operation All --topic orders- --resource-pattern-type prefixed",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := aclsToCreate(res, allow, deny, allowHosts, denyHosts, operations)
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				created, err := adm.CreateACLs(ctx, b)
				if err != nil {
					return err
				}
				var errs []error
				for _, c := range created {
					e := aclEntry{c.Type, c.Name, c.Pattern, c.Principal, c.Host, c.Operation, c.Permission}
					if c.Err != nil {
						errs = append(errs, fmt.Errorf("create ACL %s: %w", e, kafkaError(c.Err, c.ErrMessage)))
						continue
					}
					fmt.Fprintf(stdout, "created %s\n", e)
				}
				return errors.Join(errs...)
			})
		},
	}
	fs := cmd.Flags()
	res.register(fs, "create", "literal", "literal (the exact names) or prefixed (names as prefixes)")
	fs.StringArrayVar(&allow, "allow-principal", nil, "principal to allow, TYPE:NAME (repeatable)")
	fs.StringArrayVar(&deny, "deny-principal", nil, "principal to deny, TYPE:NAME (repeatable)")
	fs.StringArrayVar(&allowHosts, "allow-host", nil, "host the allowed principals may connect from (repeatable; default *)")
	fs.StringArrayVar(&denyHosts, "deny-host", nil, "host the denied principals are denied from (repeatable; default *)")
	fs.StringSliceVar(&operations, "operation", nil, "operation to allow or deny (comma-separated or repeated)")
	return cmd
}

// aclsToCreate checks create's flags and builds the ACLs. Every check
// kadm's ValidateCreate makes is made here first, so that a mistake is a
// usage error naming the flag.
func aclsToCreate(res aclResources, allow, deny, allowHosts, denyHosts, operations []string) (*kadm.ACLBuilder, error) {
	switch {
	case len(allow)+len(deny) == 0:
		return nil, usageError("name a principal: --allow-principal or --deny-principal")
	case len(operations) == 0:
		return nil, usageError("name an operation: --operation Read, Write, ...")
	case !res.named():
		return nil, usageError("name a resource: --topic, --group, --cluster or --transactional-id")
	case len(allowHosts) > 0 && len(allow) == 0:
		return nil, usageError("--allow-host needs --allow-principal")
	case len(denyHosts) > 0 && len(deny) == 0:
		return nil, usageError("--deny-host needs --deny-principal")
	}
	if err := res.check(); err != nil {
		return nil, err
	}
	if err := checkPrincipals("--allow-principal", allow); err != nil {
		return nil, err
	}
	if err := checkPrincipals("--deny-principal", deny); err != nil {
		return nil, err
	}
	ops, err := parseOperations(operations, false)
	if err != nil {
		return nil, err
	}
	pattern, err := parsePattern(res.pattern, kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed)
	if err != nil {
		return nil, err
	}
	b := kadm.NewACLs().
		MaybeAllow(allow...).MaybeAllowHosts(allowHosts...).
		MaybeDeny(deny...).MaybeDenyHosts(denyHosts...).
		Operations(ops...).ResourcePatternType(pattern)
	res.apply(b)
	return b, nil
}

// aclFilter is the filter flags list and delete share.
type aclFilter struct {
	res        aclResources
	principals []string
	operations []string
}

// filterPatternHelp documents --resource-pattern-type of list and delete.
const filterPatternHelp = "any (literal or prefixed ACLs of exactly the names given), match (every ACL that applies to the names), literal or prefixed"

func (f *aclFilter) register(fs *pflag.FlagSet, verb string) {
	f.res.register(fs, verb, "any", filterPatternHelp)
	fs.StringArrayVar(&f.principals, "principal", nil, verb+" the ACLs of this principal, TYPE:NAME, allowed or denied (repeatable)")
	fs.StringSliceVar(&f.operations, "operation", nil, verb+" the ACLs of this operation (comma-separated or repeated; default any)")
}

// builder returns the filter as kadm's builder: a flag not given matches
// anything. Without principals it asks for any principal, host and
// permission, which kadm sends as one filter rather than one for allow
// and one for deny.
func (f *aclFilter) builder() (*kadm.ACLBuilder, error) {
	if err := f.res.check(); err != nil {
		return nil, err
	}
	if err := checkPrincipals("--principal", f.principals); err != nil {
		return nil, err
	}
	ops, err := parseOperations(f.operations, true)
	if err != nil {
		return nil, err
	}
	pattern, err := parsePattern(f.res.pattern, kadm.ACLPatternAny, kadm.ACLPatternMatch, kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed)
	if err != nil {
		return nil, err
	}
	// NB: Allow and Deny with no principals, and the Hosts calls with no
	// hosts, mean any; with principals, any host of theirs.
	b := kadm.NewACLs().
		Allow(f.principals...).AllowHosts().
		Deny(f.principals...).DenyHosts().
		Operations(ops...).ResourcePatternType(pattern)
	if f.res.named() {
		f.res.apply(b)
	} else {
		b.AnyResource()
	}
	return b, nil
}

// uniqueErrors joins errs, each message once: a refusal such as
// SECURITY_DISABLED comes back for every filter kadm sent.
func uniqueErrors(errs []error) error {
	var seen []string
	var out []error
	for _, err := range errs {
		if !slices.Contains(seen, err.Error()) {
			seen = append(seen, err.Error())
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// sortedUnique sorts entries by their printed row and drops duplicates:
// the filters kadm sends may overlap (a MATCH on two names, one prefix
// covering both), and the broker lists an ACL under each filter that
// selects it.
func sortedUnique(entries []aclEntry) []aclEntry {
	slices.SortFunc(entries, func(a, b aclEntry) int { return slices.Compare(a.row(), b.row()) })
	return slices.Compact(entries)
}

func newACLListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		f   aclFilter
		out *output
	)
	cmd := &cobra.Command{
		Use:     "list [--principal P] [--topic T] [--group G] [--cluster] [--transactional-id ID] [--operation OP]",
		Aliases: []string{"ls"},
		Short:   "List ACLs (DescribeAcls)",
		Long: "List the ACLs the flags select, every ACL without flags: those of any of the\n" +
			"resources named (or of every resource), of any of the principals (or of\n" +
			"every principal), and of any of the operations (or of every operation).\n" +
			"--resource-pattern-type any, the default, selects the literal and prefixed ACLs\n" +
			"of exactly the names given; match, every ACL that applies to them (a prefix\n" +
			"of the name, or *).",
		Example: "  skein acl list --principal User:alice\n  skein acl list --topic orders --resource-pattern-type match",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.builder()
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeACLs(ctx, b)
				if err != nil {
					return err
				}
				var (
					entries []aclEntry
					errs    []error
				)
				for _, r := range described {
					if r.Err != nil {
						errs = append(errs, fmt.Errorf("list ACLs: %w", kafkaError(r.Err, r.ErrMessage)))
						continue
					}
					for _, d := range r.Described {
						entries = append(entries, aclEntry{d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission})
					}
				}
				// NB: a part of the list would read as the whole of it.
				if len(errs) > 0 {
					return uniqueErrors(errs)
				}
				entries = sortedUnique(entries)
				views := []aclView{}
				for _, e := range entries {
					views = append(views, e.view())
				}
				return out.write(stdout, views, func() error {
					rows := [][]string{aclHeader}
					for _, e := range entries {
						rows = append(rows, e.row())
					}
					return printTable(stdout, rows)
				})
			})
		},
	}
	f.register(cmd.Flags(), "list")
	out = addOutputFlag(cmd)
	return cmd
}

func newACLDeleteCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		f   aclFilter
		all bool
	)
	cmd := &cobra.Command{
		Use:     "delete (--principal P | --topic T | --group G | --cluster | --transactional-id ID | --all)... [--operation OP]",
		Aliases: []string{"rm"},
		Short:   "Delete ACLs (DeleteAcls)",
		Long: "Delete the ACLs the flags select, as `skein acl list` with the same flags\n" +
			"selects them, and print each one deleted. So that a bare `skein acl delete`\n" +
			"cannot delete every ACL, it needs --principal or a resource flag; --all lifts\n" +
			"that: every ACL the other flags select (--operation, --resource-pattern-type),\n" +
			"and alone every ACL. Run `skein acl list` with the same flags first to see what\n" +
			"would go.",
		Example: "  skein acl delete --principal User:alice --topic orders --operation Write\n  skein acl delete --principal User:bob",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !all && len(f.principals) == 0 && !f.res.named() {
				return usageError("name what to delete: --principal, --topic, --group, --cluster or --transactional-id (or --all for every ACL the other flags select)")
			}
			b, err := f.builder()
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				return deleteACLs(ctx, adm, b, stdout)
			})
		},
	}
	f.register(cmd.Flags(), "delete")
	cmd.Flags().BoolVar(&all, "all", false, "allow deleting without --principal or a resource flag")
	return cmd
}

// deleteACLs deletes what b selects and prints each ACL deleted, once,
// or that none matched.
func deleteACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder, w io.Writer) error {
	results, err := adm.DeleteACLs(ctx, b)
	if err != nil {
		return err
	}
	var (
		deleted []aclEntry
		errs    []error
	)
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("delete ACLs: %w", kafkaError(r.Err, r.ErrMessage)))
			continue
		}
		for _, d := range r.Deleted {
			e := aclEntry{d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission}
			if d.Err != nil {
				errs = append(errs, fmt.Errorf("delete ACL %s: %w", e, kafkaError(d.Err, d.ErrMessage)))
				continue
			}
			deleted = append(deleted, e)
		}
	}
	for _, e := range sortedUnique(deleted) {
		fmt.Fprintf(w, "deleted %s\n", e)
	}
	if len(deleted) == 0 && len(errs) == 0 {
		fmt.Fprintln(w, "no ACL matched")
	}
	return uniqueErrors(errs)
}
