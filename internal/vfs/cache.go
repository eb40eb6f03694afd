package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cache is an FS whose files hold an operating-system descriptor only while
// they are in use or recently used, so that a node can keep far more files
// "open" than its descriptor limit allows (ten thousand partitions of three
// files per segment).
//
// Each File a Cache returns is a handle. Its descriptor (the inner FS's
// File) is opened on the first operation after it was closed, and every
// operation holds a reference to it for its duration; a descriptor nobody
// references sits in a least-recently-used list and is closed when the
// Cache holds its cap of descriptors and another must be opened. A
// descriptor is therefore never closed under a reader. Pin holds a
// reference across operations, for a file that should stay open (the
// segment being written); at most half the cap is pinned, so that pins
// never starve the operations.
//
// The cap holds: when every descriptor is referenced, an open waits until
// one is released (operations hold theirs for one call only). An open that
// fails with EMFILE or ENFILE anyway (sockets took the reserve) closes half
// of the unreferenced descriptors and tries once more.
//
// A handle reopens its file by name (without O_TRUNC, whatever opened it
// first), so the Cache follows Rename of files and of the directories that
// hold them. A file whose name is removed or renamed over while its handle
// has a descriptor keeps that descriptor until the handle is closed, as an
// open file keeps its inode on Linux; one whose descriptor was already
// closed fails its next operation with fs.ErrNotExist.
//
// Read and Write use a position kept by the handle, not the descriptor's.
// At most 64 Syncs run at once, each holding an OS thread.
//
// Concurrency: a Cache and its Files are safe for concurrent use, as the
// inner FS's are. Descriptors are opened and closed outside the Cache's
// lock; namespace changes (Rename, Remove, RemoveAll) exclude reopens, so a
// reopen never races a rename of the name it opens.
type Cache struct {
	inner FS
	max   int

	// ns is held for reading while a descriptor is opened by name and for
	// writing while names change.
	ns sync.RWMutex

	mu      sync.Mutex
	room    sync.Cond                       // signalled when a descriptor is closed or becomes idle
	waiting int                             // opens waiting on room
	open    int                             // descriptors held by handles
	pinned  int                             // pins held
	idle    list                            // handles with a descriptor and no reference, most recent first
	byPath  map[string]map[*cachedFile]bool // live handles by name
	// dirs indexes the names of byPath by directory: every name is listed
	// in its parent's set, and every directory of one in its own parent's,
	// so that a directory's rename or removal visits only what it holds
	// (with a name per file of a hundred thousand partitions, scanning
	// byPath for each deleted partition made deleting them quadratic).
	dirs map[string]map[string]bool

	// syncs bounds the fsyncs running at once: each blocks an OS thread,
	// and ten thousand partitions stopping together would otherwise ask
	// for ten thousand threads (Go's limit), to no gain, since the
	// filesystem's journal commits them in groups anyway.
	syncs chan struct{}

	hits, misses, evictions atomic.Int64
}

// maxSyncs is how many fsyncs a Cache runs at once.
const maxSyncs = 64

// CacheStats are a Cache's counters, for metrics.
type CacheStats struct {
	Open      int   // descriptors held now
	Max       int   // the cap
	Pinned    int   // pins held
	Handles   int   // names with live handles
	Hits      int64 // operations that found their descriptor open
	Misses    int64 // operations that had to open it again
	Evictions int64 // descriptors closed to make room
}

// NewCache returns a Cache over inner holding at most limit descriptors
// (at least 1).
func NewCache(inner FS, limit int) *Cache {
	c := &Cache{inner: inner, max: max(limit, 1), byPath: map[string]map[*cachedFile]bool{}, dirs: map[string]map[string]bool{}, syncs: make(chan struct{}, maxSyncs)}
	c.room.L = &c.mu
	return c
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Open: c.open, Max: c.max, Pinned: c.pinned, Handles: len(c.byPath),
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

// openMode is how a handle's descriptor is (re)opened.
type openMode uint8

const (
	modeRead openMode = iota
	modeReadWrite
	modeDir
)

// reopen opens a handle's file again. NB: a file opened for writing is
// looked up first, since OpenReadWrite creates a missing one: a segment
// removed behind the cache's back must fail its reads, not come back empty.
func (c *Cache) reopen(name string, m openMode) (File, error) {
	switch m {
	case modeRead:
		return c.inner.Open(name)
	case modeDir:
		return c.inner.OpenDir(name)
	}
	if _, err := c.inner.Stat(name); err != nil {
		return nil, err
	}
	return c.inner.OpenReadWrite(name)
}

// Create creates or truncates the named file; later reopens do not truncate.
func (c *Cache) Create(name string) (File, error) {
	return c.newHandle(name, modeReadWrite, c.inner.Create)
}

// Open opens the named file for reading.
func (c *Cache) Open(name string) (File, error) { return c.newHandle(name, modeRead, c.inner.Open) }

// OpenReadWrite opens the named file for reading and writing, creating it if
// it does not exist.
func (c *Cache) OpenReadWrite(name string) (File, error) {
	return c.newHandle(name, modeReadWrite, c.inner.OpenReadWrite)
}

// OpenDir opens a directory so that Sync makes its entries durable.
func (c *Cache) OpenDir(name string) (File, error) {
	return c.newHandle(name, modeDir, c.inner.OpenDir)
}

// newHandle opens name with open and returns a handle holding the
// descriptor, unreferenced.
func (c *Cache) newHandle(name string, m openMode, open func(string) (File, error)) (File, error) {
	name = filepath.Clean(name)
	c.ns.RLock()
	f, err := c.openRoom(func() (File, error) { return open(name) })
	if err != nil {
		c.ns.RUnlock()
		return nil, err
	}
	h := &cachedFile{c: c, name: name, mode: m, f: f, idleSince: time.Now()}
	c.mu.Lock()
	c.track(h)
	c.idle.pushFront(h)
	c.mu.Unlock()
	c.ns.RUnlock()
	c.misses.Add(1)
	if _, ok := f.(syscall.Conn); ok {
		return &cachedConnFile{h}, nil
	}
	return h, nil
}

// openRoom makes room for one more descriptor and opens it with open,
// counting it in c.open. On EMFILE or ENFILE it gives back half of the idle
// descriptors and tries once more.
func (c *Cache) openRoom(open func() (File, error)) (File, error) {
	c.mu.Lock()
	toClose := c.reserveLocked()
	c.mu.Unlock()
	closeAll(toClose)
	f, err := open()
	if err != nil && IsOutOfDescriptors(err) {
		c.mu.Lock()
		toClose = c.trimLocked(c.open - (c.idle.n+1)/2)
		c.mu.Unlock()
		closeAll(toClose)
		f, err = open()
	}
	if err != nil {
		c.mu.Lock()
		c.closedLocked()
		c.mu.Unlock()
		return nil, err
	}
	return f, nil
}

// reserveLocked counts one more descriptor, waiting until the cap allows it
// and taking idle descriptors to make room; it returns those to be closed
// outside the lock.
func (c *Cache) reserveLocked() []File {
	for c.open >= c.max && c.idle.n == 0 {
		c.waiting++
		c.room.Wait()
		c.waiting--
	}
	c.open++
	return c.trimLocked(c.max)
}

// closedLocked uncounts a descriptor closed (or never opened) and wakes an
// open waiting for room.
func (c *Cache) closedLocked() {
	c.open--
	if c.waiting > 0 {
		c.room.Signal()
	}
}

// CloseIdle closes the descriptors nobody has used for d, so that a node
// at rest holds few whatever its cap; the node calls it periodically.
func (c *Cache) CloseIdle(d time.Duration) int {
	cutoff := time.Now().Add(-d)
	var out []File
	c.mu.Lock()
	for c.idle.n > 0 && c.idle.back().idleSince.Before(cutoff) {
		out = append(out, c.takeIdleLocked())
	}
	if c.waiting > 0 {
		c.room.Signal()
	}
	c.mu.Unlock()
	closeAll(out)
	return len(out)
}

// takeIdleLocked takes the least recently used idle descriptor from its
// handle and uncounts it; the caller closes it outside the lock.
func (c *Cache) takeIdleLocked() File {
	h := c.idle.back()
	c.idle.remove(h)
	f := h.f
	h.f = nil
	c.open--
	return f
}

// trimLocked takes idle descriptors, least recently used first, until at
// most limit are held, and returns them to be closed outside the lock.
func (c *Cache) trimLocked(limit int) []File {
	var out []File
	for c.open > limit && c.idle.n > 0 {
		out = append(out, c.takeIdleLocked())
		c.evictions.Add(1)
	}
	if c.waiting > 0 && c.open < c.max {
		c.room.Signal()
	}
	return out
}

func closeAll(fs []File) {
	for _, f := range fs {
		_ = f.Close() // read-only use is over; a write's errors surfaced at its Sync
	}
}

func (c *Cache) track(h *cachedFile) {
	m := c.byPath[h.name]
	if m == nil {
		m = map[*cachedFile]bool{}
		c.byPath[h.name] = m
		c.indexLocked(h.name)
	}
	m[h] = true
}

// indexLocked lists name in dirs, with its directories.
func (c *Cache) indexLocked(name string) {
	for d := filepath.Dir(name); d != name; name, d = d, filepath.Dir(d) {
		s := c.dirs[d]
		if s == nil {
			s = map[string]bool{}
			c.dirs[d] = s
		}
		if s[name] {
			return
		}
		s[name] = true
	}
}

// forgetLocked takes name out of byPath and, unless it still holds
// names, out of dirs, with the directories it leaves empty.
func (c *Cache) forgetLocked(name string) {
	delete(c.byPath, name)
	for d := filepath.Dir(name); d != name; name, d = d, filepath.Dir(d) {
		if c.byPath[name] != nil || len(c.dirs[name]) > 0 {
			return
		}
		s := c.dirs[d]
		delete(s, name)
		if len(s) > 0 {
			return
		}
		delete(c.dirs, d)
	}
}

func (c *Cache) untrack(h *cachedFile) {
	if m := c.byPath[h.name]; m != nil {
		delete(m, h)
		if len(m) == 0 {
			c.forgetLocked(h.name)
		}
	}
}

// unlinkLocked detaches the handles of name from it: the ones with a
// descriptor keep it until closed.
func (c *Cache) unlinkLocked(name string) {
	for h := range c.byPath[name] {
		h.unlinked = true
		if h.f != nil && h.refs == 0 {
			c.idle.remove(h) // no longer evictable
		}
	}
	c.forgetLocked(name)
}

// underLocked returns the names with live handles inside directory dir,
// at any depth.
func (c *Cache) underLocked(dir string) []string {
	var out []string
	var walk func(string)
	walk = func(d string) {
		for name := range c.dirs[d] {
			if c.byPath[name] != nil {
				out = append(out, name)
			}
			walk(name)
		}
	}
	walk(dir)
	return out
}

// Rename renames oldname to newname; handles of oldname (or of files under
// it, when it is a directory) follow it, and handles of a file newname
// replaced keep their descriptors only.
func (c *Cache) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	c.ns.Lock()
	defer c.ns.Unlock()
	if err := c.inner.Rename(oldname, newname); err != nil {
		return err
	}
	isDir := false
	if fi, err := c.inner.Stat(newname); err == nil && fi.IsDir() {
		isDir = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unlinkLocked(newname)
	c.moveLocked(oldname, newname)
	if isDir {
		for _, p := range c.underLocked(oldname) {
			c.moveLocked(p, newname+p[len(oldname):])
		}
	}
	return nil
}

// moveLocked gives the handles of from the name to.
func (c *Cache) moveLocked(from, to string) {
	m := c.byPath[from]
	if m == nil {
		return
	}
	c.forgetLocked(from)
	for h := range m {
		h.name = to
		c.track(h)
	}
}

// Remove removes the named file or empty directory.
func (c *Cache) Remove(name string) error {
	name = filepath.Clean(name)
	c.ns.Lock()
	defer c.ns.Unlock()
	if err := c.inner.Remove(name); err != nil {
		return err
	}
	c.mu.Lock()
	c.unlinkLocked(name)
	c.mu.Unlock()
	return nil
}

// RemoveAll removes a path and everything it contains.
func (c *Cache) RemoveAll(name string) error {
	name = filepath.Clean(name)
	c.ns.Lock()
	defer c.ns.Unlock()
	err := c.inner.RemoveAll(name)
	c.mu.Lock()
	c.unlinkLocked(name)
	for _, p := range c.underLocked(name) {
		c.unlinkLocked(p)
	}
	c.mu.Unlock()
	return err
}

// MkdirAll creates a directory and any missing parents.
func (c *Cache) MkdirAll(dir string, perm FileMode) error { return c.inner.MkdirAll(dir, perm) }

// List returns the names of the entries of dir, sorted.
func (c *Cache) List(dir string) ([]string, error) {
	c.mu.Lock()
	toClose := c.reserveLocked() // reading a directory takes a descriptor for a moment
	c.mu.Unlock()
	closeAll(toClose)
	defer func() {
		c.mu.Lock()
		c.closedLocked()
		c.mu.Unlock()
	}()
	return c.inner.List(dir)
}

// Stat describes the named file.
func (c *Cache) Stat(name string) (FileInfo, error) { return c.inner.Stat(name) }

// cachedFile is a File of a Cache. Its fields below mu are guarded by the
// Cache's mu; opening serialises reopens of this handle.
type cachedFile struct {
	c    *Cache
	mode openMode

	opening sync.Mutex

	name       string
	f          File // nil while closed by the cache
	refs       int  // operations in progress, plus pins
	closed     bool // Close was called
	unlinked   bool // its name was removed or replaced: never evicted
	prev, next *cachedFile

	idleSince time.Time // when it last became unreferenced, for CloseIdle

	posMu sync.Mutex
	pos   int64 // for Read and Write
}

// acquire returns the handle's descriptor, opening it if needed, and holds
// a reference to it until release.
func (h *cachedFile) acquire() (File, error) {
	c := h.c
	c.mu.Lock()
	if f, ok, err := h.refLocked(); ok {
		c.mu.Unlock()
		if err == nil {
			c.hits.Add(1)
		}
		return f, err
	}
	c.mu.Unlock()

	h.opening.Lock()
	defer h.opening.Unlock()
	c.ns.RLock()
	defer c.ns.RUnlock()
	c.mu.Lock()
	if f, ok, err := h.refLocked(); ok { // another goroutine opened it meanwhile
		c.mu.Unlock()
		return f, err
	}
	name, unlinked := h.name, h.unlinked
	c.mu.Unlock()
	if unlinked {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := c.openRoom(func() (File, error) { return c.reopen(name, h.mode) })
	if err != nil {
		return nil, err
	}
	c.misses.Add(1)
	c.mu.Lock()
	if h.closed { // closed while it opened
		c.closedLocked()
		c.mu.Unlock()
		f.Close()
		return nil, fs.ErrClosed
	}
	h.f = f
	h.refs++
	c.mu.Unlock()
	return f, nil
}

// refLocked takes a reference when the handle has a descriptor (ok true),
// or says it is closed (ok true, an error).
func (h *cachedFile) refLocked() (File, bool, error) {
	switch {
	case h.closed:
		return nil, true, fs.ErrClosed
	case h.f == nil:
		return nil, false, nil
	}
	if h.refs == 0 && !h.unlinked {
		h.c.idle.remove(h)
	}
	h.refs++
	return h.f, true, nil
}

// release drops a reference taken by acquire.
func (h *cachedFile) release() {
	c := h.c
	var toClose []File
	c.mu.Lock()
	h.refs--
	if h.refs == 0 {
		switch {
		case h.closed:
			toClose = []File{h.f}
			h.f = nil
			c.closedLocked()
		case !h.unlinked:
			// (No trim: the cap holds, reserveLocked saw to it.)
			h.idleSince = time.Now()
			c.idle.pushFront(h)
			if c.waiting > 0 {
				c.room.Signal() // an open waiting for room may take it
			}
		}
	}
	c.mu.Unlock()
	closeAll(toClose)
}

// Pin opens the file if needed and keeps its descriptor open until Unpin,
// and reports true, unless half the cache's cap is pinned already: then it
// reports false and the file goes on working unpinned. Pins nest.
func (h *cachedFile) Pin() (bool, error) {
	c := h.c
	c.mu.Lock()
	if c.pinned >= c.max/2 {
		c.mu.Unlock()
		return false, nil
	}
	c.pinned++
	c.mu.Unlock()
	if _, err := h.acquire(); err != nil {
		c.mu.Lock()
		c.pinned--
		c.mu.Unlock()
		return false, err
	}
	return true, nil
}

// Unpin drops a pin Pin took (reported true).
func (h *cachedFile) Unpin() {
	c := h.c
	c.mu.Lock()
	c.pinned--
	c.mu.Unlock()
	h.release()
}

func (h *cachedFile) Close() error {
	c := h.c
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		return fs.ErrClosed
	}
	h.closed = true
	if !h.unlinked {
		c.untrack(h)
	}
	var f File
	if h.f != nil && h.refs == 0 {
		if !h.unlinked {
			c.idle.remove(h)
		}
		f, h.f = h.f, nil
		c.closedLocked()
	}
	c.mu.Unlock()
	if f != nil {
		return f.Close()
	}
	return nil // the last operation in progress closes it
}

func (h *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.ReadAt(p, off)
}

func (h *cachedFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.WriteAt(p, off)
}

func (h *cachedFile) Read(p []byte) (int, error) {
	h.posMu.Lock()
	defer h.posMu.Unlock()
	n, err := h.ReadAt(p, h.pos)
	h.pos += int64(n)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (h *cachedFile) Write(p []byte) (int, error) {
	h.posMu.Lock()
	defer h.posMu.Unlock()
	n, err := h.WriteAt(p, h.pos)
	h.pos += int64(n)
	return n, err
}

func (h *cachedFile) Sync() error {
	h.c.syncs <- struct{}{}
	defer func() { <-h.c.syncs }()
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Sync()
}

func (h *cachedFile) Truncate(size int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return f.Truncate(size)
}

// Preallocate reserves space in the file (see the package's Preallocate)
// with its descriptor held for the call.
func (h *cachedFile) Preallocate(off, n int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	return Preallocate(f, off, n)
}

func (h *cachedFile) Stat() (FileInfo, error) {
	f, err := h.acquire()
	if err != nil {
		return nil, err
	}
	defer h.release()
	return f.Stat()
}

// Fd returns NoFd: the descriptor may change between calls. Borrow it for
// a call through SyscallConn where the file offers one.
func (h *cachedFile) Fd() uintptr { return NoFd }

// cachedConnFile is a cachedFile whose inner file offers its descriptor
// through a syscall.RawConn (an *os.File): sendfile borrows it there.
type cachedConnFile struct{ *cachedFile }

// SyscallConn returns a RawConn whose Read, Write and Control hold the
// descriptor open for the duration of the callback.
func (h *cachedConnFile) SyscallConn() (syscall.RawConn, error) {
	return rawConn{h.cachedFile}, nil
}

type rawConn struct{ h *cachedFile }

func (r rawConn) with(fn func(syscall.RawConn) error) error {
	f, err := r.h.acquire()
	if err != nil {
		return err
	}
	defer r.h.release()
	sc, ok := f.(syscall.Conn)
	if !ok {
		return errors.ErrUnsupported
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return fn(raw)
}

func (r rawConn) Control(fn func(fd uintptr)) error {
	return r.with(func(raw syscall.RawConn) error { return raw.Control(fn) })
}

func (r rawConn) Read(fn func(fd uintptr) bool) error {
	return r.with(func(raw syscall.RawConn) error { return raw.Read(fn) })
}

func (r rawConn) Write(fn func(fd uintptr) bool) error {
	return r.with(func(raw syscall.RawConn) error { return raw.Write(fn) })
}

// Pin keeps f's descriptor open until Unpin when f is a Cache's file with
// pins to spare, and reports whether it did; other files' descriptors stay
// open anyway (it reports false and Unpin is not needed).
func Pin(f File) (bool, error) {
	if p, ok := f.(interface{ Pin() (bool, error) }); ok {
		return p.Pin()
	}
	return false, nil
}

// Unpin drops a pin taken by Pin (that reported true).
func Unpin(f File) {
	if p, ok := f.(interface{ Unpin() }); ok {
		p.Unpin()
	}
}

// IsOutOfDescriptors reports whether err says the process or the system
// has no descriptor left (EMFILE, ENFILE).
func IsOutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// list is an intrusive doubly linked list of handles.
type list struct {
	head, tail *cachedFile
	n          int
}

func (l *list) pushFront(h *cachedFile) {
	h.prev, h.next = nil, l.head
	if l.head != nil {
		l.head.prev = h
	} else {
		l.tail = h
	}
	l.head = h
	l.n++
}

func (l *list) remove(h *cachedFile) {
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		l.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		l.tail = h.prev
	}
	h.prev, h.next = nil, nil
	l.n--
}

func (l *list) back() *cachedFile { return l.tail }
