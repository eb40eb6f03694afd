package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/security"
)

// Config is the Kafka listener's configuration.
type Config struct {
	// Listen is the address to listen on (listeners).
	Listen string
	// MaxRequestBytes caps a request's size (socket.request.max.bytes,
	// default 104857600); a bigger frame closes the connection before
	// anything is allocated for it. MaxUnauthenticatedBytes caps it on a
	// SASL listener before authentication (sasl.server.max.receive.size,
	// default 524288).
	MaxRequestBytes, MaxUnauthenticatedBytes int32
	// FailedAuthenticationDelay delays the answer to a failed
	// authentication (connection.failed.authentication.delay.ms).
	FailedAuthenticationDelay time.Duration
	// MaxReauth, when positive, is how long a SASL authentication lasts
	// (connections.max.reauth.ms, KIP-368).
	MaxReauth time.Duration
	// Limits bound the connections.
	Limits Limits
	// IdleTimeout closes a connection that sent nothing for this long
	// (connections.max.idle.ms, default 10 minutes).
	IdleTimeout time.Duration
	// MaxInflight is how many requests of one connection may be decoded
	// ahead of their responses (Skein-only; clients pipeline at most 5 by
	// default). Further requests wait in the socket.
	MaxInflight int
	Logger      zerolog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		Listen:                    "127.0.0.1:9092",
		MaxRequestBytes:           100 << 20,
		MaxUnauthenticatedBytes:   512 << 10,
		FailedAuthenticationDelay: 100 * time.Millisecond,
		IdleTimeout:               10 * time.Minute,
		MaxInflight:               16,
		Limits:                    Limits{MaxConnections: math.MaxInt32, MaxPerIP: math.MaxInt32, CreationRate: math.MaxInt32},
		Logger:                    zerolog.Nop(),
	}
}

// Server is the Kafka listener. Each connection has a reader goroutine that
// decodes requests and starts them (handing the work to the actor that owns
// the data), and a writer goroutine that finishes them in order and writes
// the responses; no goroutine is made per request.
type Server struct {
	cfg    Config
	api    *API
	lns    []net.Listener
	log    zerolog.Logger
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	// failures rate-limits the lines logged about clients that fail to
	// connect (TLS handshakes), which a misconfigured client repeats.
	failures *logging.Limiter
	// count holds the connections against cfg.Limits; stopping is closed
	// by Close, to end a wait for room.
	count    *connCount
	stopping chan struct{}
}

// NewServer returns a listener serving api.
func NewServer(cfg Config, api *API) *Server {
	return &Server{cfg: cfg, api: api, log: cfg.Logger, conns: make(map[*conn]struct{}), failures: logging.NewLimiter(10, time.Minute),
		count: newConnCount(cfg.Limits), stopping: make(chan struct{})}
}

// Start listens on cfg.Listen, as the PLAINTEXT listener, and serves in
// the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("transport: listen on %s: %w", s.cfg.Listen, err)
	}
	s.Serve(Listener{Name: "PLAINTEXT"}, ln)
	return nil
}

// Listener is one of the Kafka listeners a Server serves.
type Listener struct {
	// Name is the listener's name, upper case: a client is told the
	// brokers' addresses on it.
	Name string
	// TLS, when set, is the listener's TLS (SSL), and Principals map a
	// client certificate's subject to the connection's principal.
	TLS        *tls.Config
	Principals security.MappingRules
	// SASL, when set, is the listener's SASL (SASL_PLAINTEXT, SASL_SSL):
	// a client authenticates before anything but ApiVersions.
	SASL *security.SASL
	// InterBroker marks the listener followers fetch from, which
	// Limits.MaxConnections does not bound.
	InterBroker bool
}

// Serve accepts connections on ln, for listener l, in the background: a
// node binds first, to learn its ports, and serves once its metadata is
// loaded. A server may serve several listeners.
func (s *Server) Serve(l Listener, ln net.Listener) {
	s.mu.Lock()
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(l, ln)
}

// Addr returns the address of the first listener served.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lns[0].Addr()
}

func (s *Server) accept(l Listener, ln net.Listener) {
	defer s.wg.Done()
	var failing time.Time // since when Accept fails, zero while it works
	delay := time.Duration(0)
	pace := newAcceptPace(s.cfg.Limits, l.InterBroker)
	for {
		if !s.count.waitRoom(l.InterBroker, s.stopping) {
			return
		}
		waited, ok := pace.wait(s.stopping)
		if waited > 0 {
			s.api.metrics.acceptThrottled(l.Name, waited)
		}
		if !ok {
			return
		}
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors (EMFILE) or another passing failure:
			// keep the listener, wait and try again, as net/http does.
			// Logged when it starts and when it ends, not per try.
			if failing.IsZero() {
				failing = time.Now()
				s.log.Error().Err(err).Msg("accept failing: retrying with backoff")
			}
			// A Close meanwhile makes the next Accept fail with ErrClosed.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		if !failing.IsZero() {
			s.log.Warn().Dur("after", time.Since(failing)).Msg("accept works again")
			failing, delay = time.Time{}, 0
		}
		ip := remoteIP(nc)
		if !s.count.add(ip, l.InterBroker) {
			s.api.metrics.connectionRefused(l.Name, "per_ip")
			s.failures.Event(s.log.Warn()).Str("remote", nc.RemoteAddr().String()).Str("listener", l.Name).
				Int("limit", s.count.perIPLimit(ip)).Msg("closing connection: max.connections.per.ip reached for its address")
			reset(nc)
			continue
		}
		if !l.InterBroker && s.api.ipOverRate(ip) {
			s.count.remove(ip, l.InterBroker)
			s.api.metrics.connectionRefused(l.Name, "ip_rate")
			s.failures.Event(s.log.Warn()).Str("remote", nc.RemoteAddr().String()).Str("listener", l.Name).
				Msg("closing connection: its address is past its connection_creation_rate quota")
			reset(nc)
			continue
		}
		c := newConn(s, nc, l)
		c.ip = ip
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.count.remove(ip, l.InterBroker)
			reset(nc)
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.api.metrics.connectionOpened(l.Name)
		s.wg.Add(2)
		go c.read()
		go c.write()
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.count.remove(c.ip, c.interBroker)
	s.api.shareConnClosed(c)
}

// Close stops accepting, stops reading new requests, lets every request
// already read be answered (until ctx ends), and closes the connections.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		close(s.stopping)
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	lns := s.lns
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range conns {
		c.stopReading()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		var keys []int32
		for _, c := range conns {
			if k := c.finishing.Load(); k != 0 {
				keys = append(keys, k-1)
			}
			rawConn(c.nc).Close()
		}
		s.log.Warn().Ints32("api_keys", keys).Int("connections", len(conns)).
			Msg("transport: stopped waiting for the requests being answered")
		<-done
		return ctx.Err()
	}
}

// handler serves one API key.
type handler struct {
	min, max int16 // versions served
	// refuse, when set, answers the versions below min, which are then
	// advertised from v0 although not served: Produce v0-2, as Kafka 4
	// does for librdkafka versions that decide compression support from
	// the advertised range.
	refuse func(req kmsg.Request) kmsg.Response
	handle func(c *conn, req kmsg.Request) finish
}

// finish completes a started request on the connection's writer goroutine,
// in request order, and returns the response (nil for none, as for acks=0).
type finish func() kmsg.Response

// advertisedMin is the lowest version ApiVersions advertises.
func (h handler) advertisedMin() int16 {
	if h.refuse != nil {
		return 0
	}
	return h.min
}

// respond wraps a response that is ready at once.
func respond(r kmsg.Response) finish { return func() kmsg.Response { return r } }
