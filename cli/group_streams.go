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

// tasksString prints tasks as Kafka's tools do, subtopology and
// partitions: 0:[0,1] 1:[2], or "-" for none.
func tasksString(ts []kmsg.TaskIDs) string {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b kmsg.TaskIDs) int {
		return strings.Compare(a.SubtopologyID, b.SubtopologyID)
	})
	var parts []string
	for _, t := range ts {
		if len(t.Partitions) > 0 {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			parts = append(parts, t.SubtopologyID+":"+int32List(ps))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// printStreamsGroup prints a streams group: its state, group, assignment
// and topology epochs; each member with its process, client, host, epoch
// and active, standby (and warm-up, if any) tasks; the topology's
// subtopologies; and the lag of its committed offsets on the source
// topics, each partition with the member whose active task reads it.
func printStreamsGroup(ctx context.Context, adm *kadm.Client, w io.Writer, d describedStreamsGroup) error {
	topology := "-"
	var subs []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology
	if d.Topology != nil {
		topology = strconv.Itoa(int(d.Topology.Epoch))
		subs = d.Topology.Subtopologies
	}
	lag, err := streamsGroupLag(ctx, adm, d, subs)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", d.Group, err)
	}
	header := [][2]string{
		{"GROUP", d.Group},
		{"COORDINATOR", strconv.Itoa(int(d.Coordinator))},
		{"STATE", d.State},
		{"PROTOCOL", "streams"},
		{"GROUP-EPOCH", strconv.Itoa(int(d.Epoch))},
		{"ASSIGNMENT-EPOCH", strconv.Itoa(int(d.AssignmentEpoch))},
		{"TOPOLOGY-EPOCH", topology},
		{"MEMBERS", strconv.Itoa(len(d.Members))},
		{"TOTAL-LAG", totalLag(lag)},
	}
	warmup := slices.ContainsFunc(d.Members, func(m kmsg.StreamsGroupDescribeResponseGroupMember) bool {
		return tasksString(m.Assignment.WarmupTasks) != "-"
	})
	members := [][]string{{"MEMBER-ID", "PROCESS-ID", "CLIENT-ID", "HOST", "EPOCH", "ACTIVE", "STANDBY"}}
	if warmup {
		members[0] = append(members[0], "WARMUP")
	}
	for _, m := range d.Members {
		r := []string{m.MemberID, orDash(m.ProcessID), m.ClientID, m.ClientHost, strconv.Itoa(int(m.MemberEpoch)),
			tasksString(m.Assignment.ActiveTasks), tasksString(m.Assignment.StandbyTasks)}
		if warmup {
			r = append(r, tasksString(m.Assignment.WarmupTasks))
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
	if len(subs) > 0 {
		fmt.Fprintln(w)
		rows := [][]string{{"SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SINKS", "CHANGELOGS"}}
		names := func(ts []kmsg.TopicInfo) []string {
			var out []string
			for _, t := range ts {
				out = append(out, t.Topic)
			}
			return out
		}
		list := func(s []string) string {
			if len(s) == 0 {
				return "-"
			}
			return strings.Join(s, ",")
		}
		for _, s := range subs {
			sources := append(slices.Clone(s.SourceTopics), names(s.RepartitionSourceTopics)...)
			rows = append(rows, []string{s.SubtopologyID, list(sources), list(s.RepartitionSinkTopics), list(names(s.StateChangelogTopics))})
		}
		if err := printTable(w, rows); err != nil {
			return err
		}
	}
	return printDescribed(w, nil, nil, lag)
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
