package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

// heldAhead returns, for each segment file in dir, the disk space it holds
// past its size (rounded up to a block): what it reserved ahead.
func heldAhead(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range names {
		if !strings.HasSuffix(e.Name(), logSuffix) {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		blocks := (fi.Size() + 4095) / 4096 * 4096
		out[e.Name()] = fi.Sys().(*syscall.Stat_t).Blocks*512 - blocks
	}
	return out
}

// TestSegmentReservesAheadAndGivesBack: a segment written past
// preallocateFrom holds disk space past its end, and gives it back when
// its partition goes idle, at recovery after a crash, when it seals, and
// when its log closes; every record stays.
func TestSegmentReservesAheadAndGivesBack(t *testing.T) {
	o := DefaultOptions()
	o.SegmentBytes = 6 << 20
	dir := filepath.Join(t.TempDir(), "topic-0")
	cfg := Config{Dir: dir, Options: o}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	set := logBatch(100, 1000, 0) // about 100 KB
	appendSet := func() {
		t.Helper()
		if _, err := l.Append(bytes.Clone(set), 0); err != nil {
			t.Fatal(err)
		}
	}
	active := func() string { return segmentName(l.segs[len(l.segs)-1].base, logSuffix) }
	// writeUntilHeld writes until the active segment holds at least
	// preallocateFrom past its end, which it must within max bytes.
	writeUntilHeld := func(max int) {
		t.Helper()
		for w := 0; w < max; w += len(set) {
			appendSet()
			if heldAhead(t, dir)[active()] >= preallocateFrom {
				return
			}
		}
		t.Fatalf("written %d bytes, and %s holds %v past its end", max, active(), heldAhead(t, dir)[active()])
	}
	// A file may hold a few blocks more than its data: ext4 counts the
	// blocks of its extent tree, once it has more than four extents.
	const metadata = 64 << 10
	mustHoldNone := func(when string) {
		t.Helper()
		for name, got := range heldAhead(t, dir) {
			if got > metadata {
				t.Fatalf("%s: %s holds %d bytes past its end", when, name, got)
			}
		}
	}

	writeUntilHeld(3 << 20)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.ReleaseFiles()
	mustHoldNone("idle")

	writeUntilHeld(3 << 20)
	leo := l.LogEndOffset()
	l.Abandon() // as a crash leaves it: nothing given back
	if heldAhead(t, dir)[active()] < preallocateFrom {
		t.Fatal("the reservation did not outlive the log")
	}
	if l, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	mustHoldNone("recovered")
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("log end %d after recovery, want %d", got, leo)
	}

	for n, _ := l.Segments(); n == 1; n, _ = l.Segments() {
		appendSet()
	}
	mustHoldNone("rolled")
	writeUntilHeld(3 << 20)
	leo = l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mustHoldNone("closed")
	if l, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	if got := len(readLog(t, l.View(), 0)); int64(got*100) != leo {
		t.Fatalf("%d batches of 100 after a clean reopen, want %d", got, leo/100)
	}
}

// TestPreallocateFailureIsNoWriteFailure: when no space can be reserved
// (a full disk, a filesystem that cannot), writes go on and are
// acknowledged, and the reservation is tried again a chunk later, not at
// every write.
func TestPreallocateFailureIsNoWriteFailure(t *testing.T) {
	var tries atomic.Int64
	fsys := vfs.NewErrorFS(vfs.NewCrashableMem(), vfs.InjectorFunc(func(op vfs.Op, _ string) error {
		if op == vfs.OpAllocate {
			tries.Add(1)
			return syscall.ENOSPC
		}
		return nil
	}))
	tl := openTestLog(t, fsys, DefaultOptions())
	writes := 0
	for ; tl.LogEndOffset() < 400; writes++ { // 4 MB in writes of about 100 KB
		tl.append(10, 10_000)
	}
	if n := tries.Load(); n < 1 || n > 4 {
		t.Fatalf("%d reservations tried over %d writes, want 1 to 4", n, writes)
	}
	if got := len(readLog(t, tl.View(), 0)); got != writes {
		t.Fatalf("%d batches read back, want %d", got, writes)
	}
}

// TestFailedLogGivesNothingBack: after a write fails, the segment's size
// counts bytes that are not in the file; going idle must not extend the
// file to it (a truncate past the end writes zeros), and the next open
// reads every acknowledged record.
func TestFailedLogGivesNothingBack(t *testing.T) {
	toggle := vfs.NewToggle(vfs.OnOp(vfs.OpWrite, syscall.EIO))
	dir := filepath.Join(t.TempDir(), "topic-0")
	cfg := Config{FS: vfs.NewErrorFS(vfs.Default, toggle), Dir: dir, Options: DefaultOptions()}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	set := logBatch(100, 1000, 0)
	path := filepath.Join(dir, segmentName(0, logSuffix))
	for {
		if _, err := l.Append(bytes.Clone(set), 0); err != nil {
			t.Fatal(err)
		}
		if heldAhead(t, dir)[segmentName(0, logSuffix)] >= preallocateFrom {
			break
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	acked := l.LogEndOffset()
	toggle.On()
	if _, err := l.Append(bytes.Clone(set), 0); err == nil {
		t.Fatal("an append whose write failed succeeded")
	}
	l.ReleaseFiles()
	if after, err := os.Stat(path); err != nil || after.Size() != fi.Size() {
		t.Fatalf("the segment file went from %d bytes to %v (%v) after a failed write and ReleaseFiles", fi.Size(), after.Size(), err)
	}
	toggle.Off()
	l.Close()
	if l, err = Open(cfg); err != nil {
		t.Fatal(err)
	}
	if got := l.LogEndOffset(); got != acked {
		t.Fatalf("log end %d after reopening, want %d", got, acked)
	}
}
