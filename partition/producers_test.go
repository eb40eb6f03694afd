package partition

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/skeinlog/skein/partition/store"
)

// TestProducers drives the idempotent-producer state machine through the
// scenarios in testdata/producers, one file per KIP rule (regenerate with
// -rewrite and review the diff). Commands:
//
//	init [expiration=<ms>]                 a new state machine, log end 0
//	append pid= epoch= seq= [records=1] [ts=0] [now=0] [txn]
//	                                       check, then append at the log end and update;
//	                                       txn: a transactional batch
//	replay pid= epoch= seq= offset= [records=1] [ts=0] [now=0] [empty] [txn] [control [commit] [coord=0]]
//	                                       update as the log replay does (no check);
//	                                       empty: a batch compaction emptied;
//	                                       control: a transaction marker (abort unless commit)
//	marker pid= epoch= [commit] [coord=0] [now=0]
//	                                       check a marker, then append it at the log end
//	replicated hw=<offset>                 the high watermark moved
//	unstable                               the first unstable offset
//	expire now=<ms>                        forget idle producers
//	restart                                snapshot, restore into a new machine
//	state                                  every producer, its epoch and batches
func TestProducers(t *testing.T) {
	datadriven.Walk(t, "testdata/producers", func(t *testing.T, path string) {
		var (
			s   *producers
			leo int64
		)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if s == nil && d.Cmd != "init" {
				d.Fatalf(t, "init first")
			}
			switch d.Cmd {
			case "init":
				exp := int64(86400000)
				d.MaybeScanArgs(t, "expiration", &exp)
				s, leo = newProducers(exp), 0
				return ""
			case "append":
				h, now := scanBatch(t, d)
				c := s.check(&h, d.HasArg("coordinator"))
				switch {
				case c.Err != nil:
					return fmt.Sprintf("%s: %s", c.Err.Message, c.Message)
				case c.Duplicate != nil:
					return fmt.Sprintf("duplicate of offsets [%d, %d] ts %d", c.Duplicate.FirstOffset, c.Duplicate.LastOffset, c.Duplicate.Timestamp)
				}
				h.BaseOffset = leo
				leo = h.NextOffset()
				s.update(&h, now)
				return fmt.Sprintf("appended at offsets [%d, %d]", h.BaseOffset, h.LastOffset())
			case "replay":
				h, now := scanBatch(t, d)
				d.ScanArgs(t, "offset", &h.BaseOffset)
				leo = max(leo, h.NextOffset())
				if h.Control() {
					return printAborted(s.endTxn(&h, scanMarker(t, d, &h), now))
				}
				s.update(&h, now)
				return ""
			case "marker":
				h, now := scanBatch(t, d)
				h.Attributes |= markerAttributes
				h.BaseSequence, h.LastOffsetDelta = -1, 0
				m := scanMarker(t, d, &h)
				if err, msg := s.checkMarker(&m); err != nil {
					return fmt.Sprintf("%s: %s", err.Message, msg)
				}
				h.BaseOffset = leo
				leo = h.NextOffset()
				return fmt.Sprintf("marker at offset %d; %s", h.BaseOffset, printAborted(s.endTxn(&h, m, now)))
			case "replicated":
				var hw int64
				d.ScanArgs(t, "hw", &hw)
				s.replicated(hw)
				return ""
			case "unstable":
				if first, ok := s.firstUnstable(); ok {
					return fmt.Sprintf("first unstable offset %d", first)
				}
				return "none"
			case "expire":
				var now int64
				d.ScanArgs(t, "now", &now)
				return fmt.Sprintf("expired %d", s.expire(now))
			case "restart":
				b := s.encode()
				next := newProducers(s.expirationMs)
				if err := next.restore(b); err != nil {
					d.Fatalf(t, "restore: %v", err)
				}
				if before, after := printProducers(s), printProducers(next); before != after {
					d.Fatalf(t, "restored state differs:\n%s\nwant\n%s", after, before)
				}
				s = next
				return fmt.Sprintf("restored %d producers from a %d-byte snapshot", len(s.entries), len(b))
			case "state":
				return printProducers(s)
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// scanBatch builds the header of a producer's batch from the arguments.
func scanBatch(t *testing.T, d *datadriven.TestData) (store.Header, int64) {
	var (
		pid          int64
		epoch        int
		seq          int64
		records      = 1
		ts, now      int64
		empty, contr = d.HasArg("empty"), d.HasArg("control")
	)
	d.ScanArgs(t, "pid", &pid)
	d.MaybeScanArgs(t, "epoch", &epoch)
	d.MaybeScanArgs(t, "seq", &seq)
	d.MaybeScanArgs(t, "records", &records)
	d.MaybeScanArgs(t, "ts", &ts)
	d.MaybeScanArgs(t, "now", &now)
	h := store.Header{
		Magic: 2, ProducerID: pid, ProducerEpoch: int16(epoch), BaseSequence: int32(seq),
		LastOffsetDelta: int32(records - 1), NumRecords: int32(records), BaseTimestamp: ts, MaxTimestamp: ts,
	}
	if empty {
		h.NumRecords = 0
	}
	if d.HasArg("txn") {
		h.Attributes |= 0x10
	}
	if contr {
		h.Attributes |= markerAttributes
		h.BaseSequence, h.LastOffsetDelta = -1, 0
	}
	return h, now
}

// scanMarker reads a marker's arguments for the control batch h.
func scanMarker(t *testing.T, d *datadriven.TestData, h *store.Header) Marker {
	coord := 0
	d.MaybeScanArgs(t, "coord", &coord)
	return Marker{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, Commit: d.HasArg("commit"), CoordinatorEpoch: int32(coord)}
}

func printAborted(a store.AbortedTxn, ok bool) string {
	if !ok {
		return "no aborted transaction"
	}
	return fmt.Sprintf("aborted transaction of producer %d: offsets [%d, %d], last stable offset %d", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
}

func printProducers(s *producers) string {
	ids := make([]int64, 0, len(s.entries))
	for id := range s.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		e := s.entries[id]
		fmt.Fprintf(&b, "producer %d: epoch %d, last append at %d", id, e.Epoch, e.LastTimestamp)
		if e.TxnFirstOffset >= 0 {
			fmt.Fprintf(&b, ", transaction from offset %d", e.TxnFirstOffset)
		}
		if e.CoordinatorEpoch >= 0 {
			fmt.Fprintf(&b, ", coordinator epoch %d", e.CoordinatorEpoch)
		}
		b.WriteString("\n")
		for _, m := range e.Batches {
			fmt.Fprintf(&b, "  seq [%d, %d] offsets [%d, %d] ts %d\n", m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, m.Timestamp)
		}
	}
	if b.Len() == 0 {
		return "no producers"
	}
	return b.String()
}

// TestProducersSnapshotDecodeHostile: a payload that is not an encoding of
// a state is refused with errBadSnapshot, never a panic or a huge
// allocation, and leaves the state empty.
func TestProducersSnapshotDecodeHostile(t *testing.T) {
	good := newProducers(1)
	for i := range 3 {
		h := store.Header{ProducerID: int64(i), BaseSequence: 0, LastOffsetDelta: 1, NumRecords: 2, BaseOffset: int64(i * 2)}
		good.update(&h, 5)
	}
	b := good.encode()
	for name, bad := range map[string][]byte{
		"empty":          nil,
		"version":        append([]byte{9}, b[1:]...),
		"huge count":     {0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"truncated":      b[:len(b)-1],
		"trailing bytes": append(slices.Clone(b), 0),
		"six batches":    func() []byte { c := slices.Clone(b); c[5+snapshotEntrySize-1] = 6; return c }(),
		"negative id":    func() []byte { c := slices.Clone(b); c[5] = 0x80; return c }(),
	} {
		s := newProducers(1)
		h := store.Header{ProducerID: 42}
		s.update(&h, 0)
		if err := s.restore(bad); err == nil {
			t.Errorf("%s: restored", name)
		} else if len(s.entries) != 0 {
			t.Errorf("%s: %d producers left after a failed restore", name, len(s.entries))
		}
	}
	s := newProducers(1)
	if err := s.restore(b); err != nil || printProducers(s) != printProducers(good) {
		t.Fatalf("good snapshot: %v\n%s", err, printProducers(s))
	}
}

// nextBatch advances h to the producer's next batch of the same size.
func nextBatch(h *store.Header) {
	h.BaseSequence = incrementSequence(lastSequence(h), 1)
	h.BaseOffset = h.NextOffset()
}

// TestProducersCheckUpdateAllocs guards the produce path: checking and
// recording an in-sequence batch of a known producer allocates nothing.
func TestProducersCheckUpdateAllocs(t *testing.T) {
	s := newProducers(1)
	h := store.Header{ProducerID: 9, LastOffsetDelta: 9, NumRecords: 10}
	for range maxBatchesRetained { // the producer's entry is full from here on
		s.update(&h, 0)
		nextBatch(&h)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if c := s.check(&h, false); c.Err != nil || c.Duplicate != nil {
			t.Fatalf("check: %+v", c)
		}
		s.update(&h, 0)
		nextBatch(&h)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per check and update, want 0", allocs)
	}
}

// BenchmarkProducersCheckUpdate is the idempotence cost of one append, with
// 1000 producers known.
func BenchmarkProducersCheckUpdate(b *testing.B) {
	b.ReportAllocs()
	s := newProducers(1)
	hs := make([]store.Header, 1000)
	for i := range hs {
		hs[i] = store.Header{ProducerID: int64(i), LastOffsetDelta: 9, NumRecords: 10}
		for range maxBatchesRetained {
			s.update(&hs[i], 0)
			nextBatch(&hs[i])
		}
	}
	for i := 0; b.Loop(); i++ {
		h := &hs[i%len(hs)]
		if c := s.check(h, false); c.Err != nil || c.Duplicate != nil {
			b.Fatalf("check: %+v", c)
		}
		s.update(h, 0)
		nextBatch(h)
	}
}
