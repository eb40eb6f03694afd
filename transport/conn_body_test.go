package transport

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/iotest"
)

// TestReadBody reads bodies around every chunk boundary, from a reader that
// returns at most one byte or half of what is asked, and compares them with
// what was sent, with the bytes that follow left unread.
func TestReadBody(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 8, minChunk - 1, minChunk, minChunk + 1, 2 * minChunk, 2*minChunk + 1, 3*minChunk + 7, 1<<20 + 3, 9<<20 + 1} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(rng.Uint32())
		}
		trailer := []byte("next frame")
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"whole": func(r io.Reader) io.Reader { return r },
			"half":  iotest.HalfReader,
			"byte":  iotest.OneByteReader,
		} {
			if name == "byte" && n > 2*minChunk+1 {
				continue // a byte at a time says nothing more at these sizes
			}
			for round := range 2 { // the second round takes pooled chunks
				src := bytes.NewReader(append(append([]byte(nil), want...), trailer...))
				got, err := readBody(wrap(src), n)
				if err != nil {
					t.Fatalf("n=%d %s round %d: %v", n, name, round, err)
				}
				if !bytes.Equal(got, want) || len(got) != cap(got) {
					t.Fatalf("n=%d %s round %d: body differs (len %d cap %d)", n, name, round, len(got), cap(got))
				}
				if rest, _ := io.ReadAll(src); !bytes.Equal(rest, trailer) {
					t.Fatalf("n=%d %s round %d: left %q unread, want %q", n, name, round, rest, trailer)
				}
			}
		}
	}
}

// TestReadBodyShort: a connection closed mid-body is io.ErrUnexpectedEOF in
// either stage, and another read error comes back as it is.
func TestReadBodyShort(t *testing.T) {
	for _, sent := range []int{0, 10, minChunk + 10, 5 * minChunk} {
		_, err := readBody(bytes.NewReader(make([]byte, sent)), 8*minChunk)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("sent %d of %d: %v, want io.ErrUnexpectedEOF", sent, 8*minChunk, err)
		}
	}
	boom := errors.New("boom")
	if _, err := readBody(iotest.ErrReader(boom), 100); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}

// TestReadBodyHostileSize: a client that claims the largest frame and sends
// a little costs memory in proportion to what it sent, not to its claim.
func TestReadBodyHostileSize(t *testing.T) {
	const claim = 1<<31 - 1
	for _, sent := range []int{100, 3 * minChunk, 1 << 20} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := readBody(bytes.NewReader(make([]byte, sent)), claim); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("sent %d: %v", sent, err)
		}
		runtime.ReadMemStats(&after)
		// Up to twice what arrived in chunks, plus slack for the runtime's
		// own allocations and for the race detector.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(2*max(sent, minChunk)+sent)+1<<20 {
			t.Errorf("sent %d bytes of a %d-byte claim: %d bytes allocated", sent, claim, alloc)
		}
	}
}

// TestBodyClasses: classes grow by a quarter octave from 4 KiB to
// maxPooledBody, and a body gets the smallest class that holds it.
func TestBodyClasses(t *testing.T) {
	if got := bodyClassSize(0); got != 4<<10 {
		t.Fatalf("class 0 is %d bytes", got)
	}
	if got := bodyClassSize(bodyClasses - 1); got != maxPooledBody {
		t.Fatalf("last class is %d bytes, want %d", got, maxPooledBody)
	}
	for i := 1; i < bodyClasses; i++ {
		prev, size := bodyClassSize(i-1), bodyClassSize(i)
		if size <= prev || size > prev+prev/4+prev/4 {
			t.Fatalf("class %d: %d bytes after %d", i, size, prev)
		}
	}
	for _, n := range []int{1, 4 << 10, 4<<10 + 1, 100 << 10, 6<<20 + 12345, maxPooledBody} {
		c := bodyClass(n)
		if c < 0 || bodyClassSize(c) < n || (c > 0 && bodyClassSize(c-1) >= n) {
			t.Fatalf("body of %d bytes: class %d", n, c)
		}
	}
	if c := bodyClass(maxPooledBody + 1); c != -1 {
		t.Fatalf("body above maxPooledBody: class %d", c)
	}
}

// TestReadPooledBody reads bodies into pooled buffers and back, and checks
// that a released body is only reused after its last release.
func TestReadPooledBody(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{8, 5000, minChunk + 1, 3*minChunk + 7, 1<<20 + 3} {
		for round := range 3 {
			want := make([]byte, n)
			for i := range want {
				want[i] = byte(rng.Uint32())
			}
			src := bytes.NewReader(append(append([]byte(nil), want...), "next"...))
			rb, err := readPooledBody(iotest.HalfReader(src), n)
			if err != nil {
				t.Fatalf("n=%d round %d: %v", n, round, err)
			}
			if !bytes.Equal(rb.b, want) || cap(rb.b) != bodyClassSize(rb.class) {
				t.Fatalf("n=%d round %d: body differs (len %d cap %d)", n, round, len(rb.b), cap(rb.b))
			}
			if rest, _ := io.ReadAll(src); string(rest) != "next" {
				t.Fatalf("n=%d round %d: left %q unread", n, round, rest)
			}
			rb.retain()
			rb.release()
			if len(rb.b) != n {
				t.Fatalf("n=%d round %d: body given back while retained", n, round)
			}
			rb.release()
		}
	}
	if rb, err := readPooledBody(bytes.NewReader(nil), maxPooledBody+1); rb != nil || err != nil {
		t.Fatalf("body above maxPooledBody: %v, %v", rb, err)
	}
	if _, err := readPooledBody(bytes.NewReader(make([]byte, 10)), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body: %v", err)
	}
}

// TestRequestBodyOverRelease: releasing more often than retaining is a bug
// that must not pass silently.
func TestRequestBodyOverRelease(t *testing.T) {
	rb, err := readPooledBody(bytes.NewReader(make([]byte, 16)), 16)
	if err != nil {
		t.Fatal(err)
	}
	rb.release()
	defer func() {
		if recover() == nil {
			t.Fatal("second release did not panic")
		}
	}()
	rb.release()
}
