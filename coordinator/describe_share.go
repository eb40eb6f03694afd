package coordinator

// ShareGroupDescribe (KIP-932) and what the other group APIs say of a
// share group, as Kafka 4.2's GroupMetadataManager answers them:
//
//   - ShareGroupDescribe describes share groups only: an unknown group id
//     is GROUP_ID_NOT_FOUND "Group X not found.", one held by a classic
//     or consumer group GROUP_ID_NOT_FOUND "Group X is not a share
//     group."
//   - The state is Empty without members, Stable with; the assignor is
//     "simple"; each member carries its epoch, rack, client id and host,
//     subscription and assignment (topics by id and name, a topic the
//     image no longer knows left out).
//   - DescribeGroups of a share group is Dead, from v6 GROUP_ID_NOT_FOUND
//     "Group X is not a classic group."; ConsumerGroupDescribe of one
//     "Group X is not a consumer group." (describe_consumer.go).

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShare answers a ShareGroupDescribe request for this group
// (transport sends each group id to its own actor, one per request).
func (g *Group) DescribeShare(req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	resp.Groups = append(resp.Groups, g.describeShare())
	return resp
}

func (g *Group) describeShare() kmsg.ShareGroupDescribeResponseGroup {
	rg := kmsg.NewShareGroupDescribeResponseGroup()
	rg.GroupID = g.ID
	switch g.typeOwner() {
	case "share":
	case "":
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " not found.")
		return rg
	default:
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " is not a share group.")
		return rg
	}
	s := g.share
	rg.GroupState = g.shareState()
	rg.GroupEpoch, rg.AssignmentEpoch = s.epoch, s.targetEpoch
	rg.Assignor = "simple"
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	topics := g.topics()
	for _, id := range ids {
		m := s.members[id]
		rm := kmsg.NewShareGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch, rm.RackID = m.id, m.epoch, nullable(m.rack)
		rm.ClientID, rm.ClientHost = m.clientID, m.host
		rm.SubscribedTopicNames = slices.Clone(m.subscribed)
		if rm.SubscribedTopicNames == nil {
			rm.SubscribedTopicNames = []string{}
		}
		names, parts := m.assigned.sorted()
		rm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range names {
			if tid, _, ok := topics.Topic(t); !ok || tid != s.topicIDs[t] {
				continue // deleted (or deleted and created again)
			}
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = s.topicIDs[t], t, parts[t]
			rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}
