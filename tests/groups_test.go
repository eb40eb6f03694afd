package tests

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/skeinlog/skein/configs"
)

// groupBroker starts a broker with a small __consumer_offsets and short
// session timeouts allowed, so that crash tests end quickly.
func groupBroker(t *testing.T) *broker {
	return startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 3
		c.GroupMinSessionTimeoutMs = 500
	})
}

// groupLedger records, from what the clients observed, every record
// consumed and which partitions each member owned in each generation.
type groupLedger struct {
	mu     sync.Mutex
	seen   map[int32]map[int64]bool // partition → offsets consumed
	count  int
	owned  map[int32]map[string]map[int32]bool // generation → member → partitions
	owners map[string]map[int32]bool           // member name → partitions owned now
}

func newGroupLedger() *groupLedger {
	return &groupLedger{seen: map[int32]map[int64]bool{}, owned: map[int32]map[string]map[int32]bool{}, owners: map[string]map[int32]bool{}}
}

// note records what member owns now, under the client's generation.
func (l *groupLedger) note(cl *kgo.Client, name, topic string, assigned, revoked map[string][]int32) {
	_, gen := cl.GroupMetadata()
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.owners[name]
	if cur == nil {
		cur = map[int32]bool{}
		l.owners[name] = cur
	}
	if l.owned[gen] == nil {
		l.owned[gen] = map[string]map[int32]bool{}
	}
	if l.owned[gen][name] == nil {
		l.owned[gen][name] = map[int32]bool{}
	}
	// Everything owned at any moment of a generation counts as owned in
	// it: before a revocation as much as after an assignment.
	for p := range cur {
		l.owned[gen][name][p] = true
	}
	for _, p := range assigned[topic] {
		cur[p] = true
		l.owned[gen][name][p] = true
	}
	for _, p := range revoked[topic] {
		delete(cur, p)
	}
}

func (l *groupLedger) consumed(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[r.Partition] == nil {
		l.seen[r.Partition] = map[int64]bool{}
	}
	if !l.seen[r.Partition][r.Offset] {
		l.seen[r.Partition][r.Offset] = true
		l.count++
	}
}

func (l *groupLedger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// check fails the test if a partition was owned by two members in one
// generation.
func (l *groupLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.owned) == 0 {
		t.Fatal("no assignment was observed")
	}
	for gen, members := range l.owned {
		owner := map[int32]string{}
		for m, ps := range members {
			for p := range ps {
				if o, ok := owner[p]; ok {
					t.Errorf("generation %d: partition %d owned by %s and %s", gen, p, o, m)
				}
				owner[p] = m
			}
		}
	}
}

// groupMember is one group consumer polling in its own goroutine.
type groupMember struct {
	name string
	cl   *kgo.Client
	done chan struct{}
}

func startMember(t *testing.T, b *broker, l *groupLedger, name, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	return startMemberAt(t, b.addr(), l, name, group, topic, opts...)
}

// startMemberAt is startMember on a broker at addr (a child node).
func startMemberAt(t *testing.T, addr string, l *groupLedger, name, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, a map[string][]int32) { l.note(cl, name, topic, a, nil) }),
		// NB: setting OnPartitionsRevoked replaces kgo's commit before a
		// revocation (and before leaving), so it commits itself.
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("%s: commit before revoking: %v", name, err)
			}
			l.note(cl, name, topic, nil, r)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, r map[string][]int32) { l.note(cl, name, topic, nil, r) }),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(l.consumed)
		}
	}()
	t.Cleanup(m.close)
	return m
}

var closeMu sync.Mutex

func (m *groupMember) close() {
	closeMu.Lock()
	defer closeMu.Unlock()
	if m.cl == nil {
		return
	}
	m.cl.Close() // leaves the group, committing what was polled
	<-m.done
	m.cl = nil
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 97)), Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctxFor(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// checkCommittedAtEnd: the group's committed offsets equal the topic's end
// offsets, as kadm reads them.
func checkCommittedAtEnd(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ctx := ctxFor(t)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var committed kadm.OffsetResponses
	eventually(t, "committed offsets at the end offsets", func() bool {
		committed, err = adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			c, found := committed.Lookup(e.Topic, e.Partition)
			if e.Offset > 0 && (!found || c.At != e.Offset) {
				ok = false
			}
		})
		return ok
	})
}

// TestGroupConsumers: franz-go group consumers with the eager range and
// the cooperative-sticky balancers consume every record of a six-partition
// topic while members join, leave (LeaveGroup) and crash (no LeaveGroup:
// the session timeout removes them). No partition is owned by two members
// of one generation, as the clients observed it, and at the end the
// committed offsets equal the end offsets.
func TestGroupConsumers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := groupBroker(t)
			adm := b.admin()
			ctx := ctxFor(t)
			topic, group := "orders", "g-"+tc.name
			mustCreate(t, ctx, adm, topic, 6, nil)
			prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			l := newGroupLedger()
			opt := kgo.Balancers(tc.balancer)

			produceN(t, prod, topic, 0, 600)
			m1 := startMember(t, b, l, "m1", group, topic, opt)
			m2 := startMember(t, b, l, "m2", group, topic, opt)
			eventually(t, "the first 600 records", func() bool { return l.distinct() >= 600 })

			// A third member joins mid-stream.
			m3 := startMember(t, b, l, "m3", group, topic, opt)
			produceN(t, prod, topic, 600, 1200)
			eventually(t, "1200 records", func() bool { return l.distinct() >= 1200 })

			// m1 leaves.
			m1.close()
			produceN(t, prod, topic, 1200, 1800)
			eventually(t, "1800 records", func() bool { return l.distinct() >= 1800 })

			// m4 joins through a connection that dies without a
			// LeaveGroup: the session timeout removes it.
			cd := &crashDialer{}
			m4 := startMember(t, b, l, "m4", group, topic, opt, kgo.Dialer(cd.dial))
			eventually(t, "m4 has partitions", func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.owners["m4"]) > 0
			})
			cd.crash()
			produceN(t, prod, topic, 1800, 2400)
			eventually(t, "2400 records", func() bool { return l.distinct() >= 2400 })

			m2.close()
			m3.close()
			m4.close()
			l.check(t)
			checkCommittedAtEnd(t, adm, group, topic)
		})
	}
}

// crashDialer gives a client connections that crash() cuts, refusing new
// ones after: the client is gone for the broker without saying so.
type crashDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	crashed bool
}

func (d *crashDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil, fmt.Errorf("crashed")
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *crashDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// TestGroupOffsetsSurviveRestart: offsets committed by a group consumer
// (with metadata) are there after a graceful broker restart, and a new
// member of the group resumes from them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "restart-offsets", "g-restart"
	mustCreate(t, ctx, adm, topic, 3, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produceN(t, prod, topic, 0, 300)
	l := newGroupLedger()
	m := startMember(t, b, l, "m1", group, topic)
	eventually(t, "300 records", func() bool { return l.distinct() >= 300 })
	m.close()
	checkCommittedAtEnd(t, adm, group, topic)

	// A simple commit (generation -1) with metadata on another group.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 7, LeaderEpoch: -1, Metadata: "meta"})
	if _, err := adm.CommitOffsets(ctx, "g-simple", os); err != nil {
		t.Fatal(err)
	}
	before, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	b.restart()
	adm2 := kadm.NewClient(b.client())
	// ListGroups first: the groups are known only from __consumer_offsets.
	listed, err := adm2.ListGroups(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed[group]; !ok || lg.State != "Empty" || lg.ProtocolType != "consumer" {
		t.Errorf("ListGroups after the restart: %+v", listed)
	}
	if _, ok := listed["g-simple"]; !ok {
		t.Errorf("ListGroups after the restart: no g-simple in %+v", listed)
	}
	after, err := adm2.FetchOffsets(ctxFor(t), group)
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.OffsetResponse) {
		a, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || a.At != o.At {
			t.Errorf("%s/%d: committed %d before the restart, %v after", o.Topic, o.Partition, o.At, a)
		}
	})
	simple, err := adm2.FetchOffsets(ctxFor(t), "g-simple")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := simple.Lookup(topic, 1); !ok || s.At != 7 || s.Metadata != "meta" {
		t.Errorf("simple commit after restart: %+v", s)
	}

	produceN(t, b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 300, 330)
	l2 := newGroupLedger()
	startMember(t, b, l2, "m2", group, topic)
	eventually(t, "the 30 new records", func() bool { return l2.distinct() >= 30 })
	l2.mu.Lock()
	defer l2.mu.Unlock()
	for p, offs := range l2.seen {
		for o := range offs {
			if c, _ := before.Lookup(topic, p); o < c.At {
				t.Errorf("partition %d: offset %d consumed again below the committed %d", p, o, c.At)
			}
		}
	}
}

// TestGroupStaticMemberRestart (KIP-345): a static member whose client
// restarts within the session timeout gets its partitions back without a
// rebalance: same generation, same assignment.
func TestGroupStaticMemberRestart(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "static", "g-static"
	mustCreate(t, ctx, adm, topic, 4, nil)
	l := newGroupLedger()
	opts := []kgo.Opt{kgo.InstanceID("instance-a"), kgo.SessionTimeout(30 * time.Second)}
	// Both clients of instance-a are one member for the ledger: the
	// instance is who owns the partitions.
	m1 := startMember(t, b, l, "a", group, topic, opts...)
	m2 := startMember(t, b, l, "b", group, topic, kgo.InstanceID("instance-b"), kgo.SessionTimeout(30*time.Second))
	var gen int32
	eventually(t, "both members stable with partitions", func() bool {
		_, g1 := m1.cl.GroupMetadata()
		_, g2 := m2.cl.GroupMetadata()
		l.mu.Lock()
		defer l.mu.Unlock()
		gen = g1
		return g1 > 0 && g1 == g2 && len(l.owners["a"]) > 0 && len(l.owners["b"]) > 0 && len(l.owners["a"])+len(l.owners["b"]) == 4
	})
	l.mu.Lock()
	owned := fmt.Sprint(l.owners["a"])
	l.mu.Unlock()
	// A static member's Close sends no LeaveGroup.
	m1.close()
	m3 := startMember(t, b, l, "a", group, topic, opts...)
	eventually(t, "the restarted static member has its partitions", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.owners["a"]) > 0
	})
	l.mu.Lock()
	got := fmt.Sprint(l.owners["a"])
	l.mu.Unlock()
	if _, g := m3.cl.GroupMetadata(); g != gen || got != owned {
		t.Errorf("after the restart: generation %d assignment %s, before: generation %d assignment %s", g, got, gen, owned)
	}
	if _, g := m2.cl.GroupMetadata(); g != gen {
		t.Errorf("the other member moved to generation %d from %d", g, gen)
	}
	l.check(t)
}

// rawGroupClient is a client for hand-made group requests; each member
// gets its own, since a JoinGroup holds its connection until the rebalance
// ends.
func rawReq[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := req.(interface {
		RequestWith(context.Context, kmsg.Requestor) (R, error)
	}).RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func joinReq(member, instance string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = "raw", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req
}

func heartbeatReq(member string, gen int32, instance string) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = "raw", member, gen
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	return req
}

func wantErr(t *testing.T, what string, code int16, want error) {
	t.Helper()
	if err := kerr.ErrorForCode(code); err != want {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// TestGroupErrors: the errors a client must see, from raw requests over
// TCP: MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// REBALANCE_IN_PROGRESS (heartbeat and sync), FENCED_INSTANCE_ID, and
// generation-checked commits.
func TestGroupErrors(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "raw-topic", 1, nil)
	md, err := adm.Metadata(ctx, "raw-topic")
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics["raw-topic"].ID
	c1, c2 := b.client(), b.client()

	r := rawReq[*kmsg.JoinGroupResponse](t, c1, joinReq("", ""))
	wantErr(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	m1 := r.MemberID
	r = rawReq[*kmsg.JoinGroupResponse](t, c1, joinReq(m1, ""))
	wantErr(t, "join", r.ErrorCode, nil)
	gen := r.Generation
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "raw", m1, gen
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: m1, MemberAssignment: []byte{}}}
	wantErr(t, "sync", rawReq[*kmsg.SyncGroupResponse](t, c1, sync).ErrorCode, nil)

	wantErr(t, "heartbeat", rawReq[*kmsg.HeartbeatResponse](t, c1, heartbeatReq(m1, gen, "")).ErrorCode, nil)
	wantErr(t, "unknown member", rawReq[*kmsg.HeartbeatResponse](t, c1, heartbeatReq("nobody", gen, "")).ErrorCode, kerr.UnknownMemberID)
	wantErr(t, "stale generation", rawReq[*kmsg.HeartbeatResponse](t, c1, heartbeatReq(m1, gen+5, "")).ErrorCode, kerr.IllegalGeneration)

	commit := func(member string, gen int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "raw", member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "raw-topic", topicID // v10 names topics by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rawReq[*kmsg.OffsetCommitResponse](t, c1, req).Topics[0].Partitions[0].ErrorCode
	}
	wantErr(t, "commit", commit(m1, gen), nil)
	wantErr(t, "commit with a stale generation", commit(m1, gen-1), kerr.IllegalGeneration)
	wantErr(t, "commit by an unknown member", commit("nobody", gen), kerr.UnknownMemberID)
	wantErr(t, "simple commit in a live group", commit("", -1), kerr.UnknownMemberID)

	// A second member starts a rebalance: its join waits for m1.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	r2 := rawReq[*kmsg.JoinGroupResponse](t, c2, joinReq("", ""))
	go func() {
		resp, err := joinReq(r2.MemberID, "").RequestWith(context.Background(), c2)
		if err != nil {
			t.Error(err)
		}
		joined <- resp
	}()
	eventually(t, "the rebalance to start", func() bool {
		return rawReq[*kmsg.HeartbeatResponse](t, c1, heartbeatReq(m1, gen, "")).ErrorCode == kerr.RebalanceInProgress.Code
	})
	sync.GroupAssignment = nil
	wantErr(t, "sync during the rebalance", rawReq[*kmsg.SyncGroupResponse](t, c1, sync).ErrorCode, kerr.RebalanceInProgress)
	r = rawReq[*kmsg.JoinGroupResponse](t, c1, joinReq(m1, ""))
	j2 := <-joined
	if r.ErrorCode != 0 || j2 == nil || j2.ErrorCode != 0 || r.Generation != gen+1 || j2.Generation != gen+1 {
		t.Fatalf("rejoin: %+v / %+v", r, j2)
	}

	// Static membership: a second join for the same instance fences the
	// first member id.
	c3, c4 := b.client(), b.client()
	go func() { _, _ = joinReq("", "static-1").RequestWith(ctx, c3) }()
	var staticOld string
	eventually(t, "the static member in the group", func() bool {
		d, err := adm.DescribeGroups(ctx, "raw")
		if err != nil {
			return false
		}
		for _, m := range d["raw"].Members {
			if m.InstanceID != nil && *m.InstanceID == "static-1" {
				staticOld = m.MemberID
				return true
			}
		}
		return false
	})
	go func() { _, _ = joinReq("", "static-1").RequestWith(ctx, c4) }()
	eventually(t, "the old static member id fenced", func() bool {
		code := rawReq[*kmsg.HeartbeatResponse](t, c1, heartbeatReq(staticOld, gen+1, "static-1")).ErrorCode
		return code == kerr.FencedInstanceID.Code
	})
}

// TestGroupAdmin: ListGroups, DescribeGroups, OffsetDelete and
// DeleteGroups through kadm, and __consumer_offsets is internal.
func TestGroupAdmin(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "admin-groups", "g-admin"
	mustCreate(t, ctx, adm, topic, 2, nil)
	produceN(t, b.client(), topic, 0, 20)
	l := newGroupLedger()
	m := startMember(t, b, l, "m1", group, topic)
	eventually(t, "20 records", func() bool { return l.distinct() >= 20 })

	eventually(t, "the group Stable", func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		return err == nil && d[group].State == "Stable" && len(d[group].Members) == 1
	})
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed[group]; !ok || lg.ProtocolType != "consumer" || lg.State != "Stable" {
		t.Errorf("ListGroups: %+v", listed)
	}
	md, err := adm.Metadata(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["__consumer_offsets"]; !td.IsInternal || len(td.Partitions) != 3 {
		t.Errorf("__consumer_offsets: internal %v, %d partitions", td.IsInternal, len(td.Partitions))
	}
	dr, err := adm.DeleteGroup(ctx, group)
	if err == nil && dr.Err == nil {
		t.Error("a group with members was deleted")
	}
	m.close()
	eventually(t, "offsets committed", func() bool {
		o, err := adm.FetchOffsets(ctx, group)
		return err == nil && len(o) > 0
	})
	s := kadm.TopicsSet{}
	s.Add(topic, 0)
	od, err := adm.DeleteOffsets(ctx, group, s)
	if err != nil || od.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, od.Error())
	}
	o, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := o.Lookup(topic, 0); ok && c.At >= 0 {
		t.Errorf("partition 0 still committed at %d", c.At)
	}
	if dr, err := adm.DeleteGroup(ctx, group); err != nil || dr.Err != nil {
		t.Fatalf("DeleteGroup: %v %v", err, dr.Err)
	}
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if st := d[group].State; st != "Dead" {
		t.Errorf("deleted group is %q", st)
	}
}

// TestGroupCoordinatorPanic: the group's coordinator actor panics (an
// injected fault) while a member joins; it restarts, rebuilds the group
// from __consumer_offsets, and the consumers go on: every record consumed,
// no partition owned twice in a generation, commits at the end offsets.
func TestGroupCoordinatorPanic(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "fault-orders", "g-fault"
	mustCreate(t, ctx, adm, topic, 4, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	l := newGroupLedger()
	produceN(t, prod, topic, 0, 400)
	m1 := startMember(t, b, l, "m1", group, topic)
	eventually(t, "400 records", func() bool { return l.distinct() >= 400 })
	b.injectFault(`{"actor": "node/1/groups/` + group + `", "kind": "panic", "message": "Request", "count": 1}`)
	m2 := startMember(t, b, l, "m2", group, topic)
	produceN(t, prod, topic, 400, 800)
	eventually(t, "800 records", func() bool { return l.distinct() >= 800 })
	eventually(t, "the coordinator restarted", func() bool {
		a := b.actors()["node/1/groups/"+group]
		return a != nil && a.Restarts > 0
	})
	// m2 takes m1's partitions and commits their ends before it leaves
	// too: under load m1's session may have ended while the coordinator
	// restarted, and its commit before revoking is then refused
	// (UNKNOWN_MEMBER_ID).
	m1.close()
	waitOwns(t, l, "m2", 4)
	checkCommittedAtEnd(t, adm, group, topic)
	m2.close()
	l.check(t)
}

// waitOwns waits until member name owns n partitions.
func waitOwns(t *testing.T, l *groupLedger, name string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s owning %d partitions", name, n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.owners[name]) == n
	})
}

// TestGroupCommitsSurviveSIGKILL: a `skein node` child process is killed
// with SIGKILL while a client commits offsets (simple commits, generation
// -1) as fast as it can; after each restart every partition's committed
// offset is at least the last acknowledged commit and at most the last one
// sent: an acknowledged commit is durable.
func TestGroupCommitsSurviveSIGKILL(t *testing.T) {
	node := newChildNode(t)
	node.start()
	ctx := ctxFor(t)
	adm := kadm.NewClient(newClientFor(t, node.addr))
	topic, group := "killed-commits", "g-killed"
	mustCreate(t, ctx, adm, topic, 3, nil)
	var sent, acked int64
	for round := range 3 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		cctx, cancel := context.WithCancel(ctx)
		cl := kadm.NewClient(newClientFor(t, node.addr))
		start := acked
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := start + 1; cctx.Err() == nil; i++ {
				os := kadm.Offsets{}
				for p := range int32(3) {
					os.Add(kadm.Offset{Topic: topic, Partition: p, At: i, LeaderEpoch: -1})
				}
				mu.Lock()
				sent = i
				mu.Unlock()
				resp, err := cl.CommitOffsets(cctx, group, os)
				if err != nil || resp.Error() != nil {
					return
				}
				mu.Lock()
				acked = i
				mu.Unlock()
			}
		}()
		eventually(t, "commits acknowledged", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return acked >= start+int64(20+10*round)
		})
		node.kill()
		cancel()
		wg.Wait()
		node.start()
		got, err := kadm.NewClient(newClientFor(t, node.addr)).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			o, ok := got.Lookup(topic, p)
			if !ok || o.At < acked || o.At > sent {
				t.Fatalf("round %d partition %d: committed %+v after SIGKILL; acknowledged %d, sent %d", round, p, o, acked, sent)
			}
		}
		t.Logf("SIGKILL %d: acknowledged %d, sent %d", round+1, acked, sent)
		// What survived is the next round's floor (one batch holds the
		// three partitions' records: they survive together).
		o, _ := got.Lookup(topic, 0)
		acked, sent = o.At, o.At
	}
}

// TestGroupOlderProtocolVersions: franz-go group consumers pinned to the
// versions of older Kafka releases (0.11: JoinGroup v2, SyncGroup v1,
// OffsetCommit v3, OffsetFetch v3, FindCoordinator v1; 2.3: JoinGroup v5
// with KIP-394, SyncGroup v3, OffsetCommit v7) consume every record and
// commit the end offsets.
func TestGroupOlderProtocolVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions *kversion.Versions
	}{{"0.11", kversion.V0_11_0()}, {"2.3", kversion.V2_3_0()}} {
		t.Run(tc.name, func(t *testing.T) {
			b := groupBroker(t)
			ctx := ctxFor(t)
			adm := b.admin()
			topic, group := "old-versions", "g-old"
			mustCreate(t, ctx, adm, topic, 4, nil)
			produceN(t, b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 0, 400)
			l := newGroupLedger()
			opt := kgo.MaxVersions(tc.versions)
			m1 := startMember(t, b, l, "m1", group, topic, opt)
			m2 := startMember(t, b, l, "m2", group, topic, opt)
			eventually(t, "400 records", func() bool { return l.distinct() >= 400 })
			m1.close()
			waitOwns(t, l, "m2", 4)
			checkCommittedAtEnd(t, adm, group, topic)
			m2.close()
			l.check(t)
		})
	}
}

// TestFindCoordinatorOnAFreshCluster: the first FindCoordinator requests
// of a new cluster, many at once from their own clients, for groups and
// for transactional ids, all name a coordinator: the one that creates
// __consumer_offsets (or __transaction_state) and the ones that race it
// and are told the topic already exists alike. (Those were answered
// COORDINATOR_NOT_AVAILABLE, which franz-go's admin client does not retry,
// when the controller answered TOPIC_ALREADY_EXISTS before this node's
// image had the topic.)
func TestFindCoordinatorOnAFreshCluster(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan string, 2*n)
	for i := range 2 * n {
		wg.Go(func() {
			cl := b.client()
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = int8(i % 2)
			req.CoordinatorKeys = []string{fmt.Sprintf("fresh-%d", i)}
			resp, err := req.RequestWith(ctx, cl)
			switch {
			case err != nil:
				errs <- err.Error()
			case len(resp.Coordinators) != 1:
				errs <- fmt.Sprintf("%d coordinators for one key", len(resp.Coordinators))
			case resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].NodeID < 0:
				c := resp.Coordinators[0]
				errs <- fmt.Sprintf("key %s (type %d): %v, node %d", c.Key, req.CoordinatorType, kerr.ErrorForCode(c.ErrorCode), c.NodeID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
