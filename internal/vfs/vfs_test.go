package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

// forEachFS runs test against the OS filesystem, in a temporary directory,
// and against a MemFS, in a directory of it, so that the two are held to
// the same behaviour for everything the store relies on.
func forEachFS(t *testing.T, test func(t *testing.T, fsys FS, dir string)) {
	t.Run("os", func(t *testing.T) { test(t, Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		mem := NewCrashableMem()
		if err := mem.MkdirAll("/tmp/test", 0o755); err != nil {
			t.Fatal(err)
		}
		test(t, mem, "/tmp/test")
	})
}

func mustCreate(t *testing.T, fsys FS, name string, data string) File {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t *testing.T, fsys FS, name string, data string) {
	t.Helper()
	f := mustCreate(t, fsys, name, data)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the named file's contents, or "<err>" for a missing file.
func readFile(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConformanceReadWrite(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fsys, name, "hello ")
		if _, err := f.Write([]byte("world")); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		// ReadAt does not move the position Write left at the end.
		buf := make([]byte, 5)
		if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
			t.Fatalf("ReadAt(6) = %d, %v, %q", n, err, buf)
		}
		if n, err := f.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read at end = %d, %v; want 0, EOF", n, err)
		}
		// ReadAt past the end: the bytes there are, and io.EOF.
		buf = make([]byte, 8)
		if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF || string(buf[:n]) != "rld" {
			t.Fatalf("ReadAt(8) = %d, %v, %q; want 3, EOF, rld", n, err, buf[:n])
		}
		if n, err := f.ReadAt(buf, 11); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt(11) = %d, %v; want 0, EOF", n, err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
			t.Fatalf("ReadAt(100) = %d, %v; want 0, EOF", n, err)
		}
		// WriteAt past the end extends with zeros.
		if _, err := f.WriteAt([]byte("!"), 13); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fsys, name); got != "hello world\x00\x00!" {
			t.Fatalf("contents %q", got)
		}

		// Sequential reads move the position.
		r, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		buf = make([]byte, 6)
		if n, err := r.Read(buf); n != 6 || err != nil || string(buf) != "hello " {
			t.Fatalf("Read = %d, %v, %q", n, err, buf)
		}
		if n, err := r.Read(buf); n != 6 || err != nil || string(buf) != "world\x00" {
			t.Fatalf("Read = %d, %v, %q", n, err, buf)
		}
		if n, err := r.Read(buf); n != 2 || err != nil {
			t.Fatalf("Read = %d, %v; want 2, nil", n, err)
		}
		if n, err := r.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read = %d, %v; want 0, EOF", n, err)
		}
		// A file opened with Open is read-only.
		if _, err := r.Write([]byte("x")); err == nil {
			t.Fatal("Write on a file opened with Open succeeded")
		}
		if _, err := r.WriteAt([]byte("x"), 0); err == nil {
			t.Fatal("WriteAt on a file opened with Open succeeded")
		}
		if err := r.Truncate(0); err == nil {
			t.Fatal("Truncate on a file opened with Open succeeded")
		}
	})
}

func TestConformanceTruncateAndStat(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fsys, name, "0123456789")
		defer f.Close()
		if err := f.Truncate(4); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(6); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fsys, name); got != "0123\x00\x00" {
			t.Fatalf("after truncates: %q", got)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != "f" || fi.Size() != 6 || fi.IsDir() || fi.ModTime().IsZero() {
			t.Fatalf("File.Stat = %q size %d dir %v", fi.Name(), fi.Size(), fi.IsDir())
		}
		fi, err = fsys.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != "f" || fi.Size() != 6 || fi.IsDir() {
			t.Fatalf("FS.Stat = %q size %d dir %v", fi.Name(), fi.Size(), fi.IsDir())
		}
		fi, err = fsys.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Name() != filepath.Base(dir) {
			t.Fatalf("FS.Stat(dir) = %q dir %v", fi.Name(), fi.IsDir())
		}
	})
}

func TestConformanceOpenModes(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		name := filepath.Join(dir, "f")
		// OpenReadWrite creates a missing file and keeps an existing one.
		f, err := fsys.OpenReadWrite(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		f, err = fsys.OpenReadWrite(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("X"), 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := readFile(t, fsys, name); got != "aXc" {
			t.Fatalf("after OpenReadWrite: %q", got)
		}
		// Create truncates.
		writeFile(t, fsys, name, "z")
		if got := readFile(t, fsys, name); got != "z" {
			t.Fatalf("after Create: %q", got)
		}
		if _, err := fsys.Create(dir); err == nil {
			t.Fatal("Create of a directory succeeded")
		}
		if _, err := fsys.OpenReadWrite(dir); err == nil {
			t.Fatal("OpenReadWrite of a directory succeeded")
		}
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
	})
}

func TestConformanceNotExist(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		missing := filepath.Join(dir, "missing")
		inMissing := filepath.Join(missing, "f")
		for _, tc := range []struct {
			op  string
			err error
		}{
			{"Open", func() error { _, err := fsys.Open(missing); return err }()},
			{"OpenDir", func() error { _, err := fsys.OpenDir(missing); return err }()},
			{"Stat", func() error { _, err := fsys.Stat(missing); return err }()},
			{"List", func() error { _, err := fsys.List(missing); return err }()},
			{"Remove", fsys.Remove(missing)},
			{"Rename", fsys.Rename(missing, filepath.Join(dir, "x"))},
			{"Create in missing dir", func() error { _, err := fsys.Create(inMissing); return err }()},
			{"OpenReadWrite in missing dir", func() error { _, err := fsys.OpenReadWrite(inMissing); return err }()},
		} {
			if !errors.Is(tc.err, fs.ErrNotExist) {
				t.Errorf("%s: %v, want ErrNotExist", tc.op, tc.err)
			}
		}
		if err := fsys.RemoveAll(missing); err != nil {
			t.Errorf("RemoveAll of a missing name: %v", err)
		}
	})
}

func TestConformanceDirectories(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		sub := filepath.Join(dir, "a", "b")
		if err := fsys.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fsys.MkdirAll(sub, 0o755); err != nil {
			t.Fatalf("MkdirAll of an existing directory: %v", err)
		}
		for _, n := range []string{"c", "a0", "b", "0"} {
			writeFile(t, fsys, filepath.Join(dir, n), n)
		}
		names, err := fsys.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"0", "a", "a0", "b", "c"}; !slices.Equal(names, want) {
			t.Fatalf("List = %q, want %q", names, want)
		}
		if _, err := fsys.List(filepath.Join(dir, "c")); err == nil {
			t.Fatal("List of a file succeeded")
		}
		if err := fsys.MkdirAll(filepath.Join(dir, "c", "d"), 0o755); err == nil {
			t.Fatal("MkdirAll through a file succeeded")
		}
		if err := fsys.Remove(filepath.Join(dir, "a")); err == nil {
			t.Fatal("Remove of a non-empty directory succeeded")
		}
		if err := fsys.Remove(sub); err != nil {
			t.Fatalf("Remove of an empty directory: %v", err)
		}
		writeFile(t, fsys, filepath.Join(dir, "a", "f"), "f")
		if err := fsys.RemoveAll(filepath.Join(dir, "a")); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat after RemoveAll: %v", err)
		}
		if err := fsys.Remove(filepath.Join(dir, "c")); err != nil {
			t.Fatal(err)
		}
		names, err = fsys.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"0", "a0", "b"}; !slices.Equal(names, want) {
			t.Fatalf("List = %q, want %q", names, want)
		}
	})
}

func TestConformanceRename(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fsys, a, "new")
		writeFile(t, fsys, b, "old")
		if err := fsys.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fsys, a); got != "<missing>" {
			t.Fatalf("old name after Rename: %q", got)
		}
		if got := readFile(t, fsys, b); got != "new" {
			t.Fatalf("new name after Rename: %q", got)
		}
		// Directories move with their contents.
		if err := fsys.MkdirAll(filepath.Join(dir, "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Rename(b, filepath.Join(dir, "d", "b")); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fsys, filepath.Join(dir, "e", "b")); got != "new" {
			t.Fatalf("after moving the directory: %q", got)
		}
		// A directory is never replaced.
		writeFile(t, fsys, a, "a")
		if err := fsys.Rename(a, filepath.Join(dir, "e")); err == nil {
			t.Fatal("Rename over a directory succeeded")
		}
	})
}

// TestConformanceOpenFileOutlivesName checks the inode semantics the store
// relies on when it deletes a segment a reader still has open.
func TestConformanceOpenFileOutlivesName(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fsys, name, "abc")
		defer f.Close()
		r, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := fsys.Rename(name, filepath.Join(dir, "g")); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove(filepath.Join(dir, "g")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("def")); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if n, err := r.ReadAt(buf, 0); n != 6 || err != nil || string(buf) != "abcdef" {
			t.Fatalf("ReadAt after Remove = %d, %v, %q", n, err, buf)
		}
		fi, err := r.Stat()
		if err != nil || fi.Size() != 6 {
			t.Fatalf("Stat after Remove: %v, %v", fi, err)
		}
		names, err := fsys.List(dir)
		if err != nil || len(names) != 0 {
			t.Fatalf("List = %q, %v; want empty", names, err)
		}
	})
}

func TestConformanceClosed(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		f := mustCreate(t, fsys, filepath.Join(dir, "f"), "abc")
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		for _, tc := range []struct {
			op  string
			err error
		}{
			{"Close", f.Close()},
			{"Read", func() error { _, err := f.Read(buf); return err }()},
			{"ReadAt", func() error { _, err := f.ReadAt(buf, 0); return err }()},
			{"Write", func() error { _, err := f.Write(buf); return err }()},
			{"WriteAt", func() error { _, err := f.WriteAt(buf, 0); return err }()},
			{"Sync", f.Sync()},
			{"Truncate", f.Truncate(0)},
			{"Stat", func() error { _, err := f.Stat(); return err }()},
		} {
			if !errors.Is(tc.err, fs.ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", tc.op, tc.err)
			}
		}
	})
}

func TestConformanceEmptyBuffers(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		f := mustCreate(t, fsys, filepath.Join(dir, "f"), "abc")
		defer f.Close()
		if n, err := f.Read(nil); n != 0 || err != nil {
			t.Fatalf("Read(nil) at end = %d, %v; want 0, nil", n, err)
		}
		if n, err := f.ReadAt(nil, 10); n != 0 || err != nil {
			t.Fatalf("ReadAt(nil, 10) = %d, %v; want 0, nil", n, err)
		}
		if n, err := f.Write(nil); n != 0 || err != nil {
			t.Fatalf("Write(nil) = %d, %v", n, err)
		}
		if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
			t.Fatal("ReadAt at a negative offset succeeded")
		}
		if _, err := f.WriteAt([]byte("x"), -1); err == nil {
			t.Fatal("WriteAt at a negative offset succeeded")
		}
		if !bytes.Equal([]byte(readFile(t, fsys, filepath.Join(dir, "f"))), []byte("abc")) {
			t.Fatal("contents changed")
		}
	})
}

func TestFd(t *testing.T) {
	f := mustCreate(t, Default, filepath.Join(t.TempDir(), "f"), "")
	defer f.Close()
	if f.Fd() == NoFd {
		t.Error("OS file has no descriptor")
	}
	m := mustCreate(t, NewCrashableMem(), "f", "")
	if m.Fd() != NoFd {
		t.Error("MemFS file has a descriptor")
	}
}
