//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group cases walk one group through its states on both brokers, with
// the same requests, and compare every answer: the ids a broker chose for
// the group's members are given one name in both answers.

const groupTopic = "diff-groups"

func joinGroup(group, member string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version, meta.Topics = 0, topics
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

func syncGroup(group, member string, generation int32, assign map[string][]int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, member, generation
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	if assign != nil {
		a := kmsg.NewConsumerMemberAssignment()
		for topic, parts := range assign {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic, t.Partitions = topic, parts
			a.Topics = append(a.Topics, t)
		}
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = member, a.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func heartbeat(group, member string, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, member, generation
	return req
}

// offsetCommit commits offset for groupTopic's partition 0, naming the
// topic by id (topicID, from v10) and by name.
func offsetCommit(group, member string, generation int32, offset int64, topicID [16]byte) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, member, generation
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = groupTopic, topicID
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = 0, offset, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func describeGroups(groups ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	return req
}

func deleteGroups(groups ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	return req
}

// waitCoordinator polls both brokers until each is the coordinator of
// group, ready: Kafka creates __consumer_offsets at the first
// FindCoordinator and loads its partition a moment later, answering
// COORDINATOR_NOT_AVAILABLE until then.
func waitCoordinator(t *testing.T, group string) {
	t.Helper()
	for _, addr := range []string{kafkaAddr, skeinAddr} {
		waitFor(t, addr+" to coordinate "+group, func() bool {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.SetVersion(4)
			req.CoordinatorKeys = []string{group}
			o := send(addr, req)
			if o.err != nil || o.resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode != 0 {
				return false
			}
			d := describeGroups(group)
			d.SetVersion(5)
			o = send(addr, d)
			return o.err == nil && o.resp.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code &&
				o.resp.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode != kerr.NotCoordinator.Code &&
				o.resp.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode != kerr.CoordinatorNotAvailable.Code
		})
	}
}

// memberIDs returns the member ids the two JoinGroup answers carry.
func memberIDs(t *testing.T, k, s kmsg.Response) (string, string) {
	t.Helper()
	if k == nil || s == nil {
		t.Fatal("a broker did not answer JoinGroup")
	}
	return k.(*kmsg.JoinGroupResponse).MemberID, s.(*kmsg.JoinGroupResponse).MemberID
}

// TestClassicGroup walks a classic group through Empty, CompletingRebalance,
// Stable and back, with the errors of stale generations and unknown
// members on the way: JoinGroup, SyncGroup, Heartbeat, OffsetCommit,
// OffsetFetch, LeaveGroup, DeleteGroups, each answer compared, and the
// group's state through DescribeGroups after each step.
func TestClassicGroup(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic(groupTopic, 2, 1))
	const group = "diff-classic"
	describe := func() {
		t.Helper()
		c.compare(describeGroups(group))
	}
	waitCoordinator(t, group)
	ids := topicIDSet{}
	ids.add(t, groupTopic)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
	c.compare(fc)
	describe() // a group no one joined

	// v4+: the first join gets a member id to join with
	// (MEMBER_ID_REQUIRED, KIP-394).
	ko, so := c.exchange(joinGroup(group, "", groupTopic), -1)
	kid, sid := memberIDs(t, ko.resp, so.resp)
	c.name(kid, sid, "member-A")
	c.check("JoinGroup without a member id", ko, so)
	// NB: no DescribeGroups here: Kafka creates the group for the pending
	// member in memory without a record, and describes it Empty or not at
	// all depending on whether its coordinator's committed snapshot has
	// moved past the join yet.
	k, s := c.compareEach(-1, func(kafka bool) kmsg.Request {
		return joinGroup(group, pick(kafka, kid, sid), groupTopic)
	})
	if k == nil || s == nil {
		t.Fatal("a broker did not answer the join")
	}
	generation := k.(*kmsg.JoinGroupResponse).Generation
	describe() // CompletingRebalance

	member := func(f func(string) kmsg.Request) func(bool) kmsg.Request {
		return func(kafka bool) kmsg.Request { return f(pick(kafka, kid, sid)) }
	}
	c.compareEach(-1, member(func(m string) kmsg.Request { return heartbeat(group, m, generation) }))
	c.compareEach(-1, member(func(m string) kmsg.Request {
		return syncGroup(group, m, generation+1, map[string][]int32{groupTopic: {0, 1}})
	}))
	c.compareEach(-1, member(func(m string) kmsg.Request {
		return syncGroup(group, m, generation, map[string][]int32{groupTopic: {0, 1}})
	}))
	describe() // Stable

	c.compareEach(-1, member(func(m string) kmsg.Request { return heartbeat(group, m, generation) }))
	c.compareEach(-1, member(func(m string) kmsg.Request { return heartbeat(group, m, generation-1) }))
	c.compareEach(-1, member(func(m string) kmsg.Request { return heartbeat(group, m, generation+1) }))
	c.compare(heartbeat(group, "diff-unknown-member", generation))

	// OffsetCommit by topic name (v9) and by topic id (the newest).
	for _, v := range []int16{9, commonMax(t, kmsg.NewPtrOffsetCommitRequest())} {
		commit := func(m string, generation int32, offset int64) func(bool) kmsg.Request {
			return func(kafka bool) kmsg.Request {
				id := m
				if m == "member-A" {
					id = pick(kafka, kid, sid)
				}
				return offsetCommit(group, id, generation, offset, ids.of(groupTopic, kafka))
			}
		}
		c.compareEach(v, commit("member-A", generation, 1))
		c.compareEach(v, commit("member-A", generation-1, 2))
		c.compareEach(v, commit("member-A", generation+1, 2))
		c.compareEach(v, commit("diff-unknown-member", generation, 2))
		c.compareEach(v, commit("", -1, 3)) // a commit from outside the group
	}

	// OffsetFetch by topic name (v9) and by topic id (the newest), with a
	// topic that does not exist.
	for _, v := range []int16{9, commonMax(t, kmsg.NewPtrOffsetFetchRequest())} {
		c.compareEach(v, func(kafka bool) kmsg.Request {
			of := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group, rg.MemberEpoch = group, -1
			for _, topic := range []string{groupTopic, "diff-groups-unknown"} {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.TopicID, rt.Partitions = topic, ids.of(topic, kafka), []int32{0, 1}
				rg.Topics = append(rg.Topics, rt)
			}
			of.Groups = append(of.Groups, rg)
			return of
		})
	}

	c.compare(deleteGroups(group)) // NON_EMPTY_GROUP

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = group
	c.compareEach(-1, func(kafka bool) kmsg.Request {
		req := *leave
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = pick(kafka, kid, sid)
		req.Members = []kmsg.LeaveGroupRequestMember{m}
		return &req
	})
	describe()       // Empty
	c.compare(leave) // no members named: INVALID_REQUEST? compared either way

	c.compare(deleteGroups(group, "diff-classic-never"))
	describe() // Dead
}

// pick returns a for Kafka, b for Skein.
func pick(kafka bool, a, b string) string {
	if kafka {
		return a
	}
	return b
}

// TestConsumerGroup walks a KIP-848 consumer group through its states:
// ConsumerGroupHeartbeat to join (a member id the client chose, KIP-1082),
// to take its assignment, with a fenced epoch and as an unknown member,
// and to leave; ConsumerGroupDescribe after each step; DeleteGroups on the
// non-empty and then the empty group.
func TestConsumerGroup(t *testing.T) {
	c := newCase(t)
	const topic = "diff-groups848"
	createTopic(c, newTopic(topic, 2, 1))
	ids := topicIDSet{}
	ids.add(t, topic)
	const group = "diff-consumer"
	const member = "diff-member-848-a0b1c2d3e4f5"
	describe := func() {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		c.compare(req)
	}
	hb := func(epoch int32, owned bool) func(bool) kmsg.Request {
		return func(kafka bool) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
			if epoch == 0 {
				req.RebalanceTimeoutMillis = 30000
				req.SubscribedTopicNames = []string{topic}
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}
			if owned {
				tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				tp.TopicID, tp.Partitions = ids.of(topic, kafka), []int32{0, 1}
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{tp}
			}
			return req
		}
	}

	waitCoordinator(t, group)
	describe() // no such group
	k, s := c.compareEach(-1, hb(0, false))
	if k == nil || s == nil {
		t.Fatal("a broker did not answer the first heartbeat")
	}
	epoch := k.(*kmsg.ConsumerGroupHeartbeatResponse).MemberEpoch
	describe()
	c.compareEach(-1, hb(epoch, true)) // owns what it was given
	describe()
	c.compareEach(-1, hb(epoch+5, false))
	c.compareEach(-1, func(bool) kmsg.Request {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, "diff-member-848-unknown00000", 1
		return req
	})
	c.compare(deleteGroups(group))   // NON_EMPTY_GROUP
	c.compareEach(-1, hb(-1, false)) // leaves
	describe()
	c.compare(deleteGroups(group))
	describe()
}

// TestClassicGroupRebalance compares a rebalance of a stable classic group
// that a second member joins: the group in PreparingRebalance while the
// first member has not rejoined (its heartbeat answered
// REBALANCE_IN_PROGRESS, its commit too), both joins answered once it
// rejoins, and the group Stable with two members after both syncs.
func TestClassicGroupRebalance(t *testing.T) {
	c := newCase(t)
	const group = "diff-classic-rebalance"
	topic := groupTopic + "-rebalance"
	createTopic(c, newTopic(topic, 2, 1))
	waitCoordinator(t, group)
	describe := func() {
		t.Helper()
		c.compare(describeGroups(group))
	}

	// member A joins alone and syncs.
	ko, so := c.exchange(joinGroup(group, "", topic), -1)
	ka, sa := memberIDs(t, ko.resp, so.resp)
	c.name(ka, sa, "member-A")
	join := func(kid, sid string) func(bool) kmsg.Request {
		return func(kafka bool) kmsg.Request { return joinGroup(group, pick(kafka, kid, sid), topic) }
	}
	k, _ := c.compareEach(-1, join(ka, sa))
	gen := k.(*kmsg.JoinGroupResponse).Generation
	c.compareEach(-1, func(kafka bool) kmsg.Request {
		return syncGroup(group, pick(kafka, ka, sa), gen, map[string][]int32{topic: {0, 1}})
	})
	describe() // Stable, one member

	// member B asks for an id, then joins: its join waits for A.
	ko, so = c.exchange(joinGroup(group, "", topic), -1)
	kb, sb := memberIDs(t, ko.resp, so.resp)
	c.name(kb, sb, "member-B")
	var bk, bs outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		bk, bs = c.exchangeEach(-1, join(kb, sb))
	}()
	for _, addr := range []string{kafkaAddr, skeinAddr} {
		waitFor(t, addr+" to prepare the rebalance", func() bool {
			req := describeGroups(group)
			req.SetVersion(5)
			o := send(addr, req)
			return o.err == nil && o.resp.(*kmsg.DescribeGroupsResponse).Groups[0].State == "PreparingRebalance"
		})
	}
	describe() // PreparingRebalance
	c.compareEach(-1, func(kafka bool) kmsg.Request { return heartbeat(group, pick(kafka, ka, sa), gen) })

	// A rejoins: both joins are answered, A leads the new generation.
	k, _ = c.compareEach(-1, join(ka, sa))
	<-done
	c.check("JoinGroup of the member that waited", bk, bs)
	gen = k.(*kmsg.JoinGroupResponse).Generation
	describe() // CompletingRebalance
	// The leader syncs first: a follower's sync waits for the leader's.
	c.compareEach(-1, func(kafka bool) kmsg.Request {
		req := syncGroup(group, pick(kafka, ka, sa), gen, map[string][]int32{topic: {0}})
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, []int32{1}
		a.Topics = append(a.Topics, at)
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = pick(kafka, kb, sb), a.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, ga)
		return req
	})
	c.compareEach(-1, func(kafka bool) kmsg.Request {
		return syncGroup(group, pick(kafka, kb, sb), gen, nil)
	})
	describe() // Stable, two members
}
