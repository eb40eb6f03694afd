package vfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// syncDir opens dir and syncs it, making its entries durable.
func syncDir(t *testing.T, fsys FS, dir string) {
	t.Helper()
	d, err := fsys.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeSynced creates name with data, syncs it and closes it; the name is
// durable only once its directory is synced.
func writeSynced(t *testing.T, fsys FS, name, data string) {
	t.Helper()
	f := mustCreate(t, fsys, name, data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCrashClone checks what survives a crash: file data as of the file's
// last Sync, names as of their directory's last Sync.
func TestCrashClone(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, m *MemFS)
		// want maps names to their contents after the crash ("<missing>"
		// for a name that must be gone).
		want map[string]string
	}{{
		name: "synced data and entry survive",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abc")
			syncDir(t, m, "/")
		},
		want: map[string]string{"f": "abc"},
	}, {
		name: "unsynced data is lost",
		do: func(t *testing.T, m *MemFS) {
			f := mustCreate(t, m, "f", "abc")
			syncDir(t, m, "/")
			_, err := f.Write([]byte("def"))
			mustDo(t, err)
		},
		want: map[string]string{"f": ""},
	}, {
		name: "data written after a sync is lost",
		do: func(t *testing.T, m *MemFS) {
			f := mustCreate(t, m, "f", "abc")
			syncDir(t, m, "/")
			mustDo(t, f.Sync())
			_, err := f.Write([]byte("def"))
			mustDo(t, err)
			_, err = f.WriteAt([]byte("X"), 0)
			mustDo(t, err)
		},
		want: map[string]string{"f": "abc"},
	}, {
		name: "synced file in an unsynced directory is gone",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abc")
		},
		want: map[string]string{"f": "<missing>"},
	}, {
		name: "unsynced truncate is undone",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abcdef")
			syncDir(t, m, "/")
			f, err := m.OpenReadWrite("f")
			mustDo(t, err)
			mustDo(t, f.Truncate(2))
		},
		want: map[string]string{"f": "abcdef"},
	}, {
		name: "synced truncate is kept",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abcdef")
			syncDir(t, m, "/")
			f, err := m.OpenReadWrite("f")
			mustDo(t, err)
			mustDo(t, f.Truncate(2))
			_, err = f.WriteAt([]byte("Z"), 4)
			mustDo(t, err)
			mustDo(t, f.Sync())
		},
		want: map[string]string{"f": "ab\x00\x00Z"},
	}, {
		name: "unsynced Create over a synced file is undone",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abc")
			syncDir(t, m, "/")
			writeFile(t, m, "f", "x")
		},
		want: map[string]string{"f": "abc"},
	}, {
		name: "rename without directory sync is undone",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "cur", "old")
			writeSynced(t, m, "tmp", "new")
			syncDir(t, m, "/")
			mustDo(t, m.Rename("tmp", "cur"))
		},
		want: map[string]string{"cur": "old", "tmp": "new"},
	}, {
		name: "rename with directory sync is kept",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "cur", "old")
			writeSynced(t, m, "tmp", "new")
			syncDir(t, m, "/")
			mustDo(t, m.Rename("tmp", "cur"))
			syncDir(t, m, "/")
		},
		want: map[string]string{"cur": "new", "tmp": "<missing>"},
	}, {
		name: "rename of an unsynced new file: neither name survives",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "tmp", "new")
			mustDo(t, m.Rename("tmp", "cur"))
		},
		want: map[string]string{"cur": "<missing>", "tmp": "<missing>"},
	}, {
		name: "rename across directories is durable per directory",
		do: func(t *testing.T, m *MemFS) {
			mustDo(t, m.MkdirAll("a", 0o755))
			mustDo(t, m.MkdirAll("b", 0o755))
			syncDir(t, m, "/")
			writeSynced(t, m, "a/f", "abc")
			syncDir(t, m, "a")
			mustDo(t, m.Rename("a/f", "b/f"))
			syncDir(t, m, "b") // but not a: both names survive
		},
		want: map[string]string{"a/f": "abc", "b/f": "abc"},
	}, {
		name: "remove without directory sync is undone",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abc")
			syncDir(t, m, "/")
			mustDo(t, m.Remove("f"))
		},
		want: map[string]string{"f": "abc"},
	}, {
		name: "remove with directory sync is kept",
		do: func(t *testing.T, m *MemFS) {
			writeSynced(t, m, "f", "abc")
			syncDir(t, m, "/")
			mustDo(t, m.Remove("f"))
			syncDir(t, m, "/")
		},
		want: map[string]string{"f": "<missing>"},
	}, {
		name: "data synced through a handle after remove is kept if the remove is undone",
		do: func(t *testing.T, m *MemFS) {
			f := mustCreate(t, m, "f", "abc")
			mustDo(t, f.Sync())
			syncDir(t, m, "/")
			mustDo(t, m.Remove("f"))
			_, err := f.Write([]byte("def"))
			mustDo(t, err)
			mustDo(t, f.Sync())
		},
		want: map[string]string{"f": "abcdef"},
	}, {
		name: "new directory needs its parent synced, its entries need itself synced",
		do: func(t *testing.T, m *MemFS) {
			mustDo(t, m.MkdirAll("a/b", 0o755))
			syncDir(t, m, "/")
			syncDir(t, m, "a")
			writeSynced(t, m, "a/b/f", "abc")
			writeSynced(t, m, "a/g", "abc")
		},
		want: map[string]string{"a": "<dir>", "a/b": "<dir>", "a/b/f": "<missing>", "a/g": "<missing>"},
	}, {
		name: "new directory with unsynced parent is gone with its synced entries",
		do: func(t *testing.T, m *MemFS) {
			mustDo(t, m.MkdirAll("a", 0o755))
			writeSynced(t, m, "a/f", "abc")
			syncDir(t, m, "a")
		},
		want: map[string]string{"a": "<missing>"},
	}, {
		name: "RemoveAll without parent sync leaves the directory's durable entries",
		do: func(t *testing.T, m *MemFS) {
			mustDo(t, m.MkdirAll("a", 0o755))
			syncDir(t, m, "/")
			writeSynced(t, m, "a/f", "abc")
			syncDir(t, m, "a")
			writeSynced(t, m, "a/g", "abc")
			mustDo(t, m.RemoveAll("a"))
		},
		want: map[string]string{"a": "<dir>", "a/f": "abc", "a/g": "<missing>"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewCrashableMem()
			tc.do(t, m)
			before := m.String()
			c := m.CrashClone(CrashOptions{})
			for name, want := range tc.want {
				if got := describe(t, c, name); got != want {
					t.Errorf("%s after crash = %q, want %q\nbefore crash:\n%safter:\n%s", name, got, want, before, c)
				}
			}
		})
	}
}

// describe returns name's contents, "<dir>" or "<missing>".
func describe(t *testing.T, fsys FS, name string) string {
	t.Helper()
	fi, err := fsys.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	if fi.IsDir() {
		return "<dir>"
	}
	return readFile(t, fsys, name)
}

// TestCrashCloneIsDurableAndIndependent checks that a clone is a rebooted
// disk: everything in it is durable, and it shares nothing with the
// original.
func TestCrashCloneIsDurableAndIndependent(t *testing.T) {
	m := NewCrashableMem()
	mustDo(t, m.MkdirAll("d", 0o755))
	syncDir(t, m, "/")
	f := mustCreate(t, m, "d/f", "abc")
	mustDo(t, f.Sync())
	syncDir(t, m, "d")

	c := m.CrashClone(CrashOptions{})
	if again := c.CrashClone(CrashOptions{}); again.String() != c.String() {
		t.Fatalf("crashing a clone lost something:\n%s\nthen:\n%s", c, again)
	}
	// Changes to the original do not reach the clone, nor back.
	_, err := f.WriteAt([]byte("X"), 0)
	mustDo(t, err)
	mustDo(t, f.Sync())
	writeFile(t, c, "d/f", "clone")
	mustDo(t, c.Remove("d/f"))
	if got := readFile(t, m, "d/f"); got != "Xbc" {
		t.Fatalf("original = %q", got)
	}
	if got := m.CrashClone(CrashOptions{}); describe(t, got, "d/f") != "Xbc" {
		t.Fatalf("second crash of original:\n%s", got)
	}
}

// TestCrashCloneTornTail checks the torn-write option: a prefix of the
// unsynced tail survives, chosen by the seeded Rand alone.
func TestCrashCloneTornTail(t *testing.T) {
	const synced, tail = "synced|", "0123456789abcdefghij"
	m := NewCrashableMem()
	for i := range 4 {
		f := mustCreate(t, m, fmt.Sprintf("f%d", i), synced)
		mustDo(t, f.Sync())
		_, err := f.Write([]byte(tail))
		mustDo(t, err)
	}
	writeSynced(t, m, "clean", "clean") // nothing unsynced: never torn
	syncDir(t, m, "/")

	crash := func(seed uint64, keep, garble float64) map[string]string {
		c := m.CrashClone(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 0)), KeepUnsyncedProb: keep, GarbleProb: garble})
		got := map[string]string{}
		names, err := c.List("/")
		mustDo(t, err)
		for _, n := range names {
			got[n] = readFile(t, c, n)
		}
		return got
	}

	t.Run("never keep", func(t *testing.T) {
		for seed := range uint64(20) {
			for name, got := range crash(seed, 0, 0) {
				if name != "clean" && got != synced {
					t.Fatalf("seed %d: %s = %q, want exactly the synced bytes", seed, name, got)
				}
			}
		}
	})
	t.Run("keep prefixes", func(t *testing.T) {
		lengths := map[int]bool{}
		for seed := range uint64(20) {
			for name, got := range crash(seed, 1, -1) {
				if name == "clean" {
					if got != "clean" {
						t.Fatalf("clean file = %q", got)
					}
					continue
				}
				kept, ok := strings.CutPrefix(got, synced)
				if !ok || len(kept) == 0 || !strings.HasPrefix(tail, kept) {
					t.Fatalf("seed %d: %s = %q, want synced bytes and a non-empty prefix of the tail", seed, name, got)
				}
				lengths[len(kept)] = true
			}
		}
		if len(lengths) < 5 {
			t.Fatalf("kept tail lengths %v: not random", lengths)
		}
	})
	t.Run("deterministic", func(t *testing.T) {
		a, b := crash(7, 0.5, 0.5), crash(7, 0.5, 0.5)
		for name := range a {
			if a[name] != b[name] {
				t.Fatalf("same seed, different crash: %s = %q then %q", name, a[name], b[name])
			}
		}
	})
	t.Run("garble", func(t *testing.T) {
		for seed := range uint64(20) {
			for name, got := range crash(seed, 1, 1) {
				if name == "clean" {
					continue
				}
				kept, ok := strings.CutPrefix(got, synced)
				if !ok || len(kept) == 0 || len(kept) > len(tail) {
					t.Fatalf("seed %d: %s = %q: synced bytes changed or tail too long", seed, name, got)
				}
				diff := 0
				for i := range len(kept) {
					if kept[i] != tail[i] {
						diff++
					}
				}
				if diff < 1 || diff > 3 {
					t.Fatalf("seed %d: %s tail %q differs from %q in %d bytes, want 1 to 3", seed, name, kept, tail[:len(kept)], diff)
				}
			}
		}
	})
}

// TestCrashCloneUnsyncedOverwriteNotTorn checks that only appended bytes can
// survive unsynced: an overwrite below the synced length is always lost.
func TestCrashCloneUnsyncedOverwriteNotTorn(t *testing.T) {
	m := NewCrashableMem()
	f := mustCreate(t, m, "f", "abc")
	mustDo(t, f.Sync())
	syncDir(t, m, "/")
	_, err := f.WriteAt([]byte("XYZW"), 1) // "aXYZW": "XY" overwrites, "ZW" appends
	mustDo(t, err)
	for seed := range uint64(10) {
		c := m.CrashClone(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsyncedProb: 1, GarbleProb: -1})
		if got := readFile(t, c, "f"); got != "abcZ" && got != "abcZW" {
			t.Fatalf("seed %d: %q, want abcZ or abcZW", seed, got)
		}
	}
}

// TestMemHandleSurvivesRemove checks that a removed file's open handles can
// still write, sync and read, and that Create under the old name makes a new
// inode.
func TestMemHandleSurvivesRemove(t *testing.T) {
	m := NewCrashableMem()
	f := mustCreate(t, m, "f", "old")
	mustDo(t, m.Remove("f"))
	g := mustCreate(t, m, "f", "new")
	_, err := f.Write([]byte("er"))
	mustDo(t, err)
	mustDo(t, f.Sync())
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 0); n != 5 || err != nil || string(buf) != "older" {
		t.Fatalf("removed file: %d, %v, %q", n, err, buf)
	}
	if got := readFile(t, m, "f"); got != "new" {
		t.Fatalf("new file = %q", got)
	}
	mustDo(t, f.Close())
	mustDo(t, g.Close())
}

func TestMemPaths(t *testing.T) {
	m := NewCrashableMem()
	mustDo(t, m.MkdirAll("/a/b", 0o755))
	writeFile(t, m, "a/b/../b/./f", "x")
	for _, name := range []string{"/a/b/f", "a/b/f", "a//b/f", "/../a/b/f", "../a/b/f"} {
		if got := readFile(t, m, name); got != "x" {
			t.Errorf("%q = %q", name, got)
		}
	}
	for _, root := range []string{"", "/", ".", "/.."} {
		names, err := m.List(root)
		if err != nil || !slices.Equal(names, []string{"a"}) {
			t.Errorf("List(%q) = %q, %v", root, names, err)
		}
		fi, err := m.Stat(root)
		if err != nil || !fi.IsDir() || fi.Name() != "/" {
			t.Errorf("Stat(%q) = %v, %v", root, fi, err)
		}
	}
	if _, err := m.Create("a/b/f/g"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Create under a file: %v", err)
	}
	if _, err := m.OpenDir("a/b/f"); err == nil {
		t.Error("OpenDir of a file succeeded")
	}
	if err := m.Rename("a", "a/b/c"); err == nil {
		t.Error("Rename of a directory into itself succeeded")
	}
	if err := m.RemoveAll("/"); err == nil {
		t.Error("RemoveAll of the root succeeded")
	}
}

func TestMemString(t *testing.T) {
	m := NewCrashableMem()
	mustDo(t, m.MkdirAll("d", 0o755))
	f := mustCreate(t, m, "d/f", "abc")
	mustDo(t, f.Sync())
	_, err := f.Write([]byte("de"))
	mustDo(t, err)
	syncDir(t, m, "/")
	want := "/d/\n/d/f 5 bytes, 3 synced, dirty from 3 (not durable)\n"
	if got := m.String(); got != want {
		t.Fatalf("String =\n%s\nwant\n%s", got, want)
	}
}

// TestMemConcurrent runs readers, a writer, directory operations and crashes
// at once; run it with -race. Readers check every byte they read below the
// published length, as fetch handlers read below the high watermark.
func TestMemConcurrent(t *testing.T) {
	m := NewCrashableMem()
	mustDo(t, m.MkdirAll("log", 0o755))
	w := mustCreate(t, m, "log/seg", "")
	defer w.Close()

	const records, size = 2000, 16
	record := func(i int) []byte {
		b := make([]byte, size)
		binary.BigEndian.PutUint64(b, uint64(i))
		binary.BigEndian.PutUint64(b[8:], ^uint64(i))
		return b
	}
	var published atomic.Int64 // bytes safe to read
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	wg.Add(1)
	go func() { // the writer: WriteAt on odd records, Write on even ones
		defer wg.Done()
		for i := range records {
			var err error
			if i%2 == 0 {
				_, err = w.Write(record(i))
			} else {
				_, err = w.WriteAt(record(i), int64(i*size))
				if err == nil {
					// Keep Write's position in step with WriteAt's.
					_, err = w.Read(make([]byte, size))
				}
			}
			if err == nil && i%64 == 0 {
				err = w.Sync()
			}
			if err != nil {
				report(err)
				return
			}
			published.Store(int64((i + 1) * size))
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Open("log/seg")
			if err != nil {
				report(err)
				return
			}
			defer r.Close()
			buf := make([]byte, size)
			for read := 0; read < records; {
				if int64((read+1)*size) > published.Load() {
					runtime.Gosched() // wait for the writer, without a sleep
					continue
				}
				if _, err := r.ReadAt(buf, int64(read*size)); err != nil {
					report(err)
					return
				}
				if !bytes.Equal(buf, record(read)) {
					report(fmt.Errorf("record %d = %x", read, buf))
					return
				}
				read++
			}
		}()
	}
	wg.Add(1)
	go func() { // directory operations and crashes
		defer wg.Done()
		for i := range 200 {
			name := fmt.Sprintf("log/tmp%d", i%5)
			f, err := m.Create(name)
			if err == nil {
				_, err = f.Write([]byte("x"))
			}
			if err == nil {
				err = f.Close()
			}
			if err == nil {
				err = m.Rename(name, "log/cp")
			}
			if err == nil {
				_, err = m.List("log")
			}
			if err == nil {
				_, err = m.Stat("log/seg")
			}
			if err == nil && i%10 == 0 {
				var d File
				if d, err = m.OpenDir("log"); err == nil {
					err = d.Sync()
					d.Close()
				}
				m.CrashClone(CrashOptions{Rand: rand.New(rand.NewPCG(uint64(i), 0)), KeepUnsyncedProb: 0.5})
			}
			if err != nil {
				report(err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fi, err := m.Stat("log/seg")
	if err != nil || fi.Size() != records*size {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
}

// TestMemSyncCost checks that Sync copies only what changed, so a log synced
// after every append does not go quadratic: with a 1 MiB file, ten thousand
// syncs of 16-byte appends would copy 10 GB if Sync copied everything.
func TestMemSyncCost(t *testing.T) {
	m := NewCrashableMem()
	f := mustCreate(t, m, "f", strings.Repeat("x", 1<<20))
	mustDo(t, f.Sync())
	syncDir(t, m, "/")
	rec := make([]byte, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := f.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	})
	// Amortised growth of two slices allocates now and then; copying
	// everything would allocate on every run.
	if allocs > 0.1 {
		t.Fatalf("%.2f allocations per append+sync", allocs)
	}
	c := m.CrashClone(CrashOptions{})
	r, err := c.Open("f")
	mustDo(t, err)
	n, err := io.Copy(io.Discard, r)
	if err != nil || n != 1<<20+1001*16 {
		t.Fatalf("clone has %d bytes, %v", n, err)
	}
}

// TestMemFileSizeBound checks that a wild offset fails instead of exhausting
// memory.
func TestMemFileSizeBound(t *testing.T) {
	f := mustCreate(t, NewCrashableMem(), "f", "")
	defer f.Close()
	for _, off := range []int64{1 << 40, math.MaxInt64} {
		if _, err := f.WriteAt([]byte("x"), off); !errors.Is(err, syscall.EFBIG) {
			t.Errorf("WriteAt(%d): %v, want EFBIG", off, err)
		}
	}
	if err := f.Truncate(1 << 40); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("Truncate: %v, want EFBIG", err)
	}
}
