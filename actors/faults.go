package actors

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// FaultKind is what an injected fault does to the messages it matches.
type FaultKind string

// The kinds of fault.
const (
	// FaultPanic panics in the actor instead of handling the message (or,
	// with Fault.After, just after handling it), exactly as a bug would:
	// the message is lost and the supervisor decides.
	FaultPanic FaultKind = "panic"
	// FaultStop stops the actor instead of handling the message, as
	// Context.Stop does: no failure, so no restart; its parent gets
	// Terminated.
	FaultStop FaultKind = "stop"
	// FaultDelay handles the message after sleeping Fault.Delay on the
	// actor's goroutine: a slow actor, whose mailbox grows.
	FaultDelay FaultKind = "delay"
	// FaultDrop discards the message: a lost message, nobody is told.
	FaultDrop FaultKind = "drop"
)

// MaxFaultDelay bounds Fault.Delay, so that a delayed actor still stops
// (a stop waits for the message in hand) in bounded time.
const MaxFaultDelay = time.Minute

// Fault is one injected fault.
type Fault struct {
	// ID is assigned by Faults.Add.
	ID uint64
	// Actor selects the actors by id: an exact id ("node/1/controller"), or
	// a pattern in which "*" stands for any run of characters
	// ("node/1/partitions/orders-*", "node/*/groups/*"; "*" alone is every
	// actor).
	Actor string
	// Message, if set, selects only messages of that Go type, named with
	// or without its package and pointer ("CreateTopics",
	// "controller.CreateTopics", "*controller.CreateTopics").
	Message string
	Kind    FaultKind
	// Count is how many messages the fault applies to, across all the
	// actors it selects, before it is removed: 0 means no limit for delay
	// and for a fault with Every or Rate, and 1 otherwise. List reports
	// what remains.
	Count int
	// Delay is the delay of a FaultDelay.
	Delay time.Duration
	// After makes a FaultPanic panic after the actor has handled the
	// message instead of before: its effects (and any reply) happen, then
	// the actor fails.
	After bool
	// For bounds the fault's lifetime: it is removed this long after Add,
	// used up or not (0: until used up or removed).
	For time.Duration
	// Every spaces the messages the fault applies to: after one, it lets
	// the selected actors' messages pass for this long (0: no spacing).
	// "Panic every 5s" is a steady rate of failures that the tree has time
	// to heal between.
	Every time.Duration
	// Rate, in (0, 1], applies the fault to that fraction of the messages
	// it selects, at random (0: to every one).
	Rate float64
	// Expires is when a fault with For ends; set by Add.
	Expires time.Time
	// Fired counts the messages the fault has applied to.
	Fired int

	next time.Time // with Every: the first time it applies again
}

// InjectedFault is the panic value of a FaultPanic, so that deciders and
// logs can tell an injected failure from a real one.
type InjectedFault struct {
	Actor string
	ID    uint64
}

func (f *InjectedFault) Error() string {
	return fmt.Sprintf("actors: injected panic %d in %s", f.ID, f.Actor)
}

// ErrBadFault wraps the reasons Faults.Add refuses a fault.
var ErrBadFault = errors.New("actors: bad fault")

// Faults is a registry of injected faults, applied by its Middleware to
// every actor it is installed on (Tree installs it on every actor it
// spawns). It is how `skein chaos` and the admin API break actors on
// purpose; with no fault set, each message costs one atomic load.
//
// Lifecycle messages (Started, Stopping, Stopped, Restarting, Terminated,
// PoisonPill, ReceiveTimeout) always pass untouched, so that faults cannot
// keep an actor from starting or stopping.
//
// Concurrency: every method is safe for concurrent use; the middleware
// runs on the goroutines of the actors it is installed on.
type Faults struct {
	active atomic.Int32 // len(list), read without the lock

	// Expired, if set before the first Add, is called (on a timer's
	// goroutine) with each fault that For removes.
	Expired func(Fault)

	mu     sync.Mutex
	nextID uint64
	list   []*Fault // in the order added; the first match applies
}

// MaxFaultLifetime bounds Fault.For.
const MaxFaultLifetime = 24 * time.Hour

// NewFaults returns an empty registry.
func NewFaults() *Faults { return &Faults{} }

// Add validates f, gives it an id and sets it; it applies from the next
// message an actor it selects receives.
func (fs *Faults) Add(f Fault) (Fault, error) {
	if f.Actor == "" {
		return Fault{}, fmt.Errorf("%w: no actor", ErrBadFault)
	}
	if f.Count < 0 {
		return Fault{}, fmt.Errorf("%w: negative count %d", ErrBadFault, f.Count)
	}
	if f.For < 0 || f.For > MaxFaultLifetime {
		return Fault{}, fmt.Errorf("%w: lifetime %v is not in [0, %v]", ErrBadFault, f.For, MaxFaultLifetime)
	}
	if f.Every < 0 || f.Every > MaxFaultLifetime {
		return Fault{}, fmt.Errorf("%w: spacing %v is not in [0, %v]", ErrBadFault, f.Every, MaxFaultLifetime)
	}
	if f.Rate < 0 || f.Rate > 1 {
		return Fault{}, fmt.Errorf("%w: rate %v is not in (0, 1]", ErrBadFault, f.Rate)
	}
	switch f.Kind {
	case FaultPanic, FaultStop, FaultDrop:
		if f.Count == 0 && f.Every == 0 && f.Rate == 0 {
			f.Count = 1
		}
		if f.Delay != 0 {
			return Fault{}, fmt.Errorf("%w: a delay is only for kind %s", ErrBadFault, FaultDelay)
		}
	case FaultDelay:
		if f.Delay <= 0 || f.Delay > MaxFaultDelay {
			return Fault{}, fmt.Errorf("%w: delay %v is not in (0, %v]", ErrBadFault, f.Delay, MaxFaultDelay)
		}
	default:
		return Fault{}, fmt.Errorf("%w: unknown kind %q (want panic, stop, delay or drop)", ErrBadFault, f.Kind)
	}
	if f.After && f.Kind != FaultPanic {
		return Fault{}, fmt.Errorf("%w: after is only for kind %s", ErrBadFault, FaultPanic)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.nextID++
	f.ID, f.Fired, f.next = fs.nextID, 0, time.Time{}
	if f.For > 0 {
		f.Expires = time.Now().Add(f.For)
		id := f.ID
		time.AfterFunc(f.For, func() { fs.expire(id) })
	}
	stored := f
	fs.list = append(fs.list, &stored)
	fs.active.Store(int32(len(fs.list)))
	return f, nil
}

// expire removes the fault with id, if it is still set, and tells Expired.
func (fs *Faults) expire(id uint64) {
	fs.mu.Lock()
	i := slices.IndexFunc(fs.list, func(f *Fault) bool { return f.ID == id })
	var f Fault
	if i >= 0 {
		f = *fs.list[i]
		fs.removeAt(i)
	}
	fs.mu.Unlock()
	if i >= 0 && fs.Expired != nil {
		fs.Expired(f)
	}
}

// Remove removes the fault with id, reporting whether it was set.
func (fs *Faults) Remove(id uint64) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	i := slices.IndexFunc(fs.list, func(f *Fault) bool { return f.ID == id })
	if i < 0 {
		return false
	}
	fs.removeAt(i)
	return true
}

// Clear removes every fault and returns how many there were.
func (fs *Faults) Clear() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := len(fs.list)
	fs.list = nil
	fs.active.Store(0)
	return n
}

// List returns the faults set, with their remaining counts (0 for an
// unlimited delay).
func (fs *Faults) List() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, len(fs.list))
	for i, f := range fs.list {
		out[i] = *f
	}
	return out
}

func (fs *Faults) removeAt(i int) {
	fs.list = slices.Delete(fs.list, i, i+1)
	fs.active.Store(int32(len(fs.list)))
}

// Middleware is the receiver middleware that applies the faults.
func (fs *Faults) Middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		if fs.active.Load() == 0 || lifecycle(env.Message) {
			next(c, env)
			return
		}
		f, ok := fs.take(c.Self().Id, env.Message)
		if !ok {
			next(c, env)
			return
		}
		switch f.Kind {
		case FaultPanic:
			if f.After {
				next(c, env)
			}
			panic(&InjectedFault{Actor: c.Self().Id, ID: f.ID})
		case FaultStop:
			c.ActorSystem().Root.Stop(c.Self())
		case FaultDelay:
			time.Sleep(f.Delay)
			next(c, env)
		case FaultDrop:
		}
	}
}

// take finds the first fault that applies to a message for actor id,
// counts it, and removes it when it is used up.
func (fs *Faults) take(id string, msg any) (Fault, bool) {
	var typeName string
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if !matchActor(f.Actor, id) {
			continue
		}
		if f.Message != "" {
			if typeName == "" {
				typeName = reflect.TypeOf(msg).String()
			}
			if !matchType(f.Message, typeName) {
				continue
			}
		}
		now := time.Now()
		if !f.Expires.IsZero() && !now.Before(f.Expires) {
			continue // its timer removes it
		}
		if f.Every > 0 {
			if now.Before(f.next) {
				continue
			}
		}
		if f.Rate > 0 && rand.Float64() >= f.Rate {
			continue
		}
		if f.Every > 0 {
			f.next = now.Add(f.Every)
		}
		f.Fired++
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				fs.removeAt(i)
			}
		}
		return *f, true
	}
	return Fault{}, false
}

// matchActor matches an actor id against a pattern in which "*" stands
// for any run of characters, slashes included: "node/*/groups/*",
// "node/1/partitions/orders-*", "*".
func matchActor(pattern, id string) bool {
	first, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == id
	}
	if !strings.HasPrefix(id, first) {
		return false
	}
	id = id[len(first):]
	// Each "*" takes the shortest run that lets the next literal part
	// match; the last part must end the id.
	for {
		part, more, star := strings.Cut(rest, "*")
		if !star {
			return strings.HasSuffix(id, part)
		}
		i := strings.Index(id, part)
		if i < 0 {
			return false
		}
		id, rest = id[i+len(part):], more
	}
}

// matchType matches "*controller.CreateTopics" by itself, by
// "controller.CreateTopics" and by "CreateTopics".
func matchType(want, typeName string) bool {
	name := strings.TrimPrefix(typeName, "*")
	return want == typeName || want == name || strings.HasSuffix(name, "."+want)
}

// lifecycle reports whether msg is one of protoactor's lifecycle messages,
// which faults never touch.
func lifecycle(msg any) bool {
	switch msg.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage, *actor.ReceiveTimeout:
		return true
	}
	return false
}
