package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/security"
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
	client  string // client id of the last request, for logs
	// listener is the Kafka listener the client connected to: it is told
	// the brokers' addresses on that listener. ip is the client's
	// address, interBroker whether the listener is the inter-broker one
	// (for Limits).
	listener    string
	ip          string
	interBroker bool
	// principal is who the client proved to be (its certificate on an
	// SSL listener), ANONYMOUS otherwise; set before the first request.
	principal security.Principal
	// handshake, for an SSL listener, runs TLS's handshake and maps the
	// client's certificate; nil for PLAINTEXT.
	handshake func() error
	// On a SASL listener (sasl set), the connection serves only
	// ApiVersions, SaslHandshake and SaslAuthenticate until authenticated;
	// session is the exchange SaslHandshake started, under mechanism.
	// Reader goroutine only.
	sasl          *security.SASL
	authenticated bool
	session       security.Session
	mechanism     string
	// closeAfter stops reading once the request just decoded is queued:
	// its answer is the connection's last (a failed authentication).
	closeAfter bool
	// expires, when set, is when the connection's authentication runs
	// out (connections.max.reauth.ms): after it, only a new SASL exchange
	// is served.
	expires time.Time
	// rawSASL is set by a SaslHandshake v0: the client's next frames are
	// the mechanism's raw messages, without Kafka's request header, and
	// so are the answers, until the session is done.
	rawSASL bool
	// handling is the API key of the request being handled, for authz;
	// reader goroutine only.
	handling int16
	// mutedUntil, in Unix nanoseconds, is when a client throttled by a
	// quota may be read again (KIP-219).
	mutedUntil atomic.Int64
	// producerID is the producer id of the last batch produced here that
	// had one, told to API.ProducerClients when it changes.
	producerID int64
	dec        store.Decompressor // for validating produced batches, reader goroutine only
	// body is the pooled body of the request being decoded (Produce
	// only, body.go), or nil; reader goroutine only.
	body *requestBody
	// finishing is the API key of the request being finished, plus one;
	// 0 when none (for the log of a stop that waits too long).
	finishing atomic.Int32
}

type pending struct {
	corr     int32
	key      int16
	flexible bool // response header carries tagged fields
	finish   finish
	// raw, when set, is written as it is, size-prefixed, instead of a
	// response: a SASL message after SaslHandshake v0.
	raw *[]byte
}

// saslToken takes one raw SASL message (after SaslHandshake v0) and
// queues the mechanism's answer, raw too.
func (c *conn) saslToken(msg []byte) (*pending, error) {
	answer, done, err := c.session.Step(msg)
	if err != nil {
		return nil, err
	}
	if done {
		// A v0 client is not told the lifetime: it is closed after.
		c.rawSASL = false
		c.authenticatedAs(c.session.Principal())
	}
	return &pending{key: -1, raw: &answer}, nil
}

// authenticatedAs completes an authentication as p: with
// connections.max.reauth.ms set it lasts that long, and no longer than
// its credential (an OAUTHBEARER token). It returns the lifetime, 0 for
// as long as the connection.
func (c *conn) authenticatedAs(p security.Principal) time.Duration {
	lifetime := c.s.cfg.MaxReauth
	if lifetime > 0 {
		if e, ok := c.session.(security.Expirer); ok {
			lifetime = max(min(lifetime, time.Until(e.Expires())), time.Millisecond)
		}
		c.expires = time.Now().Add(lifetime)
	}
	c.authenticated, c.principal, c.session = true, p, nil
	c.s.api.metrics.authenticated(c.listener, c.mechanism, true)
	return lifetime
}

func newConn(s *Server, nc net.Conn, l Listener) *conn {
	c := &conn{s: s, listener: l.Name, interBroker: l.InterBroker, principal: security.Anonymous, sasl: l.SASL, authenticated: l.SASL == nil}
	if l.TLS != nil {
		tc := tls.Server(nc, l.TLS)
		nc = tc
		c.handshake = func() error { return c.handshakeTLS(tc, l.Principals) }
	}
	c.nc = nc
	c.pending, c.stop, c.gone, c.producerID = make(chan *pending, max(s.cfg.MaxInflight, 1)), make(chan struct{}), make(chan struct{}), -1
	return c
}

// handshakeTimeout bounds a TLS handshake, as a client that connects and
// says nothing must not hold a goroutine for the idle timeout.
const handshakeTimeout = 10 * time.Second

// handshakeTLS runs the handshake and names the principal: the client
// certificate's subject through the listener's mapping rules, ANONYMOUS
// without one. A subject no rule maps is refused, as Kafka refuses it.
func (c *conn) handshakeTLS(tc *tls.Conn, rules security.MappingRules) error {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	if peers := tc.ConnectionState().PeerCertificates; len(peers) > 0 {
		subject := security.Subject(peers[0])
		name, ok := rules.Map(subject)
		if !ok {
			return fmt.Errorf("no ssl.principal.mapping.rules rule maps the client certificate's subject %q", subject)
		}
		c.principal = security.Principal{Type: "User", Name: name}
	}
	return nil
}

// reset closes a connection that a stopping server never served with a
// TCP reset instead of an orderly close: a client that reads end-of-file
// before any answer takes the broker for one that wants TLS or SASL and
// gives up (franz-go fails the records of a producer whose id it was
// asking for), while a reset is a network failure every client retries.
// An ApiVersions answer does not count as served: franz-go takes an
// end-of-file on the request after it for a SASL mismatch, as fatal.
func reset(nc net.Conn) {
	nc = rawConn(nc)
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}

// rawConn is the TCP connection under a TLS one. Closing a tls.Conn sends
// close_notify and can block up to 5 s on a peer that reads nothing (a
// paused or vanished client): the node closes TCP alone.
func rawConn(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
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
	if c.handshake != nil {
		err := c.handshake()
		c.s.api.metrics.authenticated(c.listener, "SSL", err == nil)
		if err != nil {
			if !c.stopping() {
				c.s.failures.Event(c.s.log.Warn()).Err(err).Str("remote", c.nc.RemoteAddr().String()).Str("listener", c.listener).
					Msg("closing connection: TLS handshake failed")
			}
			return
		}
	}
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		if !c.waitUnmuted() {
			return
		}
		if c.s.cfg.IdleTimeout > 0 && !c.stopping() {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
			if c.stopping() {
				// A stop came between the check and the deadline, which
				// must not undo its own.
				c.nc.SetReadDeadline(time.Now())
			}
		}
		if _, err := io.ReadFull(r, size[:]); err != nil {
			c.readFailed(err)
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		limit := c.s.cfg.MaxRequestBytes
		if !c.authenticated {
			limit = c.s.cfg.MaxUnauthenticatedBytes // sasl.server.max.receive.size
		}
		if n < 8 && !c.rawSASL || n < 0 || n > limit {
			// Refused before allocating: a hostile size costs nothing.
			c.s.failures.Event(c.s.log.Warn()).Str("remote", c.nc.RemoteAddr().String()).Int32("size", n).
				Int32("max", limit).Bool("authenticated", c.authenticated).Msg("closing connection: request size out of bounds")
			return
		}
		body, err := c.readBody(r, int(n))
		if err != nil {
			c.readFailed(err)
			return
		}
		if c.rawSASL {
			p, err := c.saslToken(body)
			if err != nil {
				c.s.api.metrics.authenticated(c.listener, c.mechanism, false)
				c.s.failures.Event(c.s.log.Warn()).Str("remote", c.nc.RemoteAddr().String()).Str("listener", c.listener).
					Str("mechanism", c.mechanism).Str("reason", err.Error()).Msg("closing connection: SASL authentication failed")
				return // SaslHandshake v0 has no way to say why: the connection closes, as in Kafka
			}
			c.pending <- p
			continue
		}
		p, err := c.safeDecode(body)
		if c.body != nil {
			// The handler has retained the body for what still reads it.
			c.body.release()
			c.body = nil
		}
		var bug *handlerPanic
		switch {
		case errors.As(err, &bug):
			return // logged where it was recovered
		case errors.Is(err, errUnauthenticated), errors.Is(err, errExpired):
			c.s.failures.Event(c.s.log.Warn()).Err(err).Str("remote", c.nc.RemoteAddr().String()).Str("listener", c.listener).
				Str("principal", c.principal.String()).Msg("closing connection: not authenticated")
			return
		case err != nil:
			c.s.failures.Event(c.s.log.Warn()).Err(err).Str("remote", c.nc.RemoteAddr().String()).Str("client", c.client).
				Msg("closing connection: malformed request")
			return
		}
		c.pending <- p
		if c.closeAfter {
			return // its answer is the last: the writer closes after it
		}
	}
}

// errUnauthenticated closes a connection that sent a request other than
// ApiVersions and SASL's before it authenticated; errExpired one that did
// after its authentication ran out (connections.max.reauth.ms).
var (
	errUnauthenticated = errors.New("request before SASL authentication")
	errExpired         = errors.New("request after the SASL authentication expired")
)

// handlerPanic is a panic recovered from a request's handler: a bug. The
// node stays up; the connection closes, which clients answer by
// reconnecting and retrying.
type handlerPanic struct {
	key   int16
	value any
}

func (e *handlerPanic) Error() string {
	return fmt.Sprintf("handler of api key %d panicked: %v", e.key, e.value)
}

// recovered turns a panic in a handler into a handlerPanic, logged with
// its stack.
func (c *conn) recovered(key int16, v any) error {
	e := &handlerPanic{key: key, value: v}
	c.s.log.Error().Int16("key", key).Str("remote", c.nc.RemoteAddr().String()).Str("client", c.client).
		Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).Msg("request handler panicked: closing the connection")
	return e
}

// safeDecode is decode with a handler's panic recovered.
func (c *conn) safeDecode(body []byte) (p *pending, err error) {
	key := int16(-1)
	if len(body) >= 2 {
		key = int16(binary.BigEndian.Uint16(body))
	}
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, c.recovered(key, v)
		}
	}()
	return c.decode(body)
}

// safeFinish finishes a request, with a panic recovered: it returns nil
// and false then.
func (c *conn) safeFinish(p *pending) (resp kmsg.Response, ok bool) {
	c.finishing.Store(int32(p.key) + 1)
	defer func() {
		c.finishing.Store(0)
		if v := recover(); v != nil {
			c.recovered(p.key, v)
			resp, ok = nil, false
		}
	}()
	return p.finish(), true
}

// readBody reads a request body of n bytes: a Produce request's into a
// pooled buffer, held in c.body (body.go), any other's with readBody.
func (c *conn) readBody(r *bufio.Reader, n int) ([]byte, error) {
	if key, err := r.Peek(2); err == nil && binary.BigEndian.Uint16(key) == 0 {
		rb, err := readPooledBody(r, n)
		if err != nil {
			return nil, err
		}
		if rb != nil {
			c.body = rb
			return rb.b, nil
		}
	}
	return readBody(r, n)
}

// Request bodies are read in two stages, so that a client that claims a
// large size and sends little costs little (nothing beyond twice what has
// arrived, and at least 64 KiB), and so that a large body is written into
// fresh memory once:
//
//  1. while less than half of the body has arrived, its bytes go into scratch
//     chunks of 64 KiB, 64 KiB, 128 KiB, 256 KiB ..., each as large as what
//     has arrived so far, taken from pools by size and given back;
//  2. then the body gets a buffer of exactly its size, the chunks are copied
//     into it, and the rest is read straight into it.
//
// NB: the body's buffer is not pooled here: decoded requests alias it, so it
// lives as long as they do. Produce bodies, whose aliases (the batches sent
// to partition actors) are counted, are pooled instead: body.go. Growing
// one buffer by doubling instead (bytes.Buffer did) made every large
// request touch two to three times its size of fresh memory, cleared
// before each read; the page faults, clearing and copying were a third of
// the broker's CPU under a produce load of 6 MB requests
// (tests/bench/README.md).
const (
	minChunk = 64 << 10
	// maxChunks bounds the chunks of one body: after k chunks 2^(15+k)
	// bytes have arrived, and a body is less than 2^31 bytes.
	maxChunks = 16
)

// chunkPools[i] holds scratch chunks of minChunk<<i bytes, as *[]byte; chunks
// above 4 MiB (bodies above 8 MiB) are not kept.
var chunkPools [7]sync.Pool

// chunkPool returns the pool of chunks of size bytes, or nil.
func chunkPool(size int) *sync.Pool {
	for i := range chunkPools {
		if minChunk<<i == size {
			return &chunkPools[i]
		}
	}
	return nil
}

// readBody reads a request body of n bytes from r, as described above.
func readBody(r io.Reader, n int) ([]byte, error) { return readBodyCap(r, n, n) }

// readBodyCap is readBody into a buffer of capacity bytes (at least n), for
// bodies that will be pooled (body.go).
func readBodyCap(r io.Reader, n, capacity int) ([]byte, error) {
	var (
		chunks [maxChunks]*[]byte
		used   int
		got    int
	)
	defer func() {
		for _, c := range chunks[:used] {
			if p := chunkPool(len(*c)); p != nil {
				p.Put(c)
			}
		}
	}()
	for n > minChunk && n > 2*got {
		size := max(minChunk, got) // less than n-got: the chunk fills
		var c *[]byte
		if p := chunkPool(size); p != nil {
			c, _ = p.Get().(*[]byte)
		}
		if c == nil {
			b := make([]byte, size)
			c = &b
		}
		chunks[used] = c
		used++
		if _, err := io.ReadFull(r, *c); err != nil {
			return nil, unexpectedEOF(err)
		}
		got += size
	}
	body := make([]byte, n, capacity)
	off := 0
	for _, c := range chunks[:used] {
		off += copy(body[off:], *c)
	}
	if _, err := io.ReadFull(r, body[got:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	return body, nil
}

// unexpectedEOF turns the EOF of a connection closed mid-request into
// io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
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
	sasl := key == int16(kmsg.SASLHandshake) || key == int16(kmsg.SASLAuthenticate)
	switch {
	case !c.authenticated && !sasl && key != int16(kmsg.ApiVersions):
		// As Kafka: nothing else before authentication; the connection
		// closes.
		return nil, fmt.Errorf("%w: api key %d", errUnauthenticated, key)
	case !c.expires.IsZero() && !sasl && time.Now().After(c.expires):
		// KIP-368: the authentication ran out and the client did not
		// renew it.
		return nil, fmt.Errorf("%w: api key %d", errExpired, key)
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
		if h.refuse == nil || version < 0 || version > h.max {
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
	c.handling = key
	start := time.Now()
	f := api.handlers[key].handle(c, req)
	if throttle := c.chargeRequest(key, req, time.Since(start)); throttle > 0 {
		f = withThrottle(f, throttle)
	}
	return &pending{corr: corr, key: key, flexible: req.IsFlexible(), finish: api.timed(key, version, f)}, nil
}

func (c *conn) write() {
	defer c.s.wg.Done()
	defer c.s.forget(c)
	defer c.s.api.metrics.connectionClosed(c.listener)
	served := false
	defer func() {
		if !served && c.stopping() {
			reset(c.nc) // the stop came before its first request
			return
		}
		rawConn(c.nc).Close()
	}()
	o := newOutput(c.nc, c.s.log)
	defer o.release()
	broken := false
	for p := range c.pending {
		served = served || p.key != int16(kmsg.ApiVersions)
		if p.raw != nil {
			if !broken {
				o.take()
				o.buf = append(binary.BigEndian.AppendUint32(o.buf, uint32(len(*p.raw))), *p.raw...)
				if err := o.flush(); err != nil {
					o.logFailure(c, err)
					broken = true
					rawConn(c.nc).Close()
				}
			}
			continue
		}
		resp, ok := c.safeFinish(p)
		if !ok && !broken {
			// The response it owed is lost: the client must not read the
			// next one as its answer.
			broken = true
			rawConn(c.nc).Close()
		}
		if resp == nil || broken {
			continue // acks=0, or the socket is gone: finish the rest, write nothing
		}
		err := o.response(p, resp)
		// Flush when no further response is ready, so pipelined responses
		// share a write.
		if err == nil && (len(c.pending) == 0 || len(o.buf) >= writeChunk) {
			err = o.flush()
		}
		if err != nil {
			o.logFailure(c, err)
			broken = true
			rawConn(c.nc).Close()
			continue
		}
		if len(o.buf) == 0 {
			o.release() // between responses a connection holds no buffer
		}
	}
}

// Write path: responses are encoded into a buffer taken from a pool while
// the connection has something to write, and written when no further
// response is ready or writeChunk bytes are waiting. A Fetch response
// (splicedResponse) brings file sections: its framing is encoded in memory,
// and each section goes from the segment file to the socket by one of two
// paths, never decoded nor allocated per response:
//
//   - copy (the default): read into the pooled buffer (pread), then
//     written with the framing around it, at most writeChunk at a time;
//   - sendfile(2): the framing so far is written, then the section goes
//     from the page cache to the socket without entering Go memory.
//
// Copy is the default because it measured better here: as fast or faster,
// and no more broker CPU per GB, than sendfile (figures in 01_fetch.go).
// sendfile stays, tested and benchmarked, for hardware where it wins: set
// sendfileMin to the size from which it should be used.

const (
	// writeChunk is how many buffered bytes make the writer write before
	// the next response: it bounds the buffer when records are copied.
	writeChunk = 1 << 20
	// maxPooledBuffer is the largest buffer given back to the pool.
	maxPooledBuffer = 2 * writeChunk
)

// sendfileMin is the smallest section sent with sendfile; smaller ones, and
// all by default, are copied. Files without a descriptor (vfs.NoFd, the
// in-memory filesystem of tests) and sockets that are not TCP are always
// copied. Atomic so that tests and benchmarks can switch paths while
// connections run.
var sendfileMin = func() *atomic.Int64 { var v atomic.Int64; v.Store(math.MaxInt64); return &v }()

var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// splicedResponse is a response whose encoding carries byte ranges of files.
type splicedResponse interface {
	kmsg.Response
	// appendFraming appends the response's encoding without its sections,
	// which belong at their offsets of out; see fetchResponse.
	appendFraming(dst, scratch []byte) (out []byte, secs []section, scratchOut []byte, ok bool)
}

// output is a connection's write side; it is used by the writer goroutine
// only.
type output struct {
	nc      net.Conn
	log     zerolog.Logger
	sock    syscall.RawConn // nil when nc is not a TCP socket: no sendfile
	pooled  *[]byte
	buf     []byte // bytes waiting to be written
	frame   []byte // a spliced response's framing
	scratch []byte
}

func newOutput(nc net.Conn, log zerolog.Logger) *output {
	o := &output{nc: nc, log: log}
	if tc, ok := nc.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			o.sock = raw
		}
	}
	return o
}

// release gives the buffer back to the pool; it must hold nothing unwritten.
func (o *output) release() {
	if o.pooled == nil {
		return
	}
	if cap(o.buf) <= maxPooledBuffer {
		*o.pooled = o.buf[:0]
		writeBuffers.Put(o.pooled)
	}
	o.pooled, o.buf = nil, nil
	if cap(o.frame) > maxPooledBuffer {
		o.frame, o.scratch = nil, nil
	}
}

func (o *output) take() {
	if o.pooled == nil {
		o.pooled = writeBuffers.Get().(*[]byte)
		o.buf = (*o.pooled)[:0]
	}
}

// header appends a response header with room for the size.
func header(dst []byte, p *pending) []byte {
	dst = binary.BigEndian.AppendUint32(dst, 0) // size, set when known
	dst = binary.BigEndian.AppendUint32(dst, uint32(p.corr))
	// The ApiVersions response header is always v0, even when the body is
	// flexible, so that a client can parse it before it knows our
	// versions.
	if p.flexible && p.key != 18 {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

// response encodes resp for p and writes or buffers it.
func (o *output) response(p *pending, resp kmsg.Response) error {
	o.take()
	if sr, ok := resp.(splicedResponse); ok {
		frame, secs, scratch, ok := sr.appendFraming(header(o.frame[:0], p), o.scratch)
		o.frame, o.scratch = frame, scratch
		if ok {
			return o.splice(secs)
		}
		// A bug, not bad input: the response still goes out, read into
		// memory.
		o.log.Error().Int16("key", p.key).Int16("version", resp.GetVersion()).
			Msg("response framing could not be spliced; sending it inline")
	}
	start := len(o.buf)
	o.buf = resp.AppendTo(header(o.buf, p))
	binary.BigEndian.PutUint32(o.buf[start:], uint32(len(o.buf)-start-4))
	return nil
}

// splice writes o.frame with secs in their places.
func (o *output) splice(secs []section) error {
	size := int64(len(o.frame) - 4)
	for _, s := range secs {
		size += s.Size
	}
	binary.BigEndian.PutUint32(o.frame, uint32(size))
	prev := 0
	for _, s := range secs {
		o.buf = append(o.buf, o.frame[prev:s.at]...)
		prev = s.at
		var err error
		if o.sock != nil && s.Size >= sendfileMin.Load() && hasFd(s.File) {
			err = o.sendfile(s.Slice)
		} else {
			err = o.copy(s.Slice)
		}
		if err != nil {
			return err
		}
	}
	o.buf = append(o.buf, o.frame[prev:]...)
	return nil
}

// flush writes the buffered bytes.
func (o *output) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.nc.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// copy reads a section into the buffer, writing the buffer whenever it
// holds writeChunk bytes; the buffer so stays small enough to be pooled.
func (o *output) copy(sl store.Slice) error {
	for done := int64(0); done < sl.Size; {
		if len(o.buf) >= writeChunk {
			if err := o.flush(); err != nil {
				return err
			}
		}
		n := int(min(sl.Size-done, int64(writeChunk-len(o.buf))))
		o.buf = slices.Grow(o.buf, n)
		m, err := sl.File.ReadAt(o.buf[len(o.buf):len(o.buf)+n], sl.Pos+done)
		if m < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return &fileError{err}
		}
		o.buf = o.buf[:len(o.buf)+n]
		done += int64(n)
	}
	return nil
}

// sendfile writes the buffered bytes, then the section straight from its
// file to the socket.
//
// NB: the file's descriptor is borrowed through its RawConn (when it has
// one, as *os.File does) for each sendfile call only: a closed file then
// fails the call instead of its descriptor number reaching a file opened
// since, and the borrow never spans a wait for the socket, which would
// stall other connections sending from the same segment.
func (o *output) sendfile(sl store.Slice) error {
	if err := o.flush(); err != nil {
		return err
	}
	withFd := func(fn func(fd uintptr)) error { fn(sl.File.Fd()); return nil }
	if sc, ok := sl.File.(syscall.Conn); ok {
		raw, err := sc.SyscallConn()
		if err != nil {
			return &fileError{err}
		}
		withFd = func(fn func(fd uintptr)) error {
			return raw.Read(func(fd uintptr) bool { fn(fd); return true })
		}
	}
	var sent int64
	var serr error
	werr := o.sock.Write(func(sock uintptr) bool {
		for sent < sl.Size {
			var n int
			var err error
			if ferr := withFd(func(fd uintptr) {
				off := sl.Pos + sent
				n, err = unix.Sendfile(int(sock), int(fd), &off, int(min(sl.Size-sent, 1<<30)))
			}); ferr != nil {
				serr = &fileError{ferr}
				return true
			}
			if n > 0 {
				sent += int64(n)
			}
			switch {
			case err == unix.EAGAIN:
				return false // wait until the socket takes more
			case err == unix.EINTR:
			case err != nil:
				serr = err
				return true
			case n == 0:
				serr = &fileError{io.ErrUnexpectedEOF} // the file is shorter than the slice
				return true
			}
		}
		return true
	})
	if serr != nil {
		return serr
	}
	return werr
}

// hasFd reports whether sendfile can read f. It does not call Fd on a file
// that offers its descriptor through a RawConn: *os.File.Fd would give a
// number that stays in use after the file is closed.
func hasFd(f vfs.File) bool {
	if _, ok := f.(syscall.Conn); ok {
		return true
	}
	return f.Fd() != vfs.NoFd
}

// fileError marks a failure to read a segment file, as opposed to the
// client's socket failing.
type fileError struct{ err error }

func (e *fileError) Error() string { return "reading records: " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

func (o *output) logFailure(c *conn, err error) {
	var fe *fileError
	if errors.As(err, &fe) {
		c.s.log.Warn().Err(err).Str("remote", c.nc.RemoteAddr().String()).Str("client", c.client).
			Msg("closing connection: a response's records could not be read")
		return
	}
	c.s.log.Debug().Err(err).Str("remote", c.nc.RemoteAddr().String()).Msg("write failed")
}
