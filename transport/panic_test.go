package transport

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHandlerPanicClosesOnlyTheConnection: a handler that panics, while
// starting a request (on the connection's reader) or finishing it (on its
// writer), costs the client its connection, is logged with its stack, and
// leaves the server serving: a bug in one handler never takes a node down.
func TestHandlerPanicClosesOnlyTheConnection(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	api := NewAPI(Deps{Logger: zerolog.Nop()}, nil)
	api.handlers[3].handle = func(*conn, kmsg.Request) finish { panic("metadata bug") } // Metadata: on the reader
	api.handlers[32].handle = func(*conn, kmsg.Request) finish {                        // DescribeConfigs: on the writer
		return func() kmsg.Response { panic("describe configs bug") }
	}
	cfg := DefaultConfig()
	cfg.Logger = zerolog.New(logs)
	srv := NewServer(cfg, api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(Listener{Name: "PLAINTEXT"}, ln)
	defer srv.Close(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrDescribeConfigsRequest()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Request(ctx, req); err == nil {
			t.Fatalf("api key %d: a response from a handler that panicked", req.Key())
		}
		cl.Close()
		// The server still answers, on a new connection.
		cl, err = kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
			t.Fatalf("after api key %d panicked: %v", req.Key(), err)
		}
		cl.Close()
	}
	out := logs.String()
	for _, want := range []string{"metadata bug", "describe configs bug", "request handler panicked", "goroutine"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// syncWriter serialises writes to w, for a log written by several
// goroutines and read by the test after they are done.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
