package vfs

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
)

// ErrInjected is the error an ErrorFS returns for an injected failure when
// the injector names no other.
var ErrInjected = errors.New("vfs: injected error")

// Op is a kind of filesystem operation, as an Injector sees it.
type Op int

// The operations an ErrorFS asks its Injector about. Close and Fd are never
// failed: a failing Close teaches a caller nothing that a failing Sync does
// not.
const (
	OpCreate   Op = iota // FS.Create
	OpOpen               // FS.Open, FS.OpenReadWrite (even when it creates), FS.OpenDir
	OpWrite              // File.Write, File.WriteAt
	OpSync               // File.Sync, of a file or a directory
	OpRename             // FS.Rename (the path is the old name)
	OpRemove             // FS.Remove, FS.RemoveAll
	OpTruncate           // File.Truncate
	OpMkdir              // FS.MkdirAll
	OpList               // FS.List
	OpStat               // FS.Stat, File.Stat
	OpRead               // File.Read, File.ReadAt
	OpAllocate           // Preallocate
)

var opNames = [...]string{"create", "open", "write", "sync", "rename", "remove", "truncate", "mkdir", "list", "stat", "read", "allocate"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Injector decides which operations of an ErrorFS fail. MaybeError is called
// before each operation with the op and the path (for File methods, the name
// the file was opened with); a nil result lets the operation through, an
// error fails it without reaching the inner FS. A ShortWrite result makes a
// Write or WriteAt write a prefix and then fail.
//
// MaybeError is called from every goroutine that uses the ErrorFS, so an
// Injector must be safe for concurrent use. All injectors in this package
// are.
type Injector interface {
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to an Injector. The function must be safe
// for concurrent use.
type InjectorFunc func(op Op, path string) error

// MaybeError calls f.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// ShortWrite, returned by an Injector for OpWrite, makes the write pass the
// first N bytes (at most all of them) to the inner file and then return N
// and Err, as a disk that fills up mid-write does. For other operations it
// is a plain error. It unwraps to Err, or to ErrInjected if Err is nil.
type ShortWrite struct {
	N   int
	Err error
}

func (s ShortWrite) Error() string {
	return fmt.Sprintf("vfs: short write of %d bytes: %v", s.N, s.Unwrap())
}

// Unwrap returns Err, or ErrInjected if Err is nil.
func (s ShortWrite) Unwrap() error {
	if s.Err == nil {
		return ErrInjected
	}
	return s.Err
}

// asShortWrite finds a ShortWrite in err, whether returned as a value or a
// pointer.
func asShortWrite(err error) (ShortWrite, bool) {
	var sw ShortWrite
	if errors.As(err, &sw) {
		return sw, true
	}
	var psw *ShortWrite
	if errors.As(err, &psw) && psw != nil {
		return *psw, true
	}
	return ShortWrite{}, false
}

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// OnOp returns an Injector that fails every operation of kind op with err
// (ErrInjected if nil).
func OnOp(op Op, err error) Injector {
	err = orInjected(err)
	return InjectorFunc(func(o Op, _ string) error {
		if o == op {
			return err
		}
		return nil
	})
}

// FailAfter returns an Injector that lets the first n operations of kind op
// through and fails every later one with err (ErrInjected if nil), as a disk
// that dies does: FailAfter(0, OpWrite, nil) fails all writes from the moment
// it is installed. Operations of other kinds are not counted.
func FailAfter(n int, op Op, err error) Injector {
	return &counter{op: op, n: int64(n), err: orInjected(err)}
}

// FailOnceAfter returns an Injector that lets the first n operations of kind
// op through, fails the next one with err (ErrInjected if nil), and lets all
// later ones through, as a transient error does: FailOnceAfter(0, OpSync,
// nil) fails the next sync only. Operations of other kinds are not counted.
func FailOnceAfter(n int, op Op, err error) Injector {
	return &counter{op: op, n: int64(n), once: true, err: orInjected(err)}
}

type counter struct {
	op   Op
	n    int64
	once bool
	err  error
	seen atomic.Int64 // operations of kind op so far
}

func (c *counter) MaybeError(op Op, _ string) error {
	if op != c.op {
		return nil
	}
	i := c.seen.Add(1) - 1 // this operation's index, from 0
	if i < c.n || (c.once && i > c.n) {
		return nil
	}
	return c.err
}

// Toggle is an Injector that consults its inner Injector only while on, so
// that a test can run a workload cleanly and then break the disk under it at
// a moment of its choosing. It starts off. While off, the inner Injector is
// not called at all, so a counting one (FailAfter, FailOnceAfter) counts
// from the moment the Toggle is switched on: NewToggle(FailOnceAfter(0,
// OpSync, nil)) fails the first sync after On.
//
// A Toggle is safe for concurrent use: On and Off may be called while other
// goroutines use the ErrorFS; an operation that is already past its check is
// not affected.
type Toggle struct {
	on    atomic.Bool
	inner Injector
}

// NewToggle returns a Toggle, off, wrapping inner. A nil inner fails every
// operation with ErrInjected while on.
func NewToggle(inner Injector) *Toggle {
	if inner == nil {
		inner = InjectorFunc(func(Op, string) error { return ErrInjected })
	}
	return &Toggle{inner: inner}
}

// On makes t consult its inner Injector.
func (t *Toggle) On() { t.on.Store(true) }

// Off makes t let every operation through.
func (t *Toggle) Off() { t.on.Store(false) }

// IsOn reports whether t is on.
func (t *Toggle) IsOn() bool { return t.on.Load() }

// MaybeError implements Injector.
func (t *Toggle) MaybeError(op Op, path string) error {
	if !t.on.Load() {
		return nil
	}
	return t.inner.MaybeError(op, path)
}

// NewErrorFS returns an FS that asks inject before each operation whether to
// fail it, and otherwise passes it to inner. A failed operation never
// reaches inner, so a failed Write writes nothing and a failed Sync syncs
// nothing (on a MemFS, a crash then loses the data, as the package contract
// warns); use ShortWrite for a write that lands partly. Injected errors are
// returned as the Injector returned them, not wrapped.
//
// The returned FS and its Files are as safe for concurrent use as inner's,
// given a concurrency-safe Injector. File.Fd passes through, so code that
// uses the descriptor directly (sendfile) bypasses injection.
func NewErrorFS(inner FS, inject Injector) FS {
	return &errorFS{inner: inner, inject: inject}
}

type errorFS struct {
	inner  FS
	inject Injector
}

func (e *errorFS) wrap(name string, f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	ef := &errorFile{inner: f, name: name, inject: e.inject}
	if _, ok := f.(syscall.Conn); ok {
		return errorConnFile{ef}, nil
	}
	return ef, nil
}

func (e *errorFS) Create(name string) (File, error) {
	if err := e.inject.MaybeError(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.inner.Create(name)
	return e.wrap(name, f, err)
}

func (e *errorFS) Open(name string) (File, error) {
	if err := e.inject.MaybeError(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.inner.Open(name)
	return e.wrap(name, f, err)
}

func (e *errorFS) OpenReadWrite(name string) (File, error) {
	if err := e.inject.MaybeError(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.inner.OpenReadWrite(name)
	return e.wrap(name, f, err)
}

func (e *errorFS) OpenDir(name string) (File, error) {
	if err := e.inject.MaybeError(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.inner.OpenDir(name)
	return e.wrap(name, f, err)
}

func (e *errorFS) Remove(name string) error {
	if err := e.inject.MaybeError(OpRemove, name); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

func (e *errorFS) RemoveAll(name string) error {
	if err := e.inject.MaybeError(OpRemove, name); err != nil {
		return err
	}
	return e.inner.RemoveAll(name)
}

func (e *errorFS) Rename(oldname, newname string) error {
	if err := e.inject.MaybeError(OpRename, oldname); err != nil {
		return err
	}
	return e.inner.Rename(oldname, newname)
}

func (e *errorFS) MkdirAll(dir string, perm FileMode) error {
	if err := e.inject.MaybeError(OpMkdir, dir); err != nil {
		return err
	}
	return e.inner.MkdirAll(dir, perm)
}

func (e *errorFS) List(dir string) ([]string, error) {
	if err := e.inject.MaybeError(OpList, dir); err != nil {
		return nil, err
	}
	return e.inner.List(dir)
}

func (e *errorFS) Stat(name string) (FileInfo, error) {
	if err := e.inject.MaybeError(OpStat, name); err != nil {
		return nil, err
	}
	return e.inner.Stat(name)
}

// errorFile is a File of an ErrorFS.
type errorFile struct {
	inner  File
	name   string
	inject Injector
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.inject.MaybeError(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inject.MaybeError(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

// shorten applies an injected write error to p: the prefix to write, and the
// error to return after writing it (nil if the write goes through whole).
func (f *errorFile) shorten(p []byte) ([]byte, error) {
	err := f.inject.MaybeError(OpWrite, f.name)
	if err == nil {
		return p, nil
	}
	sw, ok := asShortWrite(err)
	if !ok {
		return nil, err
	}
	return p[:max(0, min(sw.N, len(p)))], sw.Unwrap()
}

func (f *errorFile) Write(p []byte) (int, error) {
	prefix, injected := f.shorten(p)
	if injected == nil {
		return f.inner.Write(p)
	}
	if len(prefix) == 0 {
		return 0, injected
	}
	n, err := f.inner.Write(prefix)
	if err != nil {
		return n, err
	}
	return n, injected
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	prefix, injected := f.shorten(p)
	if injected == nil {
		return f.inner.WriteAt(p, off)
	}
	if len(prefix) == 0 {
		return 0, injected
	}
	n, err := f.inner.WriteAt(prefix, off)
	if err != nil {
		return n, err
	}
	return n, injected
}

// Close is never failed.
func (f *errorFile) Close() error { return f.inner.Close() }

func (f *errorFile) Sync() error {
	if err := f.inject.MaybeError(OpSync, f.name); err != nil {
		return err
	}
	return f.inner.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.inject.MaybeError(OpTruncate, f.name); err != nil {
		return err
	}
	return f.inner.Truncate(size)
}

// Preallocate asks the Injector (OpAllocate), then reserves space in the
// inner file (see the package's Preallocate).
func (f *errorFile) Preallocate(off, n int64) error {
	if err := f.inject.MaybeError(OpAllocate, f.name); err != nil {
		return err
	}
	return Preallocate(f.inner, off, n)
}

func (f *errorFile) Stat() (FileInfo, error) {
	if err := f.inject.MaybeError(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}

// Fd passes through, uninjected.
func (f *errorFile) Fd() uintptr { return f.inner.Fd() }

// errorConnFile is an errorFile whose inner file lends its descriptor
// (an *os.File): it lends it too, so that WritevAt and sendfile keep their
// one system call, asking the Injector first. A write through the
// descriptor fails whole or not at all: a ShortWrite is a plain error
// there.
type errorConnFile struct{ *errorFile }

// SyscallConn returns a RawConn that injects into Read (OpRead) and Write
// (OpWrite) before lending the descriptor; Control passes.
func (f errorConnFile) SyscallConn() (syscall.RawConn, error) {
	raw, err := f.inner.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil, err
	}
	return errorRawConn{raw, f.errorFile}, nil
}

type errorRawConn struct {
	raw syscall.RawConn
	f   *errorFile
}

func (r errorRawConn) Control(fn func(fd uintptr)) error { return r.raw.Control(fn) }

func (r errorRawConn) Read(fn func(fd uintptr) bool) error {
	if err := r.f.inject.MaybeError(OpRead, r.f.name); err != nil {
		return err
	}
	return r.raw.Read(fn)
}

func (r errorRawConn) Write(fn func(fd uintptr) bool) error {
	if err := r.f.inject.MaybeError(OpWrite, r.f.name); err != nil {
		if sw, ok := asShortWrite(err); ok {
			return sw.Unwrap()
		}
		return err
	}
	return r.raw.Write(fn)
}
