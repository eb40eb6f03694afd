package actors

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// protoactor's remote logs every failed attempt to reach a peer, two
// lines every two seconds for as long as the peer is down. linkLog turns
// that into one warning when a peer's link fails, and links.up into one
// when it works again, with the number of failures in between: a failure
// is logged when it starts and when it ends, never once per retry.
type linkLog struct {
	next  slog.Handler
	links *links
}

type links struct {
	mu   sync.Mutex
	down map[string]int // address → failures since the link went down
}

// up ends a failure of the link to addr, if there was one: protoactor
// publishes EndpointConnectedEvent on the actor system's event stream
// when a link works.
func (k *links) up(addr string, log *slog.Logger) {
	k.mu.Lock()
	n, wasDown := k.down[addr]
	delete(k.down, addr)
	k.mu.Unlock()
	if wasDown {
		log.Warn("remoting: a peer is reachable again", slog.String("address", addr), slog.Int("failures", n))
	}
}

// linkFailures are the remote's messages that say a peer is unreachable.
var linkFailures = map[string]bool{
	"EndpointWriter failed to connect":                  true,
	"EndpointWriter failed to create receive stream":    true,
	"EndpointWriter lost connection":                    true,
	"EndpointWriter failed to send connect request":     true,
	"EndpointWriter failed to receive connect response": true,
}

func (l linkLog) Enabled(ctx context.Context, level slog.Level) bool {
	return l.next.Enabled(ctx, level)
}

func (l linkLog) Handle(ctx context.Context, r slog.Record) error {
	if !linkFailures[r.Message] {
		return l.next.Handle(ctx, r)
	}
	var addr string
	var cause slog.Value
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "address":
			addr = a.Value.String()
		case "error":
			cause = a.Value
		}
		return true
	})
	l.links.mu.Lock()
	n, wasDown := l.links.down[addr]
	l.links.down[addr] = n + 1
	l.links.mu.Unlock()
	if wasDown {
		return nil
	}
	out := slog.NewRecord(r.Time, slog.LevelWarn, "remoting: a peer is unreachable; retrying, and logging again once it is back", r.PC)
	out.AddAttrs(slog.String("address", addr), slog.Any("error", cause.Any()))
	return l.next.Handle(ctx, out)
}

func (l linkLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return linkLog{next: l.next.WithAttrs(attrs), links: l.links}
}

func (l linkLog) WithGroup(name string) slog.Handler {
	return linkLog{next: l.next.WithGroup(name), links: l.links}
}

// Links are the network faults injected between this node and others,
// by the peer's remoting address: a message that an actor of the tree
// sends to a PID there is dropped (the link is cut, or at a rate) or
// delayed. Set on both nodes, a fault cuts or slows both directions.
// Messages sent from outside any actor (the root context) pass.
type Links struct {
	mu     sync.RWMutex
	faults map[string]LinkFault
}

// LinkFault is what happens to messages to one peer.
type LinkFault struct {
	Cut      bool          // drop every message
	DropRate float64       // drop this fraction of messages, at random
	Delay    time.Duration // deliver the others this much later
}

// NewLinks returns Links with no fault.
func NewLinks() *Links { return &Links{faults: map[string]LinkFault{}} }

// Set sets the fault on the link to the peer at addr.
func (l *Links) Set(addr string, f LinkFault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults[addr] = f
}

// Heal removes every fault.
func (l *Links) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.faults)
}

func (l *Links) fault(addr string) (LinkFault, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	f, ok := l.faults[addr]
	return f, ok
}

// Middleware is the sender middleware that applies the faults.
func (l *Links) Middleware(next actor.SenderFunc) actor.SenderFunc {
	return func(ctx actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		f, ok := l.fault(target.GetAddress())
		switch {
		case !ok:
			next(ctx, target, env)
		case f.Cut, f.DropRate > 0 && rand.Float64() < f.DropRate:
		case f.Delay > 0:
			time.AfterFunc(f.Delay, func() { next(ctx, target, env) })
		default:
			next(ctx, target, env)
		}
	}
}
