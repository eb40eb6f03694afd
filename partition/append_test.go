package partition

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// holder is a middleware that, once armed, holds the next message the
// actor takes until release is closed, so that a test can fill the mailbox
// behind it. held is closed when the actor is held.
type holder struct {
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newHolder() *holder {
	return &holder{held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holder) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
		if h.armed.CompareAndSwap(true, false) {
			close(h.held)
			<-h.release
		}
		next(ctx, env)
	}
}

// hold sends m and returns once the actor holds it, the mailbox free to
// fill.
func (h *holder) hold(tp *testPartition, m any) {
	h.armed.Store(true)
	tp.sys.Root.Send(tp.pid, m)
	<-h.held
}

// TestQueuedAppendsWrittenTogether: Appends that queue up while the actor
// is busy are written with one write, and each is still handled as alone,
// in order: offsets by arrival, KIP-98 checks against the batches before
// it in the same write (a retry of one of them gets its offsets, a gap is
// refused), and every reply once its records are durable.
func TestQueuedAppendsWrittenTogether(t *testing.T) {
	fsys := &writeCounter{FS: vfs.Default}
	cfg := testConfig(fsys, clock.NewManual(time.UnixMilli(1e12)))
	cfg.Dir = filepath.Join(t.TempDir(), "t-0")
	h := newHolder()
	tp := startTestPartition(t, cfg, h.middleware)
	tp.appendOK(batch(t, 1, 0, 0, 1), 0)
	before := fsys.writes.Load()

	h.hold(tp, &DeleteRecords{Offset: 0, Reply: func(int64, *kerr.Error) {}})
	replies := []chan AppendResult{
		tp.send(batch(t, 9, 0, 0, 2), -1),   // 1-2
		tp.send(batch(t, 1, 0, 1, 3), -1),   // 3-5
		tp.send(batch(t, 1, 0, 1, 3), -1),   // a retry of the one before: 3
		tp.send(batch(t, 1, 0, 9, 1), 1),    // a gap: refused
		tp.send(batch(t, 1, 0, 4, 2), 0),    // 6-7, acks=0
		tp.send(batch(t, -1, -1, -1, 1), 1), // not idempotent: 8
	}
	close(h.release)
	want := []struct {
		base int64
		err  *kerr.Error
	}{{1, nil}, {3, nil}, {3, nil}, {-1, kerr.OutOfOrderSequenceNumber}, {6, nil}, {8, nil}}
	for i, ch := range replies {
		r := <-ch
		if r.Err != want[i].err || (r.Err == nil && r.BaseOffset != want[i].base) {
			t.Errorf("append %d: base offset %d, err %v (%s); want %d, %v", i, r.BaseOffset, r.Err, r.Message, want[i].base, want[i].err)
		}
		if r.Err == nil && r.BaseOffset >= tp.handle.View().Log.HighWatermark && i != 4 {
			t.Errorf("append %d answered at base offset %d before the high watermark passed it", i, r.BaseOffset)
		}
	}
	if leo := tp.logEnd(); leo != 9 {
		t.Fatalf("log end %d, want 9", leo)
	}
	if n := fsys.writes.Load() - before; n != 1 {
		t.Fatalf("%d writes for six queued Appends, want one", n)
	}
}

// TestQueuedAppendsBeforeSetConfig: Appends queued before a SetConfig are
// written under the config they arrived under.
func TestQueuedAppendsBeforeSetConfig(t *testing.T) {
	h := newHolder()
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))), h.middleware)
	appendTime := configs.DefaultTopic()
	appendTime.MessageTimestampType = configs.LogAppendTime
	h.hold(tp, &DeleteRecords{Offset: 0, Reply: func(int64, *kerr.Error) {}})
	before := tp.send(batch(t, 1, 0, 0, 1), 1)
	tp.sys.Root.Send(tp.pid, &SetConfig{Config: appendTime})
	after := tp.send(batch(t, 1, 0, 1, 1), 1)
	close(h.release)
	if r := <-before; r.Err != nil || r.LogAppendTime != -1 {
		t.Fatalf("append before the SetConfig: %+v, want CreateTime (LogAppendTime -1)", r)
	}
	if r := <-after; r.Err != nil || r.LogAppendTime != 1e12 {
		t.Fatalf("append after the SetConfig: %+v, want LogAppendTime 1e12", r)
	}
}

// dropWrite is a middleware that drops the first writeAppends while armed,
// as a fault may, and closes dropped.
type dropWrite struct {
	armed   atomic.Bool
	dropped chan struct{}
}

func (d *dropWrite) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
		if _, ok := env.Message.(*writeAppends); ok && d.armed.CompareAndSwap(true, false) {
			close(d.dropped)
			return
		}
		next(ctx, env)
	}
}

// TestLostWriteAppends: when a writeAppends is lost, the queued Appends
// are written at the next tick, and the next Append sends another.
func TestLostWriteAppends(t *testing.T) {
	d := &dropWrite{dropped: make(chan struct{})}
	d.armed.Store(true)
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))), d.middleware)
	queued := tp.send(batch(t, 1, 0, 0, 1), -1)
	<-d.dropped
	tp.sys.Root.Send(tp.pid, &tick{})
	if r := <-queued; r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("queued append: %+v, want base offset 0", r)
	}
	tp.appendOK(batch(t, 1, 0, 1, 1), 1)
}

// TestSetState: a partition that leads in a new epoch says so in its
// view, which Fetch and Produce check clients' epochs against; one that
// follows refuses appends, NOT_LEADER_OR_FOLLOWER, and says whom to fetch
// from.
func TestSetState(t *testing.T) {
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))))
	tp.appendOK(batch(t, 1, 0, 0, 1), 0)
	tp.sys.Root.Send(tp.pid, &SetState{State: State{Leader: 0, LeaderEpoch: 3, Replicas: []int32{0}, ISR: []int32{0}}})
	tp.barrier()
	if e := tp.handle.View().LeaderEpoch; e != 3 {
		t.Fatalf("leader epoch %d in the view, want 3", e)
	}
	tp.appendOK(batch(t, 1, 0, 1, 1), 1)

	tp.sys.Root.Send(tp.pid, &SetState{State: State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{0, 1}, ISR: []int32{0, 1}}})
	tp.barrier()
	v := tp.handle.View()
	if v.LeaderEpoch != -1 || v.Follow == nil || v.Follow.Leader != 1 || v.Follow.FetchOffset != 2 || v.Follow.LastFetchedEpoch != 3 || v.Follow.CurrentLeaderEpoch != 4 {
		t.Fatalf("view after following node 1 in epoch 4: leader epoch %d, follow %+v", v.LeaderEpoch, v.Follow)
	}
	if r := <-tp.send(batch(t, 1, 0, 2, 1), -1); r.Err != kerr.NotLeaderForPartition {
		t.Fatalf("append to a follower: %+v, want NOT_LEADER_OR_FOLLOWER", r)
	}
	// An older state changes nothing.
	tp.sys.Root.Send(tp.pid, &SetState{State: State{Leader: 0, LeaderEpoch: 3, Replicas: []int32{0}, ISR: []int32{0}}})
	tp.barrier()
	if v := tp.handle.View(); v.LeaderEpoch != -1 {
		t.Fatalf("an older state made the follower lead in epoch %d", v.LeaderEpoch)
	}
}
