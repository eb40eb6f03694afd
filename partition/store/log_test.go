package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// logBatch builds an uncompressed batch of n records with values of size
// bytes, keyed "k<i>", timestamps ts, ts+1, ... It is what a producer sends:
// base offset 0, CRC filled in.
func logBatch(n, size int, ts int64) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "k%d", i),
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, size),
		}
		// AppendTo writes Length as given: encode once with length 0 (one
		// varint byte) to learn it.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + int64(n-1),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], CRC(raw))
	return raw
}

func testOptions() Options {
	o := DefaultOptions()
	o.SegmentBytes = 16 << 10
	o.SegmentIndexBytes = 4096
	o.IndexIntervalBytes = 512
	return o
}

type testLog struct {
	*Log
	t     *testing.T
	fs    vfs.FS
	clock *clock.Manual
	cfg   Config
}

func openTestLog(t *testing.T, fs vfs.FS, o Options) *testLog {
	t.Helper()
	return openTestLogIn(t, fs, "/data/topic-0", o)
}

func openTestLogIn(t *testing.T, fs vfs.FS, dir string, o Options) *testLog {
	t.Helper()
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	cfg := Config{FS: fs, Dir: dir, Clock: clk, Options: o}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{Log: l, t: t, fs: fs, clock: clk, cfg: cfg}
	t.Cleanup(func() { tl.Close() })
	return tl
}

func (tl *testLog) reopen() {
	tl.t.Helper()
	if err := tl.Close(); err != nil {
		tl.t.Fatal(err)
	}
	l, err := Open(tl.cfg)
	if err != nil {
		tl.t.Fatal(err)
	}
	tl.Log = l
}

func (tl *testLog) append(n, size int) AppendResult {
	tl.t.Helper()
	res, err := tl.Append(logBatch(n, size, tl.clock.Now().UnixMilli()), 0)
	if err != nil {
		tl.t.Fatal(err)
	}
	return res
}

// readLog reads every batch from offset to the log end, checking that
// offsets increase, and returns their headers.
func readLog(t *testing.T, v *View, from int64) []Header {
	t.Helper()
	var out []Header
	next := from
	for next < v.LogEndOffset {
		b, err := v.ReadBytes(next, ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("read at %d below log end %d returned nothing", next, v.LogEndOffset)
		}
		err = ForEachBatch(b, func(bb []byte, h Header) error {
			if err := CheckCRC(bb); err != nil {
				return err
			}
			if h.LastOffset() < next {
				return fmt.Errorf("batch %d-%d returned for offset %d", h.BaseOffset, h.LastOffset(), next)
			}
			out = append(out, h)
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestAppendAssignsOffsetsAndReadsBack(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	var want []int64
	for i := 1; i <= 50; i++ {
		res := tl.append(i%7+1, 300)
		want = append(want, res.BaseOffset)
		if res.LastOffset != res.BaseOffset+int64(i%7) {
			t.Fatalf("append %d: offsets %d-%d for %d records", i, res.BaseOffset, res.LastOffset, i%7+1)
		}
	}
	if n, _ := tl.Segments(); n < 3 {
		t.Fatalf("want several segments at segment.bytes=16KiB, got %d", n)
	}
	got := readLog(t, tl.View(), 0)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, appended %d", len(got), len(want))
	}
	for i, h := range got {
		if h.BaseOffset != want[i] || h.PartitionLeaderEpoch != 0 {
			t.Fatalf("batch %d: base %d epoch %d, want base %d epoch 0", i, h.BaseOffset, h.PartitionLeaderEpoch, want[i])
		}
	}
	// Every offset, not only batch starts, finds its batch.
	v := tl.View()
	for off := int64(0); off < v.LogEndOffset; off++ {
		sl, err := v.Read(off, ReadOptions{MaxBytes: 1, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			t.Fatal(err)
		}
		if sl.FirstOffset > off || sl.NextOffset <= off {
			t.Fatalf("offset %d: got batch %d-%d", off, sl.FirstOffset, sl.NextOffset-1)
		}
	}
}

func TestReadBounds(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	for i := 0; i < 10; i++ {
		tl.append(2, 200) // ~500 bytes per batch
	}
	v := tl.View()
	one := func() int64 {
		sl, _ := v.Read(0, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 2})
		return sl.Size
	}()
	tests := []struct {
		name      string
		offset    int64
		o         ReadOptions
		wantFirst int64
		wantNext  int64
		wantErr   error
	}{
		{"all", 0, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 20}, 0, 20, nil},
		{"mid-batch offset", 3, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 20}, 2, 20, nil},
		{"max offset is high watermark", 0, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 7}, 0, 6, nil},
		{"byte limit whole batches", 0, ReadOptions{MaxBytes: 3*one + 1, MaxOffset: 20}, 0, 6, nil},
		{"first batch larger than limit", 0, ReadOptions{MaxBytes: 10, MaxOffset: 20}, 0, 0, nil},
		{"min one batch", 4, ReadOptions{MaxBytes: 10, MaxOffset: 20, MinOneBatch: true}, 4, 6, nil},
		{"at log end", 20, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 20}, 0, 0, nil},
		{"past log end", 21, ReadOptions{MaxBytes: 1 << 20, MaxOffset: 20}, 0, 0, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sl, err := v.Read(tt.offset, tt.o)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if sl.FirstOffset != tt.wantFirst || sl.NextOffset != tt.wantNext {
				t.Fatalf("got [%d, %d), want [%d, %d)", sl.FirstOffset, sl.NextOffset, tt.wantFirst, tt.wantNext)
			}
			if sl.Size > tt.o.MaxBytes && !tt.o.MinOneBatch {
				t.Fatalf("size %d over the limit %d", sl.Size, tt.o.MaxBytes)
			}
		})
	}
}

func TestRollOnSegmentMsAndIndexFull(t *testing.T) {
	o := testOptions()
	o.SegmentMs = 1000
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	tl.append(1, 10)
	tl.append(1, 10)
	if n, _ := tl.Segments(); n != 1 {
		t.Fatalf("segments %d before segment.ms", n)
	}
	tl.clock.Advance(time.Second)
	res := tl.append(1, 10)
	if n, _ := tl.Segments(); n != 2 {
		t.Fatalf("segments %d after segment.ms, want 2", n)
	}
	if got := tl.View().active.base; got != res.BaseOffset {
		t.Fatalf("new segment base %d, want %d", got, res.BaseOffset)
	}

	o = testOptions()
	o.SegmentIndexBytes = 64 // 8 offset entries, 5 time entries
	o.IndexIntervalBytes = 0 // an entry per batch
	tl = openTestLog(t, vfs.NewCrashableMem(), o)
	for i := 0; i < 12; i++ {
		tl.append(1, 10)
	}
	if n, _ := tl.Segments(); n < 2 {
		t.Fatalf("index full did not roll: %d segments", n)
	}
	readLog(t, tl.View(), 0)
}

func TestReopenAfterCleanClose(t *testing.T) {
	fs := vfs.NewCrashableMem()
	tl := openTestLog(t, fs, testOptions())
	for i := 0; i < 40; i++ {
		tl.append(3, 150)
	}
	tl.SetHighWatermark(100)
	before := readLog(t, tl.View(), 0)
	leo := tl.LogEndOffset()
	tl.reopen()
	if tl.LogEndOffset() != leo || tl.HighWatermark() != 100 || tl.DurableOffset() != leo {
		t.Fatalf("after reopen: leo %d hw %d durable %d, want %d 100 %d", tl.LogEndOffset(), tl.HighWatermark(), tl.DurableOffset(), leo, leo)
	}
	after := readLog(t, tl.View(), 0)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatal("batches differ after reopen")
	}
	// Opening wrote nothing: the marker stands until the first write, so
	// that idle partitions open and close without a sync.
	if _, err := fs.Stat(filepath.Join(tl.Dir(), cleanMarkerFile)); err != nil {
		t.Fatalf("clean-shutdown marker gone after an open that wrote nothing: %v", err)
	}
	// And appends go on where they stopped; the marker is gone, durably,
	// before the first of them is written.
	if res := tl.append(1, 10); res.BaseOffset != leo {
		t.Fatalf("append after reopen at %d, want %d", res.BaseOffset, leo)
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	if _, err := crashed.Stat(filepath.Join(tl.Dir(), cleanMarkerFile)); err == nil {
		t.Fatal("clean-shutdown marker still there after an append")
	}
}

// TestCleanOpenCloseWritesNothing: a log opened after a clean shutdown and
// closed again without a write syncs nothing and leaves the files as they
// were, marker included; a crash in between loses nothing.
func TestCleanOpenCloseWritesNothing(t *testing.T) {
	mem := vfs.NewCrashableMem()
	tl := openTestLog(t, mem, testOptions())
	for range 20 {
		tl.append(3, 150)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	want := readLog(t, tl.View(), 0)
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	syncs := &syncCounter{}
	tl.cfg.FS = vfs.NewErrorFS(mem, syncs)
	for range 3 {
		l, err := Open(tl.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := readLog(t, l.View(), 0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatal("batches differ after a clean open")
		}
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := syncs.n.Load(); n != 0 {
		t.Fatalf("%d syncs and writes for opens and closes of a clean log", n)
	}
	tl.cfg.FS = mem.CrashClone(vfs.CrashOptions{})
	l, err := Open(tl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := readLog(t, l.View(), 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("batches differ after a crash of a clean log")
	}
}

// syncCounter counts syncs, writes, creates, renames and removes, failing
// none.
type syncCounter struct{ n atomic.Int64 }

func (c *syncCounter) MaybeError(op vfs.Op, _ string) error {
	switch op {
	case vfs.OpSync, vfs.OpWrite, vfs.OpCreate, vfs.OpRename, vfs.OpRemove, vfs.OpTruncate:
		c.n.Add(1)
	}
	return nil
}

func TestTruncate(t *testing.T) {
	for _, to := range []int64{0, 1, 2, 37, 60, 89, 119} {
		t.Run(fmt.Sprint(to), func(t *testing.T) {
			tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
			for i := 0; i < 40; i++ {
				tl.append(3, 300)
			}
			tl.SetHighWatermark(120)
			if err := tl.Truncate(to); err != nil {
				t.Fatal(err)
			}
			want := to - to%3 // truncation removes the whole batch that holds to
			v := tl.View()
			if v.LogEndOffset != want || v.HighWatermark > want {
				t.Fatalf("leo %d hw %d, want leo %d", v.LogEndOffset, v.HighWatermark, want)
			}
			if got := len(readLog(t, v, 0)); int64(got) != want/3 {
				t.Fatalf("%d batches left, want %d", got, want/3)
			}
			// The log appends on from there and survives a reopen, indexes
			// and all.
			for i := 0; i < 10; i++ {
				tl.append(3, 300)
			}
			tl.reopen()
			if got := len(readLog(t, tl.View(), 0)); int64(got) != want/3+10 {
				t.Fatalf("%d batches after reopen, want %d", got, want/3+10)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	o := testOptions()
	o.RetentionMs = 60_000
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	for i := 0; i < 60; i++ {
		tl.append(2, 500)
		tl.clock.Advance(time.Second)
	}
	nseg, _ := tl.Segments()
	if nseg < 3 {
		t.Fatalf("%d segments", nseg)
	}
	// Nothing goes above the high watermark.
	if n, err := tl.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("retention below hw 0 deleted %d (%v)", n, err)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	tl.clock.Advance(time.Hour)
	n, err := tl.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n != nseg-1 {
		t.Fatalf("time retention deleted %d of %d segments, want all but the active one", n, nseg)
	}
	v := tl.View()
	if v.LogStartOffset != v.active.base {
		t.Fatalf("log start %d, want active base %d", v.LogStartOffset, v.active.base)
	}
	if _, err := v.Read(0, ReadOptions{MaxBytes: 100, MaxOffset: v.LogEndOffset}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}

	o = testOptions()
	o.RetentionBytes = 40 << 10
	tl = openTestLog(t, vfs.NewCrashableMem(), o)
	for i := 0; i < 200; i++ {
		tl.append(2, 500)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	if _, err := tl.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	_, size := tl.Segments()
	if first := tl.View().segment(0).size; size-first >= 40<<10 || size < 40<<10 {
		t.Fatalf("size retention left %d bytes (first segment %d): want the fewest segments holding at least %d", size, first, 40<<10)
	}
	readLog(t, tl.View(), tl.LogStartOffset())

	// DeleteRecords: the log start offset moves at once, segments follow.
	lso := tl.LogStartOffset()
	if err := tl.AdvanceLogStartOffset(lso + 11); err != nil {
		t.Fatal(err)
	}
	if tl.LogStartOffset() != lso+11 {
		t.Fatalf("log start %d", tl.LogStartOffset())
	}
	if err := tl.AdvanceLogStartOffset(tl.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("advance past hw: %v", err)
	}
	tl.reopen()
	if tl.LogStartOffset() != lso+11 {
		t.Fatalf("log start after reopen %d, want %d", tl.LogStartOffset(), lso+11)
	}
}

func TestDeletedSegmentsStayReadableForOldViews(t *testing.T) {
	o := testOptions()
	o.RetentionBytes = 0
	tl := openTestLog(t, vfs.NewCrashableMem(), o)
	for i := 0; i < 100; i++ {
		tl.append(2, 500)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	old := tl.View()
	if _, err := tl.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	readLog(t, old, 0) // files renamed, still open
	tl.clock.Advance(2 * time.Minute)
	if _, err := tl.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	names, _ := tl.fs.List(tl.Dir())
	for _, n := range names {
		if filepath.Ext(n) == deletedSuffix {
			t.Fatalf("%s still there after the delete delay", n)
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	base := tl.clock.Now().UnixMilli()
	for i := 0; i < 100; i++ {
		// batch i has records at base+10i .. base+10i+3
		if _, err := tl.Append(logBatch(4, 200, base+int64(10*i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	v := tl.View()
	var dec Decompressor
	for _, tt := range []struct {
		ts      int64
		off, at int64
		found   bool
	}{
		{base - 5, 0, base, true},
		{base, 0, base, true},
		{base + 2, 2, base + 2, true},
		{base + 5, 4, base + 10, true},
		{base + 503, 203, base + 503, true},
		{base + 990, 396, base + 990, true},
		{base + 994, 0, 0, false},
	} {
		off, at, found, err := v.OffsetForTimestamp(tt.ts, &dec)
		if err != nil || off != tt.off || at != tt.at || found != tt.found {
			t.Errorf("ts %d: got %d@%d %v %v, want %d@%d %v", tt.ts-base, off, at-base, found, err, tt.off, tt.at-base, tt.found)
		}
	}
	off, at, found, err := v.MaxTimestamp(&dec)
	if err != nil || !found || off != 399 || at != base+993 {
		t.Fatalf("max timestamp: %d@%d %v %v", off, at-base, found, err)
	}
}

func TestLeaderEpochs(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	for epoch := int32(0); epoch < 3; epoch++ {
		for i := 0; i < 5; i++ {
			if _, err := tl.Append(logBatch(2, 10, 0), epoch*2); err != nil {
				t.Fatal(err)
			}
		}
	}
	// epochs 0, 2, 4 start at 0, 10, 20; the log ends at 30.
	for _, tt := range []struct {
		ask       int32
		epoch     int32
		endOffset int64
	}{{0, 0, 10}, {1, 0, 10}, {2, 2, 20}, {3, 2, 20}, {4, 4, 30}, {9, 4, 30}} {
		e, off := tl.EndOffsetForEpoch(tt.ask)
		if e != tt.epoch || off != tt.endOffset {
			t.Errorf("epoch %d: got (%d, %d), want (%d, %d)", tt.ask, e, off, tt.epoch, tt.endOffset)
		}
	}
	if err := tl.Truncate(15); err != nil {
		t.Fatal(err)
	}
	tl.reopen()
	if e, off := tl.EndOffsetForEpoch(4); e != 2 || off != 14 {
		t.Fatalf("after truncation to 15 (batch boundary 14): got (%d, %d), want (2, 14)", e, off)
	}
}

// TestLeaderEpochOlderThanTheLog: asked for an epoch older than its first,
// a log answers that epoch ending where its first epoch starts, as Kafka
// does, so that a follower holding records of an epoch this leader never
// had truncates them; a log without epochs knows nothing.
func TestLeaderEpochOlderThanTheLog(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	if e, off := tl.EndOffsetForEpoch(0); e != -1 || off != -1 {
		t.Fatalf("empty log, epoch 0: got (%d, %d), want (-1, -1)", e, off)
	}
	for range 3 {
		if _, err := tl.Append(logBatch(2, 10, 0), 2); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		ask, epoch int32
		endOffset  int64
	}{{-1, -1, -1}, {0, 0, 0}, {1, 1, 0}, {2, 2, 6}, {5, 2, 6}} {
		if e, off := tl.EndOffsetForEpoch(tt.ask); e != tt.epoch || off != tt.endOffset {
			t.Errorf("epoch %d: got (%d, %d), want (%d, %d)", tt.ask, e, off, tt.epoch, tt.endOffset)
		}
	}
}

func TestGroupCommitConcurrentWriters(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	var wg sync.WaitGroup
	var mu sync.Mutex // Append has one writer in production; here the test serialises it
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				mu.Lock()
				res, err := tl.Append(logBatch(1, 100, 0), 0)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if err := tl.SyncTo(res.LastOffset + 1); err != nil {
					t.Error(err)
					return
				}
				if d := tl.DurableOffset(); d <= res.LastOffset {
					t.Errorf("SyncTo(%d) returned with durable offset %d", res.LastOffset+1, d)
				}
			}
		}()
	}
	v := tl.View()
	readLog(t, v, 0) // readers run alongside
	wg.Wait()
	if tl.DurableOffset() != 200 {
		t.Fatalf("durable %d, want 200", tl.DurableOffset())
	}
}

func TestAppendDoesNotAllocatePerRecord(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), DefaultOptions())
	small, big := logBatch(1, 100, 0), logBatch(100, 100, 0)
	a1 := testing.AllocsPerRun(200, func() { tl.Append(small, 0) })
	a100 := testing.AllocsPerRun(200, func() { tl.Append(big, 0) })
	if a100 > a1 || a1 > 2 {
		t.Fatalf("allocs per append: %v for 1 record, %v for 100: want at most 2, not growing with records", a1, a100)
	}
}

var _ = io.EOF
