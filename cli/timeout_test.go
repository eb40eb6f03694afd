package cli

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/skeinlog/skein/configs"
)

// swallowingProxy is a node's advertised Kafka address that forwards every
// request to the node but those of the API keys it swallows, which go
// unanswered: a broker that hangs on them, its connection open.
type swallowingProxy struct {
	ln      net.Listener
	swallow map[int16]bool

	mu     sync.Mutex
	target string
	conns  []net.Conn
}

func newSwallowingProxy(t *testing.T, keys ...int16) *swallowingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &swallowingProxy{ln: ln, swallow: map[int16]bool{}}
	for _, k := range keys {
		p.swallow[k] = true
	}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go p.serve()
	return p
}

func (p *swallowingProxy) addr() string { return p.ln.Addr().String() }

func (p *swallowingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		to, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, to)
		p.mu.Unlock()
		go io.Copy(c, to)
		go p.forward(c, to)
	}
}

// forward copies requests from c to the node, each a frame of a 4-byte
// length then the header, whose first field is the API key.
func (p *swallowingProxy) forward(c, to net.Conn) {
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(frame, size[:])
		if _, err := io.ReadFull(c, frame[4:]); err != nil || len(frame) < 6 {
			return
		}
		if p.swallow[int16(binary.BigEndian.Uint16(frame[4:6]))] {
			continue
		}
		if _, err := to.Write(frame); err != nil {
			return
		}
	}
}

// startNodeBehind starts a node whose clients reach it through a proxy
// that swallows the given API keys, and returns the proxy's address.
func startNodeBehind(t *testing.T, keys ...int16) string {
	t.Helper()
	p := newSwallowingProxy(t, keys...)
	n := startNodeProcess(t, func(c *configs.Node) { c.Advertise = p.addr() })
	p.mu.Lock()
	p.target = n.Addr().String()
	p.mu.Unlock()
	return p.addr()
}

// TestProduceGivesUpOnSilentBroker: a broker that never answers Produce
// (a hung node) made `skein produce` wait forever; it gives up after
// --delivery-timeout and the request's own bound, saying so, and exits 1.
func TestProduceGivesUpOnSilentBroker(t *testing.T) {
	addr := startNodeBehind(t, 0) // Produce
	ok(t, addr, "", "topic", "create", "t", "-p", "1")
	fails(t, addr, 1, "skein: 1 of 1 records failed; the first: produce to t-0: gave up after 1s (--delivery-timeout): no answer; the last request to broker 1 was not answered in time: read tcp ",
		"x\n", "produce", "t", "--timeout", "1s", "--delivery-timeout", "1s")
}

// TestConsumeGivesUpOnSilentBroker: with -e, a broker that never answers
// Fetch made `skein consume` wait forever short of the end it had listed;
// it gives up after --timeout without a record, naming the partitions and
// their ends, and exits 1.
func TestConsumeGivesUpOnSilentBroker(t *testing.T) {
	addr := startNodeBehind(t, 1) // Fetch
	ok(t, addr, "", "topic", "create", "t", "-p", "2")
	ok(t, addr, "a\nb\n", "produce", "t", "-p", "0")
	r := skeinCmd(t, addr, "", "consume", "t", "-e", "--timeout", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "skein: consume t: gave up after 1s (--timeout) without a record of partitions [0], short of their end offsets [0:2]: their leaders did not answer") {
		t.Errorf("%v", r)
	}
}

// TestAdminGivesUpOnSilentBroker: an admin command whose request is never
// answered ends after --timeout, saying it gave up waiting.
func TestAdminGivesUpOnSilentBroker(t *testing.T) {
	addr := startNodeBehind(t, 16) // ListGroups
	fails(t, addr, 1, "skein: gave up after 1s (--timeout) waiting for the cluster's answer: ", "", "group", "list", "--timeout", "1s")
}

// TestProduceGivesUpWithoutProducerID: a broker that never answers
// InitProducerId (one without a quorum to take ids from) ends an acks=all
// produce after --delivery-timeout, saying what it waited for.
func TestProduceGivesUpWithoutProducerID(t *testing.T) {
	addr := startNodeBehind(t, 22) // InitProducerId
	ok(t, addr, "", "topic", "create", "t", "-p", "1")
	fails(t, addr, 1, "produce to t-0: gave up waiting for a producer id (InitProducerId: with --acks all the producer is idempotent, "+
		"and a broker with no ids left takes a block of them from the active controller): unable to initialize a producer ID due to request failures: ",
		"x\n", "produce", "t", "--timeout", "1s", "--delivery-timeout", "2s")
}
