package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition/store"
)

// conn is one client connection.
//
// The reader goroutine owns the socket's read side: it reads a frame,
// decodes it, starts the request (which hands work to actors and returns at
// once) and queues the pending response. The writer goroutine owns the
// write side: it takes pending responses in request order, finishes each
// (waiting for the actors, or long-polling a fetch) and writes it. The
// queue's capacity bounds pipelining; a full queue stops reading, which is
// the backpressure a client sees.
type conn struct {
	s       *Server
	nc      net.Conn
	pending chan *pending
	stop    chan struct{} // closed to stop reading (shutdown)
	gone    chan struct{} // closed when the client went away or misbehaved
	once    sync.Once
	client  string             // client id of the last request, for logs
	dec     store.Decompressor // for validating produced batches, reader goroutine only
}

type pending struct {
	corr     int32
	key      int16
	flexible bool // response header carries tagged fields
	finish   finish
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, nc: nc, pending: make(chan *pending, max(s.cfg.MaxInflight, 1)), stop: make(chan struct{}), gone: make(chan struct{})}
}

func (c *conn) stopReading() {
	c.once.Do(func() {
		close(c.stop)
		// Unblock a read in progress; the writer still answers what was read.
		c.nc.SetReadDeadline(time.Now())
	})
}

func (c *conn) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *conn) read() {
	defer c.s.wg.Done()
	defer close(c.pending)
	// A client that is gone (or sent garbage) is owed nothing: its pending
	// requests stop waiting. On shutdown they are still answered.
	defer func() {
		if !c.stopping() {
			close(c.gone)
		}
	}()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		if c.s.cfg.IdleTimeout > 0 && !c.stopping() {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		}
		if _, err := io.ReadFull(r, size[:]); err != nil {
			c.readFailed(err)
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > c.s.cfg.MaxRequestBytes {
			// Refused before allocating: a hostile size costs nothing.
			c.s.log.Warn().Str("remote", c.nc.RemoteAddr().String()).Int32("size", n).
				Int32("max", c.s.cfg.MaxRequestBytes).Msg("closing connection: request size out of bounds")
			return
		}
		// Grow the buffer as bytes arrive instead of trusting the size: a
		// client that claims 100 MiB and sends nothing costs nothing.
		var buf bytes.Buffer
		buf.Grow(int(min(n, 64<<10)))
		if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.readFailed(err)
			return
		}
		body := buf.Bytes()
		p, err := c.decode(body)
		if err != nil {
			c.s.log.Warn().Err(err).Str("remote", c.nc.RemoteAddr().String()).Str("client", c.client).
				Msg("closing connection: malformed request")
			return
		}
		c.pending <- p
	}
}

func (c *conn) readFailed(err error) {
	switch {
	case c.stopping(), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.s.log.Debug().Str("remote", c.nc.RemoteAddr().String()).Msg("connection closed mid-request")
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.s.log.Debug().Str("remote", c.nc.RemoteAddr().String()).Msg("closing idle connection")
			return
		}
		c.s.log.Debug().Err(err).Str("remote", c.nc.RemoteAddr().String()).Msg("read failed")
	}
}

// decode parses a request frame and starts it.
func (c *conn) decode(body []byte) (*pending, error) {
	rd := kbin.Reader{Src: body}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	clientID := rd.NullableString()
	if !rd.Ok() {
		return nil, errors.New("truncated request header")
	}
	if clientID != nil {
		c.client = *clientID
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("unknown api key %d", key)
	}
	req.SetVersion(version)
	api := c.s.api
	if key == 18 && !api.requestVersionOK(key, version) {
		// KIP-511: an ApiVersions request newer than we know is answered
		// at v0 with our ranges, so the client can retry at a version we
		// speak; its body may be in a format we cannot parse, so it is
		// not decoded.
		return &pending{corr: corr, key: key, finish: respond(api.apiVersionsUnsupported())}, nil
	}
	if !api.requestVersionOK(key, version) {
		h := api.handler(key)
		if h.refuse == nil || version < h.advertiseMin || version > h.max {
			return nil, fmt.Errorf("api key %d version %d is not supported", key, version)
		}
		// Advertised for old clients but refused (Produce v0-2): parse it
		// to answer each partition UNSUPPORTED_VERSION.
		if err := req.ReadFrom(rd.Src); err != nil {
			return nil, fmt.Errorf("api key %d version %d: %w", key, version, err)
		}
		return &pending{corr: corr, key: key, finish: respond(h.refuse(req))}, nil
	}
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("api key %d version %d: %w", key, version, err)
	}
	api.metrics.request(key, version)
	f := api.handlers[key].handle(c, req)
	return &pending{corr: corr, key: key, flexible: req.IsFlexible(), finish: api.timed(key, version, f)}, nil
}

func (c *conn) write() {
	defer c.s.wg.Done()
	defer c.s.forget(c)
	defer c.s.api.metrics.connectionClosed()
	defer c.nc.Close()
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	broken := false
	for p := range c.pending {
		resp := p.finish()
		if resp == nil || broken {
			continue // acks=0, or the socket is gone: finish the rest, write nothing
		}
		buf = append(buf[:0], 0, 0, 0, 0, 0, 0, 0, 0) // size, correlation id
		// The ApiVersions response header is always v0, even when the body
		// is flexible, so that a client can parse it before it knows our
		// versions.
		if p.flexible && p.key != 18 {
			buf = append(buf, 0) // no tagged fields
		}
		buf = resp.AppendTo(buf)
		binary.BigEndian.PutUint32(buf[0:4], uint32(len(buf)-4))
		binary.BigEndian.PutUint32(buf[4:8], uint32(p.corr))
		if _, err := w.Write(buf); err != nil {
			broken = true
			c.nc.Close()
			continue
		}
		// Flush when no further response is ready, so pipelined responses
		// share a write.
		if len(c.pending) == 0 {
			if err := w.Flush(); err != nil {
				broken = true
				c.nc.Close()
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a huge buffer for an idle connection
		}
	}
}
