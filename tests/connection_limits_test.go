package tests

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// limitsClient is a raw connection from a given local address; nc is nil
// when the node reset it before the dial returned.
type limitsClient struct {
	t  *testing.T
	nc net.Conn
}

func dialFrom(t *testing.T, local, addr string) *limitsClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	switch {
	case err != nil && strings.Contains(err.Error(), "reset"):
		return &limitsClient{t: t}
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &limitsClient{t: t, nc: nc}
}

// send writes an ApiVersions request.
func (c *limitsClient) send() {
	c.t.Helper()
	if c.nc == nil {
		return
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("limits"))
	if _, err := c.nc.Write(f.AppendRequest(nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3), 1)); err != nil && !errors.Is(err, net.ErrClosed) &&
		!strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
		c.t.Fatal(err)
	}
}

// answered reads the answer: true for one, false when the node closed the
// connection instead.
func (c *limitsClient) answered() bool {
	c.t.Helper()
	if c.nc == nil {
		return false
	}
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("neither answered nor closed within 30 s")
		}
		return false
	}
	_, err := io.CopyN(io.Discard, c.nc, int64(binary.BigEndian.Uint32(size[:])))
	return err == nil
}

// TestConnectionsPerIP: max.connections.per.ip and its overrides, by
// client address, on every listener: one connection over the limit is
// closed at once, the others and other addresses go on; the node counts
// what it refused.
func TestConnectionsPerIP(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"
		c.MaxConnectionsPerIP = 2
		c.MaxConnectionsPerIPOverrides = "127.0.7.2:4,127.0.7.3:0"
	})
	addr := b.node.ListenerAddr("EXTERNAL").String()
	for _, tc := range []struct {
		ip    string
		limit int
	}{{"127.0.7.1", 2}, {"127.0.7.2", 4}, {"127.0.7.3", 0}} {
		var open []*limitsClient
		for i := range tc.limit + 1 {
			c := dialFrom(t, tc.ip, addr)
			c.send()
			if got, want := c.answered(), i < tc.limit; got != want {
				t.Errorf("%s, connection %d: answered %v, want %v", tc.ip, i+1, got, want)
			}
			open = append(open, c)
		}
		// One closed makes room for one more.
		if tc.limit > 0 {
			open[0].nc.Close()
			eventually(t, tc.ip+": a connection again once one closed", func() bool {
				c := dialFrom(t, tc.ip, addr)
				c.send()
				return c.answered()
			})
		}
	}
	if v, _ := metricValue(b.metrics(), "skein_connections_refused_total", map[string]string{"listener": "EXTERNAL", "reason": "per_ip"}); v < 3 {
		t.Errorf("skein_connections_refused_total = %v, want at least 3", v)
	}
}

// TestMaxConnections: at max.connections a client listener stops
// accepting; a new client waits and is served once another leaves; the
// inter-broker listener goes on serving throughout.
func TestMaxConnections(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"
		c.MaxConnections = 3
	})
	external := b.node.ListenerAddr("EXTERNAL").String()
	var open []*limitsClient
	for range 3 {
		c := dialFrom(t, "127.0.7.11", external)
		c.send()
		if !c.answered() {
			t.Fatal("a connection under max.connections was not served")
		}
		open = append(open, c)
	}
	waiting := dialFrom(t, "127.0.7.11", external)
	waiting.send()
	// The inter-broker listener serves a connection sent after it.
	inter := dialFrom(t, "127.0.7.12", b.addr())
	inter.send()
	if !inter.answered() {
		t.Fatal("the inter-broker listener did not serve at max.connections")
	}
	waiting.nc.SetReadDeadline(time.Now())
	if n, _ := waiting.nc.Read(make([]byte, 1)); n > 0 {
		t.Fatal("a client over max.connections was served")
	}
	open[0].nc.Close()
	if !waiting.answered() {
		t.Fatal("the waiting client was not served once a connection closed")
	}
}

// TestConnectionCreationRate: a client listener held to
// max.connection.creation.rate accepts a flood of connections at that
// pace, every one served in the end, and counts the time it waited; the
// inter-broker listener is not held.
func TestConnectionCreationRate(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"
		c.MaxConnectionCreationRate = 5
	})
	for _, listener := range []string{"PLAINTEXT", "EXTERNAL"} {
		var clients []*limitsClient
		for range 15 {
			c := dialFrom(t, "127.0.7.10", b.node.ListenerAddr(listener).String())
			c.send()
			clients = append(clients, c)
		}
		for i, c := range clients {
			if !c.answered() {
				t.Errorf("%s: connection %d not served", listener, i+1)
			}
		}
	}
	throttled := func(listener string) float64 {
		v, _ := metricValue(b.metrics(), "skein_connection_accept_throttle_seconds_total", map[string]string{"listener": listener})
		return v
	}
	// Fifteen at five a second, with a burst of five: the last waited
	// about two seconds.
	if v := throttled("EXTERNAL"); v <= 0 {
		t.Errorf("EXTERNAL waited %vs in all, want some", v)
	}
	if v := throttled("PLAINTEXT"); v != 0 {
		t.Errorf("the inter-broker listener waited %vs, want none", v)
	}
}

// TestConnectionCreationRatePerIP: an address past its
// connection_creation_rate quota (KIP-612) has its new connections closed
// at once, while another address and the inter-broker listener connect as
// they please; the node counts what it refused.
func TestConnectionCreationRatePerIP(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"
	})
	ctx := ctxFor(t)
	flooder := "127.0.7.20"
	res, err := b.admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: &flooder}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 2}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, res)
	}
	external, inter := b.node.ListenerAddr("EXTERNAL").String(), b.node.ListenerAddr("PLAINTEXT").String()
	served := func(ip, addr string, n int) int {
		count := 0
		for range n {
			c := dialFrom(t, ip, addr)
			c.send()
			if c.answered() {
				count++
			}
		}
		return count
	}
	// A bucket of 11 s of the quota (22 connections) and then 2 a second:
	// of 60 at once, most are closed.
	if got := served(flooder, external, 60); got >= 40 {
		t.Errorf("the flooding address: %d of 60 connections served, want most closed", got)
	}
	if got := served("127.0.7.21", external, 30); got != 30 {
		t.Errorf("another address: %d of 30 connections served, want all", got)
	}
	if got := served(flooder, inter, 30); got != 30 {
		t.Errorf("the flooding address on the inter-broker listener: %d of 30 served, want all", got)
	}
	if v, _ := metricValue(b.metrics(), "skein_connections_refused_total", map[string]string{"listener": "EXTERNAL", "reason": "ip_rate"}); v < 20 {
		t.Errorf("skein_connections_refused_total{ip_rate} = %v, want at least 20", v)
	}
}
