package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// allocated is the disk space a file holds, as stat reports it.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	mustDo(t, err)
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// TestPreallocate: space reserved through the OS, a Cache or an ErrorFS is
// held past the file's size, which does not change, until a truncate to
// that size gives it back; an injected failure reserves nothing.
func TestPreallocate(t *testing.T) {
	const n = 1 << 20
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		fs   FS
	}{
		{"os", Default},
		{"cache", NewCache(Default, 4)},
		{"errorfs", NewErrorFS(Default, OnOp(OpRead, nil))},
		{"cache over errorfs", NewCache(NewErrorFS(Default, OnOp(OpRead, nil)), 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			f, err := tc.fs.Create(path)
			mustDo(t, err)
			defer f.Close()
			_, err = f.WriteAt([]byte("abc"), 0)
			mustDo(t, err)
			mustDo(t, Preallocate(f, 0, n))
			fi, err := f.Stat()
			mustDo(t, err)
			if fi.Size() != 3 {
				t.Fatalf("size %d after Preallocate, want 3", fi.Size())
			}
			if got := allocated(t, path); got < n {
				t.Fatalf("%d bytes allocated, want at least %d", got, n)
			}
			mustDo(t, f.Truncate(3))
			if got := allocated(t, path); got >= n {
				t.Fatalf("%d bytes allocated after a truncate to the size, want the reservation given back", got)
			}
		})
	}
	t.Run("injected", func(t *testing.T) {
		path := filepath.Join(dir, "injected")
		for _, fs := range []FS{NewErrorFS(Default, OnOp(OpAllocate, syscall.ENOSPC)), NewCache(NewErrorFS(Default, OnOp(OpAllocate, syscall.ENOSPC)), 4)} {
			f, err := fs.Create(path)
			mustDo(t, err)
			if err := Preallocate(f, 0, n); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Preallocate: %v, want ENOSPC", err)
			}
			mustDo(t, f.Close())
			if got := allocated(t, path); got != 0 {
				t.Fatalf("%d bytes allocated by a failed Preallocate", got)
			}
		}
	})
	t.Run("mem", func(t *testing.T) {
		mem := NewCrashableMem()
		f, err := mem.Create("f")
		mustDo(t, err)
		mustDo(t, Preallocate(f, 0, n))
		fi, err := f.Stat()
		mustDo(t, err)
		if fi.Size() != 0 {
			t.Fatalf("size %d after Preallocate in memory, want 0", fi.Size())
		}
	})
}
