package partition

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchVersion is the Fetch version followers send: v15 brought
// ReplicaState, v18 the follower's high watermark (KIP-1166).
const fetchVersion = 18

// maxFetchResponse bounds the size a leader's answer may claim: more is
// a broken stream, not records (a single batch may exceed
// replica.fetch.max.bytes, as KIP-74 lets it, but not by this much).
const maxFetchResponse = 1 << 30

// leaderConn is a fetcher's connection to its leader node's Kafka
// listener: one Fetch at a time, dialled on first use. Only the goroutine
// of the fetch under way sends and reads on it; the fetcher closes it
// from its own goroutine to end that fetch early, hence the mutex around
// the connection, which a dial may set while close runs.
type leaderConn struct {
	addr      string
	corr      int32
	formatter *kmsg.RequestFormatter
	tls       *tls.Config // nil for PLAINTEXT

	mu     sync.Mutex
	nc     net.Conn // TLS over raw when tls is set
	raw    net.Conn
	closed bool
}

func newLeaderConn(addr string, node int32, tc *tls.Config) *leaderConn {
	return &leaderConn{addr: addr, tls: tc, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID("skein-follower-" + strconv.Itoa(int(node))))}
}

// close ends the connection, and with it any fetch under way. It closes
// the TCP connection itself: a TLS close would send close_notify, which
// can block on a leader that reads nothing (paused, or gone).
func (lc *leaderConn) close() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.closed = true
	if lc.raw != nil {
		lc.raw.Close()
	}
}

// conn dials on first use; a connection closed meanwhile stays closed.
func (lc *leaderConn) conn(deadline time.Time) (net.Conn, error) {
	lc.mu.Lock()
	nc, closed := lc.nc, lc.closed
	lc.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	if nc != nil {
		return nc, nil
	}
	raw, err := net.DialTimeout("tcp", lc.addr, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		raw.Close()
		return nil, net.ErrClosed
	}
	lc.raw, nc = raw, raw
	lc.mu.Unlock()
	if lc.tls != nil {
		// The handshake runs outside the lock, so that close can end it.
		c := lc.tls.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(lc.addr)
		}
		tc := tls.Client(raw, c)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS to the leader: %w", err)
		}
		nc = tc
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		raw.Close()
		return nil, net.ErrClosed
	}
	lc.nc = nc
	return nc, nil
}

// roundTrip sends req and reads its answer into buf, which it grows as
// needed and returns: the response's record bytes alias it. The whole
// exchange, dial included, ends by the deadline. After an error the
// connection is unusable.
func (lc *leaderConn) roundTrip(req *kmsg.FetchRequest, buf []byte, deadline time.Time) (*kmsg.FetchResponse, []byte, error) {
	nc, err := lc.conn(deadline)
	if err != nil {
		return nil, buf, err
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return nil, buf, err
	}
	lc.corr++
	buf = lc.formatter.AppendRequest(buf[:0], req, lc.corr)
	if _, err := nc.Write(buf); err != nil {
		return nil, buf, err
	}
	if _, err := io.ReadFull(nc, buf[:4]); err != nil {
		return nil, buf, err
	}
	n := int(binary.BigEndian.Uint32(buf))
	if n < 4 || n > maxFetchResponse {
		return nil, buf, fmt.Errorf("fetch response of %d bytes", n)
	}
	buf = slices.Grow(buf[:0], n)[:n]
	if _, err := io.ReadFull(nc, buf); err != nil {
		return nil, buf, err
	}
	if corr := int32(binary.BigEndian.Uint32(buf)); corr != lc.corr {
		return nil, buf, fmt.Errorf("fetch response to request %d, expected %d", corr, lc.corr)
	}
	rd := kbin.Reader{Src: buf[4:]}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if resp.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, buf, fmt.Errorf("fetch response: %w", err)
	}
	return resp, buf, nil
}
