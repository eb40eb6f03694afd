package store

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// stableEnd returns the offset below which v's segments are cleanable with
// no compaction lag: the base of the first segment that is active or not
// wholly below the last stable offset.
func stableEnd(v *View) int64 {
	for i := range v.closed {
		next := v.active.base
		if i+1 < len(v.closed) {
			next = v.closed[i+1].base
		}
		if next > v.LastStableOffset {
			return v.closed[i].base
		}
	}
	return v.active.base
}

// markerStates describes the control batches of v: offset, type and
// whether they carry a delete horizon.
func markerStates(t testing.TB, v *View) []string {
	t.Helper()
	batches, _ := readTxnLog(t, v)
	var out []string
	for _, b := range batches {
		if !b.Control() {
			continue
		}
		s := fmt.Sprintf("%d:", b.BaseOffset)
		switch b.marker {
		case markerAbort:
			s += "abort"
		case markerCommit:
			s += "commit"
		default:
			s += "empty"
		}
		if b.DeleteHorizon() {
			s += "+horizon"
		}
		out = append(out, s)
	}
	return out
}

func txnCompactOptions() Options {
	o := compactOptions()
	o.SegmentBytes = HeaderSize // a segment per batch
	o.DeleteRetentionMs = time.Hour.Milliseconds()
	return o
}

// userRecords returns the records of v's data batches.
func userRecords(t testing.TB, v *View) []ckRecord {
	t.Helper()
	_, recs := readTxnLog(t, v)
	return recs
}

// TestCompactAbortedTransactions follows Kafka's LogCleaner with
// transactions: "aborted records are removed" (records of aborted
// transactions go, and never supersede a committed value: a key keeps its
// older committed value when an aborted write came later, and its newest
// committed value when an aborted write came after that), while a
// committed transaction's records are cleaned as any others. Markers stay
// while batches of their transactions do, and so do aborted transactions'
// index entries in the cleaned segments.
func TestCompactAbortedTransactions(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnCompactOptions())
	w := newTxnWriter(t, tl)
	w.put(-1, ckPut("a", "1"), ckPut("c", "1"))
	w.put(5, ckPut("a", "2"), ckPut("b", "x")) // aborted below
	w.put(6, ckPut("b", "1"))                  // committed below
	m1 := w.end(5, false)
	m2 := w.end(6, true)
	w.put(-1, ckPut("c", "2"))
	w.put(5, ckPut("c", "3")) // aborted below
	m3 := w.end(5, false)
	w.put(5, ckPut("z", "1")) // producer 5's last data
	m4 := w.end(5, true)
	w.put(-1, ckPut("y", "1")) // active
	tl.SetHighWatermark(tl.LogEndOffset())
	end := stableEnd(tl.View())

	st := mustCompact(t, tl)
	want := w.compact(end)
	v := tl.View()
	if got := userRecords(t, v); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	var values []string
	for _, r := range want {
		values = append(values, r.Key+"="+string(r.Value))
	}
	if !slices.Equal(values, []string{"a=1", "b=1", "c=2", "z=1", "y=1"}) {
		t.Fatalf("model kept %v", values)
	}
	if st.RecordsRemoved != 4 {
		t.Fatalf("stats %+v, want 4 records removed (a=2, b=x, c=3 aborted, c=1 superseded)", st)
	}
	wantMarkers := []string{fmt.Sprint(m1, ":abort"), fmt.Sprint(m2, ":commit"), fmt.Sprint(m3, ":abort"), fmt.Sprint(m4, ":commit")}
	if got := markerStates(t, v); !slices.Equal(got, wantMarkers) {
		t.Fatalf("markers %v, want %v", got, wantMarkers)
	}
	// The pass removed the aborted batches itself: their markers keep
	// their entries, in the cleaned segments, and the next pass is due.
	if got := v.AbortedTxns(0, math.MaxInt64); !slices.Equal(got, w.entries) {
		t.Fatalf("entries %+v, want %+v", got, w.entries)
	}
	checkTxnIndex(t, v, w)
	if !tl.CompactionDue(1) {
		t.Fatal("no pass due after one that left markers without their batches")
	}
	tl.reopen()
	w.setStable()
	if got := userRecords(t, tl.View()); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	checkTxnIndex(t, tl.View(), w)
}

// TestCompactTxnMarkersKIP534 follows markers through Kafka's rules: a
// marker stays while any batch of its transaction does; the first pass
// that finds none sets its delete horizon (KIP-534: attribute bit 6,
// BaseTimestamp = now + delete.retention.ms) and the aborted transaction's
// index entry goes; passes before the horizon keep it; the first pass at
// the horizon drops it.
func TestCompactTxnMarkersKIP534(t *testing.T) {
	o := txnCompactOptions()
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	w := newTxnWriter(t, tl)
	w.put(6, ckPut("b", "1"))
	m1 := w.end(6, true)
	w.put(-1, ckPut("b", "2")) // supersedes producer 6's committed b=1
	w.put(7, ckPut("k", "1"))
	m2 := w.end(7, false)
	// The producers' last data batches, in segments the passes leave alone
	// (producer 6's transaction stays open: the last stable offset stops
	// the cleanable part there): else rule 3 keeps their last batches
	// above, and with them their transactions' markers.
	w.put(6, ckPut("q", "1"))
	w.put(7, ckPut("q", "2"))
	w.end(7, true)
	tl.SetHighWatermark(tl.LogEndOffset())
	end := stableEnd(tl.View())
	commit, abort := fmt.Sprint(m1, ":commit"), fmt.Sprint(m2, ":abort")
	later := []string{fmt.Sprint(tl.LogEndOffset()-1, ":commit")}

	mustCompact(t, tl)
	want := w.compact(end)
	v := tl.View()
	if got := userRecords(t, v); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	if got, wantM := markerStates(t, v), append([]string{commit, abort}, later...); !slices.Equal(got, wantM) {
		t.Fatalf("after the first pass: markers %v, want %v", got, wantM)
	}
	if got := v.AbortedTxns(0, math.MaxInt64); len(got) != 1 {
		t.Fatalf("after the first pass: entries %+v", got)
	}
	checkTxnIndex(t, v, w)

	now := tl.clock.Now().UnixMilli()
	if !tl.CompactionDue(1) {
		t.Fatal("second pass not due")
	}
	mustCompact(t, tl)
	v = tl.View()
	if got, wantM := markerStates(t, v), append([]string{commit + "+horizon", abort + "+horizon"}, later...); !slices.Equal(got, wantM) {
		t.Fatalf("after the second pass: markers %v, want %v", got, wantM)
	}
	batches, _ := readTxnLog(t, v)
	for _, b := range batches {
		if b.DeleteHorizon() && b.BaseTimestamp != now+o.DeleteRetentionMs {
			t.Fatalf("marker %d: delete horizon %d, want %d", b.BaseOffset, b.BaseTimestamp, now+o.DeleteRetentionMs)
		}
	}
	if got := v.AbortedTxns(0, math.MaxInt64); got != nil {
		t.Fatalf("entry kept for a transaction without batches: %+v", got)
	}
	checkTxnIndex(t, v, w)

	tl.clock.Advance(30 * time.Minute)
	if tl.CompactionDue(1) {
		t.Fatal("a pass due before the horizon with nothing dirty")
	}
	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("a pass before the horizon did %+v", st)
	}
	tl.clock.Advance(30 * time.Minute)
	if !tl.CompactionDue(1) {
		t.Fatal("no pass due at the horizon")
	}
	st := mustCompact(t, tl)
	v = tl.View()
	if got := markerStates(t, v); !slices.Equal(got, later) || st.RecordsRemoved != 2 {
		t.Fatalf("at the horizon: markers %v, stats %+v", got, st)
	}
	if got := userRecords(t, v); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	checkTxnIndex(t, v, w)
	// Nothing left to do, after a reopen either (once the partition layer
	// has set the last stable offset again).
	tl.reopen()
	w.setStable()
	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("a pass after the last did %+v", st)
	}
}

// TestCompactTxnProducerEpoch checks rule 3 for markers (Kafka's
// isBatchLastRecordOfProducer): a producer whose latest epoch has a
// marker and no data keeps that marker, emptied once past its horizon, so
// that its epoch survives; its data batches of the older epoch go.
func TestCompactTxnProducerEpoch(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnCompactOptions())
	w := newTxnWriter(t, tl)
	w.put(9, ckPut("a", "1"))
	// The coordinator aborts on a timeout with a bumped epoch.
	res, err := tl.Append(markerBatch(t, tl.clock.Now().UnixMilli(), 9, 1, false), 0)
	if err != nil {
		t.Fatal(err)
	}
	e := AbortedTxn{ProducerID: 9, FirstOffset: 0, LastOffset: res.BaseOffset, LastStableOffset: res.BaseOffset + 1}
	if err := tl.AddAbortedTxn(e); err != nil {
		t.Fatal(err)
	}
	w.entries = append(w.entries, e)
	delete(w.open, 9)
	w.setStable()
	w.put(-1, ckPut("z", "1")) // active
	tl.SetHighWatermark(tl.LogEndOffset())
	for range 3 {
		mustCompact(t, tl)
		tl.clock.Advance(2 * time.Hour)
	}
	batches, recs := readTxnLog(t, tl.View())
	if len(recs) != 1 || recs[0].Key != "z" {
		t.Fatalf("records %v", recs)
	}
	var got []string
	for _, b := range batches {
		got = append(got, fmt.Sprintf("%d pid %d epoch %d control %v n %d", b.BaseOffset, b.ProducerID, b.ProducerEpoch, b.Control(), b.NumRecords))
	}
	want := []string{
		"0 pid -1 epoch -1 control false n 0", // the aborted batch's placeholder (the end of its segment)
		"1 pid 9 epoch 1 control true n 0",    // the marker, emptied
		"2 pid -1 epoch -1 control false n 1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches\n got %q\nwant %q", got, want)
	}
	if st := mustCompact(t, tl); st != (CompactStats{}) {
		t.Fatalf("a pass with nothing to do did %+v", st)
	}
}

// TestCompactUnfinishedTransaction: the cleanable part ends below the last
// stable offset (Kafka's firstUncleanableOffset), so an unfinished
// transaction and everything after it stay as they are, however
// superseded, until it ends.
func TestCompactUnfinishedTransaction(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), txnCompactOptions())
	w := newTxnWriter(t, tl)
	for i := range 4 {
		w.put(-1, ckPut("a", fmt.Sprint(i)))
	}
	first := w.put(8, ckPut("a", "txn")).BaseOffset
	for i := range 4 {
		w.put(-1, ckPut("a", fmt.Sprint("later", i)))
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	if v := tl.View(); v.LastStableOffset != first || stableEnd(v) != first {
		t.Fatalf("last stable offset %d, cleanable below %d; want %d", v.LastStableOffset, stableEnd(v), first)
	}
	mustCompact(t, tl)
	if got, want := userRecords(t, tl.View()), w.compact(first); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	w.end(8, true)
	w.put(-1, ckPut("b", "active"))
	tl.SetHighWatermark(tl.LogEndOffset())
	end := stableEnd(tl.View())
	if end <= first {
		t.Fatalf("cleanable below %d after the commit", end)
	}
	mustCompact(t, tl)
	if got, want := userRecords(t, tl.View()), w.compact(end); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	checkTxnIndex(t, tl.View(), w)
}

// txnWorkload appends n random operations over nkeys keys: records outside
// transactions and in transactions of four producers, transactions ending
// in commits and aborts, records in all codecs.
func txnWorkload(t testing.TB, w *txnWriter, r *rand.Rand, n, nkeys int) {
	t.Helper()
	for range n {
		pid := int64(r.IntN(5)) - 1
		if _, open := w.open[pid]; open && r.IntN(3) == 0 {
			w.end(pid, r.IntN(2) == 0)
			continue
		}
		rs := make([]ckv, 1+r.IntN(3))
		for i := range rs {
			rs[i] = ckPut(fmt.Sprint("key-", r.IntN(nkeys)), fmt.Sprint("v", len(w.recs)+i))
		}
		w.put(pid, rs...)
	}
}

// TestCompactTransactionsDifferential compares compaction with the naive
// model over random transactional workloads, across passes with appends,
// delete horizons passing, a reopen and a crash between them: below the
// cleanable end the log holds exactly the newest record of each key among
// those of no aborted transaction, and none of an aborted one; and the
// index and the markers keep checkTxnIndex's rules.
func TestCompactTransactionsDifferential(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			mem := vfs.NewCrashableMem()
			o := compactOptions()
			o.SegmentBytes = int64(300 + r.IntN(1500))
			o.DeleteRetentionMs = time.Minute.Milliseconds()
			tl := openTestLog(t, mem, o)
			w := newTxnWriter(t, tl)
			for round := range 4 {
				txnWorkload(t, w, r, 40+r.IntN(60), 3+r.IntN(10))
				hw := tl.LogEndOffset()
				if r.IntN(3) == 0 {
					hw = r.Int64N(hw + 1)
				}
				tl.SetHighWatermark(hw)
				end := stableEnd(tl.View())
				for k := 0; k == 0 || tl.CleanableRatio() > 0 || tl.CompactionDue(1); k++ {
					if k == 10 {
						t.Fatal("passes do not settle")
					}
					mustCompact(t, tl)
				}
				want := w.compact(end)
				v := tl.View()
				if got := userRecords(t, v); !sameRecords(got, want) {
					t.Fatalf("round %d (cleanable below %d): %s", round, end, diffRecords(got, want))
				}
				checkTxnIndex(t, v, w)
				checkSegmentsContiguous(t, v)
				tl.clock.Advance(time.Minute)
				switch round {
				case 1:
					tl.reopen()
					w.setStable()
				case 2:
					if err := tl.Sync(); err != nil {
						t.Fatal(err)
					}
					crashed := mem.CrashClone(vfs.CrashOptions{})
					tl.Close()
					mem = crashed
					tl.cfg.FS, tl.fs = mem, mem
					l, err := Open(tl.cfg)
					if err != nil {
						t.Fatal(err)
					}
					tl.Log = l
					w.setStable()
				}
				if got := userRecords(t, tl.View()); !sameRecords(got, want) {
					t.Fatalf("round %d after reopen: %s", round, diffRecords(got, want))
				}
				checkTxnIndex(t, tl.View(), w)
			}
		})
	}
}

// txnSwapFixture is swapFixture with transactions: small segments rolled
// by segment.ms, aborted transactions whose markers land in several of
// them, all synced and checkpointed.
func txnSwapFixture(t *testing.T, fsys vfs.FS, seed uint64) (*testLog, *txnWriter) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	o := compactOptions()
	o.SegmentBytes, o.SegmentMs = 6000, 1000
	tl := openTestLog(t, fsys, o)
	w := newTxnWriter(t, tl)
	for range 10 {
		txnWorkload(t, w, r, 12, 6)
		tl.clock.Advance(time.Second)
	}
	for pid := range int64(4) {
		if _, open := w.open[pid]; open {
			w.end(pid, pid%2 == 0)
		}
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	if err := tl.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tl.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return tl, w
}

// TestCompactTxnCrashAtEachStep crashes the filesystem just before each
// rename, sync and remove of the passes that clean a log with aborted
// transactions (the first removes their records and keeps their markers
// and entries, the second starts the markers' horizons and drops the
// entries, the third drops the markers), and reopens each crash: every
// original segment holds its old records or its cleaned ones, and the
// aborted-transaction index is right for what the log holds (no entry
// whose marker went, none missing for a marker whose batches are there),
// with no .txnindex file left without entries.
func TestCompactTxnCrashAtEachStep(t *testing.T) {
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
	tl, w := txnSwapFixture(t, fsys, 1)
	end := stableEnd(tl.View())
	bases := segmentBases(tl.View())
	old := userRecords(t, tl.View())
	want := w.compact(end)
	if len(w.entries) < 3 {
		t.Fatalf("%d aborted transactions", len(w.entries))
	}
	mu.Lock()
	on = true
	mu.Unlock()
	for pass := range 3 {
		if st := mustCompact(t, tl); st.SegmentsCleaned == 0 {
			t.Fatalf("pass %d cleaned nothing", pass)
		}
		if pass == 0 && len(tl.View().AbortedTxns(0, math.MaxInt64)) == 0 {
			t.Fatal("the first pass kept no entry")
		}
		tl.clock.Advance(48 * time.Hour)
	}
	mu.Lock()
	on = false
	mu.Unlock()
	if got := userRecords(t, tl.View()); !sameRecords(got, want) {
		t.Fatal(diffRecords(got, want))
	}
	// An entry below the cleanable end stays only with a batch of its
	// transaction (rule 3 keeps a producer's last batch, emptied).
	batches, _ := readTxnLog(t, tl.View())
	for _, e := range tl.View().AbortedTxns(0, math.MaxInt64) {
		if e.LastOffset < end && !slices.ContainsFunc(batches, func(b txnBatchInfo) bool {
			return !b.Control() && b.ProducerID == e.ProducerID && b.BaseOffset >= e.FirstOffset && b.BaseOffset < e.LastOffset
		}) {
			t.Fatalf("entry %+v left without batches below the cleanable end %d after the passes", e, end)
		}
	}
	crashes = append(crashes, mem.CrashClone(vfs.CrashOptions{}))
	steps = append(steps, "after the passes")
	var sawOld, sawNew bool
	for i, crashed := range crashes {
		cfg := tl.cfg
		cfg.FS = crashed
		l, err := Open(cfg)
		if err != nil {
			t.Fatalf("crash at %s: %v", steps[i], err)
		}
		v := l.View()
		got := userRecords(t, v)
		switch {
		case sameRecords(got, old):
			sawOld = true
		case sameRecords(got, want):
			sawNew = true
		default:
			checkPartlyCleaned(t, got, old, want, bases, steps[i])
		}
		checkTxnIndex(t, v, w)
		for name := range txnIndexFiles(t, crashed, cfg.Dir) {
			base, _ := parseSegmentName(strings.TrimSuffix(name, txnIndexSuffix) + logSuffix)
			if k := v.find(base); v.segment(k).base != base || len(v.segment(k).txns) == 0 {
				t.Fatalf("crash at %s: %s left without entries", steps[i], name)
			}
		}
		l.Close()
	}
	if !sawOld || !sawNew {
		t.Fatalf("saw the old log %v, the cleaned one %v over %d crashes", sawOld, sawNew, len(crashes))
	}
}

// TestCompactTxnSwapLosesToNewEntry: an entry added during a pass to a
// segment the pass is cleaning (the partition layer's replay after a lost
// .txnindex) makes the swap of that segment's group discard its work, as a
// truncation does; the next pass knows the transaction as aborted.
func TestCompactTxnSwapLosesToNewEntry(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var tl *testLog
	var e AbortedTxn
	added := false
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpCreate && strings.HasSuffix(path, logSuffix+cleanedSuffix) && !added {
			added = true
			if err := tl.AddAbortedTxn(e); err != nil {
				t.Error(err)
			}
		}
		return nil
	}))
	tl = openTestLog(t, fsys, txnCompactOptions())
	w := newTxnWriter(t, tl)
	first := w.put(3, ckPut("k", "aborted")).BaseOffset
	// The abort marker, its entry not added (lost with its file).
	res, err := tl.Append(markerBatch(t, 0, 3, 0, false), 0)
	if err != nil {
		t.Fatal(err)
	}
	e = AbortedTxn{ProducerID: 3, FirstOffset: first, LastOffset: res.BaseOffset, LastStableOffset: res.BaseOffset + 1}
	delete(w.open, 3)
	w.put(-1, ckPut("x", "1"))
	w.put(3, ckPut("q", "1")) // producer 3's last data, open: the rest stays
	tl.SetHighWatermark(tl.LogEndOffset())
	mustCompact(t, tl)
	if !added {
		t.Fatal("no entry added during the pass")
	}
	w.entries = append(w.entries, e)
	for i := range w.state {
		if w.state[i].Offset == first {
			w.state[i].aborted = true
		}
	}
	end := stableEnd(tl.View())
	mustCompact(t, tl)
	want := w.compact(end)
	if got := userRecords(t, tl.View()); !sameRecords(got, want) || len(want) != 2 {
		t.Fatal(diffRecords(got, want))
	}
	if got := tl.View().AbortedTxns(0, math.MaxInt64); !slices.Equal(got, []AbortedTxn{e}) {
		t.Fatalf("entries %+v", got)
	}
	checkTxnIndex(t, tl.View(), w)
}

// TestCompactTxnInjectedErrors fails each rename, then each sync, of a
// pass that rewrites .txnindex files, and crashes: the reopened log's
// index is right for what it holds.
func TestCompactTxnInjectedErrors(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpRename, vfs.OpSync} {
		for n := 0; ; n++ {
			mem := vfs.NewCrashableMem()
			toggle := vfs.NewToggle(vfs.FailOnceAfter(n, op, nil))
			tl, w := txnSwapFixture(t, vfs.NewErrorFS(mem, toggle), 2)
			toggle.On()
			_, err := tl.Compact()
			toggle.Off()
			if err == nil {
				if n == 0 {
					t.Fatalf("%s: no operation to fail", op)
				}
				break
			}
			if !errors.Is(err, vfs.ErrInjected) && !errors.Is(err, ErrFailed) {
				t.Fatalf("%s %d: %v", op, n, err)
			}
			cfg := tl.cfg
			cfg.FS = mem.CrashClone(vfs.CrashOptions{})
			l, err := Open(cfg)
			if err != nil {
				t.Fatalf("%s %d: reopen: %v", op, n, err)
			}
			checkTxnIndex(t, l.View(), w)
			l.Close()
		}
	}
}

// TestCompactTxnSwapRecovery stops a pass in the middle of a swap's step 4
// (see compact.go, Swap): the originals retired and the index files
// renamed to their final names, the .txnindex among them, the .log.swap
// not, as a filesystem that makes renames durable in order leaves it at a
// crash. Open finishes the swap and keeps the cleaned .txnindex, which has
// no .swap any more.
func TestCompactTxnSwapRecovery(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var tl *testLog
	stopped := ""
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op != vfs.OpRename || stopped != "" || !strings.HasSuffix(path, logSuffix+swapSuffix) {
			return nil
		}
		if _, err := mem.Stat(strings.TrimSuffix(path, logSuffix+swapSuffix) + txnIndexSuffix); err != nil {
			return nil
		}
		stopped = path
		return vfs.ErrInjected
	}))
	tl, w := txnSwapFixture(t, fsys, 1)
	if _, err := tl.Compact(); !errors.Is(err, ErrFailed) || stopped == "" {
		t.Fatalf("pass: %v, stopped at %q", err, stopped)
	}
	// What the renames did is on disk: sync the directory, then crash.
	d, err := mem.OpenDir(tl.Dir())
	if err != nil {
		t.Fatal(err)
	}
	d.Sync()
	d.Close()
	cfg := tl.cfg
	cfg.FS = mem.CrashClone(vfs.CrashOptions{})
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The first pass keeps every entry: each aborted transaction had
	// batches to remove.
	if got := l.View().AbortedTxns(0, math.MaxInt64); !slices.Equal(got, w.entries) {
		t.Fatalf("entries\n got %+v\nwant %+v", got, w.entries)
	}
	checkTxnIndex(t, l.View(), w)
}

// TestCompactTxnReplayedEntryCrash: an entry that the partition layer's
// replay added again after compaction had dropped it (its marker waiting
// for its delete horizon) goes with its marker; a crash at any step of the
// pass that drops them never leaves the entry without the marker. (The
// .txnindex the original segment has and the cleaned one does not is what
// step 1 of the swap writes empty for.)
func TestCompactTxnReplayedEntryCrash(t *testing.T) {
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
	tl := openTestLog(t, fsys, txnCompactOptions())
	w := newTxnWriter(t, tl)
	w.put(4, ckPut("a", "1"))
	marker := w.end(4, false)
	w.put(-1, ckPut("x", "1"))
	w.put(4, ckPut("q", "1")) // producer 4's last data, open
	tl.SetHighWatermark(tl.LogEndOffset())
	mustCompact(t, tl) // the aborted batch goes
	mustCompact(t, tl) // the marker's horizon starts, its entry goes
	if got := tl.View().AbortedTxns(0, math.MaxInt64); got != nil {
		t.Fatalf("entries %+v", got)
	}
	tl.reopen()
	w.setStable()
	if err := tl.AddAbortedTxn(w.entries[0]); err != nil { // the replay
		t.Fatal(err)
	}
	if len(tl.View().AbortedTxns(0, math.MaxInt64)) != 1 {
		t.Fatal("the replay added no entry")
	}
	tl.clock.Advance(2 * time.Hour)
	mu.Lock()
	on = true
	mu.Unlock()
	mustCompact(t, tl)
	mu.Lock()
	on = false
	mu.Unlock()
	if got := markerStates(t, tl.View()); len(got) != 0 {
		t.Fatalf("markers %v after the horizon", got)
	}
	crashes = append(crashes, mem.CrashClone(vfs.CrashOptions{}))
	steps = append(steps, "after the pass")
	for i, crashed := range crashes {
		cfg := tl.cfg
		cfg.FS = crashed
		l, err := Open(cfg)
		if err != nil {
			t.Fatalf("crash at %s: %v", steps[i], err)
		}
		checkTxnIndex(t, l.View(), w)
		if len(markerStates(t, l.View())) == 0 && l.View().AbortedTxns(0, math.MaxInt64) != nil {
			t.Fatalf("crash at %s: entry without its marker %d", steps[i], marker)
		}
		l.Close()
	}
}
