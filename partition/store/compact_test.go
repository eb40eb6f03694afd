package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// ckv is one record of a keyed test batch; a nil value is a tombstone.
type ckv struct {
	key   string
	value []byte
}

func ckPut(key, value string) ckv { return ckv{key, []byte(value)} }
func ckDel(key string) ckv        { return ckv{key: key} }

// keyedBatch builds a batch as a producer sends it: records rs with
// timestamps ts, ts+1, ..., each with one header ("h" → its key), the
// records compressed with codec; pid < 0 makes it non-idempotent.
func keyedBatch(tb testing.TB, codec Codec, ts, pid int64, seq int32, rs ...ckv) []byte {
	tb.Helper()
	recs := make([]Record, len(rs))
	for i, r := range rs {
		hdr := binary.AppendVarint(nil, 1)
		hdr = append(hdr, 'h')
		hdr = binary.AppendVarint(hdr, int64(len(r.key)))
		hdr = append(hdr, r.key...)
		recs[i] = Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: []byte(r.key), Value: r.value, NumHeaders: 1, Headers: hdr}
	}
	h := Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(rs) - 1),
		BaseTimestamp: ts, MaxTimestamp: ts + int64(len(rs)-1),
		ProducerID: pid, ProducerEpoch: -1, BaseSequence: -1,
	}
	if pid >= 0 {
		h.ProducerEpoch, h.BaseSequence = 0, seq
	}
	b, err := AppendBatch(nil, h, recs, codec)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ckRecord is a record as read back, with its absolute offset and timestamp.
type ckRecord struct {
	Offset    int64
	Key       string
	Value     []byte
	Timestamp int64
	Headers   string
}

func (r ckRecord) String() string {
	if r.Value == nil {
		return fmt.Sprintf("%d:%s=<nil>@%d", r.Offset, r.Key, r.Timestamp)
	}
	return fmt.Sprintf("%d:%s=%s@%d", r.Offset, r.Key, r.Value, r.Timestamp)
}

// diffRecords describes how got differs from want, briefly.
func diffRecords(got, want []ckRecord) string {
	for i := range min(len(got), len(want)) {
		if !sameRecords(got[i:i+1], want[i:i+1]) {
			return fmt.Sprintf("%d records, want %d; first difference at %d: got %v, want %v", len(got), len(want), i, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("%d records, want %d; extra %v", len(got), len(want), got[len(want)])
	case len(got) < len(want):
		return fmt.Sprintf("%d records, want %d; missing %v", len(got), len(want), want[len(got)])
	}
	return "same"
}

func sameRecords(a, b []ckRecord) bool {
	return slices.EqualFunc(a, b, func(x, y ckRecord) bool {
		return x.Offset == y.Offset && x.Key == y.Key && x.Timestamp == y.Timestamp && x.Headers == y.Headers &&
			(x.Value == nil) == (y.Value == nil) && bytes.Equal(x.Value, y.Value)
	})
}

// readBatches reads every batch of v from its log start offset, checking
// CRCs and that offsets increase, and returns the headers and records.
func readBatches(t testing.TB, v *View) ([]Header, []ckRecord) {
	t.Helper()
	hs, recs, err := readView(v)
	if err != nil {
		t.Fatal(err)
	}
	return hs, recs
}

// readView is readBatches for goroutines other than the test's.
func readView(v *View) ([]Header, []ckRecord, error) {
	var hs []Header
	var recs []ckRecord
	var dec Decompressor
	next := v.LogStartOffset
	for next < v.LogEndOffset {
		b, err := v.ReadBytes(next, ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			return nil, nil, fmt.Errorf("read at %d: %w", next, err)
		}
		if len(b) == 0 {
			return nil, nil, fmt.Errorf("read at %d below the log end %d returned nothing", next, v.LogEndOffset)
		}
		err = ForEachBatch(b, func(bb []byte, h Header) error {
			if err := CheckCRC(bb); err != nil {
				return err
			}
			if h.BaseOffset < next && len(hs) > 0 {
				return fmt.Errorf("batch %d-%d after offset %d", h.BaseOffset, h.LastOffset(), next)
			}
			hs = append(hs, h)
			next = h.NextOffset()
			return ForEachRecord(bb, &dec, func(r *Record) error {
				rec := ckRecord{
					Offset: h.BaseOffset + int64(r.OffsetDelta), Key: string(r.Key),
					Timestamp: h.BaseTimestamp + r.TimestampDelta, Headers: string(r.Headers),
				}
				if r.Value != nil {
					rec.Value = slices.Clone(r.Value)
				}
				if k := len(recs); k > 0 && recs[k-1].Offset >= rec.Offset {
					return fmt.Errorf("record offset %d after %d", rec.Offset, recs[k-1].Offset)
				}
				recs = append(recs, rec)
				return nil
			})
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return hs, recs, nil
}

func readRecords(t testing.TB, v *View) []ckRecord {
	t.Helper()
	_, recs := readBatches(t, v)
	return recs
}

// compactModel is the naive compaction: every record appended, and the
// records a log must hold after the passes so far.
type compactModel struct {
	recs  []ckRecord // every record appended, by offset
	state []ckRecord // what the log holds
}

// cleaned returns what the log holds after a pass that cleans below end:
// below end the newest record of each key among those below end
// (tombstones included: the model's tests keep them), at or above end every
// record. A pass cleans what earlier ones left, so a lower end than before
// leaves the rest as it was.
func (m *compactModel) cleaned(end int64) []ckRecord {
	newest := map[string]int64{}
	for _, r := range m.state {
		if r.Offset < end {
			newest[r.Key] = r.Offset
		}
	}
	var out []ckRecord
	for _, r := range m.state {
		if r.Offset >= end || newest[r.Key] == r.Offset {
			out = append(out, r)
		}
	}
	return out
}

// compact records a pass that cleaned below end and returns the new state.
func (m *compactModel) compact(end int64) []ckRecord {
	m.state = m.cleaned(end)
	return m.state
}

// appendKeyed appends a keyed batch and records it in the model.
func (m *compactModel) appendKeyed(t testing.TB, tl *testLog, codec Codec, pid int64, rs ...ckv) AppendResult {
	t.Helper()
	ts := tl.clock.Now().UnixMilli()
	res, err := tl.Append(keyedBatch(t, codec, ts, pid, int32(len(m.recs)), rs...), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		hdr := binary.AppendVarint(nil, 1)
		hdr = append(hdr, 'h')
		hdr = binary.AppendVarint(hdr, int64(len(r.key)))
		hdr = append(hdr, r.key...)
		rec := ckRecord{Offset: res.BaseOffset + int64(i), Key: r.key, Value: r.value, Timestamp: ts + int64(i), Headers: string(hdr)}
		m.recs = append(m.recs, rec)
		m.state = append(m.state, rec)
	}
	return res
}

// appendRandom appends n random keyed batches of up to 5 records over
// nkeys keys, about one record in ten a tombstone, each batch with a random
// codec.
func (m *compactModel) appendRandom(t testing.TB, tl *testLog, r *rand.Rand, n, nkeys int) {
	t.Helper()
	for range n {
		rs := make([]ckv, 1+r.IntN(5))
		for i := range rs {
			rs[i] = ckPut(fmt.Sprintf("key-%d", r.IntN(nkeys)), fmt.Sprintf("v%d-%s", len(m.recs)+i, bytes.Repeat([]byte{'x'}, r.IntN(200))))
			if r.IntN(10) == 0 {
				rs[i].value = nil
			}
		}
		m.appendKeyed(t, tl, allCodecs[r.IntN(len(allCodecs))], -1, rs...)
	}
}

// cleanableEnd returns the offset below which v's segments are cleanable
// with no compaction lag: the base of the first segment that is active or
// not wholly below the high watermark.
func cleanableEnd(v *View) int64 {
	for i := range v.closed {
		next := v.active.base
		if i+1 < len(v.closed) {
			next = v.closed[i+1].base
		}
		if next > v.HighWatermark {
			return v.closed[i].base
		}
	}
	return v.active.base
}

func compactOptions() Options {
	o := testOptions()
	o.Compact, o.Delete = true, false
	o.SegmentBytes = 4 << 10
	return o
}

func mustCompact(t testing.TB, tl *testLog) CompactStats {
	t.Helper()
	st, err := tl.Compact()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkSegmentsContiguous checks rule 3's tail: every sealed segment ends
// where the next one begins, cleaned or not.
func checkSegmentsContiguous(t testing.TB, v *View) {
	t.Helper()
	for i, s := range v.closed {
		next := v.active.base
		if i+1 < len(v.closed) {
			next = v.closed[i+1].base
		}
		if s.size > 0 && s.next != next {
			t.Fatalf("segment %d ends at %d, the next begins at %d", s.base, s.next, next)
		}
	}
}

// TestCompactDifferential compares compaction with the naive model over
// random keyed appends and tombstones in all codecs, across several passes
// with appends between them, a high watermark that sometimes lags, a
// reopen after a clean shutdown and one after a crash: below the cleanable
// end the log holds exactly the newest record of each key at its original
// offset, above it every record, in offset order.
func TestCompactDifferential(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			if seed%4 == 3 {
				// A tiny offset map: passes stop early and the next ones
				// carry on (rule 1).
				defer func(n int) { maxCleanerKeys = n }(maxCleanerKeys)
				maxCleanerKeys = 3
			}
			mem := vfs.NewCrashableMem()
			o := compactOptions()
			o.SegmentBytes = int64(1500 + r.IntN(6000))
			tl := openTestLog(t, mem, o)
			m := &compactModel{}
			for round := range 4 {
				m.appendRandom(t, tl, r, 30+r.IntN(60), 5+r.IntN(30))
				hw := tl.LogEndOffset()
				if r.IntN(3) == 0 {
					hw = r.Int64N(hw + 1)
				}
				tl.SetHighWatermark(hw)
				before, _ := tl.Segments()
				end := cleanableEnd(tl.View())
				st := mustCompact(t, tl)
				for tl.CleanableRatio() > 0 {
					st2 := mustCompact(t, tl)
					if st2 == (CompactStats{}) {
						t.Fatalf("round %d: dirty ratio %v and a pass did nothing", round, tl.CleanableRatio())
					}
				}
				v := tl.View()
				want := m.compact(end)
				if got := readRecords(t, v); !sameRecords(got, want) {
					t.Fatalf("round %d (cleanable below %d, %+v): %s", round, end, st, diffRecords(got, want))
				}
				checkSegmentsContiguous(t, v)
				if after, _ := tl.Segments(); after > before {
					t.Fatalf("round %d: %d segments after compaction, %d before", round, after, before)
				}
				// Nothing left to do: a pass changes nothing.
				if st := mustCompact(t, tl); st != (CompactStats{}) {
					t.Fatalf("round %d: a second pass did %+v", round, st)
				}
				switch round {
				case 1:
					tl.reopen()
				case 2:
					if err := tl.Sync(); err != nil {
						t.Fatal(err)
					}
					crashed := mem.CrashClone(vfs.CrashOptions{})
					tl.Close()
					mem = crashed
					tl.cfg.FS = mem
					l, err := Open(tl.cfg)
					if err != nil {
						t.Fatal(err)
					}
					tl.Log = l
				}
				if got := readRecords(t, tl.View()); !sameRecords(got, want) {
					t.Fatalf("round %d after reopen: %s", round, diffRecords(got, want))
				}
			}
		})
	}
}

// TestCompactKeepsBatchesWhole checks rule 3 batch by batch: a batch whose
// records all stay is copied byte for byte, one that loses some keeps its
// base offset, LastOffsetDelta, producer fields and codec.
func TestCompactKeepsBatchesWhole(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			o := compactOptions()
			o.SegmentBytes = HeaderSize // a segment per batch
			tl := openTestLog(t, vfs.NewCrashableMem(), o)
			m := &compactModel{}
			m.appendKeyed(t, tl, codec, -1, ckPut("a", "1"), ckPut("b", "1"), ckPut("c", "1")) // 0-2: loses a and c
			m.appendKeyed(t, tl, codec, 9, ckPut("d", "1"), ckPut("e", "1"))                   // 3-4: keeps all
			m.appendKeyed(t, tl, codec, 9, ckPut("a", "2"), ckPut("f", "1"), ckPut("c", "2"))  // 5-7: keeps all
			m.appendKeyed(t, tl, CodecNone, -1, ckPut("z", "1"))                               // 8: active
			v := tl.View()
			origHeaders, _ := readBatches(t, v)
			orig1, _ := v.ReadBytes(3, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 5})
			tl.SetHighWatermark(tl.LogEndOffset())
			st := mustCompact(t, tl)
			if st.RecordsRemoved != 2 {
				t.Fatalf("stats %+v, want 2 records removed", st)
			}
			v = tl.View()
			hs, recs := readBatches(t, v)
			if !sameRecords(recs, m.cleaned(8)) {
				t.Fatalf("got %v", recs)
			}
			if len(hs) != 4 {
				t.Fatalf("%d batches, want 4", len(hs))
			}
			b0 := hs[0]
			if o := origHeaders[0]; b0.BaseOffset != 0 || b0.LastOffsetDelta != 2 || b0.NumRecords != 1 || b0.Codec() != codec ||
				b0.BaseTimestamp != o.BaseTimestamp || b0.MaxTimestamp != o.BaseTimestamp+1 || b0.ProducerID != -1 {
				t.Fatalf("rebuilt batch %+v from %+v", b0, o)
			}
			if got, _ := v.ReadBytes(3, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 5}); !bytes.Equal(got, orig1) {
				t.Fatal("a batch that kept every record was not copied byte for byte")
			}
		})
	}
}

// TestCompactProducerState checks that the last data batch of each
// producer id stays as an empty batch when compaction removes all its
// records, so that its sequence survives (Kafka's
// isBatchLastRecordOfProducer), while earlier emptied batches of the same
// producer go.
func TestCompactProducerState(t *testing.T) {
	o := compactOptions()
	o.SegmentBytes, o.SegmentMs = 1<<20, 1000 // one segment, then the active one
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	m := &compactModel{}
	m.appendKeyed(t, tl, CodecZstd, 7, ckPut("a", "1"), ckPut("b", "1")) // 0-1, seq 0
	m.appendKeyed(t, tl, CodecZstd, 7, ckPut("a", "2"), ckPut("b", "2")) // 2-3, seq 2: producer 7's last
	m.appendKeyed(t, tl, CodecNone, 8, ckPut("c", "1"))                  // 4, seq 4: producer 8's last, but in the active segment later
	m.appendKeyed(t, tl, CodecNone, -1, ckPut("a", "3"), ckPut("b", "3"), ckPut("c", "2"))
	tl.clock.Advance(time.Second)
	m.appendKeyed(t, tl, CodecNone, 8, ckPut("x", "1")) // 8, seq 8: active
	tl.SetHighWatermark(tl.LogEndOffset())
	mustCompact(t, tl)
	hs, recs := readBatches(t, tl.View())
	if !sameRecords(recs, m.cleaned(8)) {
		t.Fatalf("records %v", recs)
	}
	var got []string
	for _, h := range hs {
		got = append(got, fmt.Sprintf("%d-%d pid %d seq %d n %d codec %s", h.BaseOffset, h.LastOffset(), h.ProducerID, h.BaseSequence, h.NumRecords, h.Codec()))
	}
	want := []string{
		"2-3 pid 7 seq 2 n 0 codec none",
		"5-7 pid -1 seq -1 n 3 codec none",
		"8-8 pid 8 seq 8 n 1 codec none",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches\n got %q\nwant %q", got, want)
	}
}

// TestCompactTombstonesKIP534 follows a tombstone through KIP-534: the
// first pass keeps it and sets its batch's delete horizon (attribute bit 6,
// BaseTimestamp = now + delete.retention.ms, record timestamps unchanged);
// passes before the horizon keep it; the first pass at the horizon drops it.
// A tombstone in the active segment is never touched.
func TestCompactTombstonesKIP534(t *testing.T) {
	o := compactOptions()
	o.SegmentBytes = HeaderSize
	o.DeleteRetentionMs = time.Hour.Milliseconds()
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	m := &compactModel{}
	m.appendKeyed(t, tl, CodecLZ4, -1, ckPut("a", "1"), ckPut("b", "1")) // 0-1
	tl.clock.Advance(time.Second)
	m.appendKeyed(t, tl, CodecLZ4, -1, ckDel("a"), ckPut("c", "1")) // 2-3
	m.appendKeyed(t, tl, CodecNone, -1, ckDel("b"))                 // 4: active
	tl.SetHighWatermark(tl.LogEndOffset())
	tombstoneTS := m.recs[2].Timestamp

	now := tl.clock.Now().UnixMilli()
	mustCompact(t, tl)
	hs, recs := readBatches(t, tl.View())
	if !sameRecords(recs, m.cleaned(4)) {
		t.Fatalf("after the first pass: %v", recs)
	}
	h := hs[1]
	if !h.DeleteHorizon() || h.BaseTimestamp != now+o.DeleteRetentionMs || recs[1].Timestamp != tombstoneTS || h.Codec() != CodecLZ4 {
		t.Fatalf("tombstone batch %+v, tombstone at %d: want the delete horizon %d set and timestamp %d kept",
			h, recs[1].Timestamp, now+o.DeleteRetentionMs, tombstoneTS)
	}
	if hs[0].DeleteHorizon() {
		t.Fatal("a batch without tombstones got a delete horizon")
	}

	tl.clock.Advance(30 * time.Minute)
	if tl.CompactionDue(0.5) {
		t.Fatal("compaction due before the delete horizon with nothing dirty")
	}
	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("pass before the horizon did %+v", st)
	}
	if got := readRecords(t, tl.View()); !sameRecords(got, recs) {
		t.Fatalf("before the horizon: %v", got)
	}

	tl.clock.Advance(30 * time.Minute)
	if !tl.CompactionDue(0.5) {
		t.Fatal("compaction not due at the delete horizon")
	}
	st := mustCompact(t, tl)
	if st.RecordsRemoved != 1 {
		t.Fatalf("pass at the horizon: %+v, want the tombstone removed", st)
	}
	want := []ckRecord{m.recs[1], m.recs[3], m.recs[4]}
	hs, got := readBatches(t, tl.View())
	if !sameRecords(got, want) {
		t.Fatalf("at the horizon:\n got %v\nwant %v", got, want)
	}
	if !hs[1].DeleteHorizon() || got[1].Timestamp != m.recs[3].Timestamp {
		t.Fatalf("batch %+v after its tombstone went", hs[1])
	}
	// And again after a reopen, which forgets the horizons: nothing changes.
	tl.reopen()
	mustCompact(t, tl)
	if got := readRecords(t, tl.View()); !sameRecords(got, want) {
		t.Fatalf("after reopen: %v", got)
	}
}

// TestCompactMinCompactionLag checks min.compaction.lag.ms: a segment
// whose largest timestamp is younger than the lag, and everything after
// it, stays as it was.
func TestCompactMinCompactionLag(t *testing.T) {
	o := compactOptions()
	o.SegmentBytes = HeaderSize
	o.MinCompactionLagMs = (10 * time.Minute).Milliseconds()
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	m := &compactModel{}
	for range 4 {
		m.appendKeyed(t, tl, CodecSnappy, -1, ckPut("a", "old"), ckPut("b", "old")) // 0-7
	}
	tl.clock.Advance(6 * time.Minute)
	for range 4 {
		m.appendKeyed(t, tl, CodecSnappy, -1, ckPut("a", "new"), ckPut("b", "new")) // 8-15
	}
	m.appendKeyed(t, tl, CodecNone, -1, ckPut("z", "active"))
	tl.SetHighWatermark(tl.LogEndOffset())
	all := slices.Clone(m.recs)

	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("every segment is younger than the lag, yet the pass did %+v", st)
	}
	if got := readRecords(t, tl.View()); !sameRecords(got, all) {
		t.Fatalf("young segments changed: %v", got)
	}
	tl.clock.Advance(5 * time.Minute) // the first four are 11 minutes old, the next 5
	mustCompact(t, tl)
	if got, want := readRecords(t, tl.View()), m.compact(8); !sameRecords(got, want) {
		t.Fatalf("past the lag of the first four: %s", diffRecords(got, want))
	}
	tl.clock.Advance(5 * time.Minute) // the next four are 10 minutes old, less a millisecond
	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("a millisecond short of the lag, the pass did %+v", st)
	}
	tl.clock.Advance(time.Millisecond)
	mustCompact(t, tl)
	if got, want := readRecords(t, tl.View()), m.compact(16); !sameRecords(got, want) {
		t.Fatalf("past the lag of all: %s", diffRecords(got, want))
	}
}

// TestCompactPolicy checks that a log without cleanup.policy=compact is
// never cleaned, and that compact,delete still deletes by retention.ms.
func TestCompactPolicy(t *testing.T) {
	o := compactOptions()
	o.Compact = false
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	m := &compactModel{}
	for range 20 {
		m.appendKeyed(t, tl, CodecNone, -1, ckPut("a", "x"))
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	if st := mustCompact(t, tl); st != (CompactStats{}) || tl.CompactionDue(0) {
		t.Fatalf("cleanup.policy=delete compacted: %+v", st)
	}

	o = compactOptions()
	o.Delete, o.RetentionMs, o.SegmentBytes = true, 60_000, 2*HeaderSize
	tl = openTestLog(t, vfs.NewCrashableMem(), o)
	m = &compactModel{}
	for range 20 {
		m.appendKeyed(t, tl, CodecGzip, -1, ckPut("a", "x"), ckPut("b", "y"))
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	if st := mustCompact(t, tl); st.RecordsRemoved != 36 {
		t.Fatalf("compact,delete: %+v, want 36 records removed", st)
	}
	tl.clock.Advance(time.Hour)
	if _, err := tl.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	v := tl.View()
	if len(v.closed) != 0 || v.LogStartOffset != v.active.base {
		t.Fatalf("retention left %d sealed segments, log start %d", len(v.closed), v.LogStartOffset)
	}
}

// TestCompactConcurrent runs appends (with rolls and high watermark moves)
// and readers alongside repeated passes, under -race: readers always read
// valid batches in offset order, and a view taken before a swap reads the
// same records after it from the retired files.
func TestCompactConcurrent(t *testing.T) {
	mem := vfs.NewCrashableMem()
	o := compactOptions()
	o.SegmentBytes = 2000
	tl := openTestLog(t, mem, o)
	m := &compactModel{}
	r := rand.New(rand.NewPCG(1, 2))
	m.appendRandom(t, tl, r, 100, 20)
	tl.SetHighWatermark(tl.LogEndOffset())

	done := make(chan struct{})
	// The writer waits for a pass every 20 appends, so that passes and
	// appends interleave however fast either is.
	passed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	wr := rand.New(rand.NewPCG(3, 4))
	var batches [][]byte
	for range 300 {
		rs := []ckv{ckPut(fmt.Sprintf("key-%d", wr.IntN(20)), "concurrent"), ckDel(fmt.Sprintf("key-%d", wr.IntN(20)))}
		batches = append(batches, keyedBatch(t, allCodecs[wr.IntN(len(allCodecs))], 0, -1, -1, rs...))
	}
	go func() { // the partition's writer
		defer wg.Done()
		defer close(done)
		for i, b := range batches {
			if i%20 == 19 {
				<-passed
			}
			if _, err := tl.Append(b, 0); err != nil {
				t.Error(err)
				return
			}
			tl.SetHighWatermark(tl.LogEndOffset())
			if err := tl.Sync(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() { // fetch handlers
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := readView(tl.View()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	passes := 0
	for running := true; running; passes++ {
		select {
		case <-done:
			running = false
		default:
		}
		old := tl.View()
		before := readRecords(t, old)
		if _, err := tl.Compact(); err != nil {
			t.Fatal(err)
		}
		if after := readRecords(t, old); !sameRecords(before, after) {
			t.Fatal("a view taken before a swap reads differently after it")
		}
		select {
		case passed <- struct{}{}:
		default:
		}
	}
	wg.Wait()
	// Quiet now: one more pass, and the log is the model's.
	mustCompact(t, tl)
	v := tl.View()
	_, got := readBatches(t, v)
	seen := map[string]int64{}
	end := cleanableEnd(v)
	for _, rec := range got {
		if last, ok := seen[rec.Key]; ok && rec.Offset < end {
			t.Fatalf("key %s at %d and %d below the cleanable end %d", rec.Key, last, rec.Offset, end)
		}
		seen[rec.Key] = rec.Offset
	}
	if passes < 15 {
		t.Fatalf("%d passes alongside 300 appends", passes)
	}
}

// swapFixture builds a log of small segments (rolled by segment.ms) full
// of duplicates, so that a pass cleans several groups of several segments
// each, and returns it with its model; the same seed builds the same log.
func swapFixture(t *testing.T, fsys vfs.FS, seed uint64) (*testLog, *compactModel) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	o := compactOptions()
	o.SegmentBytes, o.SegmentMs = 6000, 1000
	tl := openTestLog(t, fsys, o)
	m := &compactModel{}
	for range 10 {
		m.appendRandom(t, tl, r, 5, 10)
		tl.clock.Advance(time.Second)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	// A crash must find the high watermark and every record.
	if err := tl.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tl.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return tl, m
}

// reopenCrashed opens what a crash of mem now would leave and returns its
// records, after checking that a pass on it leaves the cleaned log.
func reopenCrashed(t *testing.T, crashed *vfs.MemFS, cfg Config, want []ckRecord) []ckRecord {
	t.Helper()
	cfg.FS = crashed
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer l.Close()
	got := readRecords(t, l.View())
	if _, err := l.Compact(); err != nil {
		t.Fatal(err)
	}
	if after := readRecords(t, l.View()); !sameRecords(after, want) {
		t.Fatalf("a pass after the crash left: %s", diffRecords(after, want))
	}
	names, _ := crashed.List(cfg.Dir)
	for _, name := range names {
		if bytes.HasSuffix([]byte(name), []byte(cleanedSuffix)) || bytes.HasSuffix([]byte(name), []byte(swapSuffix)) {
			t.Fatalf("%s left after reopen", name)
		}
	}
	return got
}

// TestCompactCrashAtEachStep crashes the filesystem just before each
// rename, sync and remove a pass makes, and reopens each crash: the log is
// either the old one or the cleaned one, never a mix, and no newest record
// of a key is ever missing.
func TestCompactCrashAtEachStep(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var mu sync.Mutex
	var crashes []*vfs.MemFS
	var steps []string
	on := false
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		mu.Lock()
		defer mu.Unlock()
		if on && (op == vfs.OpRename || op == vfs.OpSync || op == vfs.OpRemove) {
			crashes = append(crashes, mem.CrashClone(vfs.CrashOptions{}))
			steps = append(steps, op.String()+" "+path)
		}
		return nil
	}))
	tl, m := swapFixture(t, fsys, 1)
	end := cleanableEnd(tl.View())
	bases := segmentBases(tl.View())
	old, want := readRecords(t, tl.View()), m.cleaned(end)
	mu.Lock()
	on = true
	mu.Unlock()
	nbefore, _ := tl.Segments()
	st := mustCompact(t, tl)
	mu.Lock()
	on = false
	mu.Unlock()
	nafter, _ := tl.Segments()
	if nafter > nbefore-3 || !sameRecords(readRecords(t, tl.View()), want) {
		t.Fatalf("the pass did %+v: %d segments before, %d after: want several groups of several", st, nbefore, nafter)
	}
	crashes = append(crashes, mem.CrashClone(vfs.CrashOptions{}))
	steps = append(steps, "after the pass")
	var sawOld, sawNew bool
	for i, crashed := range crashes {
		got := reopenCrashed(t, crashed, tl.cfg, want)
		switch {
		case sameRecords(got, old):
			sawOld = true
		case sameRecords(got, want):
			sawNew = true
		default:
			// A pass swaps group by group: a crash between two groups
			// leaves the first cleaned and the second not, which is a
			// cleaned log too. What must hold is that every record is
			// one that was written, and every newest one is there.
			checkPartlyCleaned(t, got, old, want, bases, steps[i])
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("saw the old log %v, the cleaned one %v over %d crashes", sawOld, sawNew, len(crashes))
	}
}

// segmentBases returns the base offsets of v's segments.
func segmentBases(v *View) []int64 {
	var bases []int64
	for i := range v.numSegments() {
		bases = append(bases, v.segment(i).base)
	}
	return bases
}

// checkPartlyCleaned checks a log that crashed between two groups' swaps:
// the records of each original segment (bases) are either all the old ones
// or all the cleaned ones, never a mix.
func checkPartlyCleaned(t *testing.T, got, old, want []ckRecord, bases []int64, step string) {
	t.Helper()
	in := func(recs []ckRecord, from, to int64) []ckRecord {
		var out []ckRecord
		for _, r := range recs {
			if r.Offset >= from && r.Offset < to {
				out = append(out, r)
			}
		}
		return out
	}
	for i, from := range bases {
		to := int64(1 << 62)
		if i+1 < len(bases) {
			to = bases[i+1]
		}
		g := in(got, from, to)
		if !sameRecords(g, in(old, from, to)) && !sameRecords(g, in(want, from, to)) {
			t.Fatalf("crash at %s: segment %d holds a mix: against the old: %s; against the cleaned: %s", step, from, diffRecords(g, in(old, from, to)), diffRecords(g, in(want, from, to)))
		}
	}
}

// TestCompactInjectedErrors fails each rename, then each sync, of a pass
// in turn, crashes, and reopens: the pass reports the error, and the
// reopened log is the old or the cleaned one (or cleaned group by group),
// never missing a newest record.
func TestCompactInjectedErrors(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpRename, vfs.OpSync} {
		for n := 0; ; n++ {
			mem := vfs.NewCrashableMem()
			toggle := vfs.NewToggle(vfs.FailOnceAfter(n, op, nil))
			tl, m := swapFixture(t, vfs.NewErrorFS(mem, toggle), 2)
			end := cleanableEnd(tl.View())
			bases := segmentBases(tl.View())
			old, want := readRecords(t, tl.View()), m.cleaned(end)
			toggle.On()
			_, err := tl.Compact()
			toggle.Off()
			if err == nil {
				if n == 0 {
					t.Fatalf("%s: no operation to fail", op)
				}
				break // n is past the pass's last operation
			}
			// Before the commit the injected error itself; after it the log
			// fails, as after any failed write.
			if !errors.Is(err, vfs.ErrInjected) && !errors.Is(err, ErrFailed) {
				t.Fatalf("%s %d: %v", op, n, err)
			}
			got := reopenCrashed(t, mem.CrashClone(vfs.CrashOptions{}), tl.cfg, want)
			if !sameRecords(got, old) && !sameRecords(got, want) {
				checkPartlyCleaned(t, got, old, want, bases, fmt.Sprintf("%s %d", op, n))
			}
			// The log goes on, failed or not: reads still work.
			readRecords(t, tl.View())
		}
	}
}

// TestCompactSwapLosesToTruncation checks the swap's check: a truncation
// during a pass makes it discard its work.
func TestCompactSwapLosesToTruncation(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var tl *testLog
	truncated := false
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		// The first cleaned file a pass creates: truncate under it.
		if op == vfs.OpCreate && bytes.HasSuffix([]byte(path), []byte(logSuffix+cleanedSuffix)) && !truncated {
			truncated = true
			if err := tl.Truncate(5); err != nil {
				t.Error(err)
			}
		}
		return nil
	}))
	tl, _ = swapFixture(t, fsys, 3)
	st := mustCompact(t, tl)
	if !truncated || st != (CompactStats{}) {
		t.Fatalf("truncated %v, stats %+v", truncated, st)
	}
	names, _ := mem.List(tl.Dir())
	for _, name := range names {
		if bytes.HasSuffix([]byte(name), []byte(cleanedSuffix)) || bytes.HasSuffix([]byte(name), []byte(swapSuffix)) {
			t.Fatalf("%s left behind", name)
		}
	}
	if tl.LogEndOffset() > 5 {
		t.Fatalf("log end %d after truncation to 5", tl.LogEndOffset())
	}
	readRecords(t, tl.View())
}

// TestCompactAlongsideWriter runs the writer's work in the middle of a pass,
// between the offset map and the swap: appends that roll a segment and a
// high watermark move do not stop the swap (the pass cleans what it
// planned, the new segments stay as written); retention that deletes a
// segment the pass is cleaning makes the pass stop quietly.
func TestCompactAlongsideWriter(t *testing.T) {
	for _, retention := range []bool{false, true} {
		t.Run(fmt.Sprintf("retention=%v", retention), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			var tl *testLog
			var m *compactModel
			r := rand.New(rand.NewPCG(5, 5))
			fired := false
			fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
				if fired || op != vfs.OpCreate || !bytes.HasSuffix([]byte(path), []byte(logSuffix+cleanedSuffix)) {
					return nil
				}
				fired = true // once: in the first group of the first pass
				n, _ := tl.Segments()
				for k, _ := tl.Segments(); k == n; k, _ = tl.Segments() {
					m.appendRandom(t, tl, r, 1, 10)
				}
				tl.SetHighWatermark(tl.LogEndOffset())
				if retention {
					if err := tl.AdvanceLogStartOffset(tl.View().closed[1].base); err != nil {
						t.Error(err)
					}
					if k, err := tl.ApplyRetention(); err != nil || k == 0 {
						t.Errorf("retention deleted %d segments: %v", k, err)
					}
				}
				return nil
			}))
			tl, m = swapFixture(t, fsys, 4)
			end := cleanableEnd(tl.View())
			st := mustCompact(t, tl)
			if retention {
				if st != (CompactStats{}) {
					t.Fatalf("the pass went on after retention took its segments: %+v", st)
				}
				mustCompact(t, tl)
				end = cleanableEnd(tl.View())
				m.state = slices.DeleteFunc(m.state, func(r ckRecord) bool { return r.Offset < tl.LogStartOffset() })
			} else if st.SegmentsCleaned == 0 {
				t.Fatal("appends stopped the pass")
			}
			for tl.CleanableRatio() > 0 {
				mustCompact(t, tl)
			}
			if got, want := readRecords(t, tl.View()), m.compact(max(end, cleanableEnd(tl.View()))); !sameRecords(got, want) {
				t.Fatal(diffRecords(got, want))
			}
			names, _ := mem.List(tl.Dir())
			for _, name := range names {
				if bytes.HasSuffix([]byte(name), []byte(cleanedSuffix)) || bytes.HasSuffix([]byte(name), []byte(swapSuffix)) {
					t.Fatalf("%s left behind", name)
				}
			}
		})
	}
}
