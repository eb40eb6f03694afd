package node

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/console"
	"github.com/skeinlog/skein/security"
)

// consoleIdle is how long a console client may go unused before it is
// closed.
const consoleIdle = 5 * time.Minute

// consoleConfig is what the node gives its web console (package
// console): a Kafka client per logged-in user, who that user is, and the
// per-topic counters of every node.
func (n *Node) consoleConfig(clients *consoleClients) console.Config {
	return console.Config{
		Client:            clients.client,
		Who:               n.consoleWho,
		NodeID:            n.cfg.NodeID,
		ChaosEnabled:      n.cfg.ChaosEnable,
		AuthEnabled:       len(n.kafka.sasls()) > 0,
		FaultsWithoutAuth: n.cfg.ConsoleFaultsWithoutAuth && n.authorizer == nil,
		TopicCounters:     n.clusterTopicCounters,
	}
}

// consoleWho returns the user the admin guard authenticated r as, and
// whether that user may change things through the admin API: with an
// authorizer, a super user; without one, anyone authenticated (Kafka
// without an authorizer lets everyone do everything). Nobody is a super
// user when the node authenticates nobody.
func (n *Node) consoleWho(r *http.Request) (string, bool) {
	p, ok := requestPrincipal(r)
	if !ok {
		return "", false
	}
	if n.authorizer != nil {
		return p.String(), n.authorizer.SuperUser(p)
	}
	return p.String(), len(n.kafka.sasls()) > 0
}

// consoleClients are the console's Kafka clients, one per credential
// (the hash of the request's Authorization header), each connected to
// this node's own Kafka listener as that user. A client unused for
// consoleIdle is closed; close closes them all (the admin listener's
// close).
//
// Concurrency: safe for concurrent use by the admin listener's request
// goroutines; mu guards the map, never a call into a client.
type consoleClients struct {
	n *Node

	mu      sync.Mutex
	clients map[[32]byte]*consoleClient
	closed  bool
	stop    chan struct{}
}

type consoleClient struct {
	cl   *kgo.Client
	used time.Time
}

func newConsoleClients(n *Node) *consoleClients {
	c := &consoleClients{n: n, clients: map[[32]byte]*consoleClient{}, stop: make(chan struct{})}
	go c.reap()
	return c
}

// reap closes the clients idle for consoleIdle, every minute.
func (c *consoleClients) reap() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			var idle []*kgo.Client
			c.mu.Lock()
			for k, cc := range c.clients {
				if now.Sub(cc.used) > consoleIdle {
					idle = append(idle, cc.cl)
					delete(c.clients, k)
				}
			}
			c.mu.Unlock()
			for _, cl := range idle {
				cl.Close()
			}
		}
	}
}

// close closes every client; client fails afterwards.
func (c *consoleClients) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	all := c.clients
	c.clients = nil
	c.mu.Unlock()
	for _, cc := range all {
		cc.cl.Close()
	}
}

// errConsoleClosed is client's error once the admin listener closes.
var errConsoleClosed = errors.New("node: the console's clients are closed (the node is stopping)")

// client returns the Kafka client of the user who sent r, made at its
// first use.
func (c *consoleClients) client(r *http.Request) (*kgo.Client, error) {
	key := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConsoleClosed
	}
	if cc, ok := c.clients[key]; ok {
		cc.used = time.Now()
		c.mu.Unlock()
		return cc.cl, nil
	}
	c.mu.Unlock()
	opts, err := c.n.consoleOpts(r)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cl.Close()
		return nil, errConsoleClosed
	}
	if cc, ok := c.clients[key]; ok { // another request made one meanwhile
		cl.Close()
		cc.used = time.Now()
		return cc.cl, nil
	}
	c.clients[key] = &consoleClient{cl: cl, used: time.Now()}
	return cl, nil
}

// consoleOpts are the options of a client acting as the user who sent
// r, on the listener that authenticates that user: HTTP Basic is the
// SASL mechanism the user's password checks under (PLAIN, or SCRAM), a
// Bearer token OAUTHBEARER, on a SASL_PLAINTEXT listener before a
// SASL_SSL one; a request without credentials (no listener
// authenticates) uses a PLAINTEXT listener before an SSL one.
func (n *Node) consoleOpts(r *http.Request) ([]kgo.Opt, error) {
	var (
		l    *kafkaListener
		mech kgo.Opt
	)
	order := []configs.SecurityProtocol{configs.SASLPlaintext, configs.SASLSSL}
	user, password, basic := r.BasicAuth()
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case basic:
		for _, p := range order {
			for i := range n.kafka {
				k := &n.kafka[i]
				if l != nil || k.Protocol != p || k.serve.SASL == nil {
					continue
				}
				m, ok := k.serve.SASL.PasswordMechanism(user, password)
				if !ok {
					continue
				}
				l = k
				switch m {
				case "PLAIN":
					mech = kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())
				case "SCRAM-SHA-256":
					mech = kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
				case "SCRAM-SHA-512":
					mech = kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())
				}
			}
		}
	case bearer:
		for _, p := range order {
			for i := range n.kafka {
				k := &n.kafka[i]
				if l != nil || k.Protocol != p || k.serve.SASL == nil || !slices.Contains(k.serve.SASL.Mechanisms(), "OAUTHBEARER") {
					continue
				}
				if _, ok := k.serve.SASL.CheckToken(token); ok {
					l, mech = k, kgo.SASL(oauth.Auth{Token: token}.AsMechanism())
				}
			}
		}
	default:
		for _, p := range []configs.SecurityProtocol{configs.Plaintext, configs.SSL} {
			for i := range n.kafka {
				if l == nil && n.kafka[i].Protocol == p {
					l = &n.kafka[i]
				}
			}
		}
	}
	if l == nil {
		return nil, errors.New("node: no Kafka listener of this node takes these credentials")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(l.ln.Addr().String()),
		kgo.ClientID("skein-console"),
		kgo.Dialer(n.consoleDialer(l)),
		kgo.RetryTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.MetadataMinAge(time.Second),
	}
	if mech != nil {
		opts = append(opts, mech)
	}
	return opts, nil
}

// consoleDialer dials brokers for the console's clients: this node at
// its listener's bound address (on loopback when it is bound to every
// address), where its advertised one may not be reachable from the node
// itself; other nodes at what they advertise. On an SSL listener it
// presents no client certificate, so that the console never acts as the
// node's own principal, and it trusts this node's own certificate, and,
// for other nodes, the listener's truststore.
func (n *Node) consoleDialer(l *kafkaListener) func(ctx context.Context, network, host string) (net.Conn, error) {
	bound := l.ln.Addr().(*net.TCPAddr)
	local := bound.String()
	if bound.IP.IsUnspecified() {
		ip := net.IPv4(127, 0, 0, 1)
		if bound.IP.To4() == nil {
			ip = net.IPv6loopback
		}
		local = net.JoinHostPort(ip.String(), fmt.Sprint(bound.Port))
	}
	advertised := map[string]bool{local: true, l.Advertise: true}
	for _, e := range n.kafka.endpoints() {
		if e.Name == l.Name {
			advertised[net.JoinHostPort(e.Host, fmt.Sprint(e.Port))] = true
		}
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		self := advertised[host]
		if self {
			host = local
		}
		conn, err := d.DialContext(ctx, network, host)
		if err != nil || l.tls == nil {
			return conn, err
		}
		tc := consoleTLS(l.tls, host, self)
		tlsConn := tls.Client(conn, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tlsConn, nil
	}
}

// consoleTLS is the TLS the console dials an SSL listener with: no
// client certificate; this node's own certificate, whatever name it
// carries, when dialling itself; the listener's truststore and the
// peer's name otherwise.
func consoleTLS(s *security.ServerTLS, host string, self bool) *tls.Config {
	base := s.ClientConfig()
	tc := &tls.Config{MinVersion: base.MinVersion, MaxVersion: base.MaxVersion, CipherSuites: base.CipherSuites, RootCAs: base.RootCAs}
	if name, _, err := net.SplitHostPort(host); err == nil {
		tc.ServerName = name
	}
	if !self {
		return tc
	}
	// NB: the node's own certificate need not name the loopback address
	// the console dials, so the name is not checked: the certificate must
	// be the very one this listener serves.
	own, err := base.GetClientCertificate(nil)
	tc.InsecureSkipVerify = true
	tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if err != nil || own == nil || len(own.Certificate) == 0 || len(raw) == 0 || !slices.Equal(raw[0], own.Certificate[0]) {
			return errors.New("node: the console dialled a listener that does not serve this node's certificate")
		}
		return nil
	}
	return tc
}
