package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countingFS counts the inner files open at once, as the descriptors a
// process holds, and can refuse opens beyond a limit with EMFILE.
type countingFS struct {
	FS
	open, peak atomic.Int64
	limit      int64 // 0: none
	// block, when set, makes ReadAt of files named by it wait for the
	// channel to close.
	block map[string]chan struct{}
}

func (c *countingFS) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	n := c.open.Add(1)
	if c.limit > 0 && n > c.limit {
		c.open.Add(-1)
		f.Close()
		return nil, &fs.PathError{Op: "open", Err: syscall.EMFILE}
	}
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &countedFile{File: f, fs: c}, nil
}

func (c *countingFS) Create(n string) (File, error)        { return c.wrap(c.FS.Create(n)) }
func (c *countingFS) Open(n string) (File, error)          { return c.wrap(c.FS.Open(n)) }
func (c *countingFS) OpenReadWrite(n string) (File, error) { return c.wrap(c.FS.OpenReadWrite(n)) }
func (c *countingFS) OpenDir(n string) (File, error)       { return c.wrap(c.FS.OpenDir(n)) }

type countedFile struct {
	File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countedFile) Close() error {
	if f.closed.Swap(true) {
		return fs.ErrClosed
	}
	f.fs.open.Add(-1)
	return f.File.Close()
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		return 0, errors.New("read of a closed inner file")
	}
	if ch := f.fs.block[f.Name()]; ch != nil {
		<-ch
	}
	return f.File.ReadAt(p, off)
}

func (f *countedFile) Name() string {
	fi, err := f.File.Stat()
	if err != nil {
		return ""
	}
	return fi.Name()
}

func newCounted(t *testing.T) *countingFS {
	t.Helper()
	m := NewCrashableMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	return &countingFS{FS: m}
}

func content(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100+i) }

// makeFiles writes n files through c and returns their handles.
func makeFiles(t *testing.T, c *Cache, n int) []File {
	t.Helper()
	var out []File
	for i := range n {
		f, err := c.Create(fmt.Sprintf("/d/%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(content(i), 0); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func TestCacheCapUnderConcurrentReaders(t *testing.T) {
	inner := newCounted(t)
	const limit, files, readers = 8, 50, 4
	c := NewCache(inner, limit)
	hs := makeFiles(t, c, files)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range 2000 {
				i := rng.IntN(files)
				want := content(i)
				got := make([]byte, len(want))
				if _, err := hs[i].ReadAt(got, 0); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, want) {
					t.Errorf("file %d: read other bytes", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := inner.peak.Load(); p > limit {
		t.Errorf("%d descriptors open at once, cap %d", p, limit)
	}
	st := c.Stats()
	if st.Open > limit || st.Evictions == 0 || st.Misses == 0 || st.Hits == 0 {
		t.Errorf("stats %+v", st)
	}
	for _, h := range hs {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := inner.open.Load(); n != 0 || c.Stats().Open != 0 {
		t.Errorf("after closing every handle: %d inner files open, stats %+v", n, c.Stats())
	}
}

func TestCacheNeverEvictsUnderAReader(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 2)
	hs := makeFiles(t, c, 1)
	release := make(chan struct{})
	inner.block = map[string]chan struct{}{"000": release}
	done := make(chan error)
	go func() {
		b := make([]byte, len(content(0)))
		_, err := hs[0].ReadAt(b, 0)
		if err == nil && !bytes.Equal(b, content(0)) {
			err = errors.New("read other bytes")
		}
		done <- err
	}()
	// Wait until the reader holds its reference.
	waitReferenced(c, hs[0])
	// Churn through more files than the cap while it reads.
	for i := 1; i < 20; i++ {
		f, err := c.Create(fmt.Sprintf("/d/x%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if !hasDescriptor(c, hs[0]) {
		t.Fatal("the descriptor under a reader was closed")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCacheReopenAfterEvictionReadsSameBytes(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 1)
	hs := makeFiles(t, c, 10) // each create evicts the one before
	if c.Stats().Evictions < 9 {
		t.Fatalf("stats %+v", c.Stats())
	}
	for i, h := range hs {
		got := make([]byte, len(content(i)))
		if _, err := h.ReadAt(got, 0); err != nil || !bytes.Equal(got, content(i)) {
			t.Fatalf("file %d: %v", i, err)
		}
		// Create truncated; a reopen must not.
		if fi, err := h.Stat(); err != nil || fi.Size() != int64(len(content(i))) {
			t.Fatalf("file %d: size %v, %v", i, fi.Size(), err)
		}
	}
}

func TestCacheFollowsRenames(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 1)
	hs := makeFiles(t, c, 2)
	if err := c.Rename("/d/000", "/d/000.deleted"); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll("/e", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename("/d", "/e/d"); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		got := make([]byte, len(content(i)))
		if _, err := h.ReadAt(got, 0); err != nil || !bytes.Equal(got, content(i)) {
			t.Fatalf("file %d after renames: %v", i, err)
		}
	}
}

func TestCacheRemovedFileKeepsItsDescriptor(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 2)
	hs := makeFiles(t, c, 2)
	if err := c.Remove("/d/001"); err != nil {
		t.Fatal(err)
	}
	// More files than the cap: the removed file's descriptor must stay.
	more := makeFiles(t, c, 0)
	for i := range 5 {
		f, err := c.Create(fmt.Sprintf("/d/y%d", i))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, f)
	}
	got := make([]byte, len(content(1)))
	if _, err := hs[1].ReadAt(got, 0); err != nil || !bytes.Equal(got, content(1)) {
		t.Fatalf("removed file: %v", err)
	}
	// A removed file whose descriptor was evicted cannot come back.
	if err := c.Remove("/d/000"); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(hs, more...) {
		f.Close()
	}
	if n := inner.open.Load(); n != 0 {
		t.Fatalf("%d inner files open after closing everything", n)
	}
}

func TestCachePinHoldsTheDescriptor(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 2)
	hs := makeFiles(t, c, 2)
	if ok, err := Pin(hs[0]); !ok || err != nil {
		t.Fatalf("pin: %v, %v", ok, err)
	}
	// Half the cap is pinned: a second pin is refused, the file works.
	if ok, err := Pin(hs[1]); ok || err != nil {
		t.Fatalf("second pin: %v, %v", ok, err)
	}
	others := makeFiles(t, c, 0)
	for i := range 10 {
		f, err := c.Create(fmt.Sprintf("/d/p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, f)
	}
	if !hasDescriptor(c, hs[0]) {
		t.Fatal("a pinned descriptor was evicted")
	}
	Unpin(hs[0])
	for i := range 3 {
		if _, err := others[i].Stat(); err != nil {
			t.Fatal(err)
		}
	}
	if hasDescriptor(c, hs[0]) {
		t.Fatal("an unpinned descriptor was kept beyond the cap")
	}
}

func TestCacheOutOfDescriptorsEvictsAndRetries(t *testing.T) {
	inner := newCounted(t)
	inner.limit = 6           // the process's limit
	c := NewCache(inner, 100) // a cap set too high
	hs := makeFiles(t, c, 20)
	for i, h := range hs {
		got := make([]byte, len(content(i)))
		if _, err := h.ReadAt(got, 0); err != nil || !bytes.Equal(got, content(i)) {
			t.Fatalf("file %d: %v", i, err)
		}
	}
	if p := inner.peak.Load(); p > 6 {
		t.Fatalf("peak %d", p)
	}
}

func TestCacheCloseUnderAReader(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 4)
	hs := makeFiles(t, c, 1)
	release := make(chan struct{})
	inner.block = map[string]chan struct{}{"000": release}
	done := make(chan error)
	go func() {
		b := make([]byte, 10)
		_, err := hs[0].ReadAt(b, 0)
		done <- err
	}()
	waitReferenced(c, hs[0])
	if err := hs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := hs[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the read in progress: %v", err)
	}
	if n := inner.open.Load(); n != 0 {
		t.Fatalf("%d inner files open after the last reader", n)
	}
}

func TestCacheOSFileOffersItsDescriptor(t *testing.T) {
	c := NewCache(Default, 1)
	dir := t.TempDir()
	f, err := c.Create(dir + "/a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	g, err := c.Create(dir + "/b") // evicts a
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sc, ok := f.(syscall.Conn)
	if !ok {
		t.Fatal("an OS file's handle has no SyscallConn")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	var n int
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		n, rerr = syscall.Pread(int(fd), buf, 0)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if rerr != nil || string(buf[:n]) != "hello" {
		t.Fatalf("pread through the borrowed descriptor: %q, %v", buf[:n], rerr)
	}
}

func hasDescriptor(c *Cache, f File) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f.(*cachedFile).f != nil
}

// waitReferenced returns once an operation on f holds its descriptor.
func waitReferenced(c *Cache, f File) {
	for {
		c.mu.Lock()
		refs := f.(*cachedFile).refs
		c.mu.Unlock()
		if refs > 0 {
			return
		}
		runtime.Gosched()
	}
}

// TestCacheWaitsForRoomAtTheCap: with every descriptor under a reader, an
// open waits until one is released instead of passing the cap.
func TestCacheWaitsForRoomAtTheCap(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 2)
	hs := makeFiles(t, c, 3)
	release := make(chan struct{})
	inner.block = map[string]chan struct{}{"000": release, "001": release}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := hs[i].ReadAt(make([]byte, 10), 0); err != nil {
				t.Error(err)
			}
		}()
		waitReferenced(c, hs[i])
	}
	third := make(chan error)
	go func() {
		_, err := hs[2].ReadAt(make([]byte, 10), 0)
		third <- err
	}()
	for {
		c.mu.Lock()
		w := c.waiting
		c.mu.Unlock()
		if w > 0 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if p := inner.peak.Load(); p > 2 {
		t.Fatalf("%d descriptors open at once, cap 2", p)
	}
}

// TestCacheCloseIdle: descriptors unused for the given time are closed, the
// rest kept, and a closed one reopens on its next use.
func TestCacheCloseIdle(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 100)
	hs := makeFiles(t, c, 3)
	if n := c.CloseIdle(time.Hour); n != 0 {
		t.Fatalf("closed %d descriptors used just now", n)
	}
	if n := c.CloseIdle(0); n != 3 || inner.open.Load() != 0 {
		t.Fatalf("closed %d, %d still open", n, inner.open.Load())
	}
	got := make([]byte, len(content(1)))
	if _, err := hs[1].ReadAt(got, 0); err != nil || !bytes.Equal(got, content(1)) {
		t.Fatalf("reopen: %v", err)
	}
}

// TestCacheReopenDoesNotRecreate: a file removed behind the cache's back
// while its descriptor was closed fails its next operation instead of
// coming back empty.
func TestCacheReopenDoesNotRecreate(t *testing.T) {
	inner := newCounted(t)
	c := NewCache(inner, 1)
	hs := makeFiles(t, c, 2) // the second evicts the first
	if err := inner.FS.Remove("/d/000"); err != nil {
		t.Fatal(err)
	}
	if _, err := hs[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a file removed behind the cache: %v", err)
	}
	if _, err := inner.FS.Stat("/d/000"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the file came back: %v", err)
	}
}

// TestCacheDirectoryIndex: the index of names by directory that renames
// and removals of directories walk follows nested renames, a removal and
// closes, and is empty once no handle is left.
func TestCacheDirectoryIndex(t *testing.T) {
	c := NewCache(NewCrashableMem(), 4)
	var hs []File
	for _, name := range []string{"/data/t-0/a", "/data/t-0/b", "/data/t-1/a", "/data/t-0/sub/c"} {
		if err := c.MkdirAll(path.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := c.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, f)
	}
	if err := c.Rename("/data/t-0", "/data/t-0.x-delete"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	got := c.underLocked("/data/t-0.x-delete")
	slices.Sort(got)
	stale := c.underLocked("/data/t-0")
	c.mu.Unlock()
	if want := []string{"/data/t-0.x-delete/a", "/data/t-0.x-delete/b", "/data/t-0.x-delete/sub/c"}; !slices.Equal(got, want) || len(stale) > 0 {
		t.Fatalf("after the rename: under the new name %v, want %v; under the old %v", got, want, stale)
	}
	if _, err := hs[3].Write([]byte("x")); err != nil {
		t.Fatalf("write through a renamed nested file: %v", err)
	}
	if err := c.RemoveAll("/data/t-0.x-delete"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	left := c.underLocked("/data")
	c.mu.Unlock()
	if !slices.Equal(left, []string{"/data/t-1/a"}) {
		t.Fatalf("after the removal: %v under /data, want only /data/t-1/a", left)
	}
	for _, h := range hs {
		h.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byPath) > 0 || len(c.dirs) > 0 {
		t.Fatalf("no handle left, yet the index holds %v and %v", c.byPath, c.dirs)
	}
}

// BenchmarkCacheRemoveDirAmongMany removes one partition directory of
// three files while the Cache tracks 30,000 others' files: its cost must
// not grow with them.
func BenchmarkCacheRemoveDirAmongMany(b *testing.B) {
	c := NewCache(NewCrashableMem(), 100000)
	for i := range 10000 {
		for _, f := range []string{"seg", "idx", "tix"} {
			name := fmt.Sprintf("/data/t-%d/%s", i, f)
			c.MkdirAll(path.Dir(name), 0o755)
			if _, err := c.Create(name); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		dir := fmt.Sprintf("/data/x-%d", i)
		c.MkdirAll(dir, 0o755)
		if _, err := c.Create(dir + "/seg"); err != nil {
			b.Fatal(err)
		}
		if err := c.Rename(dir, dir+"-delete"); err != nil {
			b.Fatal(err)
		}
		if err := c.RemoveAll(dir + "-delete"); err != nil {
			b.Fatal(err)
		}
	}
}
