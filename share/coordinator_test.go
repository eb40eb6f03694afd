package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition"
)

// stateNode is an actor system hosting __share_group_state-0, led here
// (node 0) in leader epoch 3, in memory, with an image that has it and a
// topic "t" (id topicA, 8 partitions).
type stateNode struct {
	t      *testing.T
	sys    *actor.ActorSystem
	reg    *partition.Registry
	handle *partition.Handle
	im     *image.Image
	client *StateClient
}

func newStateNode(t *testing.T) *stateNode {
	t.Helper()
	sys := actors.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	im := image.Empty()
	var err error
	for _, r := range []image.Record{
		&image.CreateTopic{Name: StateTopic, ID: image.TopicID{7}, Partitions: []image.Partition{{Index: 0, Leader: 0, LeaderEpoch: 3, Replicas: []int32{0}, ISR: []int32{0}}}},
		&image.CreateTopic{Name: "t", ID: image.TopicID(topicA), Partitions: make([]image.Partition, 8)},
	} {
		if im, err = im.Apply(0, r); err != nil {
			t.Fatal(err)
		}
	}
	reg := partition.NewRegistry()
	parts, err := sys.Root.SpawnNamed(partition.SupervisorProps(partition.SupervisorConfig{Registry: reg, FS: vfs.NewCrashableMem(), Logger: zerolog.Nop()},
		actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), "partitions")
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(parts, &partition.Host{Config: partition.Config{
		Topic: StateTopic, TopicID: image.TopicID{7}, Dir: partition.Dir("/data", StateTopic, 0),
		Clock: clock.Real, TopicConfig: configs.DefaultTopic(), Durability: configs.DurabilityFsync,
		State:        partition.State{Leader: 0, LeaderEpoch: 3, Replicas: []int32{0}, ISR: []int32{0}},
		TickInterval: time.Hour, Logger: zerolog.Nop(),
	}})
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	n := &stateNode{t: t, sys: sys, reg: reg, handle: reg.WaitReady(StateTopic, 0, done), im: im}
	n.client = &StateClient{System: sys, NodeID: 0, Image: func() *image.Image { return im }, Timeout: 2 * time.Second}
	return n
}

// coordinator spawns node/0/sharestate, leading partition 0 in epoch 3.
func (n *stateNode) coordinator(cfg CoordinatorConfig) *actor.PID {
	n.t.Helper()
	cfg.Registry, cfg.Image, cfg.Logger = n.reg, func() *image.Image { return n.im }, zerolog.Nop()
	pid, err := n.sys.Root.SpawnNamed(CoordinatorProps(cfg, actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), "node/0/sharestate")
	if err != nil {
		n.t.Fatal(err)
	}
	n.sys.Root.Send(pid, &Leading{Partitions: map[int32]int32{0: 3}, Of: 1})
	return pid
}

func (n *stateNode) ask(msg any) *StateResult {
	n.t.Helper()
	out := make(chan *StateResult, 2)
	var k Key
	switch m := msg.(type) {
	case *InitializeState:
		k = m.Key
	case *ReadState:
		k = m.Key
	case *WriteState:
		k = m.Key
	case *DeleteState:
		k = m.Key
	case *ReadSummary:
		k = m.Key
	}
	n.client.Ask(k, msg, func(r *StateResult) { out <- r })
	select {
	case r := <-out:
		select {
		case <-out:
			n.t.Fatal("reply called twice")
		case <-time.After(10 * time.Millisecond):
		}
		return r
	case <-time.After(10 * time.Second):
		n.t.Fatalf("%T not answered", msg)
		return nil
	}
}

// The share coordinator serves a share-partition's life through the
// StateClient (initialize, a leader's read, writes, a newer leader's read
// fencing the older one), answers each once durable, and a coordinator
// started again on the same log (a restart, or the next leader of the
// state partition) serves the same state and the same fences.
func TestCoordinatorServesAndReloads(t *testing.T) {
	n := newStateNode(t)
	pid := n.coordinator(CoordinatorConfig{SnapshotEvery: 2})

	if r := n.ask(&InitializeState{Key: keyA, StateEpoch: 1, StartOffset: 0}); r.Code != 0 {
		t.Fatalf("initialize: %+v", r)
	}
	if r := n.ask(&ReadState{Key: keyA, LeaderEpoch: 1}); r.Code != 0 || !r.Found || r.StartOffset != 0 {
		t.Fatalf("read: %+v", r)
	}
	for i := range int64(5) {
		w := &WriteState{Key: keyA, StateEpoch: 1, LeaderEpoch: 1, StartOffset: i, DeliveryCompleteCount: -1,
			Batches: []StateBatch{{First: i, Last: i + 1, State: Acknowledged, Count: 1}}}
		if r := n.ask(w); r.Code != 0 {
			t.Fatalf("write %d: %+v", i, r)
		}
	}
	want := n.ask(&ReadState{Key: keyA, LeaderEpoch: 2})
	if want.Code != 0 || want.StartOffset != 4 || !reflect.DeepEqual(want.Batches, []StateBatch{{First: 4, Last: 5, State: Acknowledged, Count: 1}}) {
		t.Fatalf("state: %+v", want)
	}
	if r := n.ask(&WriteState{Key: keyA, StateEpoch: 1, LeaderEpoch: 1, StartOffset: 9}); r.Code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("the old leader's write: %+v", r)
	}
	// Durable before answered: everything is in the log now.
	if hw := n.handle.View().Log.HighWatermark; hw < 8 {
		t.Errorf("high watermark %d after 8 records answered", hw)
	}

	// Again, on the same log.
	if _, err := n.sys.Root.PoisonFuture(pid).Result(); err != nil {
		t.Fatal(err)
	}
	n.coordinator(CoordinatorConfig{SnapshotEvery: 2})
	if got := n.ask(&ReadState{Key: keyA, LeaderEpoch: 2}); !reflect.DeepEqual(got, want) {
		t.Errorf("after a reload: %+v, want %+v", got, want)
	}
	if r := n.ask(&WriteState{Key: keyA, StateEpoch: 1, LeaderEpoch: 1, StartOffset: 9}); r.Code != kerr.FencedLeaderEpoch.Code {
		t.Errorf("after a reload, the old leader's write: %+v", r)
	}
	if r := n.ask(&DeleteState{Key: keyA}); r.Code != 0 {
		t.Fatalf("delete: %+v", r)
	}
	if r := n.ask(&ReadSummary{Key: keyA}); r.Code != 0 || r.Found {
		t.Errorf("summary after delete: %+v", r)
	}
}

// A partition not led here is NOT_COORDINATOR, which the client asks
// again until its timeout; one led in an epoch the replica has not taken
// yet loads (COORDINATOR_LOAD_IN_PROGRESS) and serves once it has.
func TestCoordinatorNotLeading(t *testing.T) {
	n := newStateNode(t)
	n.client.Timeout = 300 * time.Millisecond
	pid := n.coordinator(CoordinatorConfig{})
	n.sys.Root.Send(pid, &Leading{Partitions: map[int32]int32{}, Of: 1})
	if r := n.ask(&ReadSummary{Key: keyA}); r.Code != kerr.NotCoordinator.Code {
		t.Errorf("not leading: %+v", r)
	}
	n.sys.Root.Send(pid, &Leading{Partitions: map[int32]int32{0: 4}, Of: 1})
	if r := n.ask(&ReadSummary{Key: keyA}); r.Code != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("leading in an epoch the replica has not taken: %+v", r)
	}
	n.sys.Root.Send(pid, &Leading{Partitions: map[int32]int32{0: 3}, Of: 1})
	n.client.Timeout = 5 * time.Second
	if r := n.ask(&ReadSummary{Key: keyA}); r.Code != 0 {
		t.Errorf("leading: %+v", r)
	}
}

// Records below every key's last snapshot are deleted (DeleteRecords),
// and the state read back after that is whole.
func TestCoordinatorPrunes(t *testing.T) {
	n := newStateNode(t)
	pid := n.coordinator(CoordinatorConfig{SnapshotEvery: 1, PruneInterval: 20 * time.Millisecond, ColdInterval: time.Hour})
	n.ask(&InitializeState{Key: keyA, StateEpoch: 0, StartOffset: 0})
	for i := range int64(6) {
		n.ask(&WriteState{Key: keyA, StateEpoch: 0, LeaderEpoch: 0, StartOffset: i, DeliveryCompleteCount: -1,
			Batches: []StateBatch{{First: i, Last: i, State: Archived, Count: 1}}})
	}
	want := n.ask(&ReadState{Key: keyA, LeaderEpoch: -1})
	deadline := time.Now().Add(10 * time.Second)
	for n.handle.View().Log.LogStartOffset < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("log start offset %d, want 5 or more", n.handle.View().Log.LogStartOffset)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := n.sys.Root.PoisonFuture(pid).Result(); err != nil {
		t.Fatal(err)
	}
	n.coordinator(CoordinatorConfig{SnapshotEvery: 1})
	if got := n.ask(&ReadState{Key: keyA, LeaderEpoch: -1}); !reflect.DeepEqual(got, want) {
		t.Errorf("after pruning and a reload: %+v, want %+v", got, want)
	}
}
