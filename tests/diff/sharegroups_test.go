//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group cases (KIP-932) walk share groups through their states
// on both brokers: ShareGroupHeartbeat with member ids the client made
// (both brokers get the same ones, so no naming is needed), the errors of
// a wrong epoch, an unknown member, a group of another type and empty
// ids; ShareGroupDescribe, ListGroups, DescribeGroups and DeleteGroups of
// share groups; and the share offsets admin APIs. Records, acquisitions
// and acknowledgements are in sharefetch_test.go.

// Member ids as a share consumer makes them (Kafka's Uuid, base64, 22
// characters).
const (
	shareMemberA = "c2hhcmUtbWVtYmVyLWEwMQ"
	shareMemberB = "c2hhcmUtbWVtYmVyLWIwMg"
	shareMemberX = "c2hhcmUtbWVtYmVyLXgwOQ" // never joins
)

// shareHeartbeat is a ShareGroupHeartbeat; at epoch 0 (a join) it
// subscribes to topics.
func shareHeartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 || len(topics) > 0 {
		req.SubscribedTopicNames = topics
	}
	return req
}

func shareDescribe(groups ...string) *kmsg.ShareGroupDescribeRequest {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = groups
	return req
}

// shareJoin makes member join group on both brokers, subscribed to topics,
// compares the answers, and returns them.
func shareJoin(c *dcase, group, member string, topics ...string) (kafka, skein *kmsg.ShareGroupHeartbeatResponse) {
	c.t.Helper()
	k, s := c.compare(shareHeartbeat(group, member, 0, topics...))
	if k == nil || s == nil || k.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode != 0 || s.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode != 0 {
		c.t.Fatalf("%s could not join %s: kafka %+v, skein %+v", member, group, k, s)
	}
	return k.(*kmsg.ShareGroupHeartbeatResponse), s.(*kmsg.ShareGroupHeartbeatResponse)
}

// assigned counts the partitions of a heartbeat's assignment, -1 for none
// (null: unchanged).
func assigned(r *kmsg.ShareGroupHeartbeatResponse) int {
	if r.Assignment == nil {
		return -1
	}
	n := 0
	for _, tp := range r.Assignment.TopicPartitions {
		n += len(tp.Partitions)
	}
	return n
}

// waitShareAssigned heartbeats a member that joined with answers join on
// each broker, at the epoch each gave it last, until its assignment names
// the given number of partitions, and returns the member's epoch on each
// broker ([Kafka's, Skein's]). NB: Kafka assigns a partition only once its
// share state is initialized (InitializeShareGroupState, which a heartbeat
// starts, and which bumps the group epoch), so that its member gets the
// partitions some heartbeats after its join, at the next epoch; Skein
// assigns them in the join's answer (differences.go).
func waitShareAssigned(t *testing.T, group, member string, join [2]*kmsg.ShareGroupHeartbeatResponse, partitions int) [2]int32 {
	t.Helper()
	epochs := [2]int32{join[0].MemberEpoch, join[1].MemberEpoch}
	for i, addr := range []string{kafkaAddr, skeinAddr} {
		if assigned(join[i]) == partitions {
			continue
		}
		waitFor(t, addr+" to assign "+member, func() bool {
			req := shareHeartbeat(group, member, epochs[i])
			req.SetVersion(1)
			o := send(addr, req)
			if o.err != nil {
				return false
			}
			r := o.resp.(*kmsg.ShareGroupHeartbeatResponse)
			if r.ErrorCode != 0 {
				t.Fatalf("%s: heartbeat of %s: %v", addr, member, kerr.ErrorForCode(r.ErrorCode))
			}
			epochs[i] = r.MemberEpoch
			return assigned(r) == partitions
		})
	}
	return epochs
}

// joinAssigned is shareJoin then waitShareAssigned.
func joinAssigned(c *dcase, group, member string, partitions int, topics ...string) [2]int32 {
	c.t.Helper()
	k, s := shareJoin(c, group, member, topics...)
	return waitShareAssigned(c.t, group, member, [2]*kmsg.ShareGroupHeartbeatResponse{k, s}, partitions)
}

// hbEach is a heartbeat of member at the epoch each broker gave it plus
// delta, for compareEach.
func hbEach(group, member string, epochs [2]int32, delta int32, topics ...string) func(bool) kmsg.Request {
	return func(kafka bool) kmsg.Request {
		e := epochs[1]
		if kafka {
			e = epochs[0]
		}
		return shareHeartbeat(group, member, e+delta, topics...)
	}
}

// TestShareGroup walks a share group through its states: a join with a
// member id the client made, a heartbeat at the member's epoch, at a
// wrong one and as an unknown member, empty member and group ids, a
// second member, DeleteGroups while it has members, the members leaving
// (-1), and DeleteGroups of the empty group; ShareGroupDescribe and
// DescribeGroups after each step that changes the group.
func TestShareGroup(t *testing.T) {
	c := newCase(t)
	// NB: one partition, which both members share: how the simple
	// assignors split more partitions differs (TestShareGroupAssignor).
	const topic = "diff-share-group"
	createTopic(c, newTopic(topic, 1, 1))
	const group = "diff-share"
	waitCoordinator(t, group)
	describe := func() {
		t.Helper()
		c.compare(shareDescribe(group))
		c.compare(describeGroups(group))
	}

	describe() // no such group
	epochs := joinAssigned(c, group, shareMemberA, 1, topic)
	describe()
	t.Run("heartbeat", func(t *testing.T) {
		newCase(t).compareEach(-1, hbEach(group, shareMemberA, epochs, 0))
	})
	t.Run("heartbeat changing the subscription", func(t *testing.T) {
		k, s := newCase(t).compareEach(-1, hbEach(group, shareMemberA, epochs, 0, topic, "diff-share-group-unknown"))
		if k != nil && s != nil {
			epochs = [2]int32{k.(*kmsg.ShareGroupHeartbeatResponse).MemberEpoch, s.(*kmsg.ShareGroupHeartbeatResponse).MemberEpoch}
		}
	})
	t.Run("epoch ahead", func(t *testing.T) {
		newCase(t).compareEach(-1, hbEach(group, shareMemberA, epochs, 5))
	})
	t.Run("epoch behind", func(t *testing.T) {
		newCase(t).compareEach(-1, hbEach(group, shareMemberA, epochs, -1))
	})
	t.Run("unknown member", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat(group, shareMemberX, 1))
	})
	t.Run("unknown member leaving", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat(group, shareMemberX, -1))
	})
	t.Run("empty member id", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat(group, "", 0, topic))
	})
	t.Run("empty group id", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat("", shareMemberA, 0, topic))
	})
	t.Run("join without topics", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat(group, shareMemberB, 0))
	})
	t.Run("epoch below -1", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat(group, shareMemberA, -2))
	})
	t.Run("unknown group, epoch 1", func(t *testing.T) {
		newCase(t).compare(shareHeartbeat("diff-share-never", shareMemberA, 1))
	})

	joinAssigned(c, group, shareMemberB, 1, topic)
	describe()
	c.compare(deleteGroups(group)) // NON_EMPTY_GROUP
	c.compare(shareHeartbeat(group, shareMemberB, -1))
	c.compare(shareHeartbeat(group, shareMemberA, -1))
	describe()                                         // Empty
	c.compare(shareHeartbeat(group, shareMemberA, -1)) // left already
	c.compare(deleteGroups(group))
	describe() // gone
}

// TestShareGroupOtherTypes compares what the share APIs say of a group of
// another type, and what the other types' APIs say of a share group.
func TestShareGroupOtherTypes(t *testing.T) {
	c := newCase(t)
	const topic = "diff-share-types"
	createTopic(c, newTopic(topic, 1, 1))
	const consumer, shared = "diff-share-types-consumer", "diff-share-types-share"
	waitCoordinator(t, consumer)
	waitCoordinator(t, shared)

	cgh := consumerJoin(c, consumer, topic)
	joinAssigned(c, shared, shareMemberA, 1, topic)

	for _, s := range []struct {
		name string
		req  kmsg.Request
	}{
		{"share heartbeat of a consumer group", shareHeartbeat(consumer, shareMemberA, 0, topic)},
		{"share describe of a consumer group", shareDescribe(consumer)},
		{"share describe of a share group and two others", shareDescribe(shared, consumer, "diff-share-types-never")},
		{"consumer heartbeat of a share group", func() kmsg.Request {
			req := *cgh
			req.Group = shared
			return &req
		}()},
		{"consumer describe of a share group", func() kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{shared}
			return req
		}()},
		{"classic join of a share group", joinGroup(shared, "", topic)},
		{"describe groups of both", describeGroups(shared, consumer)},
		{"offset fetch of a share group", func() kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group, rg.MemberEpoch = shared, -1
			req.Groups = append(req.Groups, rg)
			return req
		}()},
	} {
		t.Run(s.name, func(t *testing.T) { newCase(t).compare(s.req) })
	}
	t.Run("list groups", func(t *testing.T) {
		for _, types := range [][]string{{"share"}, {"consumer"}, {"share", "consumer"}, {"Share"}} {
			req := kmsg.NewPtrListGroupsRequest()
			req.TypesFilter = types
			newCase(t).compare(req)
		}
	})
	c.compare(shareHeartbeat(shared, shareMemberA, -1))
	c.compare(deleteGroups(shared, consumer)) // the consumer group has its member
}

// describeShareOffsets asks for group's share offsets of topics' partitions
// (topics null: every partition the group has state for).
func describeShareOffsets(group string, topics map[string][]int32) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	if topics != nil {
		g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
		for t, ps := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = t, ps
			g.Topics = append(g.Topics, rt)
		}
	}
	req.Groups = append(req.Groups, g)
	return req
}

// alterShareOffsets sets group's share start offsets, topic to partition
// to offset.
func alterShareOffsets(group string, topics map[string]map[int32]int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for t, ps := range topics {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = t
		for p, o := range ps {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func deleteShareOffsets(group string, topics ...string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestShareGroupOffsets compares Describe, Alter and
// DeleteShareGroupOffsets: on a group that does not exist, on an empty
// share group, on one with a member (NON_EMPTY_GROUP), with unknown
// topics and partitions, and on a consumer group.
func TestShareGroupOffsets(t *testing.T) {
	c := newCase(t)
	const topic = "diff-share-offsets"
	createTopic(c, newTopic(topic, 2, 1))
	for range 3 {
		produceOK(c, topic, 0, batch(batchHeader{}, records(2, 1000)...))
	}
	const group, consumer = "diff-share-offsets", "diff-share-offsets-consumer"
	waitCoordinator(t, group)
	waitCoordinator(t, consumer)
	consumerJoin(c, consumer, topic)
	unknown := "diff-share-offsets-unknown"

	steps := []struct {
		name string
		req  kmsg.Request
	}{
		{"describe, no such group", describeShareOffsets(group, map[string][]int32{topic: {0, 1}})},
		{"alter, no such group", alterShareOffsets(group, map[string]map[int32]int64{topic: {0: 2}})},
		{"describe after alter", describeShareOffsets(group, map[string][]int32{topic: {0, 1}})},
		{"describe all topics", describeShareOffsets(group, nil)},
		// NB: not a partition the topic does not have: Kafka 4.2.1 asks its
		// share coordinator, which retries for ever, and never answers.
		{"describe unknown topic", describeShareOffsets(group, map[string][]int32{unknown: {0}})},
		{"alter the empty group", alterShareOffsets(group, map[string]map[int32]int64{topic: {0: 4, 1: 0}})},
		{"alter past the end", alterShareOffsets(group, map[string]map[int32]int64{topic: {0: 100}})},
		{"alter to -1", alterShareOffsets(group, map[string]map[int32]int64{topic: {0: -1}})},
		{"alter unknown topic and partition", alterShareOffsets(group, map[string]map[int32]int64{topic: {9: 0}, unknown: {0: 0}})},
		{"describe after alters", describeShareOffsets(group, map[string][]int32{topic: {0, 1}})},
		{"delete unknown topic", deleteShareOffsets(group, unknown)},
		{"delete no topics", deleteShareOffsets(group)},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { newCase(t).compare(s.req) })
	}

	shareJoin(c, group, shareMemberA, topic)
	for _, s := range []struct {
		name string
		req  kmsg.Request
	}{
		{"alter with a member", alterShareOffsets(group, map[string]map[int32]int64{topic: {0: 0}})},
		{"delete with a member", deleteShareOffsets(group, topic)},
		{"describe with a member", describeShareOffsets(group, map[string][]int32{topic: {0, 1}})},
	} {
		t.Run(s.name, func(t *testing.T) { newCase(t).compare(s.req) })
	}
	c.compare(shareHeartbeat(group, shareMemberA, -1))

	for _, s := range []struct {
		name string
		req  kmsg.Request
	}{
		{"delete", deleteShareOffsets(group, topic)},
		{"describe after delete", describeShareOffsets(group, map[string][]int32{topic: {0, 1}})},
		{"describe a consumer group", describeShareOffsets(consumer, map[string][]int32{topic: {0}})},
		{"alter a consumer group", alterShareOffsets(consumer, map[string]map[int32]int64{topic: {0: 0}})},
		{"delete a consumer group's", deleteShareOffsets(consumer, topic)},
	} {
		t.Run(s.name, func(t *testing.T) { newCase(t).compare(s.req) })
	}
}

// produceOK produces b to topic's partition on both brokers and fails the
// case unless both took it.
func produceOK(c *dcase, topic string, partition int32, b []byte) {
	c.t.Helper()
	k, s := c.compareAt(produce(topic, partition, b), 12)
	for _, r := range []kmsg.Response{k, s} {
		if r == nil || r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			c.t.Fatalf("produce to %s: %+v", topic, r)
		}
	}
}

// consumerJoin makes a KIP-848 consumer group of one member, subscribed to
// topic, on both brokers, and returns the join for the case to reuse.
func consumerJoin(c *dcase, group, topic string) *kmsg.ConsumerGroupHeartbeatRequest {
	c.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, "diff-member-848-share0000000", 0
	req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	c.compare(req)
	return req
}
