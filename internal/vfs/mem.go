package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory filesystem that remembers what a power loss would
// keep, so that tests can "crash" a store at any point (CrashClone) and run
// recovery on what survives. Make one with NewCrashableMem.
//
// Model. Every file and directory is an inode (a memNode); names in a
// directory point at inodes, so an open File keeps working after its name is
// removed or renamed, as on Linux. Each file has current contents and synced
// contents: File.Sync copies the first to the second. Each directory has live
// entries and durable entries: Create, Rename, Remove, RemoveAll and MkdirAll
// change the live entries at once; syncing the directory (OpenDir, then
// File.Sync) copies its live entries to its durable ones. CrashClone keeps
// only the durable entries, recursively from the root, and each surviving
// file's synced contents. A new directory made by MkdirAll survives when its
// parent is synced; its own entries survive when it is synced itself.
//
// This is stricter than ext4 in ordered mode, which often keeps more, and
// that is the point: code that passes against MemFS relies only on what
// POSIX promises after fsync.
//
// Names are cleaned with filepath.Clean; "", "." and "/" name the root, and a
// relative name is relative to the root (there is no working directory).
// Errors are *fs.PathError values holding the errno the OS would return, so
// errors.Is(err, fs.ErrNotExist) and friends work as with the OS.
//
// Concurrency: a MemFS and its Files are safe for concurrent use. Namespace
// operations serialise on one mutex; each file's contents have their own
// RWMutex, so any number of ReadAt calls run in parallel with each other and
// take turns with writers. CrashClone may run concurrently with everything
// and sees a consistent namespace; each file's contents are read atomically
// with respect to that file's writers.
type MemFS struct {
	// NB: lock order is MemFS.mu before memNode.mu.
	mu   sync.Mutex
	root *memNode
}

var _ FS = (*MemFS)(nil)

// NewCrashableMem returns an empty in-memory filesystem holding only its root
// directory.
func NewCrashableMem() *MemFS {
	return &MemFS{root: newDirNode(0o755)}
}

// CrashOptions says how much unsynced data CrashClone lets survive. The zero
// value keeps exactly the synced state.
type CrashOptions struct {
	// Rand, when set, draws the torn tails below. Seed it to make a crash
	// reproducible: CrashClone visits files in a fixed order.
	Rand *rand.Rand
	// KeepUnsyncedProb is, for each surviving file whose current contents
	// extend past its synced contents, the probability that a prefix of
	// random length (at least one byte) of the unsynced tail survives too,
	// as when the kernel had written back some of the dirty pages before
	// the power went. Ignored without Rand.
	KeepUnsyncedProb float64
	// GarbleProb is the probability that a kept tail also has one to three
	// of its bytes changed to other values, as a sector torn mid-write
	// leaves it, so that recovery meets checksum failures and not only short
	// files. Zero means 0.1; a negative value never garbles. Only bytes of
	// the kept tail are changed, never synced bytes. Ignored without Rand.
	GarbleProb float64
}

// defaultGarbleProb is CrashOptions.GarbleProb's default: rare enough that
// most torn tails are clean prefixes, common enough that a test crashing a
// few dozen times meets garbled ones.
const defaultGarbleProb = 0.1

// CrashClone returns a new, independent MemFS holding what would survive a
// power loss now: the durable entries of every directory reachable from the
// root through durable entries, and each surviving file's synced contents,
// plus torn tails as opts says. Everything in the clone is durable (as after
// a reboot). Open Files of m are not carried over. Two durable names for one
// inode (possible when a rename was made durable in only one of two
// directories) stay one inode in the clone.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := crasher{opts: opts, clones: make(map[*memNode]*memNode)}
	if c.opts.GarbleProb == 0 {
		c.opts.GarbleProb = defaultGarbleProb
	}
	return &MemFS{root: c.clone(m.root)}
}

type crasher struct {
	opts   CrashOptions
	clones map[*memNode]*memNode
}

// clone copies n as it would be found after the crash. The caller holds the
// source MemFS's mu, which guards directory entries.
func (c *crasher) clone(n *memNode) *memNode {
	if cn, ok := c.clones[n]; ok {
		return cn
	}
	if n.isDir {
		cn := newDirNode(n.perm)
		cn.modTime = n.modTime
		c.clones[n] = cn
		// NB: visit in name order so that a seeded Rand gives the same
		// crash every time.
		for _, name := range slices.Sorted(maps.Keys(n.durable)) {
			cn.children[name] = c.clone(n.durable[name])
		}
		cn.durable = maps.Clone(cn.children)
		return cn
	}
	n.mu.RLock()
	data := c.survivor(n)
	cn := &memNode{perm: n.perm, modTime: n.modTime}
	n.mu.RUnlock()
	cn.data = data
	cn.synced = slices.Clone(data)
	cn.dirtyFrom = len(data)
	c.clones[n] = cn
	return cn
}

// survivor returns a copy of the contents of file n after the crash. The
// caller holds n.mu for reading.
func (c *crasher) survivor(n *memNode) []byte {
	out := make([]byte, len(n.synced), max(len(n.synced), len(n.data)))
	copy(out, n.synced)
	r := c.opts.Rand
	if r == nil || len(n.data) <= len(n.synced) || r.Float64() >= c.opts.KeepUnsyncedProb {
		return out
	}
	// The unsynced tail is what lies past the synced length. Unsynced
	// overwrites below it are always lost: a torn write here models
	// appended pages reaching the disk in order, which is what a log meets.
	tail := n.data[len(n.synced):]
	keep := 1 + r.IntN(len(tail))
	start := len(out)
	out = append(out, tail[:keep]...)
	if c.opts.GarbleProb > 0 && r.Float64() < c.opts.GarbleProb {
		for range 1 + r.IntN(3) {
			// XOR with a non-zero byte so the byte always changes.
			out[start+r.IntN(keep)] ^= byte(1 + r.IntN(255))
		}
	}
	return out
}

// maxMemFileSize bounds a MemFS file (EFBIG past it), so that a bad offset
// in a test fails the write instead of exhausting memory.
const maxMemFileSize = 1 << 32

// memNode is an inode: a file or a directory.
type memNode struct {
	isDir bool
	perm  FileMode

	// Directory fields, guarded by MemFS.mu (modTime too, for directories).
	children map[string]*memNode // live entries
	durable  map[string]*memNode // entries as of the directory's last Sync

	// File fields, guarded by mu.
	mu      sync.RWMutex
	modTime time.Time
	data    []byte // current contents
	synced  []byte // contents as of the last Sync; never shares memory with data
	// dirtyFrom is the lowest offset at which data may differ from synced:
	// data[:dirtyFrom] == synced[:dirtyFrom], and dirtyFrom <= len(data),
	// len(synced). It lets Sync copy only what changed, so that a log synced
	// after every append costs linear time, not quadratic.
	dirtyFrom int
}

func newDirNode(perm FileMode) *memNode {
	return &memNode{
		isDir:    true,
		perm:     perm & fs.ModePerm,
		modTime:  time.Now(),
		children: make(map[string]*memNode),
		durable:  make(map[string]*memNode),
	}
}

func newFileNode() *memNode {
	return &memNode{perm: 0o644, modTime: time.Now()}
}

// resize sets the length of the file's data to size, zeroing new bytes. The
// caller holds n.mu.
func (n *memNode) resize(size int) {
	switch {
	case size <= len(n.data):
		n.data = n.data[:size]
	case size <= cap(n.data):
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:]) // bytes left over from an earlier shrink
	default:
		grown := make([]byte, size, max(size, 2*cap(n.data)))
		copy(grown, n.data)
		n.data = grown
	}
	n.dirtyFrom = min(n.dirtyFrom, size)
}

// writeAt writes p at off. The caller holds n.mu.
func (n *memNode) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	end := int(off) + len(p)
	if end > len(n.data) {
		n.resize(end)
	}
	copy(n.data[off:], p)
	n.dirtyFrom = min(n.dirtyFrom, int(off))
	n.modTime = time.Now()
}

// sync makes the file's current contents its synced contents. The caller
// holds n.mu.
func (n *memNode) sync() {
	n.synced = append(n.synced[:n.dirtyFrom], n.data[n.dirtyFrom:]...)
	n.dirtyFrom = len(n.data)
}

// info returns a snapshot of n's metadata. The caller holds MemFS.mu when n
// is a directory and must not hold n.mu.
func (n *memNode) info(name string) FileInfo {
	if n.isDir {
		return &memFileInfo{name: name, mode: fs.ModeDir | n.perm, modTime: n.modTime}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return &memFileInfo{name: name, size: int64(len(n.data)), mode: n.perm, modTime: n.modTime}
}

// memFileInfo is an immutable FileInfo, so that callers never race with
// later changes to the file.
type memFileInfo struct {
	name    string
	size    int64
	mode    FileMode
	modTime time.Time
}

func (i *memFileInfo) Name() string       { return i.name }
func (i *memFileInfo) Size() int64        { return i.size }
func (i *memFileInfo) Mode() FileMode     { return i.mode }
func (i *memFileInfo) ModTime() time.Time { return i.modTime }
func (i *memFileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memFileInfo) Sys() any           { return nil }

// splitPath cleans name and returns its elements; the root has none.
func splitPath(name string) []string {
	// Rooting before cleaning turns "", "." and leading ".." into "/".
	p := filepath.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// baseName is what Stat reports as the name of the file with elements parts.
func baseName(parts []string) string {
	if len(parts) == 0 {
		return "/"
	}
	return parts[len(parts)-1]
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// walkDir returns the directory with elements parts. The caller holds m.mu.
func (m *MemFS) walkDir(parts []string) (*memNode, error) {
	dir := m.root
	for _, p := range parts {
		c := dir.children[p]
		if c == nil {
			return nil, syscall.ENOENT
		}
		if !c.isDir {
			return nil, syscall.ENOTDIR
		}
		dir = c
	}
	return dir, nil
}

// lookup returns the node with elements parts. The caller holds m.mu.
func (m *MemFS) lookup(parts []string) (*memNode, error) {
	if len(parts) == 0 {
		return m.root, nil
	}
	dir, err := m.walkDir(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	n := dir.children[parts[len(parts)-1]]
	if n == nil {
		return nil, syscall.ENOENT
	}
	return n, nil
}

// Create creates or truncates the named file. Truncating an existing file
// changes its contents, not its inode: open Files see it, and it is undone
// by a crash unless the file is synced, as with O_TRUNC on Linux.
func (m *MemFS) Create(name string) (File, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.walkDir(parts[:len(parts)-1])
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	base := parts[len(parts)-1]
	n := dir.children[base]
	switch {
	case n == nil:
		n = newFileNode()
		dir.children[base] = n
		dir.modTime = time.Now()
	case n.isDir:
		return nil, pathErr("open", name, syscall.EISDIR)
	default:
		n.mu.Lock()
		n.resize(0)
		n.modTime = time.Now()
		n.mu.Unlock()
	}
	return &memFile{fs: m, n: n, name: name, base: base, writable: true}, nil
}

// Open opens the named file or directory for reading.
func (m *MemFS) Open(name string) (File, error) {
	return m.open("open", name, false)
}

// OpenReadWrite opens the named file for reading and writing, creating it if
// it does not exist.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	parts := splitPath(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(parts)
	if err == syscall.ENOENT && len(parts) > 0 {
		var dir *memNode
		if dir, err = m.walkDir(parts[:len(parts)-1]); err == nil {
			n = newFileNode()
			dir.children[parts[len(parts)-1]] = n
			dir.modTime = time.Now()
		}
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if n.isDir {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, base: baseName(parts), writable: true}, nil
}

// OpenDir opens the named directory so that File.Sync makes its entries
// durable. Unlike the OS, it refuses a file (ENOTDIR): syncing a file where
// a directory was meant is a bug a test should see.
func (m *MemFS) OpenDir(name string) (File, error) {
	return m.open("open", name, true)
}

func (m *MemFS) open(op, name string, mustBeDir bool) (File, error) {
	parts := splitPath(name)
	m.mu.Lock()
	n, err := m.lookup(parts)
	m.mu.Unlock()
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	if mustBeDir && !n.isDir {
		return nil, pathErr(op, name, syscall.ENOTDIR)
	}
	return &memFile{fs: m, n: n, name: name, base: baseName(parts)}, nil
}

// Remove removes the named file or empty directory from the live namespace.
// Open Files of it keep working; a crash brings the name back unless its
// directory was synced after the removal.
func (m *MemFS) Remove(name string) error {
	parts := splitPath(name)
	if len(parts) == 0 {
		return pathErr("remove", name, syscall.EBUSY)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.walkDir(parts[:len(parts)-1])
	if err != nil {
		return pathErr("remove", name, err)
	}
	base := parts[len(parts)-1]
	n := dir.children[base]
	if n == nil {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if n.isDir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	dir.modTime = time.Now()
	return nil
}

// RemoveAll removes name and everything under it from the live namespace. A
// missing name is not an error. As on the OS, it unlinks every entry of every
// removed directory, so a directory that a crash brings back holds only
// the entries it had durably.
func (m *MemFS) RemoveAll(name string) error {
	parts := splitPath(name)
	if len(parts) == 0 {
		return pathErr("RemoveAll", name, syscall.EINVAL)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.walkDir(parts[:len(parts)-1])
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return pathErr("RemoveAll", name, err)
	}
	base := parts[len(parts)-1]
	n := dir.children[base]
	if n == nil {
		return nil
	}
	unlinkAll(n)
	delete(dir.children, base)
	dir.modTime = time.Now()
	return nil
}

// unlinkAll empties the live entries of directory n and of every directory
// under it. The caller holds MemFS.mu.
func unlinkAll(n *memNode) {
	if !n.isDir {
		return
	}
	for _, c := range n.children {
		unlinkAll(c)
	}
	clear(n.children)
}

// Rename moves oldname to newname, replacing a file at newname, in the live
// namespace. Each of the two directories' change becomes durable when that
// directory is synced. As os.Rename on Unix, it refuses to replace a
// directory (EEXIST).
func (m *MemFS) Rename(oldname, newname string) error {
	oldParts, newParts := splitPath(oldname), splitPath(newname)
	// NB: the Path of a PathError with both names reads as os.LinkError's
	// message does, without reaching for the os package.
	fail := func(err error) error { return pathErr("rename", oldname+" "+newname, err) }
	if len(oldParts) == 0 {
		return fail(syscall.EBUSY)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	oldDir, err := m.walkDir(oldParts[:len(oldParts)-1])
	if err != nil {
		return fail(err)
	}
	oldBase := oldParts[len(oldParts)-1]
	n := oldDir.children[oldBase]
	if n == nil {
		return fail(syscall.ENOENT)
	}
	if len(newParts) == 0 {
		return fail(syscall.EEXIST) // the root exists and is a directory
	}
	newDir, err := m.walkDir(newParts[:len(newParts)-1])
	if err != nil {
		return fail(err)
	}
	newBase := newParts[len(newParts)-1]
	target := newDir.children[newBase]
	switch {
	case target == n:
		return nil // same inode: rename(2) does nothing
	case n.isDir && len(newParts) > len(oldParts) && slices.Equal(newParts[:len(oldParts)], oldParts):
		return fail(syscall.EINVAL) // into its own subtree
	case target != nil && target.isDir:
		return fail(syscall.EEXIST)
	case target != nil && n.isDir:
		return fail(syscall.ENOTDIR)
	}
	delete(oldDir.children, oldBase)
	newDir.children[newBase] = n
	now := time.Now()
	oldDir.modTime, newDir.modTime = now, now
	return nil
}

// MkdirAll creates dir and any missing parents. Each new directory becomes
// durable when its parent is synced.
func (m *MemFS) MkdirAll(dir string, perm FileMode) error {
	parts := splitPath(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range parts {
		c := n.children[p]
		if c == nil {
			c = newDirNode(perm)
			n.children[p] = c
			n.modTime = time.Now()
		} else if !c.isDir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// List returns the sorted names of dir's live entries.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(splitPath(dir))
	if err != nil {
		return nil, pathErr("open", dir, err)
	}
	if !n.isDir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes the named file or directory.
func (m *MemFS) Stat(name string) (FileInfo, error) {
	parts := splitPath(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(parts)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return n.info(baseName(parts)), nil
}

// String lists every live name with its size, its synced size and the offset
// from which its contents are not synced, and marks names that are not
// durable; it is for test failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	var walk func(n *memNode, path string)
	walk = func(n *memNode, path string) {
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			c := n.children[name]
			p := path + "/" + name
			mark := ""
			if n.durable[name] != c {
				mark = " (not durable)"
			}
			if c.isDir {
				fmt.Fprintf(&b, "%s/%s\n", p, mark)
				walk(c, p)
				continue
			}
			c.mu.RLock()
			dirty := ""
			if c.dirtyFrom != len(c.data) || len(c.data) != len(c.synced) {
				dirty = fmt.Sprintf(", dirty from %d", c.dirtyFrom)
			}
			fmt.Fprintf(&b, "%s %d bytes, %d synced%s%s\n", p, len(c.data), len(c.synced), dirty, mark)
			c.mu.RUnlock()
		}
	}
	walk(m.root, "")
	return b.String()
}

// memFile is an open File of a MemFS: an inode, a position and a mode.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string // as opened, for errors
	base     string // for Stat
	writable bool

	closed atomic.Bool
	posMu  sync.Mutex // guards pos; serialises Read and Write on this handle
	pos    int64
}

func (f *memFile) check(op string) error {
	if f.closed.Load() {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	return nil
}

// checkRead checks that f can be read (and is not a directory).
func (f *memFile) checkRead(op string) error {
	if err := f.check(op); err != nil {
		return err
	}
	if f.n.isDir {
		return pathErr(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *memFile) checkWrite(op string) error {
	if err := f.check(op); err != nil {
		return err
	}
	if !f.writable {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

// readAt copies from the file at off; it never returns io.EOF.
func (f *memFile) readAt(p []byte, off int64) int {
	f.n.mu.RLock()
	defer f.n.mu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0
	}
	return copy(p, f.n.data[off:])
}

func (f *memFile) Read(p []byte) (int, error) {
	if err := f.checkRead("read"); err != nil {
		return 0, err
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n := f.readAt(p, f.pos)
	f.pos += int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(p) bytes at off; like *os.File, fewer bytes come with
// io.EOF.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.checkRead("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	n := f.readAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.checkWrite("write"); err != nil {
		return 0, err
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	if f.pos+int64(len(p)) > maxMemFileSize {
		return 0, pathErr("write", f.name, syscall.EFBIG)
	}
	f.n.mu.Lock()
	f.n.writeAt(p, f.pos)
	f.n.mu.Unlock()
	f.pos += int64(len(p))
	return len(p), nil
}

// WriteAt writes p at off, extending the file with zeros if off is past its
// end.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.checkWrite("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("writeat", f.name, syscall.EINVAL)
	}
	if off > maxMemFileSize-int64(len(p)) { // NB: not off+len(p), which can overflow
		return 0, pathErr("write", f.name, syscall.EFBIG)
	}
	f.n.mu.Lock()
	f.n.writeAt(p, off)
	f.n.mu.Unlock()
	return len(p), nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	return nil
}

// Sync makes a file's contents, or a directory's entries, durable.
func (f *memFile) Sync() error {
	if err := f.check("sync"); err != nil {
		return err
	}
	if f.n.isDir {
		f.fs.mu.Lock()
		f.n.durable = maps.Clone(f.n.children)
		f.fs.mu.Unlock()
		return nil
	}
	f.n.mu.Lock()
	f.n.sync()
	f.n.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate"); err != nil {
		return err
	}
	if size > maxMemFileSize {
		return pathErr("truncate", f.name, syscall.EFBIG)
	}
	if !f.writable || f.n.isDir || size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.n.mu.Lock()
	f.n.resize(int(size))
	f.n.modTime = time.Now()
	f.n.mu.Unlock()
	return nil
}

func (f *memFile) Stat() (FileInfo, error) {
	if err := f.check("stat"); err != nil {
		return nil, err
	}
	if f.n.isDir {
		f.fs.mu.Lock()
		defer f.fs.mu.Unlock()
	}
	return f.n.info(f.base), nil
}

// Fd returns NoFd: a MemFS file has no descriptor.
func (f *memFile) Fd() uintptr { return NoFd }
