package cli

// skein topic create|list|describe|delete|alter-config|elect-leaders|
// reassign|reassignments, on kadm.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("topic", "Create, list, describe, alter and delete topics, and elect their leaders", environ, stdout,
		newTopicCreateCommand, newTopicListCommand, newTopicDescribeCommand,
		newTopicDeleteCommand, newTopicAlterConfigCommand, newTopicElectLeadersCommand,
		newTopicReassignCommand, newTopicReassignmentsCommand,
		newTopicAddPartitionsCommand, newTopicTrimPrefixCommand)
}

func newTopicReassignCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		partitions, replicas []int32
		cancel               bool
	)
	cmd := &cobra.Command{
		Use:   "reassign NAME -p N,... (--replicas B,... | --cancel)",
		Short: "Move partitions to other brokers (AlterPartitionReassignments)",
		Long: "Move the partitions -p of topic NAME to the brokers --replicas, the first the\n" +
			"preferred leader: the new replicas copy the partition from its leader, join\n" +
			"its in-sync replicas, and then the old ones leave and delete their copy.\n" +
			"--cancel stops a reassignment in progress. `skein topic reassignments`\n" +
			"shows those under way.",
		Example: "  skein topic reassign orders -p 0,1 --replicas 2,3,4",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			switch {
			case len(partitions) == 0:
				return usageError("name the partitions with -p")
			case cancel == (len(replicas) > 0):
				return usageError("give --replicas or --cancel")
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var req kadm.AlterPartitionAssignmentsReq
				for _, p := range partitions {
					if cancel {
						req.CancelAssign(name, p)
					} else {
						req.Assign(name, p, replicas)
					}
				}
				res, err := adm.AlterPartitionAssignments(ctx, req)
				if err != nil {
					return err
				}
				var errs []error
				for _, p := range partitions {
					r, ok := res[name][p]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("%s-%d: not in the broker's answer", name, p))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("%s-%d: %w", name, p, kafkaError(r.Err, r.ErrMessage)))
					case cancel:
						fmt.Fprintf(stdout, "%s-%d: reassignment cancelled\n", name, p)
					default:
						fmt.Fprintf(stdout, "%s-%d: reassigning to %s\n", name, p, int32List(replicas))
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().Int32SliceVarP(&partitions, "partition", "p", nil, "partitions to move")
	cmd.Flags().Int32SliceVar(&replicas, "replicas", nil, "the brokers to move them to, the preferred leader first")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the reassignments in progress instead")
	return withReassignPlans(flags, stdout, cmd)
}

// reassignmentView is a partition's reassignment in progress, as -o json
// and yaml print it.
type reassignmentView struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding_replicas"`
	Removing  []int32 `json:"removing_replicas"`
}

func newTopicReassignmentsCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "reassignments NAME...",
		Short: "Show the topics' partition reassignments in progress",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				topics, err := adm.ListTopics(ctx, names...)
				if err != nil {
					return err
				}
				set := kadm.TopicsSet{}
				for _, name := range names {
					t, ok := topics[name]
					if !ok || t.Err != nil {
						return fmt.Errorf("topic %s: %v", name, t.Err)
					}
					set.Add(name, t.Partitions.Numbers()...)
				}
				res, err := adm.ListPartitionReassignments(ctx, set)
				if err != nil {
					return err
				}
				views := []reassignmentView{}
				for _, name := range names {
					for _, p := range slices.Sorted(maps.Keys(res[name])) {
						r := res[name][p]
						views = append(views, reassignmentView{name, p, orEmpty(r.Replicas), orEmpty(r.AddingReplicas), orEmpty(r.RemovingReplicas)})
					}
				}
				return out.write(stdout, views, func() error {
					if len(views) == 0 {
						fmt.Fprintln(stdout, "no reassignment in progress")
						return nil
					}
					rows := [][]string{{"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"}}
					for _, v := range views {
						rows = append(rows, []string{v.Topic, strconv.Itoa(int(v.Partition)), int32List(v.Replicas), int32List(v.Adding), int32List(v.Removing)})
					}
					return printTable(stdout, rows)
				})
			})
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func newTopicElectLeadersCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		partitions []int32
		unclean    bool
	)
	cmd := &cobra.Command{
		Use:   "elect-leaders NAME...",
		Short: "Give partitions back to their preferred replicas, or (--unclean) a leader to offline ones",
		Long: "Elect leaders for the topics' partitions (all, or those of -p): by default\n" +
			"the preferred replica, the first of a partition's replicas, if it is live and\n" +
			"in sync; with --unclean, for partitions without a leader, a live in-sync\n" +
			"replica or else any live replica, which loses what only the ISR held.",
		Example: "  skein topic elect-leaders orders\n  skein topic elect-leaders orders -p 3 --unclean",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				set := kadm.TopicsSet{}
				if len(partitions) > 0 {
					for _, name := range names {
						set.Add(name, partitions...)
					}
				} else {
					topics, err := adm.ListTopics(ctx, names...)
					if err != nil {
						return err
					}
					for _, name := range names {
						t, ok := topics[name]
						if !ok || t.Err != nil {
							return fmt.Errorf("topic %s: %v", name, t.Err)
						}
						set.Add(name, t.Partitions.Numbers()...)
					}
				}
				how := kadm.ElectPreferredReplica
				if unclean {
					how = kadm.ElectLiveReplica
				}
				res, err := adm.ElectLeaders(ctx, how, set)
				if err != nil {
					return err
				}
				var errs []error
				for _, name := range names {
					for _, p := range slices.Sorted(maps.Keys(res[name])) {
						r := res[name][p]
						switch {
						case r.Err == nil:
							fmt.Fprintf(stdout, "%s-%d: elected\n", name, p)
						case errors.Is(r.Err, kerr.ElectionNotNeeded):
							fmt.Fprintf(stdout, "%s-%d: already led as asked\n", name, p)
						default:
							errs = append(errs, fmt.Errorf("%s-%d: %w", name, p, kafkaError(r.Err, r.ErrMessage)))
						}
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().Int32SliceVarP(&partitions, "partition", "p", nil, "partitions to elect leaders for (default all)")
	cmd.Flags().BoolVar(&unclean, "unclean", false, "give offline partitions any live replica, losing what only the ISR held")
	return cmd
}

func newTopicCreateCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		partitions int32
		replicas   int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME...",
		Short: "Create topics",
		Long: "Create topics. Partitions and replicas default to the broker's num.partitions\n" +
			"and default.replication.factor; -c sets a topic config (Kafka's names:\n" +
			"retention.ms, cleanup.policy, ...) and may be repeated.",
		Example: "  skein topic create orders -p 6 -c retention.ms=86400000 -c cleanup.policy=compact",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			cfg, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				adm.SetTimeoutMillis(brokerWait(flags.timeout))
				resps, err := adm.CreateTopics(ctx, partitions, replicas, cfg, names...)
				if err != nil {
					return unanswered("create", flags.timeout, err)
				}
				return eachAnswered("create topic", names, resps,
					func(r kadm.CreateTopicResponse) error { return kafkaError(r.Err, r.ErrMessage) },
					func(name string, r kadm.CreateTopicResponse) {
						fmt.Fprintf(stdout, "created %s (%d partitions, replication factor %d)", name, r.NumPartitions, r.ReplicationFactor)
						if r.ErrMessage != "" {
							// The broker answered before its replicas had
							// all opened their logs: "created; still
							// opening N of its M partitions on broker B".
							_, opening, _ := strings.Cut(r.ErrMessage, "; ")
							fmt.Fprintf(stdout, "; %s", opening)
						}
						fmt.Fprintln(stdout)
					})
			})
		},
	}
	cmd.Flags().Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	cmd.Flags().Int16VarP(&replicas, "replicas", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
	cmd.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	return cmd
}

// brokerWait is the timeout a topic create or delete asks of the broker:
// three quarters of --timeout, so that the broker's answer (a success,
// even with partitions still opening) comes before the CLI gives up.
func brokerWait(timeout time.Duration) int32 {
	return int32(min(timeout*3/4, time.Duration(math.MaxInt32)*time.Millisecond).Milliseconds())
}

// unanswered explains a topic create or delete that got no answer: the
// cluster may still have done it.
func unanswered(what string, timeout time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer to the %s within --timeout %v; the cluster may still %s it: see skein topic list", what, timeout, what)
	}
	return err
}

// parseConfigs turns key=value flags into CreateTopics configs.
func parseConfigs(kvs []string) (map[string]*string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Sprintf("config %q: want key=value", kv))
		}
		out[k] = kadm.StringPtr(v)
	}
	return out, nil
}

// topicListed is a topic as topic list -o json and yaml print it; Error
// is set, and the counts not, when the broker refused to describe it.
type topicListed struct {
	Name              string `json:"name"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
	Error             string `json:"error,omitempty"`
}

func newTopicListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		internal bool
		out      *output
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition counts and replication factors",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				list := adm.ListTopics
				if internal {
					list = adm.ListTopicsWithInternal
				}
				topics, err := list(ctx)
				if err != nil {
					return err
				}
				listed := []topicListed{}
				for _, t := range topics.Sorted() {
					l := topicListed{Name: t.Topic, Internal: t.IsInternal}
					if t.Err != nil {
						l.Error = t.Err.Error()
					} else {
						l.Partitions, l.ReplicationFactor = len(t.Partitions), t.Partitions.NumReplicas()
					}
					listed = append(listed, l)
				}
				return out.write(stdout, listed, func() error {
					rows := [][]string{{"NAME", "PARTITIONS", "REPLICAS"}}
					for _, l := range listed {
						if l.Error != "" {
							rows = append(rows, []string{l.Name, "-", l.Error})
							continue
						}
						rows = append(rows, []string{l.Name, strconv.Itoa(l.Partitions), strconv.Itoa(l.ReplicationFactor)})
					}
					return printTable(stdout, rows)
				})
			})
		},
	}
	cmd.Flags().BoolVarP(&internal, "internal", "i", false, "include internal topics")
	out = addOutputFlag(cmd)
	return cmd
}

func newTopicDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show topics' partitions (leader, replicas, ISR, offsets) and configs (values and sources)",
		Long: "Show a topic: its id; each partition's leader, leader epoch, replicas, in-sync\n" +
			"replicas, offline replicas (on fenced brokers), log start offset and high\n" +
			"watermark (the end offset consumers\n" +
			"read to); and every config with its value and source (DYNAMIC_TOPIC_CONFIG\n" +
			"for the topic's own, STATIC_BROKER_CONFIG or DEFAULT_CONFIG otherwise).\n\n" +
			"A partition whose leader does not answer (down, and not yet fenced) is shown\n" +
			"with \"-\" offsets and the reason in ERROR; the rest is shown as usual, and the\n" +
			"command exits 1.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			adm, err := flags.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer adm.Close()
			var errs []error
			views := []*topicView{}
			for i, name := range names {
				if i > 0 && *out == outputText {
					fmt.Fprintln(stdout)
				}
				v, err := describeTopic(cmd.Context(), flags, adm, name)
				if v != nil {
					if *out == outputText {
						if err := v.text(stdout); err != nil {
							return err
						}
					}
					views = append(views, v)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("describe topic %s: %w", name, flags.gaveUp(err)))
				}
			}
			if *out != outputText {
				if err := out.write(stdout, views, nil); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

// topicView is what topic describe shows of a topic, as -o json and yaml
// print it.
type topicView struct {
	Name              string          `json:"name"`
	ID                string          `json:"id"`
	ReplicationFactor int             `json:"replication_factor"`
	Partitions        []partitionView `json:"partitions"`
	Configs           []topicConfig   `json:"configs"`
}

// topicConfig is a config of the topic: its value (null when Kafka's is,
// or when it is sensitive) and its source.
type topicConfig struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

// partitionView is a partition of topic describe. An offset is null when
// its leader did not answer, with the reason in Error.
type partitionView struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	LogStartOffset  *int64  `json:"log_start_offset"`
	HighWatermark   *int64  `json:"high_watermark"`
	Error           string  `json:"error,omitempty"`
	// The offsets' column as text shows them: the offset, "-" or the
	// partition's ListOffsets error.
	logStartText, highWatermarkText string
}

// text prints the topic as topic describe's tables.
func (v *topicView) text(w io.Writer) error {
	fmt.Fprintf(w, "NAME        %s\nID          %s\nPARTITIONS  %d\nREPLICAS    %d\n\n",
		v.Name, v.ID, len(v.Partitions), v.ReplicationFactor)
	rows := [][]string{{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START-OFFSET", "HIGH-WATERMARK", "ERROR"}}
	for _, p := range v.Partitions {
		rows = append(rows, []string{
			strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.Itoa(int(p.LeaderEpoch)),
			int32List(p.Replicas), int32List(p.ISR), int32List(p.OfflineReplicas),
			p.logStartText, p.highWatermarkText, p.Error,
		})
	}
	if err := printTable(w, dropEmptyLastColumn(rows)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = [][]string{{"CONFIG", "VALUE", "SOURCE"}}
	for _, c := range v.Configs {
		value := "(null)"
		switch {
		case c.Sensitive:
			value = "(sensitive)"
		case c.Value != nil:
			value = *c.Value
		}
		rows = append(rows, []string{c.Name, value, c.Source})
	}
	return printTable(w, rows)
}

// describeTopic describes a topic. A partition whose leader does not
// answer ListOffsets (down, and not yet fenced) gets no offsets and the
// reason in its Error, the other partitions their offsets: the view is
// whole, and the error returned with it says how many could not be read.
// Each request is bounded by --timeout.
func describeTopic(ctx context.Context, flags *clientFlags, adm *kadm.Client, name string) (*topicView, error) {
	rctx, cancel := flags.requestContext(ctx)
	defer cancel()
	topics, err := adm.ListTopics(rctx, name)
	if err != nil {
		return nil, err
	}
	t, ok := topics[name]
	if !ok {
		return nil, errors.New("not in the broker's response")
	}
	if t.Err != nil {
		return nil, t.Err
	}
	unreached := map[int32]string{}
	list := func(l func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		rctx, cancel := flags.requestContext(ctx)
		defer cancel()
		listed, err := l(rctx, name)
		if se, ok := errors.AsType[*kadm.ShardErrors](err); ok {
			for _, e := range se.Errs {
				req, _ := e.Req.(*kmsg.ListOffsetsRequest)
				if req == nil {
					return nil, err
				}
				for _, rt := range req.Topics {
					for _, rp := range rt.Partitions {
						unreached[rp.Partition] = fmt.Sprintf("broker %d did not answer ListOffsets: %v", e.Broker.NodeID, e.Err)
					}
				}
			}
			return listed, nil
		}
		return listed, err
	}
	starts, err := list(adm.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	ends, err := list(adm.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	rctx, cancel = flags.requestContext(ctx)
	defer cancel()
	configs, err := adm.DescribeTopicConfigs(rctx, name)
	if err != nil {
		return nil, err
	}
	rc, err := configs.On(name, nil)
	if err != nil {
		return nil, err
	}
	if rc.Err != nil {
		return nil, kafkaError(rc.Err, rc.ErrMessage)
	}

	v := &topicView{Name: name, ID: topicID(t.ID), ReplicationFactor: t.Partitions.NumReplicas(), Partitions: []partitionView{}, Configs: []topicConfig{}}
	for _, p := range t.Partitions.Sorted() {
		problem := errString(p.Err)
		if why, ok := unreached[p.Partition]; ok && problem == "" {
			problem = why
		}
		pv := partitionView{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.ISR), OfflineReplicas: orEmpty(p.OfflineReplicas), Error: problem,
			logStartText: listedOffset(starts, name, p.Partition), highWatermarkText: listedOffset(ends, name, p.Partition)}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			pv.LogStartOffset = &o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			pv.HighWatermark = &o.Offset
		}
		v.Partitions = append(v.Partitions, pv)
	}
	slices.SortFunc(rc.Configs, func(a, b kadm.Config) int { return strings.Compare(a.Key, b.Key) })
	for _, c := range rc.Configs {
		e := topicConfig{Name: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive}
		if c.Sensitive {
			e.Value = nil
		}
		v.Configs = append(v.Configs, e)
	}
	if len(unreached) > 0 {
		return v, fmt.Errorf("the offsets of %d of %d partitions could not be read: their leaders did not answer (see ERROR)", len(unreached), len(t.Partitions))
	}
	return v, nil
}

// topicID prints a topic id as Kafka's tools do (Uuid.toString): URL-safe
// base64 without padding.
func topicID(id kadm.TopicID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// int32List prints node ids as Kafka's tools do: [1,2,3].
func int32List(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ",") + "]"
}

// listedOffset is a partition's offset from a ListOffsets answer, or its
// error.
func listedOffset(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		return "-"
	case o.Err != nil:
		return o.Err.Error()
	}
	return strconv.FormatInt(o.Offset, 10)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// dropEmptyLastColumn removes the last column when only its header is set,
// so that a table of healthy partitions has no empty ERROR column.
func dropEmptyLastColumn(rows [][]string) [][]string {
	last := len(rows[0]) - 1
	for _, r := range rows[1:] {
		if r[last] != "" {
			return rows
		}
	}
	for i := range rows {
		rows[i] = rows[i][:last]
	}
	return rows
}

func newTopicDeleteCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME...",
		Aliases: []string{"rm"},
		Short:   "Delete topics",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				adm.SetTimeoutMillis(brokerWait(flags.timeout))
				resps, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return unanswered("delete", flags.timeout, err)
				}
				return eachAnswered("delete topic", names, resps,
					func(r kadm.DeleteTopicResponse) error { return kafkaError(r.Err, r.ErrMessage) },
					func(name string, _ kadm.DeleteTopicResponse) { fmt.Fprintf(stdout, "deleted %s\n", name) })
			})
		},
	}
}

func newTopicAlterConfigCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var set, del []string
	cmd := &cobra.Command{
		Use:   "alter-config NAME... --set key=value --delete key",
		Short: "Set or delete topic configs (IncrementalAlterConfigs)",
		Long: "Set or delete topic configs with IncrementalAlterConfigs: only the named keys\n" +
			"change; a deleted key falls back to the broker's value. The change takes\n" +
			"effect at once and survives restarts.",
		Example: "  skein topic alter-config orders --set retention.ms=3600000 --delete cleanup.policy",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			var alters []kadm.AlterConfig
			for _, kv := range set {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageError(fmt.Sprintf("--set %q: want key=value", kv))
				}
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
			}
			for _, k := range del {
				if k == "" {
					return usageError("--delete: empty key")
				}
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			if len(alters) == 0 {
				return usageError("nothing to alter: give --set key=value or --delete key")
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.AlterTopicConfigs(ctx, alters, names...)
				if err != nil {
					return err
				}
				var errs []error
				for _, name := range names {
					r, err := resps.On(name, nil)
					switch {
					case err != nil:
						errs = append(errs, fmt.Errorf("alter configs of %s: not in the broker's response", name))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("alter configs of %s: %w", name, kafkaError(r.Err, r.ErrMessage)))
					default:
						fmt.Fprintf(stdout, "altered %s\n", name)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringArrayVar(&set, "set", nil, "set a config, key=value (repeatable)")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "delete a config override, key (repeatable)")
	return cmd
}
