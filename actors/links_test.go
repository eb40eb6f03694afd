package actors

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// A peer that stays down costs one line when its link fails and one when
// it works again, however many attempts fail in between.
func TestLinkFailuresLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	lk := &links{down: map[string]int{}}
	log := slog.New(linkLog{next: SlogHandler(zerolog.New(&buf).Level(zerolog.WarnLevel)), links: lk})
	down := errors.New("connection refused")
	log.Error("EndpointWriter lost connection", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down))
	for i := range 10 {
		log.Error("EndpointWriter failed to connect", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down), slog.Int("retry", i))
		log.Error("EndpointWriter failed to create receive stream", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down))
	}
	log.Error("EndpointWriter failed to connect", slog.String("address", "10.0.0.3:9093"), slog.Any("error", down))
	lk.up("10.0.0.2:9093", log)
	lk.up("10.0.0.4:9093", log) // never down: not worth a line
	log.Error("EndpointWriter failed to serialize message", slog.String("address", "10.0.0.2:9093"))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`"address":"10.0.0.2:9093","error":"connection refused","message":"remoting: a peer is unreachable`,
		`"address":"10.0.0.3:9093","error":"connection refused","message":"remoting: a peer is unreachable`,
		`"address":"10.0.0.2:9093","failures":21,"message":"remoting: a peer is reachable again"`,
		`"message":"EndpointWriter failed to serialize message"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to contain %s", i, lines[i], w)
		}
	}
}

// A slow link delays its messages by Delay plus up to Jitter, and keeps
// their order; a cut one drops them; another peer's pass at once; a fault
// with a lifetime goes by itself.
func TestLinkFaults(t *testing.T) {
	l := NewLinks()
	p := newPeers(l, slog.New(slog.DiscardHandler))
	delivered := make(chan any, 100)
	mw := func(_ any, target *actor.PID, env *actor.MessageEnvelope) {
		p.fault(target.Address, func() { delivered <- env.Message })
	}
	slow, cut, other := &actor.PID{Address: "slow:1"}, &actor.PID{Address: "cut:1"}, &actor.PID{Address: "other:1"}
	l.Set(slow.Address, LinkFault{Delay: 5 * time.Millisecond, Jitter: 20 * time.Millisecond})
	l.Set(cut.Address, LinkFault{Cut: true})
	start := time.Now()
	for i := range 20 {
		mw(nil, slow, &actor.MessageEnvelope{Message: i})
		mw(nil, cut, &actor.MessageEnvelope{Message: -1})
	}
	mw(nil, other, &actor.MessageEnvelope{Message: "other"})
	if got := <-delivered; got != "other" {
		t.Fatalf("first delivered %v, want the unfaulted peer's message", got)
	}
	for i := range 20 {
		if got := <-delivered; got != i {
			t.Fatalf("delivered %v, want %d: a slow link reordered its messages", got, i)
		}
	}
	if waited := time.Since(start); waited < 5*time.Millisecond {
		t.Fatalf("delivered after %v, before the link's delay", waited)
	}
	if len(l.List()) != 2 || l.Heal() != 2 || len(l.List()) != 0 {
		t.Fatal("Heal did not remove the two faults")
	}
	expired := make(chan string, 1)
	l.Expired = func(addr string, _ LinkFault) { expired <- addr }
	l.Set(cut.Address, LinkFault{Cut: true, For: 10 * time.Millisecond})
	if addr := <-expired; addr != cut.Address || len(l.List()) != 0 {
		t.Fatalf("expired %q, %d faults left", addr, len(l.List()))
	}
	mw(nil, cut, &actor.MessageEnvelope{Message: "healed"})
	if got := <-delivered; got != "healed" {
		t.Fatalf("after the cut expired, delivered %v", got)
	}
}
