package coordinator

// ConsumerGroupDescribe (KIP-848) and what DescribeGroups says of a
// consumer group, as Kafka 4.x's GroupMetadataManager answers them:
//
//   - ConsumerGroupDescribe describes consumer groups only: a group id
//     that is unknown is GROUP_ID_NOT_FOUND "Group X not found.", one held
//     by a classic group (members, a generation or only committed
//     offsets) GROUP_ID_NOT_FOUND "Group X is not a consumer group."
//   - DescribeGroups describes classic groups only: a consumer group is
//     Dead, and from v6 GROUP_ID_NOT_FOUND "Group X is not a classic
//     group."
//   - The group state is ConsumerGroup.maybeUpdateGroupState's: Empty
//     without members; Assigning while the group epoch is ahead of the
//     target assignment's; Reconciling while a member is not yet at the
//     target epoch with exactly its target partitions (it still revokes
//     some, or waits for some another member has not released); Stable
//     otherwise.
//
// Each member carries its epoch, client id and host, subscription, the
// partitions it owns (Assignment, without those it is revoking, as
// Kafka's assignedPartitions) and its target (TargetAssignment), each
// topic by id and name.
//
// As Kafka, a topic the metadata image no longer knows is left out. Skein
// keeps no rack, so RackID is null; MemberType is 1 for a consumer-protocol
// member, 0 for a classic one (classic_members.go).

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group states, as Kafka's ConsumerGroupState names them.
const (
	consumerStateEmpty       = "Empty"
	consumerStateAssigning   = "Assigning"
	consumerStateReconciling = "Reconciling"
	consumerStateStable      = "Stable"
)

// isConsumerGroup reports whether the group is of Kafka's type consumer,
// as ListGroups types it: it has had consumer-protocol members and has no
// classic member now. An empty consumer group stays one until deleted.
func (g *Group) isConsumerGroup() bool {
	return g.Exists() && len(g.members) == 0 && g.consumer.epoch > 0
}

// DescribeConsumer answers a ConsumerGroupDescribe request for this group
// (transport sends each group id to its own actor, one per request).
func (g *Group) DescribeConsumer(req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = append(resp.Groups, g.describeConsumer())
	return resp
}

func (g *Group) describeConsumer() kmsg.ConsumerGroupDescribeResponseGroup {
	rg := kmsg.NewConsumerGroupDescribeResponseGroup()
	rg.Group = g.ID
	switch {
	case !g.Exists():
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " not found.")
		return rg
	case !g.isConsumerGroup():
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " is not a consumer group.")
		return rg
	}
	c := g.consumer
	rg.State = g.consumerState()
	rg.Epoch, rg.AssignmentEpoch = c.epoch, c.targetEpoch
	rg.AssignorName = c.assignorName()
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids) // Kafka's order is its hash map's; a sorted one reads better
	topics := g.topics()
	for _, id := range ids {
		m := c.members[id]
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch = m.id, m.epoch
		rm.ClientID, rm.ClientHost = m.clientID, m.host
		// NB: Kafka answers "" for a member without a regex, not null
		// (tests/diff compares them).
		rm.InstanceID, rm.SubscribedTopicRegex = nullable(m.instanceID), kmsg.StringPtr(m.regex)
		rm.SubscribedTopics = slices.Clone(m.subscribed)
		if rm.SubscribedTopics == nil {
			rm.SubscribedTopics = []string{}
		}
		rm.Assignment.TopicPartitions = c.describePartitions(m.assigned, topics)
		rm.TargetAssignment.TopicPartitions = c.describePartitions(c.target[m.id], topics)
		rm.MemberType = 1 // consumer
		if m.classic != nil {
			rm.MemberType = 0 // a classic member (classic_members.go)
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}

// consumerState is the consumer group's state, computed as Kafka's
// ConsumerGroup.maybeUpdateGroupState does from the group epoch, the
// target assignment epoch and whether each member is reconciled to it.
func (g *Group) consumerState() string {
	c := g.consumer
	switch {
	case len(c.members) == 0:
		return consumerStateEmpty
	case c.epoch > c.targetEpoch:
		return consumerStateAssigning
	}
	for _, m := range c.members {
		if !c.reconciled(m) {
			return consumerStateReconciling
		}
	}
	return consumerStateStable
}

// reconciled reports whether a member is at the target epoch and owns
// exactly its target partitions: Kafka's isReconciledTo, member state
// STABLE (not UNREVOKED_PARTITIONS, not UNRELEASED_PARTITIONS).
func (c *consumerGroup) reconciled(m *consumerMember) bool {
	return m.epoch == c.targetEpoch && len(m.revoking) == 0 && sameSet(m.assigned, c.target[m.id])
}

// assignorName names the assignor the target is computed with: the one
// most members ask for, as Kafka's ConsumerGroup.preferredServerAssignor,
// uniform (the first of Kafka's default group.consumer.assignors) when
// none asks or on a tie.
func (c *consumerGroup) assignorName() string {
	votes := map[string]int{}
	for _, m := range c.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	if votes["range"] > votes["uniform"] {
		return "range"
	}
	return "uniform"
}

// describePartitions lists a set of partitions by topic, sorted, each
// topic with its id and name, leaving out the topics that are gone.
func (c *consumerGroup) describePartitions(set tpSet, topics Topics) []kmsg.AssignmentTopicPartition {
	names, parts := set.sorted()
	out := []kmsg.AssignmentTopicPartition{}
	for _, t := range names {
		if id, _, ok := topics.Topic(t); !ok || id != c.topicIDs[t] {
			continue // deleted (or deleted and created again)
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = c.topicIDs[t], t, parts[t]
		out = append(out, tp)
	}
	return out
}

// describeNotClassic is DescribeGroups' answer for a consumer group:
// Kafka's describeGroups asks for a classic group, and the exception it
// gets ("Group X is not a classic group.") is GROUP_ID_NOT_FOUND from v6,
// the group Dead in every version.
func (g *Group) describeNotClassic(version int16) kmsg.DescribeGroupsResponseGroup {
	rg := kmsg.NewDescribeGroupsResponseGroup()
	rg.Group, rg.State = g.ID, Dead.String()
	if version >= 6 {
		rg.ErrorCode = kerr.GroupIDNotFound.Code
		rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " is not a classic group.")
	}
	return rg
}
