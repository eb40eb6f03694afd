package partition

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLeaderConnRefusesBrokenAnswers runs a fetcher's connection against
// a listener that answers each request with the given bytes: a size past
// the bound, another request's correlation id and a truncated body are
// errors, never a panic nor a giant allocation; a good answer parses, its
// records aliasing the buffer.
func TestLeaderConnRefusesBrokenAnswers(t *testing.T) {
	good := kmsg.NewPtrFetchResponse()
	good.Version = fetchVersion
	rt := kmsg.NewFetchResponseTopic()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = []byte("records")
	rt.Partitions = append(rt.Partitions, rp)
	good.Topics = append(good.Topics, rt)
	frame := func(corr int32, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+1+len(body)))
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = append(b, 0) // the response header's tags
		return append(b, body...)
	}
	for _, c := range []struct {
		name, err string
		answer    []byte
	}{
		{"oversize", "fetch response of", binary.BigEndian.AppendUint32(nil, maxFetchResponse+1)},
		{"another correlation id", "fetch response to request 7", frame(7, good.AppendTo(nil))},
		{"truncated body", "fetch response:", frame(1, good.AppendTo(nil)[:10])},
		{"good", "", frame(1, good.AppendTo(nil))},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				var size [4]byte
				if _, err := io.ReadFull(nc, size[:]); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
					return
				}
				nc.Write(c.answer)
				io.Copy(io.Discard, nc) // until the client closes
			}()
			lc := newLeaderConn(ln.Addr().String(), 1, nil)
			defer lc.close()
			req := kmsg.NewPtrFetchRequest()
			req.Version = fetchVersion
			resp, buf, err := lc.roundTrip(req, nil, time.Now().Add(time.Minute))
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err == "":
				got := resp.Topics[0].Partitions[0].RecordBatches
				if string(got) != "records" {
					t.Fatalf("records %q", got)
				}
				if !aliases(got, buf) {
					t.Error("the records were copied out of the buffer")
				}
			case err == nil || !strings.Contains(err.Error(), c.err):
				t.Fatalf("error %v, want one with %q", err, c.err)
			}
		})
	}
}

// aliases reports whether b lies inside buf.
func aliases(b, buf []byte) bool {
	for i := range buf[:len(buf)-len(b)+1] {
		if &buf[i] == &b[0] {
			return true
		}
	}
	return false
}

// TestLeaderConnClosesUnderAFetch closes a connection from another
// goroutine, as the fetcher does when a fetch times out or the actor
// stops, while a fetch dials or waits for its answer: the fetch ends with
// an error, and a connection closed before its first fetch never dials.
func TestLeaderConnClosesUnderAFetch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- nc // read nothing, answer nothing
	}()
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	lc := newLeaderConn(ln.Addr().String(), 1, nil)
	errs := make(chan error, 1)
	go func() {
		_, _, err := lc.roundTrip(req, nil, time.Now().Add(time.Minute))
		errs <- err
	}()
	nc := <-accepted
	defer nc.Close()
	lc.close()
	if err := <-errs; err == nil {
		t.Fatal("a fetch whose connection was closed under it succeeded")
	}

	closed := newLeaderConn(ln.Addr().String(), 1, nil)
	closed.close()
	if _, _, err := closed.roundTrip(req, nil, time.Now().Add(time.Minute)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a fetch on a closed connection: %v, want a closed-connection error", err)
	}
}
