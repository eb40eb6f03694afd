package main

// skein group list|describe|delete|seek, on kadm: consumer groups, their
// members, committed offsets and lag, as kafka-consumer-groups and rpk group
// show them.

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
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newGroupCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("group", "List, describe, delete consumer groups and set their offsets", environ, stdout,
		newGroupListCommand, newGroupDescribeCommand, newGroupDeleteCommand, newGroupSeekCommand)
}

// groupStates are the group states of Kafka's ListGroups filter (KIP-518),
// classic (the first five) and consumer (KIP-848), by their lower case.
var groupStates = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"} {
		m[strings.ToLower(s)] = s
	}
	return m
}()

func newGroupListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		states []string
		types  []string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List groups with their state, type, protocol type and number of members",
		Long: "List the groups of every broker (ListGroups), with their group type (classic or\n" +
			"consumer), state, protocol type and, for classic groups, the number of\n" +
			"members (DescribeGroups). --state keeps the groups in one of the given\n" +
			"states (Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, and for\n" +
			"consumer groups Assigning, Reconciling; any case); --type the groups of\n" +
			"one of the given types.",
		Example: "  skein group list --state stable,empty --type classic",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var filter []string
			for _, s := range states {
				state, ok := groupStates[strings.ToLower(strings.TrimSpace(s))]
				if !ok {
					return usageError(fmt.Sprintf("--state %q: want Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, Assigning or Reconciling", s))
				}
				filter = append(filter, state)
			}
			var typeFilter []string
			for _, t := range types {
				switch t = strings.ToLower(strings.TrimSpace(t)); t {
				case "classic", "consumer":
					typeFilter = append(typeFilter, t)
				default:
					return usageError(fmt.Sprintf("--type %q: want classic or consumer", t))
				}
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListGroupsByType(ctx, typeFilter, filter...)
				if err != nil {
					return err
				}
				// The member counts of the classic groups; a consumer group
				// (KIP-848) is described by ConsumerGroupDescribe instead.
				var classic []string
				for _, g := range listed.Sorted() {
					if g.GroupType == "" || g.GroupType == "classic" {
						classic = append(classic, g.Group)
					}
				}
				var described kadm.DescribedGroups
				if len(classic) > 0 {
					// NB: a group deleted between the two requests is simply
					// not described; its member count prints as "-".
					if described, err = adm.DescribeGroups(ctx, classic...); err != nil && described == nil {
						return err
					}
				}
				rows := [][]string{{"GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "MEMBERS"}}
				for _, g := range listed.Sorted() {
					members := "-"
					if d, ok := described[g.Group]; ok && d.Err == nil {
						members = strconv.Itoa(len(d.Members))
					}
					rows = append(rows, []string{g.Group, orDash(g.GroupType), orDash(g.State), orDash(g.ProtocolType), members})
				}
				return printTable(stdout, rows)
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "keep the groups in these states (comma-separated or repeated)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "keep the groups of these types: classic, consumer")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newGroupDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show groups' members, committed offsets, end offsets and lag",
		Long: "Show a group: its coordinator, state, protocol type and protocol (the\n" +
			"assignor), its members with their client id, host and assigned partitions,\n" +
			"and for every partition assigned to a member or with a committed offset:\n" +
			"the committed offset (- if none), the log end offset (the high watermark),\n" +
			"the lag between them and the member consuming it. A partition with no\n" +
			"commit lags from its log start offset. TOTAL-LAG sums the lag, with each\n" +
			"topic's share when there are several.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				lags, err := adm.Lag(ctx, groups...)
				if err != nil {
					return err
				}
				var (
					errs    []error
					printed bool
				)
				for _, g := range groups {
					l, ok := lags[g]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("describe group %s: not in the broker's response", g))
					case l.Error() != nil:
						errs = append(errs, fmt.Errorf("describe group %s: %w", g, l.Error()))
					default:
						if printed {
							fmt.Fprintln(stdout)
						}
						printed = true
						if err := printGroup(stdout, l); err != nil {
							return err
						}
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// printGroup prints a described group with its lag.
func printGroup(w io.Writer, l kadm.DescribedGroupLag) error {
	protocol := orDash(l.ProtocolType)
	if l.Protocol != "" {
		protocol += "/" + l.Protocol
	}
	total := strconv.FormatInt(l.Lag.Total(), 10)
	if byTopic := l.Lag.TotalByTopic().Sorted(); len(byTopic) > 1 {
		parts := make([]string, len(byTopic))
		for i, t := range byTopic {
			parts[i] = fmt.Sprintf("%s %d", t.Topic, t.Lag)
		}
		total += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(w, "GROUP        %s\nCOORDINATOR  %d\nSTATE        %s\nPROTOCOL     %s\nMEMBERS      %d\nTOTAL-LAG    %s\n",
		l.Group, l.Coordinator.NodeID, l.State, protocol, len(l.Members), total)

	if len(l.Members) > 0 {
		fmt.Fprintln(w)
		rows := [][]string{{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"}}
		for _, m := range l.Members {
			instance := "-"
			if m.InstanceID != nil {
				instance = *m.InstanceID
			}
			rows = append(rows, []string{m.MemberID, instance, m.ClientID, m.ClientHost, assignment(m)})
		}
		if err := printTable(w, rows); err != nil {
			return err
		}
	}

	sorted := l.Lag.Sorted()
	if len(sorted) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := [][]string{{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST", "ERROR"}}
	for _, p := range sorted {
		committed, end, lag := "-", "-", "-"
		if p.Commit.At >= 0 {
			committed = strconv.FormatInt(p.Commit.At, 10)
		}
		if p.End.Err == nil {
			end = strconv.FormatInt(p.End.Offset, 10)
		}
		if p.Err == nil {
			lag = strconv.FormatInt(p.Lag, 10)
		}
		member, client, host := "-", "-", "-"
		if p.Member != nil {
			member, client, host = p.Member.MemberID, p.Member.ClientID, p.Member.ClientHost
		}
		rows = append(rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), committed, end, lag, member, client, host, errString(p.Err)})
	}
	return printTable(w, dropEmptyLastColumn(rows))
}

// assignment prints a consumer member's assigned partitions as
// topic[0,1] other[2], or "-" when it has none or is not a consumer.
func assignment(m kadm.DescribedGroupMember) string {
	c, ok := m.Assigned.AsConsumer()
	if !ok || len(c.Topics) == 0 {
		return "-"
	}
	topics := slices.Clone(c.Topics)
	slices.SortFunc(topics, func(a, b kmsg.ConsumerMemberAssignmentTopic) int { return strings.Compare(a.Topic, b.Topic) })
	parts := make([]string, len(topics))
	for i, t := range topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		parts[i] = t.Topic + int32List(ps)
	}
	return strings.Join(parts, " ")
}

func newGroupDeleteCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "delete GROUP...",
		Aliases: []string{"rm"},
		Short:   "Delete empty groups and their committed offsets",
		Long: "Delete groups (DeleteGroups) with their committed offsets. Only a group with no\n" +
			"members can be deleted: Kafka answers NON_EMPTY_GROUP for one with members,\n" +
			"GROUP_ID_NOT_FOUND for one that does not exist.",
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
		to     string
		topics []string
	)
	cmd := &cobra.Command{
		Use:   "seek GROUP --to start|end|OFFSET|-N|@UNIX_MS|TIME [--topics t1,t2]",
		Short: "Set an empty group's committed offsets",
		Long: "Commit new offsets for a group that has no members, for every partition of\n" +
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
			"partition's offset before and after.",
		Example: "  skein group seek billing --to start --topics orders\n" +
			"  skein group seek billing --to 2024-06-01T12:00:00Z",
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
			adm, err := flags.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer adm.Close()
			group := args[0]
			return prefixErrors("seek group "+group, seekGroup(cmd.Context(), flags, adm, group, start, names, stdout))
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "where to: start, end, OFFSET, -N, @UNIX_MS, RFC 3339 time")
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "the topics to seek (default: those the group has committed offsets for)")
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
func seekGroup(ctx context.Context, flags *clientFlags, adm *kadm.Client, group string, start startSpec, topics []string, w io.Writer) error {
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
	rctx, cancel = flags.requestContext(ctx)
	defer cancel()
	committed, err := adm.CommitOffsets(rctx, group, offsets)
	if err != nil {
		return err
	}
	rows := [][]string{{"TOPIC", "PARTITION", "PRIOR-OFFSET", "NEW-OFFSET", "ERROR"}}
	var errs []error
	for _, o := range committed.Sorted() {
		before := "-"
		if p, ok := prior.Lookup(o.Topic, o.Partition); ok && p.Err == nil && p.At >= 0 {
			before = strconv.FormatInt(p.At, 10)
		}
		rows = append(rows, []string{o.Topic, strconv.Itoa(int(o.Partition)), before, strconv.FormatInt(o.At, 10), errString(o.Err)})
		switch {
		case errors.Is(o.Err, kerr.UnknownMemberID), errors.Is(o.Err, kerr.IllegalGeneration), errors.Is(o.Err, kerr.RebalanceInProgress):
			// The check above passed, so a member joined since.
			errs = append(errs, fmt.Errorf("%s[%d]: %w (a member joined the group: stop its consumers first)", o.Topic, o.Partition, o.Err))
		case o.Err != nil:
			errs = append(errs, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
		}
	}
	if err := printTable(w, dropEmptyLastColumn(rows)); err != nil {
		return err
	}
	return errors.Join(errs...)
}
