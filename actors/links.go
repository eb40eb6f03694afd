package actors

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
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
// by the peer's remoting address. A message to a PID there, whoever sends
// it (an actor, the root context, a future), is dropped (the link is cut,
// or at a rate) or delayed (peers.go), and so are replication's fetches
// to the peer and answers to it (Draw). A cut also drops whatever else
// this node's connection to the peer carries, protoactor's own messages
// included. A fault is on what this node sends: set on both nodes, it
// cuts or slows both directions.
//
// Delayed messages keep their order, as on the one connection remoting
// keeps to a peer: a link's messages wait in one queue, each until its
// own delay (Delay plus up to Jitter) has passed and the one before it
// has left.
type Links struct {
	// Expired, if set before the first Set, is called (on a timer's
	// goroutine) with the peer address and the fault that For removed.
	Expired func(addr string, f LinkFault)

	mu     sync.RWMutex
	faults map[string]*linkState
}

// LinkFault is what happens to messages to one peer.
type LinkFault struct {
	Cut      bool          // drop every message
	DropRate float64       // drop this fraction of messages, at random
	Delay    time.Duration // deliver the others this much later
	Jitter   time.Duration // and up to this much more, at random
	// For bounds the fault's lifetime: it is removed this long after Set
	// (0: until Heal or Remove).
	For time.Duration
	// Expires is when a fault with For ends; set by Set.
	Expires time.Time
}

// linkState is a link's fault and its queue of delayed messages.
type linkState struct {
	fault LinkFault
	line  *delayLine
}

// NewLinks returns Links with no fault.
func NewLinks() *Links { return &Links{faults: map[string]*linkState{}} }

// Set sets the fault on the link to the peer at addr, replacing any, and
// returns it as set (with Expires).
func (l *Links) Set(addr string, f LinkFault) LinkFault {
	if f.For > 0 {
		f.Expires = time.Now().Add(f.For)
	}
	st := &linkState{fault: f, line: &delayLine{}}
	l.mu.Lock()
	l.faults[addr] = st
	l.mu.Unlock()
	if f.For > 0 {
		time.AfterFunc(f.For, func() {
			l.mu.Lock()
			mine := l.faults[addr] == st // not replaced or removed since
			if mine {
				delete(l.faults, addr)
			}
			l.mu.Unlock()
			if mine && l.Expired != nil {
				l.Expired(addr, f)
			}
		})
	}
	return f
}

// Remove removes the fault on the link to addr, reporting whether there
// was one. Messages it delays are still delivered.
func (l *Links) Remove(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.faults[addr]
	delete(l.faults, addr)
	return ok
}

// Heal removes every fault and returns how many there were.
func (l *Links) Heal() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.faults)
	clear(l.faults)
	return n
}

// List returns the faults set, by peer address.
func (l *Links) List() map[string]LinkFault {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string]LinkFault, len(l.faults))
	for addr, st := range l.faults {
		out[addr] = st.fault
	}
	return out
}

func (l *Links) state(addr string) *linkState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.faults[addr]
}

// Draw decides what happens to one message to the peer at addr: dropped,
// or delivered after delay. Replication's fetches, which go over a Kafka
// connection of their own rather than remoting, ask it before each
// request and answer, so that the link's faults reach them too.
func (l *Links) Draw(addr string) (drop bool, delay time.Duration) {
	st := l.state(addr)
	if st == nil {
		return false, 0
	}
	return st.fault.draw()
}

func (f LinkFault) draw() (drop bool, delay time.Duration) {
	if f.Cut || f.DropRate > 0 && rand.Float64() < f.DropRate {
		return true, 0
	}
	delay = f.Delay
	if f.Jitter > 0 {
		delay += rand.N(f.Jitter)
	}
	return false, delay
}

// delayLine delivers messages in the order pushed, each no earlier than
// its time, from one goroutine that runs while the line is not empty.
type delayLine struct {
	mu      sync.Mutex
	queue   []delayed
	running bool
}

type delayed struct {
	at      time.Time
	deliver func()
}

func (d *delayLine) push(at time.Time, deliver func()) {
	d.mu.Lock()
	d.queue = append(d.queue, delayed{at, deliver})
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
}

func (d *delayLine) run() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.queue = nil
			d.mu.Unlock()
			return
		}
		m := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if wait := time.Until(m.at); wait > 0 {
			time.Sleep(wait)
		}
		m.deliver()
	}
}

// cut reports whether the link to addr is cut.
func (l *Links) cut(addr string) bool {
	st := l.state(addr)
	return st != nil && st.fault.Cut
}
