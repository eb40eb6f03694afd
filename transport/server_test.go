package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	s := NewServer(cfg, NewAPI(Deps{}, nil))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestApiVersionsWithFranzGo(t *testing.T) {
	s := startServer(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatal(err)
	}
	// Every key's advertised range, pinned: a change here is a change
	// clients see. Produce is advertised from v0 although v0-2 are
	// refused, as Kafka 4 does (some librdkafka versions decide
	// compression support from the advertised range).
	want := map[int16][2]int16{
		0: {0, 13}, 1: {4, 18}, 2: {1, 11}, 3: {0, 13}, 8: {2, 10}, 9: {1, 10},
		10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6},
		16: {0, 5}, 17: {0, 1}, 18: {0, 4}, 19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 22: {0, 5},
		23: {2, 4}, 32: {1, 4}, 33: {0, 2}, 35: {1, 4}, 36: {0, 2}, 37: {0, 3}, 42: {0, 2}, 43: {0, 2}, 45: {0, 1}, 46: {0, 0},
		44: {0, 1}, 47: {0, 0}, 50: {0, 0}, 51: {0, 0}, 55: {0, 2}, 57: {0, 2}, 60: {0, 2}, 64: {0, 0}, 68: {0, 1}, 69: {0, 1}, 74: {0, 1}, 75: {0, 0},
		24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {1, 2}, 28: {0, 5}, 61: {0, 0}, 65: {0, 0}, 66: {0, 2},
		29: {1, 3}, 30: {1, 3}, 31: {1, 3}, 48: {0, 1}, 49: {0, 1},
		83: {0, 0}, 84: {0, 0}, 85: {0, 1}, 86: {0, 0}, 87: {0, 1}, // share-group state (KIP-932)
		76: {1, 1}, 77: {1, 1}, 88: {0, 0}, 89: {0, 0}, 90: {0, 1}, 91: {0, 0}, 92: {0, 0}, 78: {1, 2}, 79: {1, 2},
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("advertised ranges:\n got %v\nwant %v", got, want)
	}
	// A new cluster starts at Kafka 4.2's levels: KIP-890's transaction
	// version 2 is finalized, so clients use it; so are group.version 1,
	// KIP-848's consumer groups, share.version 1, KIP-932's share groups,
	// streams.version 1, KIP-1071's streams groups, and metadata.version
	// 4.2-IV1. Their epoch is the image's offset: -1 here, with none.
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	if want := map[string]int16{"metadata.version": 29, "transaction.version": 2, "group.version": 1, "share.version": 1, "streams.version": 1}; !maps.Equal(finalized, want) || resp.FinalizedFeaturesEpoch != -1 {
		t.Fatalf("finalized features %+v (epoch %d), want %v", resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch, want)
	}
}

// TestApiVersionsFeaturesFromZeroAtV4 checks KIP-1022: supported features
// whose range starts at 0 are listed from v4 only (clients before it read
// such a range as invalid); the finalized ones at v3 too.
func TestApiVersionsFeaturesFromZeroAtV4(t *testing.T) {
	s := startServer(t)
	for _, v := range []int16{3, 4} {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		// A flexible request header ends with an empty tag section.
		body := rawRequest(t, nc, 18, v, 1, append([]byte{0}, req.AppendTo(nil)...))
		nc.Close()
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = v
		if err := resp.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		// metadata.version's range starts at 7: listed at v3 too.
		if want := map[int16]int{3: 1, 4: 5}[v]; len(resp.SupportedFeatures) != want || len(resp.FinalizedFeatures) != 5 {
			t.Errorf("v%d: supported %+v, finalized %+v; want %d supported and 5 finalized",
				v, resp.SupportedFeatures, resp.FinalizedFeatures, want)
		}
	}
}

// requestFrame is a request with a v1 header and a null client id.
func requestFrame(key, version int16, corr int32, body []byte) []byte {
	frame := binary.BigEndian.AppendUint32(nil, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

// rawRequest writes one request frame and reads one response frame.
func rawRequest(t *testing.T, nc net.Conn, key, version int16, corr int32, body []byte) []byte {
	t.Helper()
	if _, err := nc.Write(requestFrame(key, version, corr, body)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, resp); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	return resp[4:]
}

// TestApiVersionsNewerThanServed checks KIP-511: a version we do not know is
// answered at v0 with UNSUPPORTED_VERSION and ApiVersions' own range, as
// Kafka answers it (tests/diff compares the two).
func TestApiVersionsNewerThanServed(t *testing.T) {
	s := startServer(t)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body := rawRequest(t, nc, 18, 99, 7, []byte{0xde, 0xad})
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
		resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("got error %d with keys %+v, want UNSUPPORTED_VERSION and ApiVersions 0-4", resp.ErrorCode, resp.ApiKeys)
	}
}

// TestProduceBelowV3IsRefused checks that Produce v0-2, advertised for
// old librdkafka, are answered UNSUPPORTED_VERSION for every partition and
// leave the connection open.
func TestProduceBelowV3IsRefused(t *testing.T) {
	s := startServer(t)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for version := int16(0); version <= 2; version++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = version, 1, 1000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		for p := int32(0); p < 2; p++ {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		req.Topics = append(req.Topics, tp)
		body := rawRequest(t, nc, 0, version, int32(version), req.AppendTo(nil))
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: answered %+v", version, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.UnsupportedVersion.Code {
				t.Errorf("v%d partition %d: error %d, want UNSUPPORTED_VERSION", version, p.Partition, p.ErrorCode)
			}
		}
	}
}

// TestHostileFramesCloseTheConnection sends frames a broker must refuse; each
// closes the connection, and the server keeps serving others.
func TestHostileFramesCloseTheConnection(t *testing.T) {
	s := startServer(t)
	for name, frame := range map[string][]byte{
		"huge size":      {0x7f, 0xff, 0xff, 0xff},
		"negative size":  {0xff, 0xff, 0xff, 0xff},
		"tiny":           {0, 0, 0, 2, 0, 18},
		"unknown key":    {0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
		"truncated body": {0, 0, 0, 12, 0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 1, 2},
		"bad client id":  {0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0x7f, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write(frame)
			// The server must close on its own: a read that times out
			// instead of seeing EOF fails the test.
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadAll(nc); err != nil {
				t.Fatalf("connection not closed by the server: %v", err)
			}
		})
	}
	// Still serving.
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rawRequest(t, nc, 18, 0, 1, nil)
}

// TestStopResetsUnservedConnections: a connection the server never
// answered anything on when it stops is reset, not closed in order, so
// that the client sees a network failure it retries rather than an
// end-of-file it takes for a TLS or SASL mismatch. An answer to
// ApiVersions alone does not count: franz-go asks it first on each
// connection, and takes an end-of-file on the next request for a SASL
// mismatch (TestRollingRestart's producers, asking for their id, failed
// their records so).
func TestStopResetsUnservedConnections(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	s := NewServer(cfg, NewAPI(Deps{}, nil))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	early, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	// Answered its ApiVersions only: franz-go takes an end-of-file on its
	// next request for a SASL mismatch.
	versioned, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer versioned.Close()
	rawRequest(t, versioned, 18, 0, 1, nil)
	// Served: an answered connection still closes in order.
	served, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer served.Close()
	rawRequest(t, served, 18, 0, 1, nil)
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 2, 1, 1000
	rawRequest(t, served, 0, 2, 2, produce.AppendTo(nil)) // refused, but answered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := firstAnswer(early); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a first request after the stop, on a connection made before it: %v, want a reset", err)
	}
	if err := firstAnswer(versioned); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a request after the stop, on a connection answered only its ApiVersions before it: %v, want a reset", err)
	}
	served.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := served.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("reading a served connection after the stop: %v, want EOF", err)
	}
}

// firstAnswer sends an ApiVersions request and reads the answer's first
// byte, returning the error of whichever failed.
func firstAnswer(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(requestFrame(18, 0, 1, nil)); err != nil {
		return err
	}
	_, err := nc.Read(make([]byte, 1))
	return err
}
