package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestWritevAt checks that WritevAt writes the buffers back to back at the
// offset, on the OS (pwritev) and in memory (WriteAt per buffer), with
// empty buffers and more buffers than one pwritev takes.
func TestWritevAt(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys FS, dir string) {
		for _, n := range []int{0, 1, 3, maxIovecs + 5} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				name := filepath.Join(dir, fmt.Sprintf("f%d", n))
				f := mustCreate(t, fsys, name, "head")
				defer f.Close()
				var bufs [][]byte
				want := []byte("head")
				for i := range n {
					b := bytes.Repeat([]byte{byte('a' + i%26)}, i%7) // every seventh empty
					bufs = append(bufs, b)
					want = append(want, b...)
				}
				before := slices.Clone(bufs)
				got, err := WritevAt(f, bufs, 4)
				if err != nil || got != len(want)-4 {
					t.Fatalf("WritevAt = %d, %v; want %d, nil", got, err, len(want)-4)
				}
				if !slices.EqualFunc(bufs, before, bytes.Equal) {
					t.Fatal("WritevAt changed its argument")
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				if s := readFile(t, fsys, name); s != string(want) {
					t.Fatalf("file holds %q, want %q", s, want)
				}
			})
		}
	})
}

// TestWritevAtErrorFS checks that an ErrorFS sees one write per buffer, so
// that injected failures land as they would on separate WriteAt calls, and
// that WritevAt reports the bytes that did reach the file.
func TestWritevAtErrorFS(t *testing.T) {
	mem := NewCrashableMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	fsys := NewErrorFS(mem, FailAfter(2, OpWrite, nil))
	f, err := fsys.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := WritevAt(f, [][]byte{[]byte("ab"), []byte("cd"), []byte("ef")}, 0)
	if !errors.Is(err, ErrInjected) || n != 4 {
		t.Fatalf("WritevAt = %d, %v; want 4, the injected error", n, err)
	}
	if s := readFile(t, mem, "/d/f"); s != "abcd" {
		t.Fatalf("file holds %q, want %q", s, "abcd")
	}
}

// TestAdvance checks the bookkeeping after a short pwritev, which a test
// cannot make the kernel do.
func TestAdvance(t *testing.T) {
	bufs := [][]byte{[]byte("abc"), []byte("de"), []byte("f")}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, []string{"abc", "de", "f"}},
		{1, []string{"bc", "de", "f"}},
		{3, []string{"de", "f"}},
		{4, []string{"e", "f"}},
		{6, nil},
	} {
		var got []string
		for _, b := range advance(bufs, tc.n) {
			got = append(got, string(b))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("advance(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if string(bufs[0]) != "abc" {
		t.Fatalf("advance changed its argument: %q", bufs[0])
	}
}
