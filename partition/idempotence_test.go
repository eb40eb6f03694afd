package partition

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// These tests drive the partition actor's idempotent-producer handling
// through its mailbox, on an in-memory filesystem that can crash: the
// checks before an append, duplicates answered once durable, and the state
// rebuilt from snapshots and the log after a clean stop, a panic and a
// crash.

const testDir = "/data/t-0"

// keeper is the test's parent of one partition actor: it restarts the
// partition when it panics (one-for-one, as the partitions supervisor) and
// reports when it has stopped, without protoactor futures.
//
// Stopping the keeper stops the partition: protoactor stops a stopping
// actor's children and delivers its Stopped only once every child has
// terminated (finalizeStop), and a partition closes its log in Stopping,
// before it terminates. So done closes after the log is closed.
//
// NB: the keeper must not Watch its child, nor panic. A parent already gets
// its child's Terminated; a watching parent gets a second one, and a keeper
// that closed done on each panicked on the second. The root supervisor then
// restarted the keeper, whose Started spawned another partition on the same
// directory after stop had returned. That instance's Open raced the next
// test instance's Open, and its Close synced the next instance's unsynced
// appends through the shared in-memory files.
type keeper struct {
	props  *actor.Props
	child  chan *actor.PID
	done   chan struct{}
	starts atomic.Int32 // more than one: the keeper was restarted
}

func (k *keeper) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		k.starts.Add(1)
		pid, err := ctx.SpawnNamed(k.props, "t-0")
		if err != nil {
			panic(err)
		}
		k.child <- pid
	case *actor.Stopped:
		close(k.done)
	}
}

// crashAfter is a middleware that panics after the partition has written
// the Appends it queued, once while armed: the append happened, its reply
// is pending, and the actor fails, as a bug would make it.
type crashAfter struct{ armed atomic.Bool }

func (c *crashAfter) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(ctx actor.ReceiverContext, env *actor.MessageEnvelope) {
		next(ctx, env)
		if _, ok := env.Message.(*writeAppends); ok && c.armed.CompareAndSwap(true, false) {
			panic("test: partition fails after an append")
		}
	}
}

// testPartition is one running partition actor.
type testPartition struct {
	t      testing.TB
	sys    *actor.ActorSystem
	keeper *actor.PID
	pid    *actor.PID
	handle *Handle
	k      *keeper
}

func testConfig(fs vfs.FS, clk clock.Clock) Config {
	return Config{
		Topic: "t", Dir: testDir, FS: fs, Clock: clk,
		TopicConfig: configs.DefaultTopic(), Durability: configs.DurabilityFsync,
		State:                  State{Leader: 0, Replicas: []int32{0}, ISR: []int32{0}},
		TickInterval:           time.Hour, // ticks come from the tests
		ProducerIDExpirationMs: configs.DefaultProducerIDExpirationMs,
		Logger:                 zerolog.Nop(),
	}
}

func startTestPartition(t testing.TB, cfg Config, mw ...actor.ReceiverMiddleware) *testPartition {
	t.Helper()
	sys := actors.NewSystem(zerolog.Nop())
	h := newHandle(cfg.Topic, cfg.Partition, cfg.TopicID)
	k := &keeper{
		props: actor.PropsFromProducer(func() actor.Actor { return newPartition(cfg, h) }, actor.WithReceiverMiddleware(mw...)),
		child: make(chan *actor.PID, 1),
		done:  make(chan struct{}),
	}
	kpid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return k },
		actor.WithSupervisor(actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider))), "keeper")
	if err != nil {
		t.Fatal(err)
	}
	tp := &testPartition{t: t, sys: sys, keeper: kpid, pid: <-k.child, handle: h, k: k}
	h.PID = tp.pid
	t.Cleanup(tp.stop)
	return tp
}

// stop stops the partition gracefully, with its keeper, and waits until its
// log is closed.
func (tp *testPartition) stop() {
	if tp.sys == nil {
		return
	}
	tp.sys.Root.Stop(tp.keeper)
	<-tp.k.done
	tp.sys.Shutdown()
	tp.sys = nil
	if n := tp.k.starts.Load(); n != 1 {
		tp.t.Errorf("keeper started %d times: a restart spawned another partition on the directory", n)
	}
}

// batch is an idempotent producer's batch of n records.
func batch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "p%d-e%d-s%d", pid, epoch, int(seq)+i)}
	}
	b, err := store.AppendBatch(nil, store.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), BaseTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// send appends records and returns the channel the answer arrives on.
func (tp *testPartition) send(records []byte, acks int16) chan AppendResult {
	ch := make(chan AppendResult, 1)
	tp.sys.Root.Send(tp.pid, &Append{Records: records, Acks: acks, Reply: func(r AppendResult) { ch <- r }})
	return ch
}

// append appends records with acks=all and waits for the answer.
func (tp *testPartition) append(records []byte) AppendResult {
	tp.t.Helper()
	return <-tp.send(records, -1)
}

// appendOK appends and expects success at base offset want.
func (tp *testPartition) appendOK(records []byte, want int64) {
	tp.t.Helper()
	if r := tp.append(records); r.Err != nil || r.BaseOffset != want {
		tp.t.Fatalf("append: base offset %d, err %v (%s); want base offset %d", r.BaseOffset, r.Err, r.Message, want)
	}
}

// appendErr expects the append to be refused with want.
func (tp *testPartition) appendErr(records []byte, want *kerr.Error) {
	tp.t.Helper()
	if r := tp.append(records); r.Err != want {
		tp.t.Fatalf("append: base offset %d, err %v (%s); want %v", r.BaseOffset, r.Err, r.Message, want)
	}
}

// barrier returns once the actor has handled everything sent before it.
func (tp *testPartition) barrier() {
	ch := make(chan struct{})
	// DeleteRecords to offset 0 moves nothing and answers on the actor's
	// goroutine: it is the last message handled before the reply.
	tp.sys.Root.Send(tp.pid, &DeleteRecords{Offset: 0, Reply: func(int64, *kerr.Error) { close(ch) }})
	<-ch
}

func (tp *testPartition) tick() {
	tp.sys.Root.Send(tp.pid, &tick{})
	tp.barrier()
}

func (tp *testPartition) logEnd() int64 {
	tp.barrier()
	return tp.handle.View().Log.LogEndOffset
}

func snapshotNames(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(testDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".snapshot") {
			out = append(out, n)
		}
	}
	return out
}

// TestIdempotentAppendRules: the KIP-98 rules reach the producer through the
// actor: a retry gets its original offset and appends nothing; a gap and an
// old epoch are refused with nothing appended.
func TestIdempotentAppendRules(t *testing.T) {
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))))
	tp.appendOK(batch(t, 1, 0, 0, 3), 0)
	tp.appendOK(batch(t, 1, 0, 3, 2), 3)
	tp.appendOK(batch(t, 2, 0, 0, 1), 5)
	tp.appendOK(batch(t, 1, 0, 0, 3), 0) // retry: the original's offset
	tp.appendOK(batch(t, 1, 0, 3, 2), 3)
	tp.appendErr(batch(t, 1, 0, 6, 1), kerr.OutOfOrderSequenceNumber)
	tp.appendOK(batch(t, 1, 1, 0, 1), 6) // a new epoch from 0
	tp.appendErr(batch(t, 1, 0, 5, 1), kerr.InvalidProducerEpoch)
	tp.appendOK(batch(t, 3, 0, 77, 1), 7) // unknown: any sequence (KIP-360)
	if leo := tp.logEnd(); leo != 8 {
		t.Fatalf("log end %d, want 8: something was appended twice or refused", leo)
	}
	// A record set of several batches may not carry an idempotent one.
	two := append(batch(t, -1, -1, -1, 1), batch(t, 4, 0, 0, 1)...)
	tp.appendErr(two, kerr.InvalidRecord)
}

// gatedFS blocks the fsync of segment files while its gate is closed, so
// that a test can hold appends short of durable.
type gatedFS struct {
	vfs.FS
	closed atomic.Bool
	gate   chan struct{}
}

type gatedFile struct {
	vfs.File
	fs *gatedFS
}

func (g *gatedFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return gatedFile{File: f, fs: g}, nil
}

func (g *gatedFS) Create(name string) (vfs.File, error) {
	f, err := g.FS.Create(name)
	return g.wrap(name, f, err)
}

func (g *gatedFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := g.FS.OpenReadWrite(name)
	return g.wrap(name, f, err)
}

func (f gatedFile) Sync() error {
	if f.fs.closed.Load() {
		<-f.fs.gate
	}
	return f.File.Sync()
}

// TestDuplicateWaitsForDurability: a retry of a batch that is not durable
// yet is answered only when the original is, with the same offset.
func TestDuplicateWaitsForDurability(t *testing.T) {
	fs := &gatedFS{FS: vfs.NewCrashableMem(), gate: make(chan struct{})}
	tp := startTestPartition(t, testConfig(fs, clock.NewManual(time.UnixMilli(1e12))))
	var opened sync.Once
	open := func() { opened.Do(func() { close(fs.gate) }) }
	t.Cleanup(open) // before the stop, which waits for the blocked sync
	tp.appendOK(batch(t, 1, 0, 0, 1), 0)
	fs.closed.Store(true)
	orig := tp.send(batch(t, 1, 0, 1, 2), -1)
	retry := tp.send(batch(t, 1, 0, 1, 2), -1)
	acks0 := tp.send(batch(t, 1, 0, 1, 2), 0)
	tp.barrier()
	select {
	case r := <-orig:
		t.Fatalf("original answered before it was durable: %+v", r)
	case r := <-retry:
		t.Fatalf("retry answered before the original was durable: %+v", r)
	default:
	}
	if r := <-acks0; r.Err != nil || r.BaseOffset != 1 {
		t.Fatalf("acks=0 retry: %+v, want base offset 1 at once", r)
	}
	open()
	for name, ch := range map[string]chan AppendResult{"original": orig, "retry": retry} {
		if r := <-ch; r.Err != nil || r.BaseOffset != 1 {
			t.Fatalf("%s: %+v, want base offset 1", name, r)
		}
	}
	if leo := tp.logEnd(); leo != 3 {
		t.Fatalf("log end %d, want 3", leo)
	}
}

// TestProducerStateAfterCleanStop: a clean stop snapshots the state at the
// log end; the next instance loads it and still recognises retries of the
// last five batches, and the sequence goes on.
func TestProducerStateAfterCleanStop(t *testing.T) {
	fs := vfs.NewCrashableMem()
	cfg := testConfig(fs, clock.NewManual(time.UnixMilli(1e12)))
	tp := startTestPartition(t, cfg)
	for i := range 7 {
		tp.appendOK(batch(t, 1, 0, int32(2*i), 2), int64(2*i))
	}
	tp.stop()
	if got := snapshotNames(t, fs); len(got) == 0 || got[len(got)-1] != fmt.Sprintf("%020d.snapshot", 14) {
		t.Fatalf("snapshots after a clean stop: %v, want one at the log end 14", got)
	}
	tp = startTestPartition(t, cfg)
	for i := 2; i < 7; i++ { // the last five batches
		tp.appendOK(batch(t, 1, 0, int32(2*i), 2), int64(2*i))
	}
	tp.appendErr(batch(t, 1, 0, 2, 2), kerr.OutOfOrderSequenceNumber) // older than five
	tp.appendErr(batch(t, 1, 0, 15, 1), kerr.OutOfOrderSequenceNumber)
	tp.appendOK(batch(t, 1, 0, 14, 1), 14)
}

// TestProducerStateAfterCrash: after a power loss the state is rebuilt from
// the snapshot taken at a segment roll and the batch headers after it, even
// those compaction would empty; every acknowledged batch's retry is still
// recognised.
func TestProducerStateAfterCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	cfg := testConfig(fs, clock.NewManual(time.UnixMilli(1e12)))
	cfg.TopicConfig.SegmentBytes = 1 << 10 // rolls every few batches
	tp := startTestPartition(t, cfg)
	seq := map[int64]int32{}
	var offsets [][3]int64 // pid, seq, offset of each batch
	for i := range 60 {
		pid := int64(1 + i%3)
		tp.appendOK(batch(t, pid, 0, seq[pid], 2), int64(2*i))
		offsets = append(offsets, [3]int64{pid, int64(seq[pid]), int64(2 * i)})
		seq[pid] += 2
	}
	if len(snapshotNames(t, fs)) == 0 {
		t.Fatal("no snapshot at the segment rolls")
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	tp.stop()
	cfg.FS = crashed
	tp = startTestPartition(t, cfg)
	if leo := tp.logEnd(); leo != 120 {
		t.Fatalf("log end %d after the crash, want 120 (every batch was acknowledged)", leo)
	}
	for _, o := range offsets[len(offsets)-15:] { // the last five of each producer
		tp.appendOK(batch(t, o[0], 0, int32(o[1]), 2), o[2])
	}
	for pid := int64(1); pid <= 3; pid++ {
		tp.appendErr(batch(t, pid, 0, seq[pid]+1, 1), kerr.OutOfOrderSequenceNumber)
		tp.appendOK(batch(t, pid, 0, seq[pid], 1), 120+pid-1)
	}
}

// TestSnapshotAboveDurableLogEnd: a periodic snapshot covering appends that
// a crash then loses is not used: the retry of a lost batch is appended
// again, not answered with offsets the log no longer has.
func TestSnapshotAboveDurableLogEnd(t *testing.T) {
	fs := vfs.NewCrashableMem()
	clk := clock.NewManual(time.UnixMilli(1e12))
	cfg := testConfig(fs, clk)
	tp := startTestPartition(t, cfg)
	tp.appendOK(batch(t, 1, 0, 0, 3), 0)
	tp.stop() // synced, snapshot at 3

	cfg.Durability = configs.DurabilityReplicated // no fsync from here on
	tp = startTestPartition(t, cfg)
	tp.appendOK(batch(t, 1, 0, 3, 3), 3)
	clk.Advance(producerSnapshotInterval)
	tp.tick()
	if got := snapshotNames(t, fs); len(got) == 0 || got[len(got)-1] != fmt.Sprintf("%020d.snapshot", 6) {
		t.Fatalf("snapshots %v, want a periodic one at 6", got)
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	tp.stop()

	cfg.FS, cfg.Durability = crashed, configs.DurabilityFsync
	tp = startTestPartition(t, cfg)
	if leo := tp.logEnd(); leo != 3 {
		t.Fatalf("log end %d after the crash, want 3", leo)
	}
	tp.appendOK(batch(t, 1, 0, 0, 3), 0) // before the crash: a duplicate
	tp.appendOK(batch(t, 1, 0, 3, 3), 3) // lost in the crash: appended again
	if leo := tp.logEnd(); leo != 6 {
		t.Fatalf("log end %d, want 6", leo)
	}
}

// TestProducerStateAfterPanic: a panic after an append (whose answer is
// then REQUEST_TIMED_OUT) restarts the actor without trusting its memory:
// the state is rebuilt from the log, and the producer's retry is answered
// with the original offset.
func TestProducerStateAfterPanic(t *testing.T) {
	var crash crashAfter
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))), crash.middleware)
	tp.appendOK(batch(t, 1, 0, 0, 1), 0)
	tp.appendOK(batch(t, 1, 0, 1, 1), 1)
	crash.armed.Store(true)
	if r := tp.append(batch(t, 1, 0, 2, 1)); r.Err != kerr.RequestTimedOut {
		t.Fatalf("append that crashed the actor: %+v, want REQUEST_TIMED_OUT", r)
	}
	tp.appendOK(batch(t, 1, 0, 2, 1), 2)
	tp.appendOK(batch(t, 1, 0, 3, 1), 3)
	if leo := tp.logEnd(); leo != 4 {
		t.Fatalf("log end %d, want 4", leo)
	}
}

// TestProducerExpiryOnTick: a producer idle for producer.id.expiration.ms
// is forgotten at the next tick, and then starts anywhere (KIP-360).
func TestProducerExpiryOnTick(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1e12))
	cfg := testConfig(vfs.NewCrashableMem(), clk)
	cfg.ProducerIDExpirationMs = 1000
	tp := startTestPartition(t, cfg)
	tp.appendOK(batch(t, 1, 0, 0, 1), 0)
	clk.Advance(999 * time.Millisecond)
	tp.tick()
	tp.appendErr(batch(t, 1, 0, 5, 1), kerr.OutOfOrderSequenceNumber)
	clk.Advance(time.Second)
	tp.tick()
	tp.appendOK(batch(t, 1, 0, 5, 1), 1)
}

// TestReplayHeaders: the header walk used to rebuild producer state sees
// every batch from the offset asked, across segments, with batches smaller
// and larger than its read chunk, and nothing below it.
func TestReplayHeaders(t *testing.T) {
	o := store.DefaultOptions()
	o.SegmentBytes = 256 << 10
	l, err := store.Open(store.Config{FS: vfs.NewCrashableMem(), Dir: testDir, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var bases []int64
	for i := range 40 {
		size := 100
		if i%3 == 0 {
			size = replayChunk + replayChunk/2 // larger than a chunk
		}
		recs := []store.Record{{Value: make([]byte, size)}, {OffsetDelta: 1, Value: make([]byte, size)}}
		b, err := store.AppendBatch(nil, store.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: 1, ProducerID: 1, BaseSequence: int32(2 * i)}, recs, store.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, res.BaseOffset)
	}
	if n, _ := l.Segments(); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	for _, from := range []int64{0, 1, 2, 31, 40, 79, 80} {
		var got []int64
		if err := replayHeaders(l.View(), from, func(h *store.Header, control []byte) error {
			if h.BaseSequence != int32(h.BaseOffset) || control != nil {
				t.Fatalf("header at %d has sequence %d (control %v)", h.BaseOffset, h.BaseSequence, control != nil)
			}
			got = append(got, h.BaseOffset)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, b := range bases {
			if b+1 >= from {
				want = append(want, b)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("from %d: batches at %v, want %v", from, got, want)
		}
	}
}
