package cli

// skein group list|describe|delete|seek|delete-offsets, on kadm: consumer
// groups, their members, committed offsets and lag, as kafka-consumer-groups
// and rpk group show them; share groups (KIP-932, group_share.go), as
// kafka-share-groups does; and streams groups (KIP-1071,
// group_streams.go), as kafka-streams-groups does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("group", "List, describe, delete consumer, share and streams groups and set or delete their offsets", environ, stdout,
		newGroupListCommand, newGroupDescribeCommand, newGroupDeleteCommand, newGroupSeekCommand, newGroupDeleteOffsetsCommand,
		newGroupConfigCommand)
}

// groupStates are the group states of Kafka's ListGroups filter (KIP-518),
// classic (the first five), consumer (KIP-848) and streams (KIP-1071,
// NotReady), by their lower case; a share group (KIP-932) is Empty, Stable
// or Dead.
var groupStates = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling", "NotReady"} {
		m[strings.ToLower(s)] = s
	}
	return m
}()

// groupListed is a group of group list, as -o json and yaml print it;
// Members is null when the group could not be described.
type groupListed struct {
	Group        string `json:"group"`
	Type         string `json:"type,omitempty"`
	State        string `json:"state,omitempty"`
	ProtocolType string `json:"protocol_type,omitempty"`
	Members      *int   `json:"members"`
}

func newGroupListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		states []string
		types  []string
		out    *output
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List groups with their state, type, protocol type and number of members",
		Long: "List the groups of every broker (ListGroups), with their group type (classic,\n" +
			"consumer, share or streams), state, protocol type and number of members\n" +
			"(DescribeGroups, or ConsumerGroupDescribe for consumer groups,\n" +
			"ShareGroupDescribe for share groups, StreamsGroupDescribe for streams\n" +
			"groups). --state keeps the groups in one of the given states (Stable, Empty,\n" +
			"PreparingRebalance, CompletingRebalance, Dead, for consumer and streams\n" +
			"groups Assigning, Reconciling, for streams groups NotReady; any case);\n" +
			"--type the groups of one of the given types.",
		Example: "  skein group list --state stable,empty --type classic\n" +
			"  skein group list --type share,streams",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var filter []string
			for _, s := range states {
				state, ok := groupStates[strings.ToLower(strings.TrimSpace(s))]
				if !ok {
					return usageError(fmt.Sprintf("--state %q: want Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, Assigning, Reconciling or NotReady", s))
				}
				filter = append(filter, state)
			}
			var typeFilter []string
			for _, t := range types {
				switch t = strings.ToLower(strings.TrimSpace(t)); t {
				case "classic", "consumer", "share", "streams":
					typeFilter = append(typeFilter, t)
				default:
					return usageError(fmt.Sprintf("--type %q: want classic, consumer, share or streams", t))
				}
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListGroupsByType(ctx, typeFilter, filter...)
				if err != nil {
					return err
				}
				// The member counts: of the classic groups from DescribeGroups,
				// of the consumer groups (KIP-848) from ConsumerGroupDescribe,
				// of the share groups (KIP-932) from ShareGroupDescribe, of the
				// streams groups (KIP-1071) from StreamsGroupDescribe.
				var classic, consumer, share, streams []string
				for _, g := range listed.Sorted() {
					switch g.GroupType {
					case "", "classic":
						classic = append(classic, g.Group)
					case "consumer":
						consumer = append(consumer, g.Group)
					case "share":
						share = append(share, g.Group)
					case "streams":
						streams = append(streams, g.Group)
					}
				}
				// NB: a group deleted between the requests is simply not
				// described; its member count prints as "-".
				counts := map[string]int{}
				if len(classic) > 0 {
					described, err := adm.DescribeGroups(ctx, classic...)
					if err != nil && described == nil {
						return err
					}
					for _, d := range described {
						if d.Err == nil {
							counts[d.Group] = len(d.Members)
						}
					}
				}
				if len(consumer) > 0 {
					described, err := adm.DescribeConsumerGroups(ctx, consumer...)
					if err != nil && described == nil {
						return err
					}
					for _, d := range described {
						if d.Err == nil {
							counts[d.Group] = len(d.Members)
						}
					}
				}
				if len(share) > 0 {
					described, err := adm.DescribeShareGroups(ctx, share...)
					if err != nil && described == nil {
						return err
					}
					for _, d := range described {
						if d.Err == nil {
							counts[d.GroupID] = len(d.Members)
						}
					}
				}
				described, err := describeStreamsGroups(ctx, flags, adm, streams)
				if err != nil {
					return err
				}
				for g, d := range described {
					counts[g] = len(d.Members)
				}
				groups := []groupListed{}
				for _, g := range listed.Sorted() {
					l := groupListed{Group: g.Group, Type: g.GroupType, State: g.State, ProtocolType: g.ProtocolType}
					if n, ok := counts[g.Group]; ok {
						l.Members = &n
					}
					groups = append(groups, l)
				}
				return out.write(stdout, groups, func() error {
					rows := [][]string{{"GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "MEMBERS"}}
					for _, g := range groups {
						members := "-"
						if g.Members != nil {
							members = strconv.Itoa(*g.Members)
						}
						rows = append(rows, []string{g.Group, orDash(g.Type), orDash(g.State), orDash(g.ProtocolType), members})
					}
					return printTable(stdout, rows)
				})
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "keep the groups in these states (comma-separated or repeated)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "keep the groups of these types: classic, consumer, share, streams")
	_ = cmd.RegisterFlagCompletionFunc("type", completeValues("classic", "consumer", "share", "streams"))
	out = addOutputFlag(cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newGroupDeleteCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "delete GROUP...",
		Aliases: []string{"rm"},
		Short:   "Delete empty groups and their committed offsets",
		Long: "Delete groups (DeleteGroups) with their committed offsets; a share group with\n" +
			"its share-partitions' state (start offsets and in-flight records). Only a\n" +
			"group with no members can be deleted: Kafka answers NON_EMPTY_GROUP for one\n" +
			"with members, GROUP_ID_NOT_FOUND for one that does not exist.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, groups...)
				if err != nil && resps == nil {
					return err
				}
				return eachAnswered("delete group", groups, resps,
					func(r kadm.DeleteGroupResponse) error { return kafkaError(r.Err, r.ErrMessage) },
					func(g string, _ kadm.DeleteGroupResponse) { fmt.Fprintf(stdout, "deleted %s\n", g) })
			})
		},
	}
}

func newGroupSeekCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		to      string
		topics  []string
		share   bool
		execute bool
		out     *output
	)
	cmd := &cobra.Command{
		Use:   "seek GROUP --to start|end|OFFSET|-N|@UNIX_MS|TIME [--topics t1,t2] [--share] [--execute]",
		Short: "Plan, and with --execute set, an empty group's committed offsets",
		Long: "Show the offsets a group that has no members would get, and with --execute\n" +
			"commit them, as kafka-consumer-groups --reset-offsets does (--dry-run is its\n" +
			"default too): without --execute nothing is changed. It sets them for every partition of\n" +
			"--topics, or by default of the topics the group has committed offsets for.\n" +
			"--to is where, as consume's --from:\n" +
			"  start          the log start offset\n" +
			"  end            the high watermark\n" +
			"  N              offset N (an error if outside a partition's offsets)\n" +
			"  -N             N records before the end\n" +
			"  @MS            the first record with a timestamp at or after MS, unix\n" +
			"                 milliseconds (the end if there is none)\n" +
			"  TIME, @TIME    the same for an RFC 3339 time, 2024-06-01T12:00:00Z\n" +
			"A group with members is refused, as rpk and kafka-consumer-groups do: its\n" +
			"consumers would overwrite the offsets; stop them first. It prints each\n" +
			"partition's offset before and after (CURRENT-OFFSET, NEW-OFFSET).\n\n" +
			"Of a share group (KIP-932) it sets the share-partition start offsets\n" +
			"(AlterShareGroupOffsets, as kafka-share-groups --reset-offsets), by default\n" +
			"of the topics the group has start offsets for; what was in flight is\n" +
			"forgotten. Kafka refuses it with NON_EMPTY_GROUP while the group has members.\n" +
			"--share makes a group that does not exist a share group (without it, the\n" +
			"commit makes it a classic group).",
		Example: "  skein group seek billing --to start --topics orders\n" +
			"  skein group seek billing --to 2024-06-01T12:00:00Z --execute\n" +
			"  skein group seek jobs --to end --topics orders --share --execute",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageError("--to is required: start, end, an offset, -N, @UNIX_MS or an RFC 3339 time")
			}
			start, err := parseStart("--to", to)
			if err != nil {
				return usageError(err.Error())
			}
			var names []string
			for _, t := range topics {
				if t = strings.TrimSpace(t); t != "" && !slices.Contains(names, t) {
					names = append(names, t)
				}
			}
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			group := args[0]
			// A share group's offsets are its share-partitions' start
			// offsets, set with AlterShareGroupOffsets.
			rctx, cancel := flags.requestContext(cmd.Context())
			sg, isShare := describeShareGroup(rctx, adm, group)
			cancel()
			opts := seekOptions{execute: execute, out: *out}
			if isShare || share {
				return prefixErrors("seek group "+group, flags.gaveUp(seekShareGroup(cmd.Context(), flags, cl, adm, group, len(sg.Members), start, names, stdout, opts)))
			}
			return prefixErrors("seek group "+group, flags.gaveUp(seekGroup(cmd.Context(), flags, adm, group, start, names, stdout, opts)))
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "where to: start, end, OFFSET, -N, @UNIX_MS, RFC 3339 time")
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "the topics to seek (default: those the group has committed or start offsets for)")
	cmd.Flags().BoolVar(&share, "share", false, "a group that does not exist is made a share group (KIP-932)")
	cmd.Flags().BoolVar(&execute, "execute", false, "set the offsets (without it, only show them)")
	out = addOutputFlag(cmd)
	return cmd
}

// prefixErrors prefixes err, or each error of a join, with prefix, so that
// printError prints each on its own line.
func prefixErrors(prefix string, err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = fmt.Errorf("%s: %w", prefix, e)
		}
		return errors.Join(out...)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return nil
}

// seekGroup commits the offsets start resolves to for every partition of
// topics (or of the group's committed topics) after checking that group has
// no members.
//
// NB: a member may join between the check and the commit; the coordinator
// then refuses the commit (a simple commit, generation -1, is only for a
// group with no members), so the check is for a clear message, not safety.
//
// Without opts.execute it commits nothing and prints the plan.
func seekGroup(ctx context.Context, flags *clientFlags, adm *kadm.Client, group string, start startSpec, topics []string, w io.Writer, opts seekOptions) error {
	rctx, cancel := flags.requestContext(ctx)
	defer cancel()
	described, err := adm.DescribeGroups(rctx, group)
	if err != nil {
		return err
	}
	d, err := described.On(group, nil)
	switch {
	case err != nil:
		return errors.New("not in the broker's response")
	case d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound):
		return kafkaError(d.Err, d.ErrMessage)
	case len(d.Members) > 0:
		return fmt.Errorf("the group has %d member(s) and is %s: only an empty group's offsets can be set, stop its consumers first", len(d.Members), d.State)
	case d.Err != nil:
		// Not a classic group: a consumer group (KIP-848) has its members
		// in ConsumerGroupDescribe. A broker without it has none.
		if cd, err := adm.DescribeConsumerGroups(rctx, group); err == nil {
			if c := cd[group]; c.Err == nil && len(c.Members) > 0 {
				return fmt.Errorf("the group has %d member(s) and is %s: only an empty group's offsets can be set, stop its consumers first", len(c.Members), c.State)
			}
		}
	}
	prior, err := adm.FetchOffsets(rctx, group)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		topics = prior.Partitions().Topics()
		if len(topics) == 0 {
			return errors.New("the group has no committed offsets: name the topics to seek with --topics")
		}
	}
	offsets := make(kadm.Offsets)
	for _, t := range topics {
		c := &consumer{flags: flags, topic: t}
		to, _, err := c.startOffsets(ctx, adm, start, -1)
		if err != nil {
			return fmt.Errorf("topic %s: %w", t, err)
		}
		for p, o := range to {
			offsets.Add(kadm.Offset{Topic: t, Partition: p, At: o, LeaderEpoch: -1})
		}
	}
	plan := seekPlan{Group: group, Type: "consumer", Executed: opts.execute}
	current := func(t string, p int32) int64 {
		if o, ok := prior.Lookup(t, p); ok && o.Err == nil && o.At >= 0 {
			return o.At
		}
		return -1
	}
	if !opts.execute {
		for _, o := range offsets.Sorted() {
			plan.Partitions = append(plan.Partitions, seekPartition{Topic: o.Topic, Partition: o.Partition, CurrentOffset: current(o.Topic, o.Partition), NewOffset: o.At})
		}
		return plan.write(w, opts.out)
	}
	rctx, cancel = flags.requestContext(ctx)
	defer cancel()
	committed, err := adm.CommitOffsets(rctx, group, offsets)
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range committed.Sorted() {
		plan.Partitions = append(plan.Partitions, seekPartition{Topic: o.Topic, Partition: o.Partition, CurrentOffset: current(o.Topic, o.Partition), NewOffset: o.At, Error: errString(o.Err)})
		switch {
		case errors.Is(o.Err, kerr.UnknownMemberID), errors.Is(o.Err, kerr.IllegalGeneration), errors.Is(o.Err, kerr.RebalanceInProgress):
			// The check above passed, so a member joined since.
			errs = append(errs, fmt.Errorf("%s[%d]: %w (a member joined the group: stop its consumers first)", o.Topic, o.Partition, o.Err))
		case o.Err != nil:
			errs = append(errs, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
		}
	}
	if err := plan.write(w, opts.out); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func newGroupDeleteOffsetsCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:   "delete-offsets GROUP --topics t1,t2",
		Short: "Delete a group's offsets of some topics",
		Long: "Delete a group's offsets of every partition of --topics. Of a classic or\n" +
			"consumer group, the committed offsets (OffsetDelete, as kafka-consumer-groups\n" +
			"--delete-offsets): Kafka refuses a topic the group's members are subscribed to\n" +
			"with GROUP_SUBSCRIBED_TO_TOPIC. Of a share group (KIP-932), the share-partition\n" +
			"start offsets and in-flight state (DeleteShareGroupOffsets, as\n" +
			"kafka-share-groups --delete-offsets): its consumers then start those\n" +
			"partitions afresh, from share.auto.offset.reset; Kafka refuses it with\n" +
			"NON_EMPTY_GROUP while the group has members.",
		Example: "  skein group delete-offsets jobs --topics orders",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, t := range topics {
				if t = strings.TrimSpace(t); t != "" && !slices.Contains(names, t) {
					names = append(names, t)
				}
			}
			if len(names) == 0 {
				return usageError("--topics is required: the topics whose offsets to delete")
			}
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			group := args[0]
			ctx, cancel := flags.requestContext(cmd.Context())
			defer cancel()
			if sg, ok := describeShareGroup(ctx, adm, group); ok {
				return prefixErrors("delete offsets of group "+group, flags.gaveUp(deleteShareOffsets(ctx, cl, group, len(sg.Members), names, stdout)))
			}
			return prefixErrors("delete offsets of group "+group, flags.gaveUp(deleteOffsets(ctx, adm, group, names, stdout)))
		},
	}
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "the topics whose offsets to delete (comma-separated or repeated)")
	return cmd
}

// deleteOffsets deletes a classic or consumer group's committed offsets of
// every partition of topics (OffsetDelete).
func deleteOffsets(ctx context.Context, adm *kadm.Client, group string, topics []string, w io.Writer) error {
	listed, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return err
	}
	set := kadm.TopicsSet{}
	var errs []error
	for _, t := range topics {
		td, ok := listed[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("topic %s: not in the broker's metadata", t))
		case td.Err != nil:
			errs = append(errs, fmt.Errorf("topic %s: %w", t, td.Err))
		default:
			set.Add(t, td.Partitions.Numbers()...)
		}
	}
	if len(set) == 0 {
		return errors.Join(errs...)
	}
	deleted, err := adm.DeleteOffsets(ctx, group, set)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, t := range topics {
		ps, ok := deleted[t]
		if !ok {
			continue
		}
		var done []int32
		for _, p := range slices.Sorted(maps.Keys(ps)) {
			if ps[p] != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", t, p, ps[p]))
			} else {
				done = append(done, p)
			}
		}
		if len(done) > 0 {
			fmt.Fprintf(w, "deleted the offsets of %s on %s%s\n", group, t, int32List(done))
		}
	}
	return errors.Join(errs...)
}
