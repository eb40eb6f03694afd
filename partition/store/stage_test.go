package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

// randomSets returns n record sets of one to three batches of random sizes.
func randomSets(r *rand.Rand, n int, ts int64) [][]byte {
	sets := make([][]byte, n)
	for i := range sets {
		for range 1 + r.IntN(3) {
			sets[i] = append(sets[i], logBatch(1+r.IntN(8), r.IntN(400), ts)...)
		}
	}
	return sets
}

// dirFiles returns every file of a log's directory by name.
func dirFiles(t *testing.T, fsys vfs.FS, dir string) map[string][]byte {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		f, err := fsys.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, info.Size())
		if _, err := f.ReadAt(b, 0); err != nil && info.Size() > 0 {
			t.Fatal(err)
		}
		f.Close()
		out[n] = b
	}
	return out
}

// TestStageDifferential: record sets staged in groups and written with
// WriteStaged leave the same results and the same files (segments,
// indexes, checkpoints) as the same sets appended one by one, across
// segment rolls for size, for full indexes and with LogAppendTime.
func TestStageDifferential(t *testing.T) {
	small := testOptions()
	small.SegmentIndexBytes = 4 * timeEntrySize // rolls when the indexes fill
	small.IndexIntervalBytes = 0                // an entry for every batch
	appendTime := testOptions()
	appendTime.LogAppendTime = true
	for name, o := range map[string]Options{"sizes": testOptions(), "indexes": small, "appendtime": appendTime} {
		for seed := range uint64(5) {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 1))
				one := openTestLog(t, vfs.NewCrashableMem(), o)
				grouped := openTestLog(t, vfs.NewCrashableMem(), o)
				ts := one.clock.Now().UnixMilli()
				sets := randomSets(r, 200, ts)
				for len(sets) > 0 {
					k := min(len(sets), 1+r.IntN(8))
					for _, set := range sets[:k] {
						want, err := one.Append(bytes.Clone(set), 3)
						if err != nil {
							t.Fatal(err)
						}
						got, err := grouped.Stage(bytes.Clone(set), 3)
						if err != nil {
							t.Fatal(err)
						}
						if got != want {
							t.Fatalf("staged %+v, appended %+v", got, want)
						}
					}
					if err := grouped.WriteStaged(); err != nil {
						t.Fatal(err)
					}
					if g, w := grouped.LogEndOffset(), one.LogEndOffset(); g != w {
						t.Fatalf("log end %d after WriteStaged, %d after appends", g, w)
					}
					sets = sets[k:]
				}
				if n, _ := one.Segments(); n < 3 {
					t.Fatalf("%d segments: the test wants rolls", n)
				}
				if err := one.Close(); err != nil {
					t.Fatal(err)
				}
				if err := grouped.Close(); err != nil {
					t.Fatal(err)
				}
				want, got := dirFiles(t, one.fs, one.dir), dirFiles(t, grouped.fs, grouped.dir)
				for _, n := range slices.Sorted(maps.Keys(want)) {
					if !bytes.Equal(got[n], want[n]) {
						t.Errorf("%s differs: %d bytes staged, %d appended", n, len(got[n]), len(want[n]))
					}
				}
				if len(got) != len(want) {
					t.Errorf("files %d staged, %d appended", len(got), len(want))
				}
			})
		}
	}
}

// writeCountingFS counts, for segment files, the vectored writes (one
// RawConn.Write each, passed through to the OS file) and the plain
// WriteAt calls.
type writeCountingFS struct {
	vfs.FS
	vectored, plain *atomic.Int64
}

func (c writeCountingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(name, f, err)
}

func (c writeCountingFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(name, f, err)
}

func (c writeCountingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return writeCountingFile{File: f, fs: c}, nil
}

type writeCountingFile struct {
	vfs.File
	fs writeCountingFS
}

func (f writeCountingFile) SyscallConn() (syscall.RawConn, error) {
	raw, err := f.File.(syscall.Conn).SyscallConn()
	return writeCountingConn{raw, f.fs.vectored}, err
}

type writeCountingConn struct {
	syscall.RawConn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(fn func(fd uintptr) bool) error {
	c.writes.Add(1)
	return c.RawConn.Write(fn)
}

func (f writeCountingFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.plain.Add(1)
	return f.File.WriteAt(p, off)
}

// TestWriteStagedOneWritePerSegment: the staged sets reach an OS file with
// one vectored write per segment they land in, and not before WriteStaged.
func TestWriteStagedOneWritePerSegment(t *testing.T) {
	var vectored, plain atomic.Int64
	fsys := writeCountingFS{FS: vfs.Default, vectored: &vectored, plain: &plain}
	o := testOptions()
	o.SegmentBytes = 64 << 10
	l, err := Open(Config{FS: fsys, Dir: filepath.Join(t.TempDir(), "topic-0"), Options: o})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stage := func(n int) {
		t.Helper()
		for range n {
			if _, err := l.Stage(logBatch(4, 1000, 0), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	stage(10) // about 40 KiB: one segment
	if vectored.Load() != 0 || l.LogEndOffset() != 0 || l.View().LogEndOffset != 0 {
		t.Fatalf("staging wrote (%d writes) or moved the log end (%d)", vectored.Load(), l.LogEndOffset())
	}
	if err := l.WriteStaged(); err != nil {
		t.Fatal(err)
	}
	if vectored.Load() != 1 || l.LogEndOffset() != 40 {
		t.Fatalf("%d vectored writes, log end %d; want 1 and 40", vectored.Load(), l.LogEndOffset())
	}
	stage(10) // past the 64 KiB segment: a roll in between
	if err := l.WriteStaged(); err != nil {
		t.Fatal(err)
	}
	if n, _ := l.Segments(); vectored.Load() != 3 || n != 2 {
		t.Fatalf("%d vectored writes in all, %d segments; want 3 and 2", vectored.Load(), n)
	}
	if plain.Load() != 0 {
		t.Fatalf("%d plain writes of segment data, want none", plain.Load())
	}
	if err := l.Sync(); err != nil || l.DurableOffset() != 80 {
		t.Fatalf("sync: %v, durable %d; want 80", err, l.DurableOffset())
	}
}

// TestWriteStagedBoundsWrites: a vectored write takes record sets up to
// maxWriteBytes; a larger set goes alone.
func TestWriteStagedBoundsWrites(t *testing.T) {
	var vectored, plain atomic.Int64
	fsys := writeCountingFS{FS: vfs.Default, vectored: &vectored, plain: &plain}
	l, err := Open(Config{FS: fsys, Dir: filepath.Join(t.TempDir(), "topic-0"), Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	set := logBatch(100, 4000, 0) // about 400 KB
	for _, sets := range [][][]byte{
		{set, set, set, set, set}, // 2 MB: 2 + 2 + 1
		{logBatch(300, 4000, 0), set},
	} {
		for _, s := range sets {
			if _, err := l.Stage(bytes.Clone(s), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.WriteStaged(); err != nil {
			t.Fatal(err)
		}
	}
	if vectored.Load() != 5 {
		t.Fatalf("%d vectored writes, want 5", vectored.Load())
	}
}

// TestStagedNotInLog: until WriteStaged, staged sets are not synced, not
// read, and gone after Close; truncating under them is a bug.
func TestStagedNotInLog(t *testing.T) {
	tl := openTestLog(t, vfs.NewCrashableMem(), testOptions())
	tl.append(2, 10)
	if err := tl.Sync(); err != nil {
		t.Fatal(err)
	}
	if res, err := tl.Stage(logBatch(3, 10, 0), 0); err != nil || res.BaseOffset != 2 || res.LastOffset != 4 {
		t.Fatalf("Stage = %+v, %v; want offsets 2 to 4", res, err)
	}
	if err := tl.Sync(); err != nil || tl.DurableOffset() != 2 {
		t.Fatalf("sync with a set staged: %v, durable %d; want 2", err, tl.DurableOffset())
	}
	if hs := readLog(t, tl.View(), 0); len(hs) != 1 {
		t.Fatalf("read %d batches, want the one written", len(hs))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Truncate with a set staged did not panic")
			}
		}()
		tl.Truncate(1)
	}()
	tl.reopen()
	if leo := tl.LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d after reopening, want 2: the staged set was written", leo)
	}
	if err := tl.WriteStaged(); err != nil {
		t.Fatalf("WriteStaged with nothing staged: %v", err)
	}
}

// TestWriteStagedFailure: a failed write fails the log and drops what was
// staged.
func TestWriteStagedFailure(t *testing.T) {
	var fail atomic.Bool
	fsys := vfs.NewErrorFS(vfs.NewCrashableMem(), vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if fail.Load() && op == vfs.OpWrite && strings.HasSuffix(path, logSuffix) {
			return vfs.ShortWrite{N: 7}
		}
		return nil
	}))
	tl := openTestLog(t, fsys, testOptions())
	tl.append(2, 10)
	for range 3 {
		if _, err := tl.Stage(logBatch(1, 10, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	fail.Store(true)
	if err := tl.WriteStaged(); !errors.Is(err, ErrFailed) {
		t.Fatalf("WriteStaged = %v, want ErrFailed", err)
	}
	if leo := tl.LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d, want 2", leo)
	}
	if _, err := tl.Stage(logBatch(1, 10, 0), 0); !errors.Is(err, ErrFailed) {
		t.Fatalf("Stage after the failure = %v, want ErrFailed", err)
	}
	fail.Store(false)
	if err := tl.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close = %v, want the failure", err)
	}
	l, err := Open(tl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tl.Log = l
	if leo := tl.LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d after recovery, want 2", leo)
	}
}
