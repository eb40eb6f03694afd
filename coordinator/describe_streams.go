package coordinator

// StreamsGroupDescribe (KIP-1071), as Kafka 4.2's GroupMetadataManager
// answers it: an unknown group id is GROUP_ID_NOT_FOUND "Group X not
// found.", one of another kind "Group X is not a streams group."; a
// streams group shows its state, epochs, topology (subtopologies with
// their internal topics' partition counts as configured, or as declared
// while the topology is not ready) and members with their assignments
// and targets.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeStreams answers a StreamsGroupDescribe request for this group
// (one group id).
func (g *Group) DescribeStreams(req *kmsg.StreamsGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	resp.Groups = append(resp.Groups, g.describeStreams())
	return resp
}

func (g *Group) describeStreams() kmsg.StreamsGroupDescribeResponseGroup {
	rg := kmsg.NewStreamsGroupDescribeResponseGroup()
	rg.Group = g.ID
	switch g.typeOwner() {
	case "streams":
	case "":
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group "+g.ID+" not found.")
		return rg
	default:
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group "+g.ID+" is not a streams group.")
		return rg
	}
	s := g.streams
	rg.State, rg.Epoch, rg.AssignmentEpoch = g.streamsState(), s.epoch, s.targetEpoch
	if s.topology != nil {
		t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		t.Epoch = s.topology.epoch
		if s.configured.ready() {
			t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			for _, st := range s.topology.subs {
				n := s.configured.tasks[st.id]
				ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				ds.SubtopologyID, ds.SourceTopics, ds.RepartitionSinkTopics = st.id, nonNil(st.sourceTopics), nonNil(st.sinks)
				ds.StateChangelogTopics = describeTopicInfos(st.changelogs, func(streamsTopicInfo) int32 { return n })
				ds.RepartitionSourceTopics = describeTopicInfos(st.repartitionSources, func(ti streamsTopicInfo) int32 {
					if ti.partitions != 0 {
						return ti.partitions
					}
					_, k, _ := g.topics().Topic(ti.name)
					return k
				})
				t.Subtopologies = append(t.Subtopologies, ds)
			}
		} else {
			// Not configured against the topics (yet): the topology as
			// the members declared it, as Kafka's
			// StreamsTopology.asStreamsGroupDescribeTopology, topics
			// sorted by name.
			t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			declared := func(ti streamsTopicInfo) int32 { return ti.partitions }
			byName := func(ts []kmsg.TopicInfo) []kmsg.TopicInfo {
				slices.SortFunc(ts, func(a, b kmsg.TopicInfo) int { return strings.Compare(a.Topic, b.Topic) })
				return ts
			}
			for _, st := range s.topology.subs {
				ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				ds.SubtopologyID = st.id
				ds.SourceTopics, ds.RepartitionSinkTopics = slices.Sorted(slices.Values(nonNil(st.sourceTopics))), slices.Sorted(slices.Values(nonNil(st.sinks)))
				ds.StateChangelogTopics = byName(describeTopicInfos(st.changelogs, declared))
				ds.RepartitionSourceTopics = byName(describeTopicInfos(st.repartitionSources, declared))
				t.Subtopologies = append(t.Subtopologies, ds)
			}
		}
		rg.Topology = &t
	}
	rg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := s.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.host
		dm.RackID = nullable(m.rack)
		dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
		if m.endpoint != nil {
			e := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			e.Host, e.Port = m.endpoint.Host, m.endpoint.Port
			dm.UserEndpoint = &e
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, kv := range m.tags {
			ct := kmsg.NewStreamsGroupDescribeResponseGroupMemberClientTag()
			ct.Key, ct.Value = kv[0], kv[1]
			dm.ClientTags = append(dm.ClientTags, ct)
		}
		dm.TaskOffsets, dm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		dm.Assignment = streamsAssignment(m.assigned)
		target, ok := s.target[id]
		if !ok {
			target = newStreamsTasks()
		}
		dm.TargetAssignment = streamsAssignment(target)
		rg.Members = append(rg.Members, dm)
	}
	return rg
}

func streamsAssignment(t streamsTasks) kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = taskIDs(t.active), taskIDs(t.standby), taskIDs(t.warmup)
	return a
}

func describeTopicInfos(ts []streamsTopicInfo, partitions func(streamsTopicInfo) int32) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, ti := range ts {
		d := kmsg.NewTopicInfo()
		d.Topic, d.NumPartitions, d.ReplicationFactor = ti.name, partitions(ti), ti.replication
		d.Configs = []kmsg.TopicInfoConfig{}
		for _, kv := range ti.configs {
			c := kmsg.NewTopicInfoConfig()
			c.Key, c.Value = kv[0], kv[1]
			d.Configs = append(d.Configs, c)
		}
		out = append(out, d)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
