//go:build kafkadiff

package diff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cases talk to the brokers with no client library in between: kgo
// would pick versions, shard requests over leaders and retry retriable
// errors, and each of those hides a difference. A request goes out exactly
// as the case built it, on a connection of its own (cases that block, a
// JoinGroup waiting for the rebalance, run concurrently), and the answer
// comes back decoded but untouched.

// requestTimeout bounds one request's round trip; a JoinGroup waiting for
// a rebalance is the longest a case sends.
const requestTimeout = 30 * time.Second

var correlation atomic.Int32

// formatter names the client "skein-diff" in every request header.
var formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("skein-diff"))

// outcome is what a broker did with a request: answered it, or closed the
// connection (Kafka does for a request it cannot parse).
type outcome struct {
	resp kmsg.Response
	err  error
	sent int16 // the request's version
}

// version is the version of the request that gave a and b.
func (a outcome) version(b outcome) int16 { return max(a.sent, b.sent) }

// send writes req, at the version it carries, to the broker at addr and
// reads its answer.
func send(addr string, req kmsg.Request) outcome {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return outcome{err: err, sent: req.GetVersion()}
	}
	defer c.Close()
	o := roundTrip(c, req)
	o.sent = req.GetVersion()
	return o
}

// sendAs is send on a connection that first logs in as user with
// SASL/PLAIN (password user+"-secret"), as a client of a SASL listener
// does; send itself for no user.
func sendAs(addr, user string, req kmsg.Request) outcome {
	if user == "" {
		return send(addr, req)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return outcome{err: err, sent: req.GetVersion()}
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	if o := roundTrip(c, hs); o.err != nil || o.resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		return outcome{err: fmt.Errorf("SaslHandshake: %v %+v", o.err, o.resp), sent: req.GetVersion()}
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + user + "-secret")
	if o := roundTrip(c, auth); o.err != nil || o.resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
		return outcome{err: fmt.Errorf("SaslAuthenticate as %s: %v %+v", user, o.err, o.resp), sent: req.GetVersion()}
	}
	o := roundTrip(c, req)
	o.sent = req.GetVersion()
	return o
}

func roundTrip(c net.Conn, req kmsg.Request) outcome {
	if err := c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return outcome{err: err}
	}
	id := correlation.Add(1)
	if _, err := c.Write(formatter.AppendRequest(nil, req, id)); err != nil {
		return outcome{err: err}
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return outcome{err: closed(err)}
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return outcome{err: closed(err)}
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != id {
		return outcome{err: fmt.Errorf("response without correlation id %d", id)}
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if req.Key() == 18 && req.GetVersion() > req.MaxVersion() {
		// A broker answers an ApiVersions it does not speak at v0
		// (KIP-511).
		resp.SetVersion(0)
	}
	// The response header is flexible with the request, except
	// ApiVersions' (always v0, so that any client can read it).
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) < 1 || body[0] != 0 {
			return outcome{err: errors.New("response header with tagged fields")}
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return outcome{err: fmt.Errorf("decode %T v%d: %w", resp, req.GetVersion(), err)}
	}
	return outcome{resp: resp}
}

// errClosed is the outcome of a broker that closed the connection instead
// of answering: the cases compare it like an answer.
var errClosed = errors.New("connection closed without a response")

func closed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return errClosed
	}
	var op *net.OpError
	if errors.As(err, &op) && !op.Timeout() {
		return errClosed // a reset
	}
	return err
}
