package vfs

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestErrorFSOps checks, for every operation, that it asks the injector with
// the right Op and path, fails with the injected error, and goes through
// when only other ops are failed.
func TestErrorFSOps(t *testing.T) {
	type handles struct{ f, d File }
	for _, tc := range []struct {
		name string
		op   Op
		path string
		run  func(e FS, h handles) error
	}{
		{"Create", OpCreate, "d/new", func(e FS, _ handles) error { _, err := e.Create("d/new"); return err }},
		{"Open", OpOpen, "d/f", func(e FS, _ handles) error { _, err := e.Open("d/f"); return err }},
		{"OpenReadWrite", OpOpen, "d/f", func(e FS, _ handles) error { _, err := e.OpenReadWrite("d/f"); return err }},
		{"OpenDir", OpOpen, "d", func(e FS, _ handles) error { _, err := e.OpenDir("d"); return err }},
		{"Write", OpWrite, "d/f", func(_ FS, h handles) error { _, err := h.f.Write([]byte("x")); return err }},
		{"WriteAt", OpWrite, "d/f", func(_ FS, h handles) error { _, err := h.f.WriteAt([]byte("x"), 9); return err }},
		{"Sync", OpSync, "d/f", func(_ FS, h handles) error { return h.f.Sync() }},
		{"Sync dir", OpSync, "d", func(_ FS, h handles) error { return h.d.Sync() }},
		{"Rename", OpRename, "d/f", func(e FS, _ handles) error { return e.Rename("d/f", "d/g") }},
		{"Remove", OpRemove, "d/f", func(e FS, _ handles) error { return e.Remove("d/f") }},
		{"RemoveAll", OpRemove, "d", func(e FS, _ handles) error { return e.RemoveAll("d") }},
		{"Truncate", OpTruncate, "d/f", func(_ FS, h handles) error { return h.f.Truncate(1) }},
		{"MkdirAll", OpMkdir, "x/y", func(e FS, _ handles) error { return e.MkdirAll("x/y", 0o755) }},
		{"List", OpList, "d", func(e FS, _ handles) error { _, err := e.List("d"); return err }},
		{"Stat", OpStat, "d/f", func(e FS, _ handles) error { _, err := e.Stat("d/f"); return err }},
		{"File.Stat", OpStat, "d/f", func(_ FS, h handles) error { _, err := h.f.Stat(); return err }},
		{"Read", OpRead, "d/f", func(_ FS, h handles) error { _, err := h.f.Read(make([]byte, 1)); return err }},
		{"ReadAt", OpRead, "d/f", func(_ FS, h handles) error { _, err := h.f.ReadAt(make([]byte, 1), 0); return err }},
		{"Preallocate", OpAllocate, "d/f", func(_ FS, h handles) error { return Preallocate(h.f, 0, 4096) }},
	} {
		// setup makes d/f and opens it and d through an ErrorFS whose
		// injector is off until setup returns.
		setup := func(t *testing.T, inject func(op Op, path string) error) (FS, handles) {
			mem := NewCrashableMem()
			mustDo(t, mem.MkdirAll("d", 0o755))
			writeFile(t, mem, "d/f", "abc")
			toggle := NewToggle(InjectorFunc(inject))
			e := NewErrorFS(mem, toggle)
			f, err := e.OpenReadWrite("d/f")
			mustDo(t, err)
			d, err := e.OpenDir("d")
			mustDo(t, err)
			t.Cleanup(func() { f.Close(); d.Close() })
			toggle.On()
			return e, handles{f, d}
		}
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			e, h := setup(t, func(op Op, path string) error {
				asked = append(asked, fmt.Sprintf("%v %s", op, path))
				if op == tc.op {
					return ErrInjected
				}
				return nil
			})
			if err := tc.run(e, h); !errors.Is(err, ErrInjected) {
				t.Fatalf("with %v failed: %v, want ErrInjected", tc.op, err)
			}
			if want := fmt.Sprintf("%v %s", tc.op, tc.path); len(asked) != 1 || asked[0] != want {
				t.Fatalf("injector asked %q, want [%s]", asked, want)
			}

			e, h = setup(t, func(op Op, _ string) error {
				if op != tc.op {
					return ErrInjected
				}
				return nil
			})
			if err := tc.run(e, h); err != nil {
				t.Fatalf("with all but %v failed: %v", tc.op, err)
			}
		})
	}
}

func TestErrorFSFailedWriteWritesNothing(t *testing.T) {
	mem := NewCrashableMem()
	e := NewErrorFS(mem, OnOp(OpWrite, nil))
	f, err := e.Create("f")
	mustDo(t, err)
	defer f.Close()
	if n, err := f.Write([]byte("abc")); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := f.WriteAt([]byte("abc"), 0); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if got := readFile(t, mem, "f"); got != "" {
		t.Fatalf("inner file = %q, want empty", got)
	}
}

// TestErrorFSFailedSyncLosesData checks the package contract's warning: a
// failed Sync made nothing durable, and a crash shows it.
func TestErrorFSFailedSyncLosesData(t *testing.T) {
	mem := NewCrashableMem()
	e := NewErrorFS(mem, FailOnceAfter(1, OpSync, nil))
	f, err := e.Create("f")
	mustDo(t, err)
	defer f.Close()
	_, err = f.Write([]byte("abc"))
	mustDo(t, err)
	syncDir(t, e, "/") // the first sync goes through
	_, err = f.Write([]byte("def"))
	mustDo(t, err)
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Sync: %v, want ErrInjected", err)
	}
	if got := readFile(t, mem.CrashClone(CrashOptions{}), "f"); got != "" {
		t.Fatalf("after crash: %q, want empty", got)
	}
}

func TestErrorFSShortWrite(t *testing.T) {
	errFull := errors.New("disk full")
	for _, tc := range []struct {
		name    string
		inject  error
		n       int
		want    string
		wantErr error
	}{
		{"value", ShortWrite{N: 2, Err: errFull}, 2, "ab", errFull},
		{"pointer", &ShortWrite{N: 1}, 1, "a", ErrInjected},
		{"wrapped", fmt.Errorf("ctx: %w", ShortWrite{N: 2}), 2, "ab", ErrInjected},
		{"zero", ShortWrite{}, 0, "", ErrInjected},
		{"negative", ShortWrite{N: -1}, 0, "", ErrInjected},
		{"longer than the write", ShortWrite{N: 10}, 4, "abcd", ErrInjected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, at := range []bool{false, true} {
				mem := NewCrashableMem()
				toggle := NewToggle(OnOp(OpWrite, tc.inject))
				e := NewErrorFS(mem, toggle)
				f, err := e.Create("f")
				mustDo(t, err)
				_, err = f.Write([]byte("__"))
				mustDo(t, err)
				toggle.On()
				var n int
				if at {
					n, err = f.WriteAt([]byte("abcd"), 2)
				} else {
					n, err = f.Write([]byte("abcd"))
				}
				if n != tc.n || !errors.Is(err, tc.wantErr) {
					t.Fatalf("WriteAt %v: %d, %v; want %d, %v", at, n, err, tc.n, tc.wantErr)
				}
				if got := readFile(t, mem, "f"); got != "__"+tc.want {
					t.Fatalf("WriteAt %v: file %q, want %q", at, got, "__"+tc.want)
				}
				f.Close()
			}
		})
	}
	// For other ops a ShortWrite is a plain error.
	e := NewErrorFS(NewCrashableMem(), OnOp(OpMkdir, ShortWrite{N: 3}))
	if err := e.MkdirAll("d", 0o755); !errors.Is(err, ErrInjected) {
		t.Fatalf("MkdirAll: %v", err)
	}
}

func TestCountingInjectors(t *testing.T) {
	run := func(inject Injector) string {
		var out []byte
		for range 5 {
			inject.MaybeError(OpRead, "f") // other ops are not counted
			if inject.MaybeError(OpSync, "f") != nil {
				out = append(out, 'x')
			} else {
				out = append(out, '.')
			}
		}
		return string(out)
	}
	for _, tc := range []struct {
		name   string
		inject Injector
		want   string
	}{
		{"FailAfter(0)", FailAfter(0, OpSync, nil), "xxxxx"},
		{"FailAfter(2)", FailAfter(2, OpSync, nil), "..xxx"},
		{"FailOnceAfter(0)", FailOnceAfter(0, OpSync, nil), "x...."},
		{"FailOnceAfter(3)", FailOnceAfter(3, OpSync, nil), "...x."},
		{"OnOp", OnOp(OpSync, nil), "xxxxx"},
		{"OnOp other", OnOp(OpWrite, nil), "....."},
	} {
		if got := run(tc.inject); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	errMine := errors.New("mine")
	if err := FailAfter(0, OpSync, errMine).MaybeError(OpSync, "f"); err != errMine {
		t.Errorf("FailAfter returned %v, want its own error", err)
	}
}

func TestToggle(t *testing.T) {
	// A counting injector behind a Toggle counts from On.
	toggle := NewToggle(FailOnceAfter(0, OpSync, nil))
	e := NewErrorFS(NewCrashableMem(), toggle)
	f, err := e.Create("f")
	mustDo(t, err)
	defer f.Close()
	mustDo(t, f.Sync())
	mustDo(t, f.Sync())
	toggle.On()
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("first Sync after On: %v", err)
	}
	mustDo(t, f.Sync())

	dead := NewToggle(nil)
	if dead.IsOn() || dead.MaybeError(OpStat, "f") != nil {
		t.Fatal("a new Toggle is on")
	}
	dead.On()
	if !dead.IsOn() || !errors.Is(dead.MaybeError(OpStat, "f"), ErrInjected) {
		t.Fatal("NewToggle(nil) does not fail when on")
	}
	dead.Off()
	if dead.MaybeError(OpStat, "f") != nil {
		t.Fatal("Toggle fails when off")
	}
}

// TestToggleConcurrent flips a Toggle while writers and readers run; run it
// with -race. Every write either lands whole or fails whole.
func TestToggleConcurrent(t *testing.T) {
	mem := NewCrashableMem()
	toggle := NewToggle(OnOp(OpWrite, nil))
	e := NewErrorFS(mem, toggle)
	f, err := e.Create("f")
	mustDo(t, err)
	defer f.Close()
	var wg sync.WaitGroup
	var landed [4]int
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				n, err := f.WriteAt([]byte{byte('a' + w)}, int64(w*500+i))
				switch {
				case err == nil && n == 1:
					landed[w]++
				case errors.Is(err, ErrInjected) && n == 0:
				default:
					errs <- fmt.Errorf("WriteAt = %d, %v", n, err)
					return
				}
				if _, err := f.ReadAt(make([]byte, 1), 0); err != nil && !errors.Is(err, io.EOF) {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 1000 {
		if i%2 == 0 {
			toggle.On()
		} else {
			toggle.Off()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data := readFile(t, mem, "f")
	for w := range 4 {
		got := 0
		for i := w * 500; i < (w+1)*500 && i < len(data); i++ {
			if data[i] == byte('a'+w) {
				got++
			}
		}
		if got != landed[w] {
			t.Errorf("writer %d: %d bytes in file, %d writes succeeded", w, got, landed[w])
		}
	}
}

func TestInjectorFuncByPath(t *testing.T) {
	mem := NewCrashableMem()
	e := NewErrorFS(mem, InjectorFunc(func(op Op, path string) error {
		if op == OpCreate && path == "log/00.index" {
			return ErrInjected
		}
		return nil
	}))
	mustDo(t, e.MkdirAll("log", 0o755))
	if _, err := e.Create("log/00.index"); !errors.Is(err, ErrInjected) {
		t.Fatalf("Create index: %v", err)
	}
	f, err := e.Create("log/00.log")
	mustDo(t, err)
	mustDo(t, f.Close())
	if _, err := mem.Stat("log/00.index"); err == nil {
		t.Fatal("failed Create reached the inner FS")
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{OpCreate: "create", OpRead: "read", OpSync: "sync", Op(99): "Op(99)"} {
		if got := op.String(); got != want {
			t.Errorf("%d: %q, want %q", int(op), got, want)
		}
	}
}

// An ErrorFS over the OS keeps lending the descriptor, so WritevAt keeps
// its one pwritev, and still injects: a write it fails writes nothing.
func TestErrorFSLendsDescriptorAndInjects(t *testing.T) {
	toggle := NewToggle(OnOp(OpWrite, syscall.ENOSPC))
	fsys := NewErrorFS(Default, toggle)
	f, err := fsys.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(syscall.Conn); !ok {
		t.Fatal("an ErrorFS file over the OS does not lend its descriptor")
	}
	if n, err := WritevAt(f, [][]byte{[]byte("ab"), []byte("cd")}, 0); n != 4 || err != nil {
		t.Fatalf("WritevAt = %d, %v", n, err)
	}
	toggle.On()
	if _, err := WritevAt(f, [][]byte{[]byte("ef")}, 4); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WritevAt with writes failing: %v, want ENOSPC", err)
	}
	toggle.Off()
	if fi, err := f.Stat(); err != nil || fi.Size() != 4 {
		t.Fatalf("size after the failed write: %v, %v; want 4", fi, err)
	}
}
