package cli

// skein cluster config describe|alter and skein group config
// describe|alter: broker and group configs through DescribeConfigs (with
// synonyms and documentation) and IncrementalAlterConfigs, as kafka-configs
// --entity-type brokers|groups does. kadm's describe asks for no
// documentation and knows no group resources, so the requests are kmsg's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configSynonym is a place that holds a value for a config, as
// DescribeConfigs' synonyms list them, highest precedence first.
type configSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// configEntry is one config of a described resource.
type configEntry struct {
	Name          string          `json:"name"`
	Value         *string         `json:"value"`
	Source        string          `json:"source"`
	ReadOnly      bool            `json:"read_only"`
	Sensitive     bool            `json:"sensitive"`
	Type          string          `json:"type,omitempty"`
	Documentation string          `json:"documentation,omitempty"`
	Synonyms      []configSynonym `json:"synonyms,omitempty"`
}

// describedResource is a broker's or a group's configs. For a broker,
// Resource is its id, or "" for the cluster-wide dynamic defaults.
type describedResource struct {
	Type     string        `json:"resource_type"`
	Resource string        `json:"resource"`
	Configs  []configEntry `json:"configs"`
}

// sourceName is a config source as Kafka's ConfigEntry.ConfigSource names
// it (kmsg's names for 7 and 8 drop its DYNAMIC_).
func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceClientMetricsConfig:
		return "DYNAMIC_CLIENT_METRICS_CONFIG"
	case kmsg.ConfigSourceGroupConfig:
		return "DYNAMIC_GROUP_CONFIG"
	}
	return s.String()
}

// resourceTypeName is how the output names a resource type.
func resourceTypeName(t kmsg.ConfigResourceType) string {
	switch t {
	case kmsg.ConfigResourceTypeBroker:
		return "broker"
	case kmsg.ConfigResourceTypeGroupConfig:
		return "group"
	}
	return strings.ToLower(t.String())
}

// describeConfigs asks for the configs of resources of one type, with
// their synonyms and documentation, all of them or those keys names. kgo
// sends a broker resource to that broker and the others to any. A resource
// the broker fails is an error, "<what> NAME: ...", in the order given.
func describeConfigs(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, names, keys []string, what func(string) string) ([]describedResource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	for _, name := range names {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		if len(keys) > 0 {
			rr.ConfigNames = keys
		}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	answered := map[string]kmsg.DescribeConfigsResponseResource{}
	for _, r := range resp.Resources {
		answered[r.ResourceName] = r
	}
	var (
		out  []describedResource
		errs []error
	)
	for _, name := range names {
		r, ok := answered[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: not in the broker's answer", what(name)))
			continue
		case r.ErrorCode != 0:
			var msg string
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			errs = append(errs, fmt.Errorf("%s: %w", what(name), kafkaError(kerr.ErrorForCode(r.ErrorCode), msg)))
			continue
		}
		d := describedResource{Type: resourceTypeName(typ), Resource: name, Configs: []configEntry{}}
		for _, c := range r.Configs {
			e := configEntry{Name: c.Name, Value: c.Value, Source: sourceName(c.Source), ReadOnly: c.ReadOnly, Sensitive: c.IsSensitive}
			if c.ConfigType != 0 {
				e.Type = c.ConfigType.String()
			}
			if c.Documentation != nil {
				e.Documentation = *c.Documentation
			}
			for _, s := range c.ConfigSynonyms {
				e.Synonyms = append(e.Synonyms, configSynonym{Name: s.Name, Value: s.Value, Source: sourceName(s.Source)})
			}
			d.Configs = append(d.Configs, e)
		}
		slices.SortFunc(d.Configs, func(a, b configEntry) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// printConfigs prints described resources as text: a title line each, then
// a table of CONFIG, VALUE, SOURCE (and DYNAMIC for a broker: whether it
// can be altered at run time), or with doc each config with its
// documentation below it.
func printConfigs(w io.Writer, resources []describedResource, title func(describedResource) string, doc bool) error {
	for i, d := range resources {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, title(d))
		if len(d.Configs) == 0 {
			fmt.Fprintln(w, "(no configs)")
			continue
		}
		broker := d.Type == "broker"
		if doc {
			for _, c := range d.Configs {
				fmt.Fprintf(w, "%s=%s (%s", c.Name, configValue(c), c.Source)
				if broker && c.ReadOnly {
					fmt.Fprint(w, ", read-only")
				}
				fmt.Fprintln(w, ")")
				if c.Documentation != "" {
					fmt.Fprintf(w, "    %s\n", c.Documentation)
				}
			}
			continue
		}
		header := []string{"CONFIG", "VALUE", "SOURCE"}
		if broker {
			header = append(header, "DYNAMIC")
		}
		rows := [][]string{header}
		for _, c := range d.Configs {
			row := []string{c.Name, configValue(c), c.Source}
			if broker {
				row = append(row, map[bool]string{true: "no", false: "yes"}[c.ReadOnly])
			}
			rows = append(rows, row)
		}
		if err := printTable(w, rows); err != nil {
			return err
		}
	}
	return nil
}

// configValue prints a config's value as topic describe does.
func configValue(c configEntry) string {
	switch {
	case c.Sensitive:
		return "(sensitive)"
	case c.Value == nil:
		return "(null)"
	case *c.Value == "":
		return `""`
	}
	return *c.Value
}

// configAlters are the --set, --delete, --append and --subtract flags of
// the config alter commands.
type configAlters struct {
	set, del, add, sub []string
}

func (a *configAlters) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&a.set, "set", nil, "set a config, key=value (repeatable)")
	cmd.Flags().StringArrayVar(&a.del, "delete", nil, "delete a config, key: it falls back to the next place that sets it (repeatable)")
	cmd.Flags().StringArrayVar(&a.add, "append", nil, "append to a list config, key=value (repeatable)")
	cmd.Flags().StringArrayVar(&a.sub, "subtract", nil, "remove from a list config, key=value (repeatable)")
}

// parse returns the alterations, or a usage error.
func (a *configAlters) parse() ([]kadm.AlterConfig, error) {
	var alters []kadm.AlterConfig
	for _, f := range []struct {
		flag   string
		values []string
		op     kadm.IncrementalOp
	}{{"--set", a.set, kadm.SetConfig}, {"--append", a.add, kadm.AppendConfig}, {"--subtract", a.sub, kadm.SubtractConfig}} {
		for _, kv := range f.values {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageError(fmt.Sprintf("%s %q: want key=value", f.flag, kv))
			}
			alters = append(alters, kadm.AlterConfig{Op: f.op, Name: k, Value: kadm.StringPtr(v)})
		}
	}
	for _, k := range a.del {
		if k == "" {
			return nil, usageError("--delete: empty key")
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return nil, usageError("nothing to alter: give --set key=value, --delete key, --append key=value or --subtract key=value")
	}
	return alters, nil
}

// alteredResource is one resource's answer to a config alter command.
type alteredResource struct {
	Type         string `json:"resource_type"`
	Resource     string `json:"resource"`
	ValidateOnly bool   `json:"validate_only"`
}

// alterConfigs sends IncrementalAlterConfigs for resources of one type
// (kgo sends a broker resource to that broker) and returns those altered;
// a resource the broker refused is an error, "<what> NAME: ...".
func alterConfigs(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, names []string, alters []kadm.AlterConfig, validateOnly bool, what func(string) string) ([]alteredResource, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for _, name := range names {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for _, a := range alters {
			rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value = a.Name, a.Value
			switch a.Op {
			case kadm.SetConfig:
				rc.Op = kmsg.IncrementalAlterConfigOpSet
			case kadm.DeleteConfig:
				rc.Op = kmsg.IncrementalAlterConfigOpDelete
			case kadm.AppendConfig:
				rc.Op = kmsg.IncrementalAlterConfigOpAppend
			case kadm.SubtractConfig:
				rc.Op = kmsg.IncrementalAlterConfigOpSubtract
			}
			rr.Configs = append(rr.Configs, rc)
		}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	answered := map[string]kmsg.IncrementalAlterConfigsResponseResource{}
	for _, r := range resp.Resources {
		answered[r.ResourceName] = r
	}
	var (
		out  []alteredResource
		errs []error
	)
	for _, name := range names {
		r, ok := answered[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: not in the broker's answer", what(name)))
		case r.ErrorCode != 0:
			var msg string
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			errs = append(errs, fmt.Errorf("%s: %w", what(name), kafkaError(kerr.ErrorForCode(r.ErrorCode), msg)))
		default:
			out = append(out, alteredResource{Type: resourceTypeName(typ), Resource: name, ValidateOnly: validateOnly})
		}
	}
	return out, errors.Join(errs...)
}

// printAltered prints the resources altered, one line each.
func printAltered(w io.Writer, altered []alteredResource, name func(string) string) error {
	for _, a := range altered {
		if a.ValidateOnly {
			fmt.Fprintf(w, "%s: validated, nothing changed\n", name(a.Resource))
		} else {
			fmt.Fprintf(w, "altered %s\n", name(a.Resource))
		}
	}
	return nil
}

// withClient runs fn with a client for the command and a context that
// bounds its requests by --timeout.
func (f *clientFlags) withClient(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := f.connect(cmd.Context())
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := f.requestContext(cmd.Context())
	defer cancel()
	return f.gaveUp(fn(ctx, cl))
}

// subFamily is a family of commands inside a client family (skein cluster
// config, skein group config): its subcommands share the parent's client
// flags.
func subFamily(use, short string, flags *clientFlags, stdout io.Writer, subs ...func(*clientFlags, io.Writer) *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	for _, sub := range subs {
		cmd.AddCommand(sub(flags, stdout))
	}
	return cmd
}

func newClusterConfigCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return subFamily("config", "Describe and alter broker configs, per broker or cluster-wide", flags, stdout,
		newClusterConfigDescribeCommand, newClusterConfigAlterCommand)
}

// brokerName names a broker resource in messages.
func brokerName(name string) string {
	if name == "" {
		return "the cluster-wide default"
	}
	return "broker " + name
}

// brokerResources are the resource names of --broker, or of every broker
// of the cluster when none is given.
func brokerResources(ctx context.Context, cl *kgo.Client, brokers []int32) ([]string, error) {
	if len(brokers) == 0 {
		listed, err := kadm.NewClient(cl).ListBrokers(ctx)
		if err != nil {
			return nil, err
		}
		brokers = listed.NodeIDs()
	}
	slices.Sort(brokers)
	brokers = slices.Compact(brokers)
	names := make([]string, len(brokers))
	for i, b := range brokers {
		names[i] = strconv.Itoa(int(b))
	}
	return names, nil
}

func newClusterConfigDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		brokers     []int32
		defaults    bool
		doc         bool
		dynamicOnly bool
		out         *output
	)
	cmd := &cobra.Command{
		Use:   "describe [KEY...] [--broker N,... | --default]",
		Short: "Show broker configs with their values, sources and whether they are dynamic",
		Long: "Show each broker's configs (DescribeConfigs on the broker resource), all or the\n" +
			"KEYs named: the value in force, where it comes from (DYNAMIC_BROKER_CONFIG, set\n" +
			"for this broker; DYNAMIC_DEFAULT_BROKER_CONFIG, set for every broker;\n" +
			"STATIC_BROKER_CONFIG, the node's configuration file or flags; DEFAULT_CONFIG)\n" +
			"and whether it is dynamic, that is can be altered while the broker runs\n" +
			"(`skein cluster config alter`). --doc prints each config's documentation\n" +
			"below it; -o json and yaml always carry it, with the synonyms (every place\n" +
			"that sets a value, highest precedence first).\n\n" +
			"Without --broker, every broker of the cluster is described; --default\n" +
			"describes the cluster-wide dynamic defaults (the resource \"\"), which list\n" +
			"only the configs set there. --dynamic keeps the configs set dynamically.",
		Example: "  skein cluster config describe --broker 1 log.retention.ms message.max.bytes\n" +
			"  skein cluster config describe --default -o json",
		RunE: func(cmd *cobra.Command, keys []string) error {
			if defaults && len(brokers) > 0 {
				return usageError("give --broker or --default, not both")
			}
			o := *out
			return flags.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				names := []string{""}
				if !defaults {
					var err error
					if names, err = brokerResources(ctx, cl, brokers); err != nil {
						return err
					}
				}
				described, err := describeConfigs(ctx, cl, kmsg.ConfigResourceTypeBroker, names, keys, func(n string) string { return "describe configs of " + brokerName(n) })
				if dynamicOnly {
					for i := range described {
						described[i].Configs = slices.DeleteFunc(described[i].Configs, func(c configEntry) bool {
							return c.Source != "DYNAMIC_BROKER_CONFIG" && c.Source != "DYNAMIC_DEFAULT_BROKER_CONFIG"
						})
					}
				}
				werr := o.write(stdout, orEmpty(described), func() error {
					return printConfigs(stdout, described, func(d describedResource) string {
						if d.Resource == "" {
							return "CLUSTER-WIDE DEFAULT"
						}
						return "BROKER " + d.Resource
					}, doc)
				})
				return errors.Join(err, werr)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&brokers, "broker", nil, "the brokers to describe, by id (default every broker)")
	cmd.Flags().BoolVar(&defaults, "default", false, "describe the cluster-wide dynamic defaults instead")
	cmd.Flags().BoolVar(&doc, "doc", false, "print each config's documentation")
	cmd.Flags().BoolVar(&dynamicOnly, "dynamic", false, "keep only the configs set dynamically")
	out = addOutputFlag(cmd)
	return cmd
}

func newClusterConfigAlterCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		brokers      []int32
		alters       configAlters
		validateOnly bool
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "alter [--broker N,...] --set key=value --delete key",
		Short: "Alter dynamic broker configs, for every broker or for some (IncrementalAlterConfigs)",
		Long: "Alter dynamic broker configs with IncrementalAlterConfigs: without --broker the\n" +
			"cluster-wide default (Kafka's --entity-default, the resource \"\"), which every\n" +
			"broker applies unless it has a value of its own; with --broker, those brokers'\n" +
			"own values. Only the named keys change; a deleted one falls back to the next\n" +
			"place that sets it. The brokers apply the change at once, without a restart,\n" +
			"and keep it across restarts (it is in the cluster metadata).\n\n" +
			"Only dynamic configs can be altered (see DYNAMIC in `skein cluster config\n" +
			"describe`): a static one is refused with INVALID_REQUEST, as Kafka refuses\n" +
			"it (\"Cannot update these configs dynamically\"), and is changed in the\n" +
			"node's configuration and a restart. --validate-only checks the change and\n" +
			"makes none.",
		Example: "  skein cluster config alter --set log.retention.ms=86400000\n" +
			"  skein cluster config alter --broker 2 --set message.max.bytes=2097152 --delete log.segment.bytes",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, err := alters.parse()
			if err != nil {
				return err
			}
			names := []string{""}
			if len(brokers) > 0 {
				names = nil
				for _, b := range brokers {
					if b < 0 {
						return usageError(fmt.Sprintf("--broker %d: want a broker id", b))
					}
					if n := strconv.Itoa(int(b)); !slices.Contains(names, n) {
						names = append(names, n)
					}
				}
			}
			o := *out
			return flags.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				altered, err := alterConfigs(ctx, cl, kmsg.ConfigResourceTypeBroker, names, as, validateOnly, func(n string) string { return "alter configs of " + brokerName(n) })
				werr := o.write(stdout, orEmpty(altered), func() error { return printAltered(stdout, altered, brokerName) })
				return errors.Join(err, werr)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&brokers, "broker", nil, "alter these brokers' own values, by id (default the cluster-wide default)")
	alters.register(cmd)
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change and make none")
	out = addOutputFlag(cmd)
	return cmd
}

func newGroupConfigCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return subFamily("config", "Describe and alter group configs (consumer.session.timeout.ms, share.auto.offset.reset, ...)", flags, stdout,
		newGroupConfigDescribeCommand, newGroupConfigAlterCommand)
}

func groupName(name string) string { return "group " + name }

func newGroupConfigDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		doc bool
		out *output
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show groups' configs with their values and sources",
		Long: "Show each group's configs (DescribeConfigs on the group resource, KIP-848's\n" +
			"group configs: consumer.session.timeout.ms, consumer.heartbeat.interval.ms,\n" +
			"share.auto.offset.reset, share.record.lock.duration.ms, streams.* ...), with\n" +
			"the value in force and where it comes from: DYNAMIC_GROUP_CONFIG where the\n" +
			"group sets it, DEFAULT_CONFIG (the broker's group.* setting) where not. Any\n" +
			"group id can be described, whether a group has it yet or not. --doc prints\n" +
			"each config's documentation below it; -o json and yaml always carry it.",
		Example: "  skein group config describe billing",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			o := *out
			return flags.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				described, err := describeConfigs(ctx, cl, kmsg.ConfigResourceTypeGroupConfig, groups, nil, func(g string) string { return "describe configs of group " + g })
				werr := o.write(stdout, orEmpty(described), func() error {
					return printConfigs(stdout, described, func(d describedResource) string { return "GROUP " + d.Resource }, doc)
				})
				return errors.Join(err, werr)
			})
		},
	}
	cmd.Flags().BoolVar(&doc, "doc", false, "print each config's documentation")
	out = addOutputFlag(cmd)
	return cmd
}

func newGroupConfigAlterCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		alters       configAlters
		validateOnly bool
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "alter GROUP... --set key=value --delete key",
		Short: "Set or delete group configs (IncrementalAlterConfigs)",
		Long: "Set or delete group configs with IncrementalAlterConfigs on the group\n" +
			"resource, as kafka-configs --entity-type groups --alter does: only the named\n" +
			"keys change; a deleted one falls back to the broker's group.* setting. The\n" +
			"group's coordinator applies them at its members' next heartbeats. A value\n" +
			"outside the broker's bounds (group.consumer.min.session.timeout.ms ...) is\n" +
			"INVALID_CONFIG. --validate-only checks the change and makes none.",
		Example: "  skein group config alter billing --set consumer.session.timeout.ms=60000\n" +
			"  skein group config alter jobs --set share.auto.offset.reset=earliest",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			as, err := alters.parse()
			if err != nil {
				return err
			}
			o := *out
			return flags.withClient(cmd, func(ctx context.Context, cl *kgo.Client) error {
				altered, err := alterConfigs(ctx, cl, kmsg.ConfigResourceTypeGroupConfig, groups, as, validateOnly, func(g string) string { return "alter configs of group " + g })
				werr := o.write(stdout, orEmpty(altered), func() error { return printAltered(stdout, altered, groupName) })
				return errors.Join(err, werr)
			})
		},
	}
	alters.register(cmd)
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change and make none")
	out = addOutputFlag(cmd)
	return cmd
}
