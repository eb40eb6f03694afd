package cli

// Streams groups (KIP-1071) in skein group: listed by ListGroups (type
// "streams") and described by StreamsGroupDescribe, as kafka-streams-groups
// shows them. kadm (v1.20) has no streams group API and kgo (v1.22) does
// not route StreamsGroupDescribe to a group's coordinator ("client is too
// old"), so each group's coordinator is found with FindCoordinator and
// asked directly.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedStreamsGroup is a streams group's StreamsGroupDescribe answer
// and the node that gave it.
type describedStreamsGroup struct {
	kmsg.StreamsGroupDescribeResponseGroup
	Coordinator int32
}

// describeStreamsGroups describes groups with StreamsGroupDescribe at
// their coordinators. A group that is not a streams group (Kafka answers
// GROUP_ID_NOT_FOUND), or whose coordinator does not answer, is left out;
// the error is for a failure to ask at all.
func describeStreamsGroups(ctx context.Context, flags *clientFlags, adm *kadm.Client, groups []string) (map[string]describedStreamsGroup, error) {
	out := map[string]describedStreamsGroup{}
	if len(groups) == 0 {
		return out, nil
	}
	byNode := map[int32][]string{}
	for _, c := range adm.FindGroupCoordinators(ctx, groups...) {
		if c.Err == nil {
			byNode[c.NodeID] = append(byNode[c.NodeID], c.Name)
		}
	}
	if len(byNode) == 0 {
		return out, nil
	}
	cl, err := flags.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for node, gs := range byNode {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = gs
		resp, err := cl.Broker(int(node)).Request(ctx, req)
		if err != nil {
			// NB: a broker without streams groups refuses the request
			// (UNSUPPORTED_VERSION): its groups are not streams groups.
			continue
		}
		for _, g := range resp.(*kmsg.StreamsGroupDescribeResponse).Groups {
			if g.ErrorCode == 0 {
				out[g.Group] = describedStreamsGroup{g, node}
			}
		}
	}
	return out, nil
}

// streamsGroupView is a streams group (KIP-1071): its
// StreamsGroupDescribe answer and the lag of its committed offsets.
type streamsGroupView struct {
	groupHeader
	GroupEpoch      int32 `json:"group_epoch"`
	AssignmentEpoch int32 `json:"assignment_epoch"`
	// TopologyEpoch is null while the group has no topology.
	TopologyEpoch *int32               `json:"topology_epoch"`
	Members       []streamsMember      `json:"members"`
	Subtopologies []streamsSubtopology `json:"subtopologies"`
	Offsets       []groupOffset        `json:"offsets"`
	TotalLag      int64                `json:"total_lag"`
}

// streamsMember is a streams group's member: its tasks, partitions by
// subtopology.
type streamsMember struct {
	MemberID     string             `json:"member_id"`
	ProcessID    string             `json:"process_id"`
	ClientID     string             `json:"client_id"`
	Host         string             `json:"host"`
	MemberEpoch  int32              `json:"member_epoch"`
	ActiveTasks  map[string][]int32 `json:"active_tasks"`
	StandbyTasks map[string][]int32 `json:"standby_tasks"`
	WarmupTasks  map[string][]int32 `json:"warmup_tasks"`
}

// streamsSubtopology is a subtopology of a streams group's topology.
type streamsSubtopology struct {
	Subtopology             string   `json:"subtopology"`
	SourceTopics            []string `json:"source_topics"`
	RepartitionSourceTopics []string `json:"repartition_source_topics"`
	RepartitionSinkTopics   []string `json:"repartition_sink_topics"`
	StateChangelogTopics    []string `json:"state_changelog_topics"`
}

// tasksMap is tasks as partitions by subtopology, sorted; a subtopology
// named twice has its partitions together.
func tasksMap(ts []kmsg.TaskIDs) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range ts {
		if len(t.Partitions) > 0 {
			out[t.SubtopologyID] = append(out[t.SubtopologyID], t.Partitions...)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// describeStreamsGroup describes a streams group: its state, group,
// assignment and topology epochs; each member with its process, client,
// host, epoch and active, standby and warm-up tasks; the topology's
// subtopologies; and the lag of its committed offsets on the source
// topics, each partition with the member whose active task reads it.
func describeStreamsGroup(ctx context.Context, adm *kadm.Client, d describedStreamsGroup) (*streamsGroupView, error) {
	var subs []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology
	v := &streamsGroupView{
		groupHeader:     groupHeader{Group: d.Group, Type: "streams", Coordinator: d.Coordinator, State: d.State},
		GroupEpoch:      d.Epoch,
		AssignmentEpoch: d.AssignmentEpoch,
		Members:         []streamsMember{},
		Subtopologies:   []streamsSubtopology{},
	}
	if d.Topology != nil {
		v.TopologyEpoch = &d.Topology.Epoch
		subs = d.Topology.Subtopologies
	}
	lag, err := streamsGroupLag(ctx, adm, d, subs)
	if err != nil {
		return nil, err
	}
	v.Offsets = groupOffsetsOf(lag)
	v.TotalLag, _ = groupTotalLag(v.Offsets)
	for _, m := range d.Members {
		v.Members = append(v.Members, streamsMember{MemberID: m.MemberID, ProcessID: m.ProcessID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch: m.MemberEpoch, ActiveTasks: tasksMap(m.Assignment.ActiveTasks), StandbyTasks: tasksMap(m.Assignment.StandbyTasks),
			WarmupTasks: tasksMap(m.Assignment.WarmupTasks)})
	}
	names := func(ts []kmsg.TopicInfo) []string {
		out := []string{}
		for _, t := range ts {
			out = append(out, t.Topic)
		}
		return out
	}
	for _, s := range subs {
		v.Subtopologies = append(v.Subtopologies, streamsSubtopology{
			Subtopology:             s.SubtopologyID,
			SourceTopics:            append([]string{}, s.SourceTopics...),
			RepartitionSourceTopics: names(s.RepartitionSourceTopics),
			RepartitionSinkTopics:   append([]string{}, s.RepartitionSinkTopics...),
			StateChangelogTopics:    names(s.StateChangelogTopics),
		})
	}
	return v, nil
}

func (v *streamsGroupView) text(w io.Writer) error {
	topology := "-"
	if v.TopologyEpoch != nil {
		topology = strconv.Itoa(int(*v.TopologyEpoch))
	}
	_, total := groupTotalLag(v.Offsets)
	header := [][2]string{
		{"GROUP", v.Group},
		{"COORDINATOR", strconv.Itoa(int(v.Coordinator))},
		{"STATE", v.State},
		{"PROTOCOL", "streams"},
		{"GROUP-EPOCH", strconv.Itoa(int(v.GroupEpoch))},
		{"ASSIGNMENT-EPOCH", strconv.Itoa(int(v.AssignmentEpoch))},
		{"TOPOLOGY-EPOCH", topology},
		{"MEMBERS", strconv.Itoa(len(v.Members))},
		{"TOTAL-LAG", total},
	}
	warmup := slices.ContainsFunc(v.Members, func(m streamsMember) bool { return len(m.WarmupTasks) > 0 })
	members := [][]string{{"MEMBER-ID", "PROCESS-ID", "CLIENT-ID", "HOST", "EPOCH", "ACTIVE", "STANDBY"}}
	if warmup {
		members[0] = append(members[0], "WARMUP")
	}
	for _, m := range v.Members {
		r := []string{m.MemberID, orDash(m.ProcessID), m.ClientID, m.Host, strconv.Itoa(int(m.MemberEpoch)),
			partitionsText(m.ActiveTasks, ":"), partitionsText(m.StandbyTasks, ":")}
		if warmup {
			r = append(r, partitionsText(m.WarmupTasks, ":"))
		}
		members = append(members, r)
	}
	width := len("ASSIGNMENT-EPOCH") + 2
	for _, h := range header {
		fmt.Fprintf(w, "%-*s%s\n", width, h[0], h[1])
	}
	if len(members) > 1 {
		fmt.Fprintln(w)
		if err := printTable(w, members); err != nil {
			return err
		}
	}
	if len(v.Subtopologies) > 0 {
		fmt.Fprintln(w)
		rows := [][]string{{"SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SINKS", "CHANGELOGS"}}
		list := func(s []string) string {
			if len(s) == 0 {
				return "-"
			}
			return strings.Join(s, ",")
		}
		for _, s := range v.Subtopologies {
			sources := append(slices.Clone(s.SourceTopics), s.RepartitionSourceTopics...)
			rows = append(rows, []string{s.Subtopology, list(sources), list(s.RepartitionSinkTopics), list(s.StateChangelogTopics)})
		}
		if err := printTable(w, rows); err != nil {
			return err
		}
	}
	return printDescribed(w, nil, nil, v.Offsets)
}

// streamsGroupLag returns a streams group's lag over its committed
// offsets (a Kafka Streams application commits its source topics'
// offsets under its group), each partition of a source topic given the
// member whose active task reads it: task (subtopology, p) reads
// partition p of each of the subtopology's source topics.
func streamsGroupLag(ctx context.Context, adm *kadm.Client, d describedStreamsGroup, subs []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology) (kadm.GroupLag, error) {
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
	var starts, ends kadm.ListedOffsets
	if topics := committed.Partitions().Topics(); len(topics) > 0 {
		if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil && starts == nil {
			return nil, err
		}
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil && ends == nil {
			return nil, err
		}
	}
	lag := kadm.CalculateGroupLagWithStartOffsets(kadm.DescribedGroup{Group: d.Group, State: d.State}, commits, starts, ends)
	sources := map[string][]string{}
	for _, s := range subs {
		sources[s.SubtopologyID] = s.SourceTopics
	}
	members := make([]kadm.DescribedGroupMember, len(d.Members))
	for i, m := range d.Members {
		members[i] = kadm.DescribedGroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		for _, task := range m.Assignment.ActiveTasks {
			for _, t := range sources[task.SubtopologyID] {
				for _, p := range task.Partitions {
					if l, ok := lag.Lookup(t, p); ok {
						l.Member = &members[i]
						lag[t][p] = l
					}
				}
			}
		}
	}
	return lag, nil
}
