package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// quorum is three controller actors in one actor system, each with its
// own filesystem, talking raft to each other.
type quorum struct {
	t      *testing.T
	sys    *actor.ActorSystem
	fs     map[int32]*vfs.MemFS
	pids   map[int32]*actor.PID
	latest map[int32]*atomic.Pointer[image.Image]
	status map[int32]*atomic.Pointer[Status]
	inc    uint64
	incs   map[int32]uint64
	// edit, if set, changes a member's config before it starts.
	edit func(*Config)
	// observers are the members that are not voters.
	observers map[int32]bool
	// middleware, if set, sees what the members send.
	middleware actor.SenderMiddleware
	// spawned holds the names of the members whose spawn has returned:
	// what a member sends to another not yet spawned is dropped, as the
	// network would. protoactor registers a spawning actor's name before
	// it sets up its mailbox, and a send in between races with that set
	// up (nodes never meet it: their peers are remote).
	spawned sync.Map
	// spawning holds the names of the members whose spawn has begun.
	spawning sync.Map
}

// gate drops what a member sends to a member whose spawn has not
// returned (quorum.spawned).
func (q *quorum) gate(next actor.SenderFunc) actor.SenderFunc {
	return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		if _, ok := q.spawned.Load(target.Id); !ok && target.Address == q.sys.Address() {
			if _, member := q.spawning.Load(target.Id); member {
				return
			}
		}
		next(c, target, env)
	}
}

func newQuorum(t *testing.T, ids ...int32) *quorum {
	return prepareQuorum(t, ids...).run()
}

// prepareQuorum makes the members' disks; run starts them.
func prepareQuorum(t *testing.T, ids ...int32) *quorum {
	q := &quorum{t: t, sys: actors.NewSystem(zerolog.Nop()), fs: map[int32]*vfs.MemFS{}, pids: map[int32]*actor.PID{},
		latest: map[int32]*atomic.Pointer[image.Image]{}, status: map[int32]*atomic.Pointer[Status]{}, incs: map[int32]uint64{}}
	for _, id := range ids {
		q.fs[id] = vfs.NewCrashableMem()
		q.latest[id], q.status[id] = &atomic.Pointer[image.Image]{}, &atomic.Pointer[Status]{}
	}
	return q
}

// run starts the members.
func (q *quorum) run() *quorum {
	ids := slices.Sorted(maps.Keys(q.fs))
	for _, id := range ids {
		q.start(id)
	}
	q.t.Cleanup(func() {
		for id := range q.pids {
			q.stop(id)
		}
	})
	return q
}

// waitRegistered waits until every member's image has every member's
// broker, as a node waits before it serves clients.
func (q *quorum) waitRegistered() {
	q.t.Helper()
	for id := range q.pids {
		q.waitFor(id, "every member's broker registered", func(im *image.Image) bool { return len(im.Brokers) == len(q.fs) })
	}
}

func name(id int32) string { return fmt.Sprintf("n%d", id) }

func (q *quorum) start(id int32) {
	peers := map[int32]*actor.PID{}
	for other := range q.fs {
		if other != id && !q.observers[other] {
			peers[other] = actor.NewPID(q.sys.Address(), name(other))
		}
	}
	q.inc++
	latest, status := q.latest[id], q.status[id]
	cfg := Config{
		NodeID: id, Incarnation: q.inc, Peers: peers,
		Broker: image.Broker{ID: id, Host: "127.0.0.1", Port: 9090 + id},
		Dir:    "/data/__cluster_metadata-0", FS: q.fs[id], Clock: clock.Real,
		Node: configs.Default(), Logger: zerolog.Nop(),
		Publish: func(im *image.Image) { latest.Store(im) },
		Quorum:  func(s Status) { status.Store(&s) },
		Tick:    5 * time.Millisecond, SnapshotBytes: 2000,
		Observer: q.observers[id],
	}
	q.incs[id] = q.inc
	if q.edit != nil {
		q.edit(&cfg)
	}
	props := Props(cfg)
	middleware := []actor.SenderMiddleware{q.gate}
	if q.middleware != nil {
		middleware = append(middleware, q.middleware)
	}
	props.Configure(actor.WithSenderMiddleware(middleware...))
	q.spawning.Store(name(id), true)
	pid, err := q.sys.Root.SpawnNamed(props, name(id))
	if err != nil {
		q.t.Fatal(err)
	}
	q.spawned.Store(pid.Id, true)
	q.pids[id] = pid
}

func (q *quorum) stop(id int32) {
	q.spawned.Delete(q.pids[id].Id)
	q.sys.Root.StopFuture(q.pids[id]).Wait()
	delete(q.pids, id)
}

// crash stops a controller and keeps only what it had synced.
func (q *quorum) crash(id int32) {
	q.stop(id)
	q.fs[id] = q.fs[id].CrashClone(vfs.CrashOptions{})
}

func (q *quorum) ask(id int32, m any) any {
	q.t.Helper()
	res, err := actors.Ask(q.sys, q.pids[id], m, 30*time.Second)
	if err != nil {
		q.t.Fatal(err)
	}
	return res
}

// leader returns the active controller, as the given member last knew it.
func (q *quorum) leader(from int32) int32 {
	if s := q.status[from].Load(); s != nil {
		return s.Leader
	}
	return -1
}

func (q *quorum) create(id int32, topic string) TopicResult {
	q.t.Helper()
	return q.ask(id, &CreateTopics{Topics: []NewTopic{{Name: topic, NumPartitions: 3, ReplicationFactor: 1}}}).(*CreateTopicsResult).Topics[0]
}

// Commands given to any member are decided once by the active controller,
// reach every member's image, and survive the crash of the leader; a
// restarted member catches up (from a snapshot: the log is compacted
// every 2000 bytes here).
func TestQuorumOfControllers(t *testing.T) {
	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	var blocks []*AllocateProducerIDsResult
	for i := range 6 {
		id := int32(i%3 + 1)
		if r := q.create(id, fmt.Sprintf("t%d", i)); r.Err != nil {
			t.Fatalf("create t%d at member %d: %v %s", i, id, r.Err, r.Message)
		}
		if r := q.create(id, fmt.Sprintf("t%d", i)); r.Err != kerr.TopicAlreadyExists {
			t.Fatalf("create t%d again: %v", i, r.Err)
		}
		blocks = append(blocks, q.ask(id, &AllocateProducerIDs{}).(*AllocateProducerIDsResult))
	}
	// A member answers once it has applied the entry itself.
	for id := range q.pids {
		im := q.latest[id].Load()
		if len(im.Topics) < 1 || len(im.Brokers) != 3 || im.ClusterID == "" {
			t.Fatalf("member %d: %d topics, brokers %v, cluster %q", id, len(im.Topics), im.Brokers, im.ClusterID)
		}
	}

	// A follower stopped while the others go on comes back behind the
	// compacted log, and catches up from the leader's snapshot.
	follower := q.leader(1)%3 + 1
	q.crash(follower)
	for i := range 10 {
		live := follower%3 + 1
		if r := q.create(live, fmt.Sprintf("while-%d-is-down-%d", follower, i)); r.Err != nil {
			t.Fatalf("create while a follower is down: %v %s", r.Err, r.Message)
		}
	}
	q.start(follower)
	blocks = append(blocks, q.ask(follower, &AllocateProducerIDs{}).(*AllocateProducerIDsResult))
	if n := len(q.latest[follower].Load().Topics); n != 16 {
		t.Fatalf("the restarted follower has %d topics, want 16", n)
	}

	// Crash the active controller: the other two elect another and go on.
	old := q.leader(1)
	if old < 1 {
		t.Fatalf("no leader known to member 1 after %d commands", 18)
	}
	q.crash(old)
	other := old%3 + 1
	if r := q.create(other, "after-crash"); r.Err != nil {
		t.Fatalf("create after the leader crashed: %v %s", r.Err, r.Message)
	}
	blocks = append(blocks, q.ask(other, &AllocateProducerIDs{}).(*AllocateProducerIDsResult))
	if l := q.leader(other); l == old || l < 1 {
		t.Fatalf("leader after the crash of %d: %d", old, l)
	}
	// The crashed member comes back and catches up.
	q.start(old)
	blocks = append(blocks, q.ask(old, &AllocateProducerIDs{}).(*AllocateProducerIDsResult))
	want := q.latest[other].Load()
	got := q.latest[old].Load()
	for name, tp := range want.Topics {
		if g := got.Topic(name); g == nil || g.ID != tp.ID {
			t.Fatalf("restarted member %d has %s as %+v, want id %v", old, name, g, tp.ID)
		}
	}
	for i, b := range blocks {
		if b.Err != nil {
			t.Fatalf("block %d: %v", i, b.Err)
		}
		for _, a := range blocks[:i] {
			if b.First < a.First+a.Size && a.First < b.First+b.Size {
				t.Fatalf("producer id blocks overlap: %+v %+v", a, b)
			}
		}
	}
}

// A forwarded command that arrives twice (its origin retried after a lost
// answer) is decided once: the second gets the first's answer.
func TestForwardedCommandDecidedOnce(t *testing.T) {
	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	q.create(1, "warm-up") // a leader exists and has caught up
	leader := q.leader(1)
	body, err := msgpack.Marshal(&CreateTopics{Topics: []NewTopic{{Name: "once", NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	fwd := &Forward{Origin: actors.Origin{Node: 9, Incarnation: 1}, Request: RequestID{Node: 9, Incarnation: 1, Seq: 1}, Kind: kindCreateTopics, Command: body}
	q.sys.Root.Send(q.pids[leader], fwd)
	q.ask(leader, &AllocateProducerIDs{}) // applied after the forward
	id := q.latest[leader].Load().Topic("once").ID
	ans := q.ask(leader, fwd).(*ForwardAnswer)
	var res CreateTopicsResult
	if err := msgpack.Unmarshal(ans.Result, &res); err != nil {
		t.Fatal(err)
	}
	if r := res.Topics[0]; r.Err != nil || r.ID != id {
		t.Fatalf("second delivery answered %v %s id %v; the topic has id %v", r.Err, r.Message, r.ID, id)
	}
}

// Controller messages survive the trip through a remoting frame, Kafka
// errors as the very kerr values callers compare with.
func TestWireMessagesRoundTrip(t *testing.T) {
	res := &CreateTopicsResult{Topics: []TopicResult{{Name: "a", Err: kerr.TopicAlreadyExists, Message: "m"}, {Name: "b", ID: image.TopicID{1}}}}
	b, err := msgpack.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	in := &ForwardAnswer{Request: RequestID{Node: 1, Incarnation: 2, Seq: 3}, Result: b}
	f, err := actors.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.(*actors.Frame).Deserialize()
	if err != nil {
		t.Fatal(err)
	}
	fa := out.(*ForwardAnswer)
	var back CreateTopicsResult
	if err := msgpack.Unmarshal(fa.Result, &back); err != nil {
		t.Fatal(err)
	}
	if fa.Request != in.Request || back.Topics[0].Err != kerr.TopicAlreadyExists || back.Topics[1].Err != nil || back.Topics[1].ID != (image.TopicID{1}) {
		t.Fatalf("round trip: %+v %+v", fa, back)
	}
	rm, err := actors.Encode(&RaftMessage{Origin: actors.Origin{Node: 2}, Data: []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := rm.(*actors.Frame).Deserialize()
	if r := m.(*RaftMessage); r.Origin.Node != 2 || string(r.Data) != "\x01\x02\x03" {
		t.Fatalf("raft message: %+v", r)
	}
}

// waitFor waits until member id's image satisfies cond.
func (q *quorum) waitFor(id int32, what string, cond func(*image.Image) bool) {
	q.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if im := q.latest[id].Load(); im != nil && cond(im) {
			return
		}
		if time.Now().After(deadline) {
			q.t.Fatalf("member %d: waited in vain for %s", id, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ledBy returns the partitions of topic led by broker.
func ledBy(im *image.Image, topic string, broker int32) []image.Partition {
	var out []image.Partition
	for _, p := range im.Topic(topic).Partitions {
		if p.Leader == broker {
			out = append(out, p)
		}
	}
	return out
}

// A broker that stops heartbeating is fenced after its session timeout
// and its partitions go offline; a heartbeat of the same incarnation
// unfences it and gives them back; a restart registers a new incarnation.
func TestBrokerFencing(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3)
	q.edit = func(c *Config) {
		c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, 300*time.Millisecond
		if c.NodeID == 3 {
			c.HeartbeatInterval = time.Hour // registers, then never heartbeats
		}
	}
	q.run()
	q.waitRegistered()
	if r := q.create(1, "f"); r.Err != nil {
		t.Fatal(r.Err)
	}
	im := q.latest[1].Load()
	led := ledBy(im, "f", 3)
	if len(led) != 1 {
		t.Fatalf("broker 3 leads %d of 3 partitions", len(led))
	}
	q.waitFor(1, "broker 3 fenced", func(im *image.Image) bool { return im.Brokers[3].Fenced })
	im = q.latest[1].Load()
	if p := im.Topic("f").Partitions[led[0].Index]; p.Leader != -1 || p.LeaderEpoch != led[0].LeaderEpoch+1 {
		t.Fatalf("partition of fenced broker 3: %+v", p)
	}
	if ids := im.LiveBrokerIDs(); len(ids) != 2 {
		t.Fatalf("live brokers %v", ids)
	}
	if r := q.create(1, "g"); r.Err != nil || len(ledBy(q.latest[1].Load(), "g", 3)) != 0 {
		t.Fatalf("topic created while 3 is fenced: %v, placed on 3: %v", r.Err, ledBy(q.latest[1].Load(), "g", 3))
	}

	leader := q.leader(1)
	q.sys.Root.Send(q.pids[leader], &BrokerHeartbeat{Origin: actors.Origin{Node: 3, Incarnation: q.incs[3]}})
	q.waitFor(1, "broker 3 unfenced", func(im *image.Image) bool { return !im.Brokers[3].Fenced })
	if p := q.latest[1].Load().Topic("f").Partitions[led[0].Index]; p.Leader != 3 || p.LeaderEpoch != led[0].LeaderEpoch+2 {
		t.Fatalf("partition of unfenced broker 3: %+v", p)
	}

	q.crash(3)
	q.edit = func(c *Config) { c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, 300*time.Millisecond }
	q.start(3)
	q.waitFor(1, "broker 3's new incarnation", func(im *image.Image) bool {
		b := im.Brokers[3]
		return b.Incarnation == q.incs[3] && !b.Fenced
	})
}

// A voter started on another cluster's data directory is kept out: the
// others drop its raft messages (it could otherwise win an election with
// that log), and the cluster goes on without it.
func TestVoterOfAnotherClusterKeptOut(t *testing.T) {
	other := newQuorum(t, 3)
	other.waitRegistered()
	for i := range 5 {
		other.create(3, fmt.Sprintf("foreign-%d", i)) // a longer log, a later term
	}
	foreign := other.latest[3].Load().ClusterID
	other.stop(3)

	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	cluster := q.latest[1].Load().ClusterID
	q.stop(3)
	q.fs[3] = other.fs[3]
	refused := make(chan error, 10)
	q.edit = func(c *Config) {
		c.Refused = func(err error) {
			select {
			case refused <- fmt.Errorf("member %d: %w", c.NodeID, err):
			default:
			}
		}
	}
	q.start(3)
	for i := range 5 {
		if r := q.create(int32(i%2+1), fmt.Sprintf("t%d", i)); r.Err != nil {
			t.Fatalf("create with a foreign voter around: %v %s", r.Err, r.Message)
		}
	}
	im := q.latest[1].Load()
	if im.ClusterID != cluster || im.Topic("foreign-0") != nil || len(im.Topics) != 5 {
		t.Fatalf("cluster %q (want %q), topics %v", im.ClusterID, cluster, im.TopicNames())
	}
	if l := q.leader(1); l == 3 {
		t.Fatal("the foreign voter leads")
	}
	if got := q.latest[3].Load().ClusterID; got != foreign {
		t.Fatalf("the foreign voter's cluster is %q, want its own %q", got, foreign)
	}
	// The foreign one, outvoted, gives up; the others do not.
	if err := <-refused; !strings.Contains(err.Error(), "member 3:") || !strings.Contains(err.Error(), "empty data.dir") {
		t.Fatalf("refusal: %v", err)
	}
	for len(refused) > 0 {
		if err := <-refused; !strings.Contains(err.Error(), "member 3:") {
			t.Fatalf("a member of the majority gave up: %v", err)
		}
	}
}

// A member that is not a voter (a broker-only node) follows the committed
// log from the voters: it catches up from a snapshot, forwards its
// commands, registers its broker, and follows a new active controller.
func TestObserverFollowsTheLog(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3, 4)
	q.observers = map[int32]bool{4: true}
	t.Cleanup(func() {
		for id := range q.pids {
			q.stop(id)
		}
	})
	for _, id := range []int32{1, 2, 3} {
		q.start(id)
	}
	q.waitFor(1, "the voters registered", func(im *image.Image) bool { return len(im.Brokers) == 3 })
	for i := range 12 { // past a snapshot or two
		if r := q.create(int32(i%3+1), fmt.Sprintf("early-%d", i)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	q.start(4)
	q.waitRegistered()
	if r := q.create(4, "from-the-observer"); r.Err != nil {
		t.Fatalf("create through the observer: %v %s", r.Err, r.Message)
	}
	im := q.latest[4].Load()
	if im.Topic("from-the-observer") == nil || im.Topic("early-0") == nil || len(im.Topics) != 13 {
		t.Fatalf("the observer's image has topics %v", im.TopicNames())
	}
	old := q.leader(4)
	// The active controller lists the observer (DescribeQuorum).
	d := q.ask(old, &DescribeQuorum{}).(*QuorumDescription)
	if len(d.Observers) != 1 || d.Observers[0].ID != 4 || d.Observers[0].LogEnd == 0 || len(d.Voters) != 3 {
		t.Fatalf("quorum as the leader describes it: %+v", d)
	}
	q.crash(old)
	survivor := old%3 + 1
	if r := q.create(4, "after-the-crash"); r.Err != nil {
		t.Fatalf("create through the observer after the leader crashed: %v %s", r.Err, r.Message)
	}
	if l := q.leader(4); l == old || l < 1 {
		t.Fatalf("the observer follows %d, after %d crashed", l, old)
	}
	if q.latest[survivor].Load().Topic("after-the-crash") == nil {
		// The survivor answered nothing yet: a round trip makes sure.
		q.ask(survivor, &AllocateProducerIDs{})
		if q.latest[survivor].Load().Topic("after-the-crash") == nil {
			t.Fatal("the observer's command is not in the voters' image")
		}
	}

	// A second voter down: no quorum. The last voter forgets the active
	// controller (raft's check quorum), and so does the observer, which
	// no voter names one to any more; both say since when.
	last := survivor
	if l := q.leader(4); l == survivor {
		last = 6 - old - survivor
	}
	q.crash(6 - old - last)
	for _, id := range []int32{last, 4} {
		deadline := time.Now().Add(30 * time.Second)
		for s := q.status[id].Load(); s.Leader >= 0 || s.NoLeaderSince.IsZero(); s = q.status[id].Load() {
			if time.Now().After(deadline) {
				t.Fatalf("node %d without a quorum still reports %+v", id, *s)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// With racks, partitions go round the brokers rack by rack: with two racks
// of two brokers each, consecutive partitions are in different racks.
func TestPlacementAlternatesRacks(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3, 4)
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	q.edit = func(c *Config) { c.Broker.Rack = racks[c.NodeID] }
	q.run()
	q.waitRegistered()
	r := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: "racked", NumPartitions: 8, ReplicationFactor: 1}}}).(*CreateTopicsResult).Topics[0]
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	ps := q.latest[1].Load().Topic("racked").Partitions
	led := map[int32]int{}
	for i, p := range ps {
		led[p.Leader]++
		if next := ps[(i+1)%len(ps)]; racks[p.Leader] == racks[next.Leader] {
			t.Fatalf("partitions %d and %d are both in rack %s: %+v", i, next.Index, racks[p.Leader], ps)
		}
	}
	for id := range racks {
		if led[id] != 2 {
			t.Fatalf("leaders per broker %v, want 2 each", led)
		}
	}
}

// Two live nodes with one id: the second one's registration is refused
// while the first heartbeats, and after two session timeouts of refusals
// it gives up (the node stops); the first stays registered.
func TestDuplicateNodeIDRefused(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3, 4)
	q.observers = map[int32]bool{4: true}
	refused := make(chan error, 1)
	q.edit = func(c *Config) {
		c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, 200*time.Millisecond
		c.Refused = func(err error) {
			select {
			case refused <- err:
			default:
			}
		}
	}
	q.run()
	q.waitRegistered()
	first := q.incs[4]

	// Another node 4, a broker-only node of its own incarnation.
	peers := map[int32]*actor.PID{}
	for _, id := range []int32{1, 2, 3} {
		peers[id] = q.pids[id]
	}
	dup := Config{
		NodeID: 4, Incarnation: 1000, Peers: peers, Observer: true,
		Broker: image.Broker{Host: "127.0.0.1", Port: 9999},
		FS:     vfs.NewCrashableMem(), Dir: "/data/__cluster_metadata-0", Clock: clock.Real,
		Node: configs.Default(), Logger: zerolog.Nop(),
		Publish: func(*image.Image) {},
		Tick:    5 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond, SessionTimeout: 200 * time.Millisecond,
		Refused: func(err error) {
			select {
			case refused <- fmt.Errorf("the second node 4: %w", err):
			default:
			}
		},
	}
	pid, err := q.sys.Root.SpawnNamed(Props(dup), "n4-dup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.sys.Root.StopFuture(pid).Wait() })
	err = <-refused
	if !strings.Contains(err.Error(), "the second node 4:") || !strings.Contains(err.Error(), "another live node has node.id 4") {
		t.Fatalf("refusal: %v", err)
	}
	if b := q.latest[1].Load().Brokers[4]; b.Incarnation != first || b.Port == 9999 {
		t.Fatalf("broker 4 after the duplicate gave up: %+v, want the first one (incarnation %d)", b, first)
	}
}

// AlterPartition travels like any command: forwarded to the active
// controller, its answer (a Kafka error, the partition) back intact.
func TestAlterPartitionForwarded(t *testing.T) {
	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	if r := q.create(1, "ap"); r.Err != nil {
		t.Fatal(r.Err)
	}
	tp := q.latest[1].Load().Topic("ap")
	p := tp.Partitions[0]
	via := q.leader(1)%3 + 1 // not the active controller
	stale := q.ask(via, &AlterPartition{TopicID: tp.ID, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch - 1, ISR: p.ISR}).(*AlterPartitionResult)
	if stale.Err != kerr.InvalidUpdateVersion || stale.Partition.PartitionEpoch != p.PartitionEpoch || !slices.Equal(stale.Partition.Replicas, p.Replicas) {
		t.Fatalf("a stale partition epoch through node %d: %+v", via, stale)
	}
	same := q.ask(via, &AlterPartition{TopicID: tp.ID, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.ISR}).(*AlterPartitionResult)
	if same.Err != nil || same.Partition.Leader != p.Leader {
		t.Fatalf("the same ISR through node %d: %+v", via, same)
	}
}

// A command refused against what the active controller has proposed but
// not yet committed (a second create of a topic whose creation is under
// way) is answered only once this node's image holds what it was refused
// for: a client told TOPIC_ALREADY_EXISTS finds the topic. Asked of the
// leader and of a follower (whose command is forwarded).
func TestRefusalAnsweredOnceItsCauseIsApplied(t *testing.T) {
	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	q.create(1, "warm-up")
	leader := q.leader(1)
	follower := int32(1)
	if leader == 1 {
		follower = 2
	}
	for i, id := range []int32{leader, follower} {
		topic := fmt.Sprintf("twice-%d", i)
		cmd := &CreateTopics{Topics: []NewTopic{{Name: topic, NumPartitions: 1, ReplicationFactor: 1}}}
		first := q.sys.Root.RequestFuture(q.pids[id], cmd, 30*time.Second)
		second := q.sys.Root.RequestFuture(q.pids[id], cmd, 30*time.Second)
		// The refusal first: it comes back before the creation, or with it.
		for _, f := range []*actor.Future{second, first} {
			res, err := f.Result()
			if err != nil {
				t.Fatal(err)
			}
			r := res.(*CreateTopicsResult).Topics[0]
			if r.Err != nil && r.Err != kerr.TopicAlreadyExists {
				t.Fatalf("node %d: create %s: %v %s", id, topic, r.Err, r.Message)
			}
			if q.latest[id].Load().Topic(topic) == nil {
				t.Fatalf("node %d answered create %s with %v before its image had the topic", id, topic, r.Err)
			}
		}
	}
}
