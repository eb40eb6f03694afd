package cli

// skein group describe: a group of any type (classic, consumer, share,
// streams) with its members, offsets and lag. Each type's describe builds
// a view (classicGroupView, consumerGroupView here, shareGroupView in
// group_share.go, streamsGroupView in group_streams.go) that -o json and
// yaml print, and whose text method prints the tables.

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

	"github.com/skeinlog/skein/chaos"
)

func newGroupDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		admin string
		out   *output
	)
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show groups' members, committed offsets, end offsets and lag",
		Long: "Show a group: its coordinator, state, protocol type and protocol (the\n" +
			"assignor), its members with their client id, host and assigned partitions,\n" +
			"and for every partition assigned to a member or with a committed offset:\n" +
			"the committed offset (- if none), the log end offset (the high watermark),\n" +
			"the lag between them and the member consuming it. A partition with no\n" +
			"commit lags from its log start offset. TOTAL-LAG sums the lag, with each\n" +
			"topic's share when there are several.\n\n" +
			"A consumer group (KIP-848, the consumer protocol) is described by\n" +
			"ConsumerGroupDescribe, as DescribeGroups describes classic groups only: its\n" +
			"group and assignment epochs, and for each member its epoch, the partitions\n" +
			"it owns and its target assignment, which differ while it reconciles.\n\n" +
			"A share group (KIP-932) is described by ShareGroupDescribe: its epochs, the\n" +
			"assignor, each member with its epoch and assigned partitions; then for every\n" +
			"partition with share state or assigned, from DescribeShareGroupOffsets, the\n" +
			"share-partition start offset (SPSO: every record before it is delivered and\n" +
			"acknowledged or archived; - if the group has no state for it yet), the log\n" +
			"end offset, the lag (the records from the SPSO to the high watermark not yet\n" +
			"acknowledged or archived, KIP-1226) and how many members it is assigned to.\n" +
			"Kafka's APIs carry no more; with --admin (the admin listeners of the nodes,\n" +
			"comma-separated: each knows the partitions it leads) it also shows what each\n" +
			"share-partition holds: IN-FLIGHT, the records from the SPSO to the last one\n" +
			"read for the group (Kafka's InFlightMessageCount); ACQUIRED, those held by a\n" +
			"consumer under a lock; ARCHIVED, those rejected or past the delivery limit\n" +
			"still above the SPSO (once the SPSO passes them they are no longer counted).\n" +
			"A partition shows - there when no node given serves it: no consumer fetched\n" +
			"it since its leader took it, or its leader was not in --admin.\n\n" +
			"A streams group (KIP-1071) is described by StreamsGroupDescribe: its state,\n" +
			"group, assignment and topology epochs, each member with its process id,\n" +
			"client, host, epoch and its active and standby tasks (subtopology:[partitions]),\n" +
			"the topology's subtopologies, and the lag of the offsets the application\n" +
			"committed, each source partition with the member whose active task reads it.\n\n" +
			"With -o json or yaml it prints {\"groups\": [...]}, each group with its type\n" +
			"(classic, consumer, share or streams), the fields of its type, its members\n" +
			"and its offsets; an offset, end offset or lag not known is null.",
		Example: "  skein group describe billing\n" +
			"  skein group describe jobs --admin 127.0.0.1:9644,127.0.0.1:9645\n" +
			"  skein group describe billing -o json",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, groups []string) error {
			var access chaos.Access
			if admin != "" {
				var err error
				if access, err = flags.security.access(); err != nil {
					return usageError(err.Error())
				}
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				lags, err := adm.Lag(ctx, groups...)
				if err != nil {
					return err
				}
				// DescribeGroups answers GROUP_ID_NOT_FOUND for a consumer
				// group (KIP-848), as Kafka 4.x does: ask those again with
				// ConsumerGroupDescribe.
				var notClassic []string
				for _, g := range groups {
					if l, ok := lags[g]; ok && errors.Is(l.DescribeErr, kerr.GroupIDNotFound) {
						notClassic = append(notClassic, g)
					}
				}
				var consumers kadm.DescribedConsumerGroups
				if len(notClassic) > 0 {
					// NB: a broker without ConsumerGroupDescribe fails the
					// request; its groups keep DescribeGroups' error.
					consumers, _ = adm.DescribeConsumerGroups(ctx, notClassic...)
				}
				// Neither classic nor consumer: a share group (KIP-932)?
				var notConsumer []string
				for _, g := range notClassic {
					if c, ok := consumers[g]; !ok || c.Err != nil {
						notConsumer = append(notConsumer, g)
					}
				}
				var shares kadm.DescribedShareGroups
				if len(notConsumer) > 0 {
					// NB: as above, a broker without share groups keeps
					// the first error.
					shares, _ = adm.DescribeShareGroups(ctx, notConsumer...)
				}
				// Nor share: a streams group (KIP-1071)?
				var notShare []string
				for _, g := range notConsumer {
					if s, ok := shares[g]; !ok || s.Err != nil {
						notShare = append(notShare, g)
					}
				}
				streams, err := describeStreamsGroups(ctx, flags, adm, notShare)
				if err != nil {
					return err
				}
				// The text is printed group by group as each is described;
				// json and yaml once all are, with the groups described
				// before one that failed to be.
				described := groupsView{Groups: []groupView{}}
				printAll := func() error {
					if *out == outputText {
						return nil
					}
					return out.write(stdout, described, nil)
				}
				var errs []error
				for _, g := range groups {
					l, ok := lags[g]
					cg, isConsumer := consumers[g]
					isConsumer = isConsumer && cg.Err == nil
					sg, isShare := shares[g]
					isShare = isShare && sg.Err == nil
					stg, isStreams := streams[g]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("describe group %s: not in the broker's response", g))
						continue
					case l.Error() != nil && !isConsumer && !isShare && !isStreams:
						errs = append(errs, fmt.Errorf("describe group %s: %w", g, l.Error()))
						continue
					}
					if *out == outputText && len(described.Groups) > 0 {
						fmt.Fprintln(stdout)
					}
					var v groupView
					switch {
					case isStreams:
						v, err = describeStreamsGroup(ctx, adm, stg)
					case isShare:
						v, err = describeShareGroupView(ctx, adm, sg, admin, access)
					case isConsumer:
						v, err = describeConsumerGroup(ctx, adm, cg)
					default:
						v = classicGroupOf(l)
					}
					if err != nil {
						// NB: as before -o, a group that fails here ends the
						// command: the groups after it are not described.
						if perr := printAll(); perr != nil {
							return perr
						}
						return fmt.Errorf("describe group %s: %w", g, err)
					}
					if *out == outputText {
						if err := v.text(stdout); err != nil {
							return err
						}
					}
					described.Groups = append(described.Groups, v)
				}
				if err := printAll(); err != nil {
					return err
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "", "the nodes' admin listeners, host:port, comma-separated, to show share-partitions' in-flight records too")
	out = addOutputFlag(cmd)
	return cmd
}

// groupsView is what group describe -o json and yaml print.
type groupsView struct {
	Groups []groupView `json:"groups"`
}

// groupView is a described group of one type, as -o json and yaml print
// it; text prints it as group describe's tables.
type groupView interface {
	text(w io.Writer) error
}

// groupHeader are the fields every type of group has: Type is classic,
// consumer, share or streams.
type groupHeader struct {
	Group       string `json:"group"`
	Type        string `json:"type"`
	Coordinator int32  `json:"coordinator"`
	State       string `json:"state"`
}

// groupOffset is a partition of a classic, consumer or streams group: its
// committed offset, the log end offset (the high watermark) and the lag
// between them, each null when not known (no commit; the listing failed,
// with the reason in Error), and the member consuming it (null when
// none). A partition with no commit lags from its log start offset.
type groupOffset struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Committed *int64  `json:"committed"`
	EndOffset *int64  `json:"end_offset"`
	Lag       *int64  `json:"lag"`
	MemberID  *string `json:"member_id"`
	ClientID  *string `json:"client_id"`
	Host      *string `json:"host"`
	Error     string  `json:"error,omitempty"`
}

// groupOffsetsOf lists a group's lag by topic and partition.
func groupOffsetsOf(lag kadm.GroupLag) []groupOffset {
	out := []groupOffset{}
	for _, p := range lag.Sorted() {
		o := groupOffset{Topic: p.Topic, Partition: p.Partition, Error: errString(p.Err)}
		if p.Commit.At >= 0 {
			o.Committed = &p.Commit.At
		}
		if p.End.Err == nil {
			o.EndOffset = &p.End.Offset
		}
		if p.Err == nil {
			o.Lag = &p.Lag
		}
		if m := p.Member; m != nil {
			o.MemberID, o.ClientID, o.Host = &m.MemberID, &m.ClientID, &m.ClientHost
		}
		out = append(out, o)
	}
	return out
}

// groupTotalLag sums the lag of offsets, as kadm's GroupLag.Total does;
// and prints it with each topic's share when there are several: 7
// (orders 5, audit 2).
func groupTotalLag(offsets []groupOffset) (int64, string) {
	byTopic := map[string]int64{}
	for _, o := range offsets {
		byTopic[o.Topic] += 0
		if o.Lag != nil && *o.Lag > 0 {
			byTopic[o.Topic] += *o.Lag
		}
	}
	return totalLagText(byTopic)
}

// totalLagText is the sum of byTopic, and its text: the sum, with each
// topic's share when there are several.
func totalLagText(byTopic map[string]int64) (int64, string) {
	var total int64
	for _, l := range byTopic {
		total += l
	}
	text := strconv.FormatInt(total, 10)
	if len(byTopic) > 1 {
		var parts []string
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			parts = append(parts, fmt.Sprintf("%s %d", t, byTopic[t]))
		}
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	return total, text
}

// classicGroupView is a classic group: DescribeGroups' answer and its lag.
type classicGroupView struct {
	groupHeader
	ProtocolType string          `json:"protocol_type"`
	Protocol     string          `json:"protocol"`
	Members      []classicMember `json:"members"`
	Offsets      []groupOffset   `json:"offsets"`
	TotalLag     int64           `json:"total_lag"`
}

// classicMember is a classic group's member; its assignment is null when
// it is not a consumer's (another protocol type, connect for one).
type classicMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID *string            `json:"instance_id"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"`
}

// classicGroupOf is a described classic group with its lag.
func classicGroupOf(l kadm.DescribedGroupLag) *classicGroupView {
	v := &classicGroupView{
		groupHeader:  groupHeader{Group: l.Group, Type: "classic", Coordinator: l.Coordinator.NodeID, State: l.State},
		ProtocolType: l.ProtocolType,
		Protocol:     l.Protocol,
		Members:      []classicMember{},
		Offsets:      groupOffsetsOf(l.Lag),
	}
	v.TotalLag, _ = groupTotalLag(v.Offsets)
	for _, m := range l.Members {
		cm := classicMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost}
		if c, ok := m.Assigned.AsConsumer(); ok {
			// A topic named twice has its partitions together.
			cm.Assignment = map[string][]int32{}
			for _, t := range c.Topics {
				cm.Assignment[t.Topic] = append(cm.Assignment[t.Topic], t.Partitions...)
			}
			for _, ps := range cm.Assignment {
				slices.Sort(ps)
			}
		}
		v.Members = append(v.Members, cm)
	}
	return v
}

func (v *classicGroupView) text(w io.Writer) error {
	protocol := orDash(v.ProtocolType)
	if v.Protocol != "" {
		protocol += "/" + v.Protocol
	}
	_, total := groupTotalLag(v.Offsets)
	header := [][2]string{
		{"GROUP", v.Group},
		{"COORDINATOR", strconv.Itoa(int(v.Coordinator))},
		{"STATE", v.State},
		{"PROTOCOL", protocol},
		{"MEMBERS", strconv.Itoa(len(v.Members))},
		{"TOTAL-LAG", total},
	}
	members := [][]string{{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"}}
	for _, m := range v.Members {
		members = append(members, []string{m.MemberID, instanceID(m.InstanceID), m.ClientID, m.Host, partitionsText(m.Assignment, "")})
	}
	return printDescribed(w, header, members, v.Offsets)
}

// consumerGroupView is a consumer group (KIP-848): its
// ConsumerGroupDescribe answer and its lag.
type consumerGroupView struct {
	groupHeader
	GroupEpoch      int32            `json:"group_epoch"`
	AssignmentEpoch int32            `json:"assignment_epoch"`
	Assignor        string           `json:"assignor"`
	Members         []consumerMember `json:"members"`
	Offsets         []groupOffset    `json:"offsets"`
	TotalLag        int64            `json:"total_lag"`
}

// consumerMember is a consumer group's member: the partitions it owns
// (Assignment) and those it is to own (TargetAssignment) differ while it
// reconciles.
type consumerMember struct {
	MemberID         string             `json:"member_id"`
	InstanceID       *string            `json:"instance_id"`
	ClientID         string             `json:"client_id"`
	Host             string             `json:"host"`
	MemberEpoch      int32              `json:"member_epoch"`
	Assignment       map[string][]int32 `json:"assignment"`
	TargetAssignment map[string][]int32 `json:"target_assignment"`
}

// describeConsumerGroup is a consumer group (KIP-848) from its
// ConsumerGroupDescribe answer, with its lag computed as kadm's Lag
// computes a classic group's: its committed offsets, and the start and
// end offsets of every partition assigned or committed.
func describeConsumerGroup(ctx context.Context, adm *kadm.Client, d kadm.DescribedConsumerGroup) (*consumerGroupView, error) {
	lag, err := consumerGroupLag(ctx, adm, d)
	if err != nil {
		return nil, err
	}
	v := &consumerGroupView{
		groupHeader:     groupHeader{Group: d.Group, Type: "consumer", Coordinator: d.Coordinator.NodeID, State: d.State},
		GroupEpoch:      d.Epoch,
		AssignmentEpoch: d.AssignmentEpoch,
		Assignor:        d.AssignorName,
		Members:         []consumerMember{},
		Offsets:         groupOffsetsOf(lag),
	}
	v.TotalLag, _ = groupTotalLag(v.Offsets)
	for _, m := range d.Members {
		v.Members = append(v.Members, consumerMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Assignment: topicsSetMap(m.Assignment), TargetAssignment: topicsSetMap(m.TargetAssignment)})
	}
	return v, nil
}

func (v *consumerGroupView) text(w io.Writer) error {
	_, total := groupTotalLag(v.Offsets)
	header := [][2]string{
		{"GROUP", v.Group},
		{"COORDINATOR", strconv.Itoa(int(v.Coordinator))},
		{"STATE", v.State},
		{"PROTOCOL", "consumer/" + orDash(v.Assignor)},
		{"GROUP-EPOCH", strconv.Itoa(int(v.GroupEpoch))},
		{"ASSIGNMENT-EPOCH", strconv.Itoa(int(v.AssignmentEpoch))},
		{"MEMBERS", strconv.Itoa(len(v.Members))},
		{"TOTAL-LAG", total},
	}
	members := [][]string{{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT", "TARGET"}}
	for _, m := range v.Members {
		members = append(members, []string{m.MemberID, instanceID(m.InstanceID), m.ClientID, m.Host,
			strconv.Itoa(int(m.MemberEpoch)), partitionsText(m.Assignment, ""), partitionsText(m.TargetAssignment, "")})
	}
	return printDescribed(w, header, members, v.Offsets)
}

// consumerGroupLag returns a consumer group's lag: kadm computes it, for
// a group described without members, over the committed offsets and an
// uncommitted entry (lag from the log start offset) for each partition
// assigned and not committed; then each assigned partition gets its
// member.
func consumerGroupLag(ctx context.Context, adm *kadm.Client, d kadm.DescribedConsumerGroup) (kadm.GroupLag, error) {
	committed, err := adm.FetchOffsets(ctx, d.Group)
	if err != nil {
		return nil, err
	}
	commits := make(kadm.OffsetResponses)
	committed.Each(func(o kadm.OffsetResponse) {
		if commits[o.Topic] == nil {
			commits[o.Topic] = map[int32]kadm.OffsetResponse{}
		}
		commits[o.Topic][o.Partition] = o
	})
	partitions := committed.Partitions()
	partitions.Merge(d.AssignedPartitions())
	for t, ps := range d.AssignedPartitions() {
		for p := range ps {
			if _, ok := commits.Lookup(t, p); ok {
				continue
			}
			if commits[t] == nil {
				commits[t] = map[int32]kadm.OffsetResponse{}
			}
			commits[t][p] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: t, Partition: p, At: -1, LeaderEpoch: -1}}
		}
	}
	var starts, ends kadm.ListedOffsets
	if topics := partitions.Topics(); len(topics) > 0 {
		// As kadm's Lag: a partition missing from a failed listing shows
		// its error in the table rather than failing the command.
		if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil && starts == nil {
			return nil, err
		}
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil && ends == nil {
			return nil, err
		}
	}
	lag := kadm.CalculateGroupLagWithStartOffsets(kadm.DescribedGroup{Group: d.Group, State: d.State}, commits, starts, ends)
	members := make([]kadm.DescribedGroupMember, len(d.Members))
	for i, m := range d.Members {
		members[i] = kadm.DescribedGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		for t, ps := range m.Assignment {
			for p := range ps {
				if l, ok := lag.Lookup(t, p); ok {
					l.Member = &members[i]
					lag[t][p] = l
				}
			}
		}
	}
	return lag, nil
}

// printDescribed prints a group's header lines, its members table (its
// first row the header; nothing when it has no members) and its offsets
// (nothing when none).
func printDescribed(w io.Writer, header [][2]string, members [][]string, offsets []groupOffset) error {
	width := len("COORDINATOR") + 2
	for _, h := range header {
		width = max(width, len(h[0])+2)
	}
	for _, h := range header {
		fmt.Fprintf(w, "%-*s%s\n", width, h[0], h[1])
	}
	if len(members) > 1 {
		fmt.Fprintln(w)
		if err := printTable(w, members); err != nil {
			return err
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := [][]string{{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST", "ERROR"}}
	for _, o := range offsets {
		member, client, host := "-", "-", "-"
		if o.MemberID != nil {
			member, client, host = *o.MemberID, *o.ClientID, *o.Host
		}
		rows = append(rows, []string{o.Topic, strconv.Itoa(int(o.Partition)), offsetText(o.Committed), offsetText(o.EndOffset), offsetText(o.Lag),
			member, client, host, o.Error})
	}
	return printTable(w, dropEmptyLastColumn(rows))
}

// offsetText prints an offset or lag, "-" when not known.
func offsetText(o *int64) string {
	if o == nil {
		return "-"
	}
	return strconv.FormatInt(*o, 10)
}

func instanceID(id *string) string {
	if id == nil {
		return "-"
	}
	return *id
}

// topicsSetMap is the partitions of s with any by topic, sorted.
func topicsSetMap(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range s.Sorted() {
		if len(t.Partitions) > 0 {
			out[t.Topic] = t.Partitions
		}
	}
	return out
}

// partitionsText prints partitions by topic (or tasks by subtopology,
// with sep ":") as topic[0,1] other[2], sorted by topic, or "-" when
// there are none.
func partitionsText(m map[string][]int32, sep string) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+sep+int32List(m[k]))
	}
	return strings.Join(parts, " ")
}
