package partition

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// txnBatch is a transactional producer's batch of n records.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "txn-p%d-e%d-s%d", pid, epoch, int(seq)+i)}
	}
	b, err := store.AppendBatch(nil, store.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), BaseTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Attributes: 0x10,
	}, recs, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mark writes a marker and waits for the answer.
func (tp *testPartition) mark(m Marker) AppendResult {
	ch := make(chan AppendResult, 1)
	tp.sys.Root.Send(tp.pid, &Append{Marker: &m, Acks: -1, Reply: func(r AppendResult) { ch <- r }})
	return <-ch
}

func (tp *testPartition) lastStable() int64 {
	tp.barrier()
	return tp.handle.View().Log.LastStableOffset
}

// TestTransactionsLastStableOffset: the last stable offset stops at the
// first transaction in progress, moves with its marker, and an abort leaves
// an index entry that read_committed fetches get; both survive a crash,
// rebuilt from the producer snapshot and the log.
func TestTransactionsLastStableOffset(t *testing.T) {
	fs := vfs.NewCrashableMem()
	cfg := testConfig(fs, clock.NewManual(time.UnixMilli(1e12)))
	tp := startTestPartition(t, cfg)
	tp.appendOK(batch(t, 9, 0, 0, 2), 0)    // not transactional
	tp.appendOK(txnBatch(t, 1, 0, 0, 3), 2) // producer 1's transaction: [2, 4]
	tp.appendOK(txnBatch(t, 2, 0, 0, 1), 5) // producer 2's: [5, ...]
	if lso := tp.lastStable(); lso != 2 {
		t.Fatalf("last stable offset %d, want 2 (producer 1's transaction)", lso)
	}
	if r := tp.mark(Marker{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 1}); r.Err != nil || r.BaseOffset != 6 {
		t.Fatalf("abort marker: %+v", r)
	}
	if lso := tp.lastStable(); lso != 5 {
		t.Fatalf("last stable offset %d after producer 1's abort, want 5 (producer 2's transaction)", lso)
	}
	want := []store.AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 6, LastStableOffset: 5}}
	if got := tp.handle.View().Log.AbortedTxns(0, 7); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted transactions %v, want %v", got, want)
	}
	// A crash keeps what was acknowledged: producer 2's transaction is
	// still in progress, producer 1's aborted.
	crashed := fs.CrashClone(vfs.CrashOptions{})
	tp.stop()
	cfg.FS = crashed
	tp = startTestPartition(t, cfg)
	if lso := tp.lastStable(); lso != 5 {
		t.Fatalf("last stable offset %d after a crash, want 5", lso)
	}
	if got := tp.handle.View().Log.AbortedTxns(0, 7); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("aborted transactions %v after a crash, want %v", got, want)
	}
	if r := tp.mark(Marker{ProducerID: 2, ProducerEpoch: 0, Commit: true, CoordinatorEpoch: 1}); r.Err != nil || r.BaseOffset != 7 {
		t.Fatalf("commit marker: %+v", r)
	}
	if lso, hw := tp.lastStable(), tp.handle.View().Log.HighWatermark; lso != hw || hw != 8 {
		t.Fatalf("last stable offset %d, high watermark %d; want both 8", lso, hw)
	}
	// A marker from an older coordinator is fenced.
	if r := tp.mark(Marker{ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 0}); r.Err != kerr.TransactionCoordinatorFenced {
		t.Fatalf("stale coordinator's marker: %+v", r)
	}
}

// verifier is an Append.Verify that records its calls and answers when
// told.
type verifier struct {
	calls  chan func(*kerr.Error)
	verify func(reply func(*kerr.Error))
}

func newVerifier() *verifier {
	v := &verifier{calls: make(chan func(*kerr.Error), 10)}
	v.verify = func(reply func(*kerr.Error)) { v.calls <- reply }
	return v
}

func (tp *testPartition) sendVerified(records []byte, v *verifier) chan AppendResult {
	ch := make(chan AppendResult, 1)
	tp.sys.Root.Send(tp.pid, &Append{Records: records, Acks: -1, Verify: v.verify, Reply: func(r AppendResult) { ch <- r }})
	return ch
}

// TestTransactionVerification (KIP-890 part 1): a producer's first
// transactional batch here waits for its coordinator's verification, once
// for the batches that queue behind it; later batches of the transaction
// need none; a refusal refuses them all; a marker while the coordinator is
// asked voids the verification, so a late batch of a finished transaction
// never starts one.
func TestTransactionVerification(t *testing.T) {
	cfg := testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12)))
	tp := startTestPartition(t, cfg)
	v := newVerifier()
	first, second := tp.sendVerified(txnBatch(t, 1, 0, 0, 1), v), tp.sendVerified(txnBatch(t, 1, 0, 1, 1), v)
	reply := <-v.calls
	tp.barrier()
	select {
	case r := <-first:
		t.Fatalf("answered before the coordinator: %+v", r)
	case call := <-v.calls:
		t.Fatalf("asked the coordinator twice for one producer and epoch (%p)", call)
	default:
	}
	reply(nil)
	if r := <-first; r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", r)
	}
	if r := <-second; r.Err != nil || r.BaseOffset != 1 {
		t.Fatalf("second batch: %+v", r)
	}
	if r := <-tp.sendVerified(txnBatch(t, 1, 0, 2, 1), v); r.Err != nil || r.BaseOffset != 2 {
		t.Fatalf("a batch of the transaction in progress: %+v", r)
	}
	if r := tp.mark(Marker{ProducerID: 1, ProducerEpoch: 0, Commit: true}); r.Err != nil {
		t.Fatalf("marker: %+v", r)
	}

	// The next transaction's first batch is verified again, and refused.
	late := tp.sendVerified(txnBatch(t, 1, 0, 3, 1), v)
	(<-v.calls)(kerr.InvalidTxnState)
	if r := <-late; r.Err != kerr.InvalidTxnState {
		t.Fatalf("a batch its coordinator refused: %+v", r)
	}

	// A marker while the coordinator is asked voids the verification.
	late = tp.sendVerified(txnBatch(t, 1, 0, 3, 1), v)
	reply = <-v.calls
	if r := tp.mark(Marker{ProducerID: 1, ProducerEpoch: 0}); r.Err != nil {
		t.Fatalf("marker: %+v", r)
	}
	if r := <-late; r.Err != kerr.InvalidTxnState {
		t.Fatalf("a batch verified across a marker: %+v", r)
	}
	reply(nil) // too late: nothing happens
	if leo, lso := tp.logEnd(), tp.lastStable(); leo != 5 || lso != 5 {
		t.Fatalf("log end %d, last stable offset %d; want 5, 5 (nothing appended, no transaction open)", leo, lso)
	}

	// A producer's batches that come while its first waits for the
	// coordinator wait behind it, and are checked after it: the second is
	// in sequence then.
	third, fourth := tp.sendVerified(txnBatch(t, 1, 0, 3, 1), v), tp.sendVerified(txnBatch(t, 1, 0, 4, 1), v)
	(<-v.calls)(nil)
	if r := <-third; r.Err != nil || r.BaseOffset != 5 {
		t.Fatalf("a transaction's first batch: %+v", r)
	}
	if r := <-fourth; r.Err != nil || r.BaseOffset != 6 {
		t.Fatalf("the batch behind it: %+v", r)
	}
	if r := tp.mark(Marker{ProducerID: 1, ProducerEpoch: 0, Commit: true}); r.Err != nil {
		t.Fatalf("marker: %+v", r)
	}

	// Transaction version 2: the marker carries the bumped epoch the next
	// transaction uses; a batch of that epoch, verified while the marker
	// is written, goes on.
	tp.appendOK(txnBatch(t, 2, 0, 0, 1), 8) // producer 2's transaction, unverified
	next := tp.sendVerified(txnBatch(t, 2, 1, 0, 1), v)
	reply = <-v.calls
	if r := tp.mark(Marker{ProducerID: 2, ProducerEpoch: 1, Commit: true, TV2: true}); r.Err != nil {
		t.Fatalf("TV2 marker: %+v", r)
	}
	reply(nil)
	if r := <-next; r.Err != nil || r.BaseOffset != 10 {
		t.Fatalf("the next transaction's batch: %+v", r)
	}
}

// TestVerifiedBatchGoesFirst: a producer's batch that was queued, not yet
// written, when its first batch's verification came back is written after
// that first batch, which came before it (it was refused
// OUT_OF_ORDER_SEQUENCE_NUMBER when written first).
func TestVerifiedBatchGoesFirst(t *testing.T) {
	cfg := testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12)))
	h := newHolder()
	tp := startTestPartition(t, cfg, h.middleware)
	v := newVerifier()
	first := tp.sendVerified(txnBatch(t, 1, 0, 0, 2), v)
	reply := <-v.calls
	// Hold the actor on a message, then fill its mailbox: the second batch,
	// then the verification, which the actor takes after the second is
	// queued and before it is written.
	h.hold(tp, &DescribeProducers{Reply: func([]ProducerState, *kerr.Error) {}})
	second := tp.sendVerified(txnBatch(t, 1, 0, 2, 1), v)
	reply(nil)
	close(h.release)
	for _, c := range []struct {
		name string
		ch   chan AppendResult
		want int64
	}{{"first", first, 0}, {"second", second, 2}} {
		select {
		case r := <-c.ch:
			if r.Err != nil || r.BaseOffset != c.want {
				t.Fatalf("%s batch: %+v, want base offset %d", c.name, r, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s batch not answered", c.name)
		}
	}
}
