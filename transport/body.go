package transport

import (
	"io"
	"sync"
	"sync/atomic"
)

// Produce request bodies are pooled: a Produce body is mostly record
// batches, megabytes a request under load, and reading each into fresh
// memory cost the broker's CPU the clearing of that memory, its page faults
// and the garbage collector's work (tests/bench/README.md). Other requests
// are small, and their decoded forms may alias their bodies for as long as
// their handlers like, so they keep readBody's fresh buffers.
//
// Lifetime: a pooled body is counted. The reader goroutine holds one
// reference while it decodes the request; the Produce handler takes one more
// for each partition.Append whose Records alias the body, which the
// partition's actor gives back (Append.Release) once it no longer reads them:
// after its log has written them, or after refusing them. The last release
// puts the body back in its pool. A body whose Append is never handled (an
// actor stopped with it in its mailbox) is not released, and is left to the
// garbage collector; nothing ever returns a body to the pool early.
//
// Everything else the handler keeps of the request is copied out of the body
// by kmsg (strings) or is plain values; Validate and Recompress read the
// records on the reader goroutine, before the reader's own release.
//
// The pools hold buffers in size classes of a quarter octave (4 KiB, 5 KiB,
// 6 KiB, 7 KiB, 8 KiB, 10 KiB, ...) up to maxPooledBody, so that a body
// uses at most a quarter more than its size. A body taken from a pool is
// read straight into it. When the pool is empty, the body is read as
// readBody reads (scratch chunks until half has arrived) into a new buffer
// of its class's size: a client that claims a large size and sends little
// still costs at most about twice and a half what it has sent.
const (
	// maxPooledBody is the largest class: larger bodies are not pooled.
	maxPooledBody = 32 << 20
	// bodyClasses is the number of size classes, 4 KiB to 32 MiB.
	bodyClasses = 4*13 + 1
)

var bodyPools [bodyClasses]sync.Pool

// bodyClassSize returns the size of class i: (4 + i%4) << (10 + i/4).
func bodyClassSize(i int) int { return (4 + i%4) << (10 + i/4) }

// bodyClass returns the smallest class of at least n bytes, or -1 when n is
// above maxPooledBody.
func bodyClass(n int) int {
	for i := range bodyClasses {
		if bodyClassSize(i) >= n {
			return i
		}
	}
	return -1
}

// requestBody is a pooled request body: b[:n] is the body, cap(b) its
// class's size.
type requestBody struct {
	b     []byte
	class int
	refs  atomic.Int32
}

// retain takes a reference, for something that will read the body after the
// reader goroutine has moved on. The caller must hold a reference.
func (rb *requestBody) retain() { rb.refs.Add(1) }

// release gives back a reference; the last one puts the body back in its
// pool, after which nothing may read it.
func (rb *requestBody) release() {
	switch n := rb.refs.Add(-1); {
	case n == 0:
		rb.b = rb.b[:0]
		bodyPools[rb.class].Put(rb)
	case n < 0:
		panic("transport: request body released more often than retained")
	}
}

// readPooledBody reads a body of n bytes into a pooled buffer, holding one
// reference for the caller; it returns nil and no error when n is too large
// to pool (the caller then uses readBody).
func readPooledBody(r io.Reader, n int) (*requestBody, error) {
	class := bodyClass(n)
	if class < 0 {
		return nil, nil
	}
	rb, _ := bodyPools[class].Get().(*requestBody)
	if rb != nil {
		rb.b = rb.b[:n]
		if _, err := io.ReadFull(r, rb.b); err != nil {
			rb.b = rb.b[:0]
			bodyPools[class].Put(rb)
			return nil, unexpectedEOF(err)
		}
	} else {
		b, err := readBodyCap(r, n, bodyClassSize(class))
		if err != nil {
			return nil, err
		}
		rb = &requestBody{b: b, class: class}
	}
	rb.refs.Store(1)
	return rb, nil
}
