package tests

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// consumerGroupBroker starts a broker whose consumer-protocol groups
// (KIP-848) heartbeat often and expire quickly.
func consumerGroupBroker(t *testing.T) *broker {
	return startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 3
		c.GroupConsumerSessionTimeoutMs, c.GroupConsumerMinSessionTimeoutMs = 2000, 1000
		c.GroupConsumerHeartbeatIntervalMs, c.GroupConsumerMinHeartbeatIntervalMs = 200, 100
		c.GroupMinSessionTimeoutMs = 500 // classic members, as groupBroker
	})
}

// ownership records, from the clients' assigned, revoked and lost
// callbacks, which member owns each partition now. KIP-848 members have
// epochs of their own, so the check is not per generation but at every
// moment: a partition assigned to a member while another still holds it
// (its revoke callback not yet run) is a failure.
type ownership struct {
	mu       sync.Mutex
	owner    map[int32]string
	failures []string
	// lost names the members that lost partitions (fenced or unknown
	// to the coordinator) rather than giving them up.
	lost []string
	// revokes counts, by member, the revocations that took partitions.
	revokes map[string]int
}

func (o *ownership) lostBy(name string, ps []int32) {
	o.mu.Lock()
	if len(ps) > 0 {
		o.lost = append(o.lost, name)
	}
	o.mu.Unlock()
	o.revoked(name, ps)
}

func (o *ownership) assigned(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != name {
			o.failures = append(o.failures, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, name, cur))
		}
		o.owner[p] = name
	}
}

func (o *ownership) revoked(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(ps) > 0 {
		if o.revokes == nil {
			o.revokes = map[string]int{}
		}
		o.revokes[name]++
	}
	for _, p := range ps {
		if o.owner[p] == name {
			delete(o.owner, p)
		}
	}
}

// check fails the test for every partition that two members held at once
// and, when what names an event the members were to carry on through, for
// every member that lost partitions rather than giving them up.
func (o *ownership) check(t *testing.T, what string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.failures {
		t.Error(f)
	}
	if what != "" && len(o.lost) > 0 {
		t.Errorf("members lost their partitions across %s: %v", what, o.lost)
	}
}

func (o *ownership) owns(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.owner {
		if m == name {
			n++
		}
	}
	return n
}

// start848Member starts a franz-go group consumer speaking the KIP-848
// protocol (kgo.ServerSideBalancer with the sticky balancer, which asks the
// broker for the uniform assignor).
func start848Member(t *testing.T, b *broker, l *groupLedger, o *ownership, name, group, topic string) *groupMember {
	return start848MemberAt(t, b.addr(), l, o, name, group, topic)
}

func start848MemberAt(t *testing.T, addr string, l *groupLedger, o *ownership, name, group, topic string, opts ...kgo.Opt) *groupMember {
	return startTrackedMember(t, addr, l, o, name, group, topic, append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))...)
}

// startTrackedMember starts a franz-go group consumer whose partitions o
// follows; without kgo.ServerSideBalancer it speaks the classic protocol
// (cooperative-sticky, kgo's default).
func startTrackedMember(t *testing.T, addr string, l *groupLedger, o *ownership, name, group, topic string, opts ...kgo.Opt) *groupMember {
	return startMemberAt(t, addr, l, name, group, topic, append(opts,
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { o.assigned(name, a[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("%s: commit before revoking: %v", name, err)
			}
			o.revoked(name, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { o.lostBy(name, r[topic]) }),
	)...)
}

// TestConsumerGroup848: franz-go consumers with the server-side balancer
// (KIP-848, ConsumerGroupHeartbeat v1, uniform assignor) consume every
// record of a six-partition topic while a second and third member join, a
// member that stops heartbeating is expired by its session timeout, and a
// member leaves (epoch -1). KIP-848: "a partition is assigned to a new
// owner only once the previous owner has acknowledged its revocation" — so
// no partition is held by two members at once, as the clients' callbacks
// saw it; at the end the committed offsets equal the end offsets.
func TestConsumerGroup848(t *testing.T) {
	b := consumerGroupBroker(t)
	adm := b.admin()
	ctx := ctxFor(t)
	topic, group := "orders848", "g848"
	mustCreate(t, ctx, adm, topic, 6, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}

	produceN(t, prod, topic, 0, 600)
	m1 := start848Member(t, b, l, o, "m1", group, topic)
	m2 := start848Member(t, b, l, o, "m2", group, topic)
	eventually(t, "the first 600 records", func() bool { return l.distinct() >= 600 })
	eventually(t, "m1 and m2 share the partitions", func() bool { return o.owns("m1") == 3 && o.owns("m2") == 3 })

	// A classic member may join a consumer group (TestConsumerGroupMigration),
	// but only with the consumer protocol's subscription in its metadata.
	raw := b.client()
	join := joinReq("", "")
	join.Group = group
	wantErr(t, "classic join to a consumer group with a bad subscription", rawReq[*kmsg.JoinGroupResponse](t, raw, join).ErrorCode, kerr.InconsistentGroupProtocol)
	join.ProtocolType = "connect"
	wantErr(t, "classic join of another protocol type", rawReq[*kmsg.JoinGroupResponse](t, raw, join).ErrorCode, kerr.InconsistentGroupProtocol)

	m3 := start848Member(t, b, l, o, "m3", group, topic)
	produceN(t, prod, topic, 600, 1200)
	eventually(t, "1200 records", func() bool { return l.distinct() >= 1200 })
	eventually(t, "two partitions each", func() bool { return o.owns("m1") == 2 && o.owns("m2") == 2 && o.owns("m3") == 2 })

	// A member that joins and never heartbeats again is expired by its
	// session timeout; its target partitions go back to the others.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = group, "silent-member", 0
	hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 10000, []string{topic}
	hb.ServerAssignor, hb.Topics = kmsg.StringPtr("uniform"), []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hr := rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb)
	wantErr(t, "raw member joins", hr.ErrorCode, nil)
	if hr.MemberEpoch <= 0 {
		t.Fatalf("raw member epoch %d", hr.MemberEpoch)
	}
	// It heartbeats, acknowledging what it is given, until it owns
	// partitions (the others revoke them first), and only then goes
	// silent: were it silent from its join, its session could end before
	// any partition was revoked for it.
	epoch, owned := hr.MemberEpoch, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	eventually(t, "the silent member owning partitions", func() bool {
		hb.MemberEpoch, hb.Topics = epoch, owned
		hb.SubscribedTopicNames, hb.ServerAssignor, hb.RebalanceTimeoutMillis = nil, nil, -1 // unchanged
		r := rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb)
		wantErr(t, "raw member heartbeats", r.ErrorCode, nil)
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for _, at := range r.Assignment.Topics {
				rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				rt.TopicID, rt.Partitions = at.TopicID, at.Partitions
				owned = append(owned, rt)
			}
		}
		return len(owned) > 0
	})
	// OffsetCommit with member epochs: a wrong epoch is stale, an unknown
	// member unknown.
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = group, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rawReq[*kmsg.OffsetCommitResponse](t, raw, req).Topics[0].Partitions[0].ErrorCode
	}
	wantErr(t, "commit with a future epoch", commit("silent-member", epoch+5), kerr.StaleMemberEpoch)
	wantErr(t, "commit by an unknown member", commit("nobody", epoch), kerr.UnknownMemberID)
	produceN(t, prod, topic, 1200, 1800)
	eventually(t, "1800 records", func() bool { return l.distinct() >= 1800 })
	eventually(t, "the silent member's partitions back with the others", func() bool {
		return o.owns("m1") == 2 && o.owns("m2") == 2 && o.owns("m3") == 2
	})
	wantErr(t, "heartbeat of the expired member", rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb).ErrorCode, kerr.UnknownMemberID)

	// m1 leaves (member epoch -1): m2 and m3 take its partitions.
	m1.close()
	produceN(t, prod, topic, 1800, 2400)
	eventually(t, "2400 records", func() bool { return l.distinct() >= 2400 })
	eventually(t, "m2 and m3 share the partitions", func() bool { return o.owns("m2") == 3 && o.owns("m3") == 3 })

	m2.close()
	m3.close()
	o.check(t, "")
	checkCommittedAtEnd(t, adm, group, topic)
}

// TestConsumerGroup848ClassicGroupRefused: with
// group.consumer.migration.policy=disabled, a heartbeat of the consumer
// protocol to a group id held by a classic group with members is answered
// GROUP_ID_NOT_FOUND, as Kafka does ("Cannot upgrade classic group …").
func TestConsumerGroup848ClassicGroupRefused(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 3
		c.GroupConsumerMigrationPolicy = "disabled"
	})
	raw := b.client()
	// A classic member joins (v4+ asks for a member id first).
	join := joinReq("", "")
	join.SessionTimeoutMillis = 30000
	jr := rawReq[*kmsg.JoinGroupResponse](t, raw, join)
	join.MemberID = jr.MemberID
	jr = rawReq[*kmsg.JoinGroupResponse](t, raw, join)
	wantErr(t, "classic join", jr.ErrorCode, nil)

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "raw", "m", 0
	hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 10000, []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantErr(t, "consumer heartbeat to a classic group", rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb).ErrorCode, kerr.GroupIDNotFound)
}

// TestConsumerGroup848SurvivesRestart: a consumer-protocol group is
// written to __consumer_offsets (Kafka's ConsumerGroup* records) and
// rebuilt from it, so across a graceful broker restart its members carry
// on with their epochs and partitions: none is fenced or told it is
// unknown (which would make it lose its partitions), every record is
// consumed, and the committed offsets reach the end offsets.
func TestConsumerGroup848SurvivesRestart(t *testing.T) {
	b := consumerGroupBroker(t)
	survive848(t, b.addr(), "restart848", "the restart", b.restart)
}

// survive848 runs two KIP-848 franz-go members on a four-partition topic
// of the broker at addr, lets happen what the test is about once they
// share the partitions, and checks that they carried on: every record
// consumed, no partition held twice or lost, commits at the end offsets.
func survive848(t *testing.T, addr, topic, what string, happen func()) {
	t.Helper()
	ctx := ctxFor(t)
	group := "g-" + topic
	mustCreate(t, ctx, kadm.NewClient(newClientFor(t, addr)), topic, 4, nil)
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	produceN(t, newClientFor(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 0, 400)
	m1 := start848MemberAt(t, addr, l, o, "m1", group, topic)
	m2 := start848MemberAt(t, addr, l, o, "m2", group, topic)
	eventually(t, "400 records", func() bool { return l.distinct() >= 400 })
	eventually(t, "m1 and m2 share the partitions", func() bool { return o.owns("m1") == 2 && o.owns("m2") == 2 })

	happen()
	produceN(t, newClientFor(t, addr, kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 400, 800)
	eventually(t, "800 records", func() bool { return l.distinct() >= 800 })
	m1.close()
	m2.close()
	o.check(t, what)
	checkCommittedAtEnd(t, kadm.NewClient(newClientFor(t, addr)), group, topic)
}

// TestConsumerGroup848SurvivesSIGKILL: a `skein node` child process is
// killed with SIGKILL under a consumer-protocol group. A heartbeat that
// changed the group was answered only once its records were durable, so
// the node comes back with the group its members were told about: they
// carry on with their epochs and partitions (none lost or held twice),
// and every record is consumed, with the committed offsets at the end.
func TestConsumerGroup848SurvivesSIGKILL(t *testing.T) {
	node := newChildNode(t)
	node.env = []string{"SKEIN_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS=200", "SKEIN_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS=100",
		"SKEIN_OFFSETS_TOPIC_NUM_PARTITIONS=3"}
	node.start()
	survive848(t, node.addr, "killed848", "the SIGKILL", func() {
		node.kill()
		node.start()
	})
}

// TestConsumerGroup848CoordinatorPanic: the group's coordinator actor
// panics (an injected fault) on a heartbeat while a second member joins;
// it restarts, rebuilds the consumer group from __consumer_offsets, and
// the members go on with their epochs: every record consumed, no
// partition held twice at once, none lost, commits at the end offsets.
func TestConsumerGroup848CoordinatorPanic(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "fault848", "g848-fault"
	mustCreate(t, ctx, adm, topic, 4, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	produceN(t, prod, topic, 0, 400)
	m1 := start848Member(t, b, l, o, "m1", group, topic)
	eventually(t, "400 records", func() bool { return l.distinct() >= 400 })
	b.injectFault(`{"actor": "node/1/groups/` + group + `", "kind": "panic", "message": "Request", "count": 1}`)
	m2 := start848Member(t, b, l, o, "m2", group, topic)
	produceN(t, prod, topic, 400, 800)
	eventually(t, "800 records", func() bool { return l.distinct() >= 800 })
	eventually(t, "the coordinator restarted", func() bool {
		a := b.actors()["node/1/groups/"+group]
		return a != nil && a.Restarts > 0
	})
	eventually(t, "m1 and m2 share the partitions", func() bool { return o.owns("m1") == 2 && o.owns("m2") == 2 })
	m1.close()
	m2.close()
	o.check(t, "the coordinator's restart")
	checkCommittedAtEnd(t, adm, group, topic)
}

// TestConsumerGroup848Regex: a franz-go consumer subscribing by regular
// expression (kgo.ConsumeRegex with the server-side balancer sends
// SubscribedTopicRegex) gets every partition of the matching topics and
// none of the others, and a matching topic created later joins its
// assignment without a restart.
func TestConsumerGroup848Regex(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		mustCreate(t, ctx, adm, topic, 2, nil)
	}
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		produceN(t, prod, topic, 0, 20)
	}
	var mu sync.Mutex
	got := map[string]map[string]bool{} // topic → partition/offset
	count := func(topic string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[topic])
	}
	cl := b.client(kgo.ConsumerGroup("g848-regex"), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				if got[r.Topic] == nil {
					got[r.Topic] = map[string]bool{}
				}
				got[r.Topic][fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
				mu.Unlock()
			})
		}
	}()
	defer func() { cl.Close(); <-done }()
	eventually(t, "every record of rx-a and rx-b", func() bool { return count("rx-a") == 20 && count("rx-b") == 20 })

	mustCreate(t, ctx, adm, "rx-c", 3, nil)
	produceN(t, prod, "rx-c", 0, 30)
	eventually(t, "the records of rx-c, created later", func() bool { return count("rx-c") == 30 })
	if n := count("other"); n != 0 {
		t.Errorf("%d records of a topic the regex does not match were consumed", n)
	}
	described, err := adm.DescribeConsumerGroups(ctx, "g848-regex")
	if err != nil {
		t.Fatal(err)
	}
	g := described["g848-regex"]
	if len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil {
		t.Errorf("described: %+v", g)
	}
}

// TestConsumerGroup848StaticMember: a static member of a consumer-protocol
// group (hand-made heartbeats, as the Java client sends them: franz-go's
// leave carries no instance id, which Kafka takes as a plain leave) leaves
// with epoch -2 and comes back under a new member id with the same
// instance id: it gets its partitions back at once, the group epoch does
// not move, and the franz-go member beside it keeps its partitions
// without a revocation. The replaced member id is fenced.
func TestConsumerGroup848StaticMember(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "static848", "g848-static"
	mustCreate(t, ctx, adm, topic, 4, nil)
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	m1 := start848Member(t, b, l, o, "m1", group, topic)
	eventually(t, "m1 owns every partition", func() bool { return o.owns("m1") == 4 })

	raw := b.client()
	var topicID [16]byte
	hb := func(member string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		req.InstanceID, req.RebalanceTimeoutMillis = kmsg.StringPtr("static-1"), 10000
		if epoch == 0 {
			req.SubscribedTopicNames = []string{topic}
		}
		if owned != nil {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = topicID, owned
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{rt}
		}
		return rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, req)
	}
	partitionsOf := func(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
		var ps []int32
		if r.Assignment != nil {
			for _, at := range r.Assignment.Topics {
				topicID = at.TopicID
				ps = append(ps, at.Partitions...)
			}
		}
		return ps
	}
	r := hb("s1", 0, []int32{})
	wantErr(t, "static member joins", r.ErrorCode, nil)
	epoch, owned := r.MemberEpoch, []int32{}
	eventually(t, "the static member gets two partitions", func() bool {
		r = hb("s1", epoch, owned)
		if r.ErrorCode != 0 {
			t.Fatalf("static member heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned = partitionsOf(r)
		}
		return len(owned) == 2
	})
	eventually(t, "m1 down to two partitions", func() bool { return o.owns("m1") == 2 })
	before, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	revoked := o.revokes["m1"]
	o.mu.Unlock()

	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = group, "s1", -2, kmsg.StringPtr("static-1")
	wantErr(t, "static leave", rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, leave).ErrorCode, nil)
	r = hb("s2", 0, []int32{})
	wantErr(t, "static member back as s2", r.ErrorCode, nil)
	if got := partitionsOf(r); fmt.Sprint(got) != fmt.Sprint(owned) {
		t.Errorf("the static member came back with %v, had %v", got, owned)
	}
	after, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if e, was := after[group].Epoch, before[group].Epoch; e != was {
		t.Errorf("the group epoch moved from %d to %d across the static member's restart", was, e)
	}
	wantErr(t, "the replaced member id", hb("s1", epoch, nil).ErrorCode, kerr.FencedInstanceID)
	o.mu.Lock()
	if n := o.revokes["m1"]; n != revoked {
		t.Errorf("m1 had partitions revoked %d times during the static member's restart", n-revoked)
	}
	o.mu.Unlock()
	o.check(t, "")
	m1.close()
}

// TestConsumerGroupMigration: a rolling move between protocols, as Kafka 4
// allows it (group.consumer.migration.policy bidirectional). Two franz-go
// consumers of the classic protocol (cooperative-sticky) form a classic
// group; a third with the server-side balancer joins, which makes it a
// consumer group whose classic members stay, assigned by the broker
// through JoinGroup/SyncGroup; once it leaves, the group is classic again.
// Throughout, every record is consumed, no partition is held by two
// members at once, none is lost, and the commits reach the end offsets.
func TestConsumerGroupMigration(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "migrate", "g-migrate"
	mustCreate(t, ctx, adm, topic, 4, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	produceN(t, prod, topic, 0, 400)
	k1 := startTrackedMember(t, b.addr(), l, o, "k1", group, topic)
	k2 := startTrackedMember(t, b.addr(), l, o, "k2", group, topic)
	eventually(t, "400 records", func() bool { return l.distinct() >= 400 })
	eventually(t, "k1 and k2 share the partitions", func() bool { return o.owns("k1") == 2 && o.owns("k2") == 2 })

	n1 := start848Member(t, b, l, o, "n1", group, topic)
	eventually(t, "n1 owns a partition", func() bool { return o.owns("n1") > 0 })
	produceN(t, prod, topic, 400, 800)
	eventually(t, "800 records", func() bool { return l.distinct() >= 800 })
	eventually(t, "three members with the four partitions", func() bool {
		return o.owns("k1")+o.owns("k2")+o.owns("n1") == 4 && o.owns("k1") > 0 && o.owns("k2") > 0
	})
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	types := map[int8]int{}
	for _, m := range described[group].Members {
		types[m.MemberType]++
	}
	if types[0] != 2 || types[1] != 1 {
		t.Errorf("the consumer group's members by type (0 classic, 1 consumer): %v", types)
	}

	n1.close()
	eventually(t, "a classic group again, k1 and k2 sharing the partitions", func() bool {
		dg, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		return dg[group].State == "Stable" && len(dg[group].Members) == 2 && o.owns("k1") == 2 && o.owns("k2") == 2
	})
	produceN(t, prod, topic, 800, 1200)
	eventually(t, "1200 records", func() bool { return l.distinct() >= 1200 })
	k1.close()
	k2.close()
	o.check(t, "the migrations")
	checkCommittedAtEnd(t, adm, group, topic)
}

// TestConsumerGroup848RangeAssignor: franz-go members asking for the
// server-side range assignor (kgo.RangeBalancer with the server-side
// balancer) get contiguous ranges of each topic's partitions, as Kafka's
// range assignor gives them, and the group names "range".
func TestConsumerGroup848RangeAssignor(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "range848", "g848-range"
	mustCreate(t, ctx, adm, topic, 6, nil)
	l := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	produceN(t, b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 0, 600)
	opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}
	m1 := startTrackedMember(t, b.addr(), l, o, "m1", group, topic, opts...)
	m2 := startTrackedMember(t, b.addr(), l, o, "m2", group, topic, opts...)
	eventually(t, "600 records", func() bool { return l.distinct() >= 600 })
	eventually(t, "three partitions each", func() bool { return o.owns("m1") == 3 && o.owns("m2") == 3 })
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	g := described[group]
	if g.AssignorName != "range" {
		t.Errorf("assignor %q, want range", g.AssignorName)
	}
	for _, m := range g.Members {
		var ps []int32
		for p := range m.Assignment[topic] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		if len(ps) != 3 || ps[2]-ps[0] != 2 {
			t.Errorf("member %s: %v, want a contiguous range of three", m.ClientID, ps)
		}
	}
	m1.close()
	m2.close()
	checkCommittedAtEnd(t, adm, group, topic)
}
