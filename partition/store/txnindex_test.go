package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/internal/vfs"
)

// txnBatch builds a transactional data batch of producer pid (epoch 0), as
// a transactional producer sends it: keyedBatch's with attribute bit 4.
func txnBatch(tb testing.TB, codec Codec, ts, pid int64, seq int32, rs ...ckv) []byte {
	tb.Helper()
	b := keyedBatch(tb, codec, ts, pid, seq, rs...)
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

// markerBatch builds the control batch of a transaction marker of producer
// pid in epoch, as the partition layer writes it: attribute bits 4 and 5,
// one record with a ControlRecordKey key and an EndTxnMarker value.
func markerBatch(tb testing.TB, ts, pid int64, epoch int16, commit bool) []byte {
	tb.Helper()
	typ := kmsg.ControlRecordKeyType(markerAbort)
	if commit {
		typ = markerCommit
	}
	key := (&kmsg.ControlRecordKey{Version: 0, Type: typ}).AppendTo(nil)
	value := (&kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: 3}).AppendTo(nil)
	h := Header{
		PartitionLeaderEpoch: -1, BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
		Attributes: attrTransactional | attrControl,
	}
	b, err := AppendBatch(nil, h, []Record{{Key: key, Value: value}}, CodecNone)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// txnRecord is a data record a txnWriter appended.
type txnRecord struct {
	ckRecord
	pid     int64 // -1 outside transactions
	aborted bool  // its transaction aborted
}

// txnWriter plays the partition layer's part in transactions (doc.go,
// Transactions): it appends transactional batches and markers, indexes
// aborted transactions and keeps the last stable offset, and it models
// what compaction must leave of the records.
type txnWriter struct {
	t       testing.TB
	tl      *testLog
	open    map[int64]int64 // producer id → first offset of its unfinished transaction
	recs    []txnRecord     // every data record appended, by offset
	state   []txnRecord     // what the log must hold after the passes so far
	entries []AbortedTxn    // every entry added
	markers map[int64]bool  // offset of each marker → commit
	seq     int32
}

func newTxnWriter(t testing.TB, tl *testLog) *txnWriter {
	return &txnWriter{t: t, tl: tl, open: map[int64]int64{}, markers: map[int64]bool{}}
}

// put appends records rs as producer pid, in its transaction (begun if
// need be), or outside any for pid -1.
func (w *txnWriter) put(pid int64, rs ...ckv) AppendResult {
	w.t.Helper()
	ts := w.tl.clock.Now().UnixMilli()
	var b []byte
	if pid < 0 {
		b = keyedBatch(w.t, CodecNone, ts, -1, -1, rs...)
	} else {
		b = txnBatch(w.t, allCodecs[int(w.seq)%len(allCodecs)], ts, pid, w.seq, rs...)
		w.seq += int32(len(rs))
	}
	res, err := w.tl.Append(b, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	for i, r := range rs {
		hdr := binary.AppendVarint(nil, 1)
		hdr = append(hdr, 'h')
		hdr = binary.AppendVarint(hdr, int64(len(r.key)))
		hdr = append(hdr, r.key...)
		rec := txnRecord{ckRecord: ckRecord{Offset: res.BaseOffset + int64(i), Key: r.key, Value: r.value, Timestamp: ts + int64(i), Headers: string(hdr)}, pid: pid}
		w.recs = append(w.recs, rec)
		w.state = append(w.state, rec)
	}
	if _, ok := w.open[pid]; pid >= 0 && !ok {
		w.open[pid] = res.BaseOffset
		w.setStable()
	}
	return res
}

// end appends pid's marker, commit or abort, and does what the partition
// layer does then: index an abort, then move the last stable offset.
func (w *txnWriter) end(pid int64, commit bool) int64 {
	w.t.Helper()
	first, ok := w.open[pid]
	if !ok {
		w.t.Fatalf("producer %d has no transaction to end", pid)
	}
	res, err := w.tl.Append(markerBatch(w.t, w.tl.clock.Now().UnixMilli(), pid, 0, commit), 0)
	if err != nil {
		w.t.Fatal(err)
	}
	delete(w.open, pid)
	w.markers[res.BaseOffset] = commit
	if !commit {
		e := AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: res.BaseOffset, LastStableOffset: min(w.firstOpen(), res.BaseOffset+1)}
		if err := w.tl.AddAbortedTxn(e); err != nil {
			w.t.Fatal(err)
		}
		w.entries = append(w.entries, e)
		for _, recs := range [][]txnRecord{w.recs, w.state} {
			for i := range recs {
				if r := &recs[i]; r.pid == pid && r.Offset >= first {
					r.aborted = true
				}
			}
		}
	}
	w.setStable()
	return res.BaseOffset
}

func (w *txnWriter) firstOpen() int64 {
	first := int64(math.MaxInt64)
	for _, o := range w.open {
		first = min(first, o)
	}
	return first
}

func (w *txnWriter) setStable() { w.tl.SetLastStableOffset(w.firstOpen()) }

// compact records a pass that cleaned below end: below it the newest
// record of each key among those of no aborted transaction, none of an
// aborted one; at or above it every record.
func (w *txnWriter) compact(end int64) []ckRecord {
	newest := map[string]int64{}
	for _, r := range w.state {
		if r.Offset < end && !r.aborted {
			newest[r.Key] = r.Offset
		}
	}
	w.state = slices.DeleteFunc(w.state, func(r txnRecord) bool {
		return r.Offset < end && (r.aborted || newest[r.Key] != r.Offset)
	})
	return w.want()
}

func (w *txnWriter) want() []ckRecord {
	var out []ckRecord
	for _, r := range w.state {
		out = append(out, r.ckRecord)
	}
	return out
}

// txnBatchInfo is a batch as read back, with its marker type.
type txnBatchInfo struct {
	Header
	marker int16 // for a control batch: its type, -1 without a record
}

// readTxnLog reads every batch of v, and the records of the data batches.
func readTxnLog(t testing.TB, v *View) (batches []txnBatchInfo, recs []ckRecord) {
	t.Helper()
	hs, all := readBatches(t, v)
	var dec Decompressor
	for _, h := range hs {
		bi := txnBatchInfo{Header: h, marker: -1}
		if h.Control() {
			b, err := v.ReadBytes(h.BaseOffset, ReadOptions{MaxBytes: 1, MaxOffset: h.NextOffset(), MinOneBatch: true})
			if err != nil {
				t.Fatal(err)
			}
			typ, ok, err := markerType(b[:h.Size()], &dec)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				bi.marker = typ
			}
		}
		batches = append(batches, bi)
	}
	for _, r := range all {
		i := slices.IndexFunc(batches, func(b txnBatchInfo) bool { return b.BaseOffset <= r.Offset && r.Offset <= b.LastOffset() })
		if !batches[i].Control() {
			recs = append(recs, r)
		}
	}
	return batches, recs
}

// checkTxnIndex checks the aborted-transaction index of v against its
// batches and the entries w added: every entry is one w added and points
// at an abort marker of its producer in the log; an abort marker whose
// transaction still has batches in the log has its entry; and every
// transactional data batch is followed by a marker of its producer, unless
// its transaction is still open.
func checkTxnIndex(t testing.TB, v *View, w *txnWriter) {
	t.Helper()
	batches, _ := readTxnLog(t, v)
	at := map[int64]txnBatchInfo{}
	for _, b := range batches {
		at[b.BaseOffset] = b
	}
	entries := v.AbortedTxns(0, math.MaxInt64)
	byMarker := map[int64]AbortedTxn{}
	for i, e := range entries {
		if i > 0 && e.LastOffset <= entries[i-1].LastOffset {
			t.Fatalf("entries out of order: %+v", entries)
		}
		if !slices.Contains(w.entries, e) {
			t.Fatalf("entry %+v was never added", e)
		}
		if m, ok := at[e.LastOffset]; !ok || !m.Control() || m.marker != markerAbort || m.ProducerID != e.ProducerID {
			t.Fatalf("entry %+v: no abort marker of its producer at %d (%+v)", e, e.LastOffset, m)
		}
		byMarker[e.LastOffset] = e
	}
	for i, b := range batches {
		if b.ProducerID < 0 || !b.Transactional() {
			continue
		}
		if b.Control() {
			if b.marker != markerAbort {
				continue
			}
			// Any batch of the transaction left, back to the previous
			// marker of the producer?
			for j := i - 1; j >= 0 && !(batches[j].Control() && batches[j].ProducerID == b.ProducerID); j-- {
				if batches[j].ProducerID == b.ProducerID {
					if _, ok := byMarker[b.BaseOffset]; !ok {
						t.Fatalf("abort marker at %d keeps batch %d of its transaction but has no entry", b.BaseOffset, batches[j].BaseOffset)
					}
					break
				}
			}
			continue
		}
		if first, open := w.open[b.ProducerID]; open && b.BaseOffset >= first {
			continue
		}
		if !slices.ContainsFunc(batches[i+1:], func(m txnBatchInfo) bool { return m.Control() && m.ProducerID == b.ProducerID }) {
			t.Fatalf("transactional batch at %d of producer %d has lost its marker", b.BaseOffset, b.ProducerID)
		}
	}
}

// txnIndexFiles returns the .txnindex files of dir, by name, with their
// contents.
func txnIndexFiles(t testing.TB, fsys vfs.FS, dir string) map[string][]byte {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range names {
		if strings.HasSuffix(name, txnIndexSuffix) {
			b, err := readFile(fsys, filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		}
	}
	return files
}

// txnOptions makes a segment of about five small batches.
func txnOptions() Options {
	o := testOptions()
	o.SegmentBytes = 5 * 90
	return o
}

// TestAbortedTxnIndexRoundTrip adds aborted transactions whose markers
// land in several segments, and checks that the entries are in the view,
// in Kafka's file format in the segments that hold their markers (and no
// file for the others), and the same after a clean reopen and after a
// crash once synced.
func TestAbortedTxnIndexRoundTrip(t *testing.T) {
	mem := vfs.NewCrashableMem()
	tl := openTestLog(t, mem, txnOptions())
	w := newTxnWriter(t, tl)
	for i := range 30 {
		pid := int64(i % 3)
		w.put(pid, ckPut(fmt.Sprint("k", i), "v"))
		w.put(-1, ckPut("plain", "v"))
		w.end(pid, i%3 != 0)
	}
	check := func(when string) {
		t.Helper()
		v := tl.View()
		if got := v.AbortedTxns(0, math.MaxInt64); !slices.Equal(got, w.entries) {
			t.Fatalf("%s: entries\n got %+v\nwant %+v", when, got, w.entries)
		}
		files := txnIndexFiles(t, tl.fs, tl.Dir())
		withEntries := 0
		for i := range v.numSegments() {
			s := v.segment(i)
			name := segmentName(s.base, txnIndexSuffix)
			b, ok := files[name]
			if len(s.txns) == 0 {
				if ok {
					t.Fatalf("%s: %s exists for a segment without aborted transactions", when, name)
				}
				continue
			}
			withEntries++
			var want []byte
			for _, e := range s.txns {
				if e.LastOffset < s.base || (i+1 < v.numSegments() && e.LastOffset >= v.segment(i+1).base) {
					t.Fatalf("%s: entry %+v in segment %d", when, e, s.base)
				}
				want = binary.BigEndian.AppendUint16(want, 0)
				for _, f := range []int64{e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset} {
					want = binary.BigEndian.AppendUint64(want, uint64(f))
				}
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("%s: %s holds %x, want %x", when, name, b, want)
			}
		}
		if len(files) != withEntries || withEntries < 3 || withEntries == v.numSegments() {
			t.Fatalf("%s: %d files, %d of %d segments with entries", when, len(files), withEntries, v.numSegments())
		}
	}
	check("before close")
	tl.reopen()
	check("after reopen")
	w.put(0, ckPut("late", "v"))
	w.end(0, false)
	if err := tl.Sync(); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	tl.cfg.FS = mem.CrashClone(vfs.CrashOptions{})
	tl.fs = tl.cfg.FS
	l, err := Open(tl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tl.Log = l
	check("after a crash")
}

// TestAbortedTxnsRange checks View.AbortedTxns(from, upTo) (Kafka's
// collectAbortedTxns) against the naive filter, LastOffset >= from and
// FirstOffset < upTo, for every pair of bounds, over interleaved
// transactions of three producers across several segments: the early stop
// at an entry whose last stable offset reaches upTo must lose nothing. And
// at chosen edges, by hand.
func TestAbortedTxnsRange(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnOptions())
	w := newTxnWriter(t, tl)
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 120 {
		pid := int64(r.IntN(3))
		if _, open := w.open[pid]; open && r.IntN(3) == 0 {
			w.end(pid, r.IntN(2) == 0)
			continue
		}
		w.put(pid, ckPut(fmt.Sprint(i), "v"))
	}
	if nseg, _ := tl.Segments(); nseg < 10 || len(w.entries) < 10 {
		t.Fatalf("%d segments, %d aborted transactions", nseg, len(w.entries))
	}
	v := tl.View()
	naive := func(from, upTo int64) []AbortedTxn {
		var out []AbortedTxn
		for _, e := range w.entries {
			if e.LastOffset >= from && e.FirstOffset < upTo {
				out = append(out, e)
			}
		}
		return out
	}
	for from := int64(0); from <= v.LogEndOffset; from++ {
		for upTo := from; upTo <= v.LogEndOffset+1; upTo++ {
			if got, want := v.AbortedTxns(from, upTo), naive(from, upTo); !slices.Equal(got, want) {
				t.Fatalf("AbortedTxns(%d, %d)\n got %+v\nwant %+v", from, upTo, got, want)
			}
		}
	}

	// By hand: one transaction of producer 7 at [2, 4], then one of 8 at
	// [6, 9] that a transaction of 9 begun at 7 overlaps.
	tl = openTestLog(t, vfs.NewCrashableMem(), txnOptions())
	for range 12 {
		tl.append(1, 10)
	}
	a := AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 4, LastStableOffset: 5}
	b := AbortedTxn{ProducerID: 8, FirstOffset: 6, LastOffset: 9, LastStableOffset: 7}
	for _, e := range []AbortedTxn{a, b} {
		if err := tl.AddAbortedTxn(e); err != nil {
			t.Fatal(err)
		}
	}
	v = tl.View()
	for _, c := range []struct {
		from, upTo int64
		want       []AbortedTxn
	}{
		{0, 2, nil},             // ends before a begins
		{0, 3, []AbortedTxn{a}}, // a's first offset is inside
		{4, 5, []AbortedTxn{a}}, // from at a's marker
		{5, 6, nil},             // between the two: b begins at upTo
		{5, 7, []AbortedTxn{b}},
		{0, 100, []AbortedTxn{a, b}},
		{9, 100, []AbortedTxn{b}},
		{10, 100, nil}, // past both markers
	} {
		if got := v.AbortedTxns(c.from, c.upTo); !slices.Equal(got, c.want) {
			t.Errorf("AbortedTxns(%d, %d) = %+v, want %+v", c.from, c.upTo, got, c.want)
		}
	}
}

// TestAddAbortedTxnIdempotent: an entry whose marker is not after the
// newest one indexed is ignored, before and after a reopen, as the
// partition layer's replay of its markers needs; a marker not in the log
// is refused.
func TestAddAbortedTxnIdempotent(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnOptions())
	w := newTxnWriter(t, tl)
	for i := range 6 {
		w.put(1, ckPut(fmt.Sprint(i), "v"))
		w.end(1, false)
	}
	want := w.entries
	files := txnIndexFiles(t, tl.fs, tl.Dir())
	replay := func() {
		t.Helper()
		for _, e := range want {
			if err := tl.AddAbortedTxn(e); err != nil {
				t.Fatal(err)
			}
		}
		older := want[2]
		older.ProducerID = 99
		if err := tl.AddAbortedTxn(older); err != nil {
			t.Fatal(err)
		}
		if got := tl.View().AbortedTxns(0, math.MaxInt64); !slices.Equal(got, want) {
			t.Fatalf("after a replay: %+v", got)
		}
		if got := txnIndexFiles(t, tl.fs, tl.Dir()); fmt.Sprint(got) != fmt.Sprint(files) {
			t.Fatal("a replay changed the files")
		}
	}
	replay()
	tl.reopen()
	replay()
	past := AbortedTxn{ProducerID: 1, FirstOffset: 1, LastOffset: tl.LogEndOffset(), LastStableOffset: tl.LogEndOffset() + 1}
	if err := tl.AddAbortedTxn(past); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("an entry for a marker at the log end: %v", err)
	}
}

// TestAbortedTxnTruncate: Truncate drops the entries whose markers it
// removes, deleting a segment's file when none is left, and
// TruncateFullyAndStartAt drops them all; the same after a reopen.
func TestAbortedTxnTruncate(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnOptions())
	w := newTxnWriter(t, tl)
	for i := range 20 {
		w.put(int64(i%2), ckPut(fmt.Sprint(i), "v"))
		w.end(int64(i%2), false)
	}
	for _, to := range []int64{30, 29, 17, 16, 3} {
		if err := tl.Truncate(to); err != nil {
			t.Fatal(err)
		}
		check := func() {
			t.Helper()
			v := tl.View()
			var want []AbortedTxn
			for _, e := range w.entries {
				if e.LastOffset < v.LogEndOffset {
					want = append(want, e)
				}
			}
			if got := v.AbortedTxns(0, math.MaxInt64); !slices.Equal(got, want) {
				t.Fatalf("truncated to %d (log end %d): entries %+v, want %+v", to, v.LogEndOffset, got, want)
			}
			for name := range txnIndexFiles(t, tl.fs, tl.Dir()) {
				base, _ := parseSegmentName(strings.TrimSuffix(name, txnIndexSuffix) + logSuffix)
				if i := v.find(base); v.segment(i).base != base || len(v.segment(i).txns) == 0 {
					t.Fatalf("truncated to %d: %s left", to, name)
				}
			}
		}
		check()
		tl.reopen()
		check()
	}
	if err := tl.TruncateFullyAndStartAt(0); err != nil {
		t.Fatal(err)
	}
	if got := tl.View().AbortedTxns(0, math.MaxInt64); got != nil {
		t.Fatalf("after TruncateFullyAndStartAt: %+v", got)
	}
	tl.reopen()
	if got := tl.View().AbortedTxns(0, math.MaxInt64); got != nil {
		t.Fatalf("after TruncateFullyAndStartAt and a reopen: %+v", got)
	}
	if files := txnIndexFiles(t, tl.fs, tl.Dir()); len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
}

// TestAbortedTxnRecoveryDropsPastEnd: a crash that cut the log before a
// marker whose entry was written drops the entry at Open, rewriting or
// removing the file.
func TestAbortedTxnRecoveryDropsPastEnd(t *testing.T) {
	for _, keep := range []int{0, 1} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			o := testOptions()
			o.SegmentBytes = 1 << 20
			tl := openTestLog(t, mem, o)
			w := newTxnWriter(t, tl)
			var cut int64
			for i := range 3 {
				if i == keep {
					cut = w.put(2, ckPut("k", "v")).BaseOffset
				} else {
					w.put(2, ckPut("k", "v"))
				}
				w.end(2, false)
			}
			pos, _, err := tl.View().active.seek(cut, new([HeaderSize]byte))
			if err != nil {
				t.Fatal(err)
			}
			if err := tl.Close(); err != nil {
				t.Fatal(err)
			}
			// The crash: the log cut at cut, the clean-shutdown marker gone.
			f, err := mem.OpenReadWrite(filepath.Join(tl.Dir(), segmentName(0, logSuffix)))
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(pos)
			f.Close()
			mem.Remove(filepath.Join(tl.Dir(), cleanMarkerFile))
			l, err := Open(tl.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tl.Log = l
			want := w.entries[:keep]
			if got := l.View().AbortedTxns(0, math.MaxInt64); !slices.Equal(got, want) || l.LogEndOffset() != cut {
				t.Fatalf("log end %d, entries %+v; want %d, %+v", l.LogEndOffset(), got, cut, want)
			}
			files := txnIndexFiles(t, mem, tl.Dir())
			if keep == 0 && len(files) != 0 || keep == 1 && len(files[segmentName(0, txnIndexSuffix)]) != abortedTxnSize {
				t.Fatalf("files %v", files)
			}
		})
	}
}

// TestAbortedTxnCrash crashes the filesystem (only synced bytes survive,
// or torn tails of the rest) after random transactional appends, aborts,
// syncs, rolls and truncations: the recovered index holds every entry
// whose marker was durable, and only entries whose markers are in the log.
// Entries are added in the three ways the durable offset can meet them:
// before the sync of their marker, after it, and during it.
func TestAbortedTxnCrash(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 9))
			mem := vfs.NewCrashableMem()
			var during func()
			inject := vfs.InjectorFunc(func(op vfs.Op, path string) error {
				if op == vfs.OpSync && strings.HasSuffix(path, logSuffix) && during != nil {
					f := during
					during = nil
					f() // an entry added while the marker's sync runs
				}
				return nil
			})
			fsys := vfs.NewErrorFS(mem, inject)
			o := txnOptions()
			o.SegmentBytes = int64(300 + r.IntN(600))
			tl := openTestLog(t, fsys, o)
			w := newTxnWriter(t, tl)
			for round := range 3 {
				for range 10 + r.IntN(30) {
					pid := int64(r.IntN(3))
					if _, open := w.open[pid]; !open || r.IntN(2) == 0 {
						w.put(pid, ckPut("k", "v"))
						continue
					}
					if r.IntN(3) > 0 {
						w.end(pid, true)
						continue
					}
					// An abort, its entry added before, after or during
					// the sync of its marker.
					marker, err := tl.Append(markerBatch(t, 0, pid, 0, false), 0)
					if err != nil {
						t.Fatal(err)
					}
					first := w.open[pid]
					delete(w.open, pid)
					e := AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: marker.BaseOffset, LastStableOffset: min(w.firstOpen(), marker.BaseOffset+1)}
					add := func() {
						if err := tl.AddAbortedTxn(e); err != nil {
							t.Error(err)
						}
						w.entries = append(w.entries, e)
					}
					switch r.IntN(4) {
					case 0:
						add()
					case 1:
						add()
						if err := tl.SyncTo(marker.LastOffset + 1); err != nil {
							t.Fatal(err)
						}
					case 2:
						if err := tl.SyncTo(marker.LastOffset + 1); err != nil {
							t.Fatal(err)
						}
						add()
					case 3:
						during = add
						if err := tl.SyncTo(marker.LastOffset + 1); err != nil {
							t.Fatal(err)
						}
						if during != nil {
							during = nil
							add()
						}
					}
					w.setStable()
				}
				if r.IntN(4) == 0 {
					if err := tl.Truncate(r.Int64N(tl.LogEndOffset() + 1)); err != nil {
						t.Fatal(err)
					}
					w.entries = slices.DeleteFunc(w.entries, func(e AbortedTxn) bool { return e.LastOffset >= tl.LogEndOffset() })
					for pid, first := range w.open {
						if first >= tl.LogEndOffset() {
							delete(w.open, pid)
						}
					}
				}
				durable := tl.DurableOffset()
				crashed := mem.CrashClone(vfs.CrashOptions{Rand: r, KeepUnsyncedProb: 0.5})
				tl.Close()
				mem = crashed
				fsys = vfs.NewErrorFS(mem, inject)
				tl.cfg.FS, tl.fs = fsys, fsys
				l, err := Open(tl.cfg)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				tl.Log = l
				got := l.View().AbortedTxns(0, math.MaxInt64)
				for _, e := range w.entries {
					if e.LastOffset < durable && !slices.Contains(got, e) {
						t.Fatalf("round %d: entry %+v lost, its marker was durable (below %d)", round, e, durable)
					}
				}
				for _, e := range got {
					if e.LastOffset >= l.LogEndOffset() {
						t.Fatalf("round %d: entry %+v, log end %d", round, e, l.LogEndOffset())
					}
					if slices.Contains(w.entries, e) {
						continue
					}
					// NB: the format has no checksum (as Kafka's): a
					// garbled unsynced entry whose marker survived the
					// crash too goes unnoticed, its marker and producer
					// checked, its other fields not.
					if e.LastOffset < durable || !slices.ContainsFunc(w.entries, func(a AbortedTxn) bool {
						return a.LastOffset == e.LastOffset && a.ProducerID == e.ProducerID
					}) {
						t.Fatalf("round %d: entry %+v was never added", round, e)
					}
				}
				// What did not survive is gone: forget it, and the
				// transactions it began.
				w.entries = got
				for pid, first := range w.open {
					if first >= l.LogEndOffset() {
						delete(w.open, pid)
					}
				}
				w.setStable()
			}
		})
	}
}

// TestAbortedTxnRetention: retention deletes a segment's .txnindex with it,
// through the file delete delay like its other files.
func TestAbortedTxnRetention(t *testing.T) {
	o := txnOptions()
	o.RetentionMs = 60_000
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	w := newTxnWriter(t, tl)
	for i := range 20 {
		w.put(4, ckPut(fmt.Sprint(i), "v"))
		w.end(4, false)
	}
	before := txnIndexFiles(t, tl.fs, tl.Dir())
	old := tl.View()
	tl.SetHighWatermark(tl.LogEndOffset())
	tl.clock.Advance(time.Hour)
	if n, err := tl.ApplyRetention(); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	v := tl.View()
	var want []AbortedTxn
	for _, e := range w.entries {
		if e.LastOffset >= v.active.base {
			want = append(want, e)
		}
	}
	if got := v.AbortedTxns(0, math.MaxInt64); !slices.Equal(got, want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	if got := old.AbortedTxns(0, math.MaxInt64); !slices.Equal(got, w.entries) {
		t.Fatal("an older view lost its entries")
	}
	tl.clock.Advance(2 * time.Minute)
	if _, err := tl.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	after := txnIndexFiles(t, tl.fs, tl.Dir())
	names, _ := tl.fs.List(tl.Dir())
	for name := range before {
		if _, ok := after[name]; ok != (name == segmentName(v.active.base, txnIndexSuffix)) {
			t.Fatalf("%s there: %v, after retention", name, ok)
		}
		if slices.Contains(names, name+deletedSuffix) {
			t.Fatalf("%s still there after the delete delay", name+deletedSuffix)
		}
	}
}

// TestNoTxnIndexWithoutAborts: segments without aborted transactions have
// no .txnindex, whatever else they hold (commit markers, plain batches),
// through rolls, a reopen and compaction.
func TestNoTxnIndexWithoutAborts(t *testing.T) {
	o := txnOptions()
	o.Compact = true
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	w := newTxnWriter(t, tl)
	for i := range 40 {
		w.put(int64(i%3), ckPut(fmt.Sprint(i%5), "v"))
		w.put(-1, ckPut(fmt.Sprint(i%5), "v"))
		w.end(int64(i%3), true)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	mustCompact(t, tl)
	tl.reopen()
	if nseg, _ := tl.Segments(); nseg < 10 {
		t.Fatalf("%d segments", nseg)
	}
	if files := txnIndexFiles(t, tl.fs, tl.Dir()); len(files) != 0 {
		t.Fatalf("files %v", files)
	}
}

// TestLastStableOffset: the last stable offset is the high watermark until
// set, follows it as it moves, and once set is min(set, high watermark),
// never below the log start offset; it is not persisted.
func TestLastStableOffset(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	for range 10 {
		tl.append(2, 10)
	}
	check := func(want int64) {
		t.Helper()
		if got := tl.View().LastStableOffset; got != want || tl.LastStableOffset() != want {
			t.Fatalf("last stable offset %d (view) %d (log), want %d", got, tl.LastStableOffset(), want)
		}
	}
	check(0)
	tl.SetHighWatermark(8)
	check(8)
	tl.SetLastStableOffset(5)
	check(5)
	tl.SetHighWatermark(20)
	check(5)
	tl.SetLastStableOffset(30)
	check(20)
	tl.SetLastStableOffset(math.MaxInt64)
	check(20)
	tl.SetHighWatermark(12)
	check(12)
	if err := tl.AdvanceLogStartOffset(10); err != nil {
		t.Fatal(err)
	}
	tl.SetLastStableOffset(4)
	check(10)
	tl.reopen()
	check(12)
	if err := tl.TruncateFullyAndStartAt(50); err != nil {
		t.Fatal(err)
	}
	check(50)
}

// TestTxnIndexAtOpen damages the .txnindex of a log's only segment and
// opens it, trusted (after a clean shutdown) and rescanned (after a
// crash). Nothing fails Open. A trusted file that fails its checks is
// corrupt and deleted (the partition layer's replay adds its entries
// again); entries past the log end go. A rescanned file keeps the prefix of
// well-formed entries that point at abort markers of their producers in
// the log, as a torn or garbled tail leaves it.
func TestTxnIndexAtOpen(t *testing.T) {
	e := func(pid, first, last int64) []byte {
		return appendAbortedTxn(nil, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: last + 1})
	}
	// The log: producer 1's aborted transaction at [0, 2], producer 2's
	// at [3, 5], plain batches after.
	good := slices.Concat(e(1, 0, 2), e(2, 3, 5))
	for _, c := range []struct {
		name               string
		data               []byte
		trusted, rescanned int // entries kept
	}{
		{"good", good, 2, 2},
		{"torn", append(slices.Clone(good), 0, 0, 0, 0, 0, 9), 0, 2},
		{"version", slices.Concat(e(1, 0, 2), []byte{0, 1}, e(2, 3, 5)[2:]), 0, 1},
		{"order", slices.Concat(e(2, 3, 5), e(1, 0, 2)), 0, 1},
		{"first above last", slices.Concat(e(1, 0, 2), e(2, 6, 5)), 0, 1},
		{"past the end", slices.Concat(e(1, 0, 2), e(2, 3, 50)), 1, 1},
		{"not a marker", slices.Concat(e(1, 0, 1), e(2, 3, 5)), 2, 0},
		{"wrong producer", slices.Concat(e(1, 0, 2), e(3, 3, 5)), 2, 1},
		{"only a torn entry", e(1, 0, 2)[:20], 0, 0},
		{"empty", nil, 0, 0},
		{"garbage", bytes.Repeat([]byte{0xff}, 3*abortedTxnSize), 0, 0},
	} {
		for _, rescan := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rescan=%v", c.name, rescan), func(t *testing.T) {
				mem := vfs.NewCrashableMem()
				tl := openTestLog(t, mem, testOptions())
				w := newTxnWriter(t, tl)
				w.put(1, ckPut("a", "1"), ckPut("b", "1"))
				w.end(1, false)
				w.put(2, ckPut("a", "2"), ckPut("b", "2"))
				w.end(2, false)
				for range 4 {
					w.put(-1, ckPut("c", "1"))
				}
				if err := tl.Close(); err != nil {
					t.Fatal(err)
				}
				want := c.trusted
				if rescan {
					want = c.rescanned
					mem.Remove(filepath.Join(tl.Dir(), cleanMarkerFile))
				}
				path := filepath.Join(tl.Dir(), segmentName(0, txnIndexSuffix))
				f, err := mem.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(c.data)
				f.Close()
				l, err := Open(tl.cfg)
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				tl.Log = l
				got := l.View().AbortedTxns(0, math.MaxInt64)
				if len(got) != want {
					t.Fatalf("%d entries, want %d: %+v", len(got), want, got)
				}
				var enc []byte
				for _, e := range got {
					enc = appendAbortedTxn(enc, e)
				}
				b, err := readFile(mem, path)
				if err != nil {
					t.Fatal(err)
				}
				if want == 0 && b != nil || want > 0 && (!bytes.Equal(b, enc) || !bytes.Equal(enc, c.data[:len(enc)])) {
					t.Fatalf("file after Open: %x, entries %+v", b, got)
				}
				// The replay adds the lost entries again.
				for _, e := range w.entries {
					if err := l.AddAbortedTxn(e); err != nil {
						t.Fatal(err)
					}
				}
				if got := l.View().AbortedTxns(0, math.MaxInt64); len(got) == 0 || got[len(got)-1].LastOffset != w.entries[1].LastOffset {
					t.Fatalf("after the replay: %+v", got)
				}
			})
		}
	}
}

// FuzzDecodeAbortedTxns checks the .txnindex decoder with the invariants of
// kfake's persist fuzzer: no panic; the valid prefix is at most the input,
// whole entries, and an error says whether anything follows it; entries
// are in order; and decoding the prefix again, or the encoding of the
// entries, gives the same entries without an error.
func FuzzDecodeAbortedTxns(f *testing.F) {
	e := func(pid, first, last, lso int64) []byte {
		return appendAbortedTxn(nil, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso})
	}
	f.Add([]byte{})
	f.Add(e(1, 0, 2, 3))
	f.Add(slices.Concat(e(1, 0, 2, 3), e(2, 1, 5, 4), e(1, 7, 9, 10)))
	f.Add(slices.Concat(e(1, 0, 2, 3), e(2, 1, 5, 4)[:20]))
	f.Add(slices.Concat(e(2, 1, 5, 4), e(1, 0, 2, 3)))
	f.Add(append([]byte{0, 1}, e(1, 0, 2, 3)[2:]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		txns, err := decodeAbortedTxns(data)
		n := len(txns) * abortedTxnSize
		checkErrClass(t, err, ErrCorrupt)
		if n > len(data) || (err == nil) != (n == len(data)) {
			t.Fatalf("%d entries (%d bytes) of %d bytes, error %v", len(txns), n, len(data), err)
		}
		for i, e := range txns {
			if e.FirstOffset > e.LastOffset || (i > 0 && e.LastOffset <= txns[i-1].LastOffset) {
				t.Fatalf("entry %d %+v accepted after %+v", i, e, txns[:i])
			}
		}
		again, err := decodeAbortedTxns(data[:n])
		if err != nil || !slices.Equal(again, txns) {
			t.Fatalf("the valid prefix decodes to %+v, %v; first %+v", again, err, txns)
		}
		var enc []byte
		for _, e := range txns {
			enc = appendAbortedTxn(enc, e)
		}
		if !bytes.Equal(enc, data[:n]) {
			t.Fatalf("entries encode to %x, the prefix is %x", enc, data[:n])
		}
	})
}
