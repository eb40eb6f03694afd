package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/internal/logging"
)

// syncBuffer is a bytes.Buffer safe for the actor goroutines that log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}

// captureStderr points os.Stderr at a pipe until the returned function is
// called, which restores it and returns what was written.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	return func() string {
		os.Stderr = saved
		w.Close()
		s := <-out
		r.Close()
		return s
	}
}

// jsonFields decodes one JSON line, failing on a duplicate key (which
// json.Unmarshal would silently accept).
func jsonFields(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", line)
	}
	fields := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		key := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if _, dup := fields[key]; dup {
			t.Fatalf("duplicate key %q in %s", key, line)
		}
		fields[key] = v
	}
	return fields
}

type panicky struct{ started chan<- struct{} }

func (p *panicky) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.started <- struct{}{}
	case string:
		panic(m)
	}
}

// TestProtoactorLogGoesToZerolog: a panicking actor's "[ACTOR] Recovering"
// line (protoactor logs it at info, so the bridge must be at debug to pass
// it) and a dead letter land in the zerolog logger as JSON without
// duplicate keys, and protoactor writes nothing to stderr.
func TestProtoactorLogGoesToZerolog(t *testing.T) {
	// Control: protoactor's default logger writes to stderr, and the
	// capture sees it.
	restore := captureStderr(t)
	actor.NewActorSystem().Shutdown()
	if got := restore(); !strings.Contains(got, "actor system started") {
		t.Fatalf("control: protoactor's default logger wrote %q to stderr, want its start line", got)
	}

	restore = captureStderr(t)
	var buf syncBuffer
	logger, err := logging.New(&buf, "debug", "json", false)
	if err != nil {
		t.Fatal(err)
	}
	sys := NewSystem(logger)
	started := make(chan struct{}, 2)
	props := actor.PropsFromProducer(func() actor.Actor { return &panicky{started: started} },
		actor.WithGuardian(actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)))
	pid, err := sys.Root.SpawnNamed(props, "panicky")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	sys.Root.Send(pid, "boom")
	<-started // restarted: the Recovering line was written before
	sys.Root.Send(sys.NewLocalPID("nobody"), "lost letter")
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	sys.Shutdown()
	if got := restore(); got != "" {
		t.Fatalf("protoactor wrote to stderr:\n%s", got)
	}

	var recovering, deadLetter map[string]any
	for _, line := range buf.lines() {
		f := jsonFields(t, line)
		if f["component"] != "protoactor" || f["actor_system"] != sys.ID {
			t.Errorf("line lacks component and actor_system: %s", line)
		}
		if n := strings.Count(line, `"time":`); n != 1 {
			t.Errorf("%d time fields: %s", n, line)
		}
		switch f["message"] {
		case "[ACTOR] Recovering":
			recovering = f
		case "[DeadLetter]":
			deadLetter = f
		}
	}
	if recovering == nil || recovering["level"] != "info" || recovering["self"] != "nonhost/panicky" || recovering["reason"] != "boom" {
		t.Errorf("Recovering line = %v, want level info, self nonhost/panicky, reason boom; log:\n%s", recovering, strings.Join(buf.lines(), "\n"))
	}
	if deadLetter == nil || deadLetter["actor_message"] != "lost letter" || deadLetter["pid"] != "nonhost/nobody" {
		t.Errorf("DeadLetter line = %v, want actor_message \"lost letter\" and pid nonhost/nobody", deadLetter)
	}
}

// TestProtoactorLevel: the bridge is at warn unless the node logs at debug
// or trace.
func TestProtoactorLevel(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  slog.Level // the lowest level the bridge passes
	}{
		{"trace", slog.LevelDebug - 4},
		{"debug", slog.LevelDebug},
		{"info", slog.LevelWarn},
		{"warn", slog.LevelWarn},
		{"error", slog.LevelError},
	} {
		logger, err := logging.New(io.Discard, tc.level, "json", false)
		if err != nil {
			t.Fatal(err)
		}
		sys := NewSystem(logger)
		l := sys.Logger()
		ctx := context.Background()
		below := tc.level != "trace" && l.Enabled(ctx, tc.want-1) // nothing is below trace
		if !l.Enabled(ctx, tc.want) || below {
			t.Errorf("node at %s: bridge enabled at %v: %v, just below: %v; want only from %v",
				tc.level, tc.want, l.Enabled(ctx, tc.want), l.Enabled(ctx, tc.want-1), tc.want)
		}
		sys.Shutdown()
	}
}

func TestSlogHandlerRenamesClashingKeys(t *testing.T) {
	var buf bytes.Buffer
	logger, err := logging.New(&buf, "info", "json", false)
	if err != nil {
		t.Fatal(err)
	}
	l := slog.New(SlogHandler(logger)).With("level", "pre-attached")
	l.Info("hello", "message", "payload", "time", 3, "pid", actor.NewPID("node-2:9100", "node/2"), "n", 1)
	l.WithGroup("g").Warn("grouped", "message", "inner")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	f := jsonFields(t, lines[0])
	want := map[string]any{"message": "hello", "level": "info", "actor_message": "payload", "actor_time": 3.0,
		"actor_level": "pre-attached", "pid": "node-2:9100/node/2", "n": 1.0}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, f[k], v, lines[0])
		}
	}
	f = jsonFields(t, lines[1])
	if f["message"] != "grouped" || f["g.message"] != "inner" || f["level"] != "warn" {
		t.Errorf("grouped line: %s", lines[1])
	}
}

func ExampleNewSystem() {
	logger := zerolog.New(os.Stdout).Level(zerolog.InfoLevel)
	sys := NewSystem(logger)
	defer sys.Shutdown()
	fmt.Println(sys.Logger().Enabled(context.Background(), slog.LevelInfo))
	// Output: false
}
