package actors

import (
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Kinded is implemented by actors that name their kind for Tree, instead
// of their Go type.
type Kinded interface {
	ActorKind() string
}

// Tree observes the actors of one actor system that are spawned through
// it: the root actors given to SpawnNamed and, through a spawn middleware
// it installs on each of them, every descendant. For each live actor it
// keeps the name (its id, a stable path such as node/1/partitions/orders-0),
// its kind, its mailbox length and its restart count; it installs Faults'
// middleware on the same actors. It exports these as Prometheus metrics
// (it is a prometheus.Collector) and as a snapshot for the admin API.
//
// How it instruments an actor: at spawn, it copies the actor's props and
// gives the copy
//
//   - an unbounded mailbox whose middleware counts messages posted and
//     received (system messages included; the message being handled
//     counts as queued until it is done);
//   - receiver middleware that records the kind at each Started and
//     forgets the actor at Stopped, then the fault middleware;
//   - this spawn middleware, for the actor's own children.
//
// NB: the mailbox replaces whatever mailbox the props named; Skein's actors
// all use protoactor's default unbounded one.
//
// Restarts are counted from the SupervisorEvents with RestartDirective on
// the system's EventStream (the Backoff strategy publishes one per
// restart); the handler is O(1), as EventStream handlers run on the
// publisher's goroutine.
//
// Concurrency: safe for concurrent use. Counters are atomics; the set of
// actors is behind a read-write lock that spawns and stops take briefly.
type Tree struct {
	sys    *actor.ActorSystem
	faults *Faults
	links  *Links
	sub    *eventstream.Subscription

	mu   sync.RWMutex
	byID map[string]*actorStats

	restarts *prometheus.CounterVec
	mailbox  *prometheus.Desc
}

// NewTree returns a Tree for sys that installs faults' middleware and
// links' (either may be nil). Close it when the system stops.
func NewTree(sys *actor.ActorSystem, faults *Faults, links *Links) *Tree {
	t := &Tree{
		sys:    sys,
		faults: faults,
		links:  links,
		byID:   map[string]*actorStats{},
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_actor_restarts_total", Help: "Actor restarts by supervisors, by actor name.",
		}, []string{"actor"}),
		mailbox: prometheus.NewDesc("skein_actor_mailbox_length",
			"Messages queued for an actor, the one it is handling included, by actor name.", []string{"actor"}, nil),
	}
	t.sub = sys.EventStream.SubscribeWithPredicate(t.onSupervisorEvent, func(evt any) bool {
		_, ok := evt.(*actor.SupervisorEvent)
		return ok
	})
	return t
}

// Close stops counting restarts.
func (t *Tree) Close() { t.sys.EventStream.Unsubscribe(t.sub) }

// SpawnNamed spawns a root actor (from sys.Root) under name, instrumented
// with everything it spawns.
//
// NB: not RootContext.WithSpawnMiddleware, whose spawner drops the
// guardian a props names (it spawns with the plain root context).
func (t *Tree) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	return t.spawn(func(sys *actor.ActorSystem, id string, p *actor.Props, _ actor.SpawnerContext) (*actor.PID, error) {
		return t.sys.Root.SpawnNamed(p, id)
	})(t.sys, name, props, t.sys.Root)
}

// spawn is the spawn middleware.
func (t *Tree) spawn(next actor.SpawnFunc) actor.SpawnFunc {
	return func(sys *actor.ActorSystem, id string, props *actor.Props, parent actor.SpawnerContext) (*actor.PID, error) {
		s := &actorStats{id: id, tree: t}
		// NB: a copy, because the caller may spawn from the same props again
		// and must not collect a middleware per spawn. Props holds only
		// plain fields; Configure replaces the mailbox and rebuilds the
		// middleware chains on the copy.
		cp := *props
		cp.Configure(
			actor.WithMailbox(actor.Unbounded(s)),
			actor.WithReceiverMiddleware(s.middleware),
			actor.WithSpawnMiddleware(t.spawn),
		)
		if t.faults != nil {
			cp.Configure(actor.WithReceiverMiddleware(t.faults.Middleware))
		}
		if t.links != nil {
			cp.Configure(actor.WithSenderMiddleware(t.links.Middleware))
		}
		t.mu.Lock()
		prev := t.byID[id]
		t.byID[id] = s
		t.mu.Unlock()
		pid, err := next(sys, id, &cp, parent)
		if err != nil {
			// Most likely ErrNameExists: the live actor keeps its entry.
			t.mu.Lock()
			if t.byID[id] == s {
				if prev != nil {
					t.byID[id] = prev
				} else {
					delete(t.byID, id)
				}
			}
			t.mu.Unlock()
		}
		return pid, err
	}
}

func (t *Tree) forget(s *actorStats) {
	t.mu.Lock()
	if t.byID[s.id] == s {
		delete(t.byID, s.id)
	}
	t.mu.Unlock()
}

func (t *Tree) onSupervisorEvent(evt any) {
	e := evt.(*actor.SupervisorEvent)
	if e.Directive != actor.RestartDirective || e.Child == nil {
		return
	}
	t.mu.RLock()
	s := t.byID[e.Child.Id]
	t.mu.RUnlock()
	if s != nil {
		s.restarts.Add(1)
	}
	t.restarts.WithLabelValues(e.Child.Id).Inc()
}

// ActorInfo is an actor in a Tree snapshot.
type ActorInfo struct {
	// Name is the actor's id, its path in the tree.
	Name string `json:"name"`
	// Kind is what the actor says it is (Kinded) or its Go type.
	Kind string `json:"kind"`
	// MailboxLength counts the messages queued, the one being handled
	// included.
	MailboxLength int64 `json:"mailbox_length"`
	// Restarts counts the restarts of this actor since it was spawned.
	Restarts int64        `json:"restarts"`
	Children []*ActorInfo `json:"children"`
}

// Snapshot returns the live actors as trees, by name: an actor's parent is
// the nearest actor whose name is a prefix of its own up to a "/".
func (t *Tree) Snapshot() []*ActorInfo {
	t.mu.RLock()
	infos := make(map[string]*ActorInfo, len(t.byID))
	for id, s := range t.byID {
		infos[id] = s.info()
	}
	t.mu.RUnlock()
	ids := make([]string, 0, len(infos))
	for id := range infos {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var roots []*ActorInfo
	for _, id := range ids {
		info := infos[id]
		parent := id
		for {
			i := strings.LastIndexByte(parent, '/')
			if i < 0 {
				roots = append(roots, info)
				break
			}
			parent = parent[:i]
			if p, ok := infos[parent]; ok {
				p.Children = append(p.Children, info)
				break
			}
		}
	}
	return roots
}

// Live returns the names of the live actors, sorted.
func (t *Tree) Live() []string {
	t.mu.RLock()
	out := make([]string, 0, len(t.byID))
	for id := range t.byID {
		out = append(out, id)
	}
	t.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Find returns the live actor named id, or nil.
func (t *Tree) Find(id string) *ActorInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if s := t.byID[id]; s != nil {
		return s.info()
	}
	return nil
}

// Describe implements prometheus.Collector.
func (t *Tree) Describe(ch chan<- *prometheus.Desc) {
	t.restarts.Describe(ch)
	ch <- t.mailbox
}

// Collect implements prometheus.Collector: mailbox lengths are read at
// scrape time.
func (t *Tree) Collect(ch chan<- prometheus.Metric) {
	t.restarts.Collect(ch)
	t.mu.RLock()
	defer t.mu.RUnlock()
	for id, s := range t.byID {
		ch <- prometheus.MustNewConstMetric(t.mailbox, prometheus.GaugeValue, float64(s.mailboxLength()), id)
	}
}

// actorStats is what Tree knows of one spawned actor. It is the actor's
// mailbox middleware (posted and received counters) and, through
// middleware, its receiver middleware.
type actorStats struct {
	id       string
	tree     *Tree
	kind     atomic.Pointer[string]
	posted   atomic.Int64
	received atomic.Int64
	restarts atomic.Int64
}

func (s *actorStats) MailboxStarted()         {}
func (s *actorStats) MessagePosted(any)       { s.posted.Add(1) }
func (s *actorStats) MessageReceived(any)     { s.received.Add(1) }
func (s *actorStats) MailboxEmpty()           {}
func (s *actorStats) mailboxLength() int64    { r := s.received.Load(); return s.posted.Load() - r }
func (s *actorStats) setKind(a actor.Actor)   { k := kindOf(a); s.kind.Store(&k) }
func (s *actorStats) kindName() (kind string) { return deref(s.kind.Load()) }

func (s *actorStats) info() *ActorInfo {
	return &ActorInfo{Name: s.id, Kind: s.kindName(), MailboxLength: s.mailboxLength(),
		Restarts: s.restarts.Load(), Children: []*ActorInfo{}}
}

func (s *actorStats) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case *actor.Started:
			s.setKind(c.Actor())
		case *actor.Stopped:
			defer s.tree.forget(s)
		}
		// NB: a message the actor panics on never reaches the mailbox's
		// MessageReceived (the panic unwinds past it), so it is counted
		// here, or the mailbox would seem one longer after every failure.
		handled := false
		defer func() {
			if !handled {
				s.received.Add(1)
			}
		}()
		next(c, env)
		handled = true
	}
}

func kindOf(a actor.Actor) string {
	if k, ok := a.(Kinded); ok {
		return k.ActorKind()
	}
	if a == nil {
		return ""
	}
	return reflect.TypeOf(a).String()
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
