package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

func (tl *testLog) snapshots() []int64 {
	tl.t.Helper()
	offs, err := tl.snapshotOffsets()
	if err != nil {
		tl.t.Fatal(err)
	}
	return offs
}

func (tl *testLog) latestSnapshot() (int64, string, bool) {
	tl.t.Helper()
	off, data, ok, err := tl.ReadLatestSnapshot()
	if err != nil {
		tl.t.Fatal(err)
	}
	return off, string(data), ok
}

// TestSnapshotWriteReadPrune: the newest snapshot reads back; older ones
// beyond snapshotsKept are pruned; none above the log end is accepted.
func TestSnapshotWriteReadPrune(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	if _, _, ok := tl.latestSnapshot(); ok {
		t.Fatal("a new log has a snapshot")
	}
	for i := range 4 {
		tl.append(3, 10)
		if err := tl.WriteSnapshot(tl.LogEndOffset(), []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.snapshots(); !slices.Equal(got, []int64{9, 12}) {
		t.Fatalf("snapshots %v, want the two newest [9 12]", got)
	}
	if off, data, ok := tl.latestSnapshot(); !ok || off != 12 || data != "d" {
		t.Fatalf("latest = %d %q %v, want 12 \"d\"", off, data, ok)
	}
	if err := tl.WriteSnapshot(13, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("snapshot above the log end: %v", err)
	}
	// An empty payload is a valid snapshot (no producers).
	tl.append(1, 10)
	if err := tl.WriteSnapshot(13, nil); err != nil {
		t.Fatal(err)
	}
	if off, data, ok := tl.latestSnapshot(); !ok || off != 13 || data != "" {
		t.Fatalf("latest = %d %q %v, want 13 \"\"", off, data, ok)
	}
	// It survives a clean reopen.
	tl.reopen()
	if off, _, ok := tl.latestSnapshot(); !ok || off != 13 {
		t.Fatalf("after reopen: latest = %d %v, want 13", off, ok)
	}
}

// TestSnapshotCorruptSkipped: a snapshot whose frame does not check out is
// deleted and the next older one is used.
func TestSnapshotCorruptSkipped(t *testing.T) {
	fs := vfs.NewCrashableMem()
	tl := openTestLog(t, fs, testOptions())
	tl.append(2, 10)
	if err := tl.WriteSnapshot(2, []byte("old")); err != nil {
		t.Fatal(err)
	}
	tl.append(2, 10)
	if err := tl.WriteSnapshot(4, []byte("new")); err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenReadWrite(tl.path(segmentName(4, snapshotSuffix)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), snapshotHeaderSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if off, data, ok := tl.latestSnapshot(); !ok || off != 2 || data != "old" {
		t.Fatalf("latest = %d %q %v, want the older 2 \"old\"", off, data, ok)
	}
	if got := tl.snapshots(); !slices.Equal(got, []int64{2}) {
		t.Fatalf("snapshots %v, want the corrupt one deleted", got)
	}
}

// TestSnapshotAboveLogEndAfterCrash: a snapshot made durable while the log
// tail it covers was not is deleted by Open when a crash loses that tail.
func TestSnapshotAboveLogEndAfterCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	tl := openTestLog(t, fs, testOptions())
	tl.append(2, 10)
	if err := tl.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := tl.WriteSnapshot(2, []byte("durable")); err != nil {
		t.Fatal(err)
	}
	tl.append(2, 10) // never synced
	if err := tl.WriteSnapshot(4, []byte("ahead")); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	cfg := tl.cfg
	cfg.FS = crashed
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if leo := l.LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d after the crash, want 2", leo)
	}
	names, err := crashed.List(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, segmentName(4, snapshotSuffix)) {
		t.Fatalf("snapshot above the log end survived Open: %v", names)
	}
	off, data, ok, err := l.ReadLatestSnapshot()
	if err != nil || !ok || off != 2 || string(data) != "durable" {
		t.Fatalf("latest = %d %q %v %v, want 2 \"durable\"", off, data, ok, err)
	}
	// The deletion is durable: another crash does not bring it back.
	again := crashed.CrashClone(vfs.CrashOptions{})
	names, err = again.List(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, segmentName(4, snapshotSuffix)) {
		t.Fatal("the deleted snapshot came back after a second crash")
	}
}

// TestSnapshotTruncation: Truncate deletes the snapshots above the new log
// end, TruncateFullyAndStartAt all of them, so that appends of another
// history cannot make one look valid again.
func TestSnapshotTruncation(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	for range 3 {
		tl.append(2, 10)
		if err := tl.WriteSnapshot(tl.LogEndOffset(), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := tl.snapshots(); !slices.Equal(got, []int64{4, 6}) {
		t.Fatalf("snapshots %v", got)
	}
	if err := tl.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if got := tl.snapshots(); !slices.Equal(got, []int64{4}) {
		t.Fatalf("after Truncate(4): snapshots %v, want [4]", got)
	}
	tl.append(2, 10)
	if err := tl.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if got := tl.snapshots(); len(got) != 0 {
		t.Fatalf("after TruncateFullyAndStartAt: snapshots %v, want none", got)
	}
}
