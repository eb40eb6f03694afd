package actors

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Kinded is implemented by actors that name their kind for Tree, instead
// of their Go type.
type Kinded interface {
	ActorKind() string
}

// Roled is implemented by actors that play a role in a protocol, such as a
// partition's leader or follower, under an epoch. Tree journals the
// changes (EventRole, EventEpoch) and shows the role in its snapshot.
//
// Concurrency: ActorRole may be called from goroutines other than the
// actor's, concurrently with its Receive: it must be safe for concurrent
// use, typically by loading what the actor published in an atomic where it
// switches role. Tree calls it after each message the actor handles, so it
// must be cheap and must not allocate.
type Roled interface {
	// ActorRole returns the actor's role ("leader", "follower", ...;
	// empty while it has none) and the epoch it acts under.
	ActorRole() (role string, epoch int32)
}

// Tree observes the actors of one actor system that are spawned through
// it: the root actors given to SpawnNamed and, through a spawn middleware
// it installs on each of them, every descendant. For each live actor it
// keeps the name (its id, a stable path such as node/1/partitions/orders-0),
// its kind, its role (Roled), its mailbox length and its restart count; it
// installs Faults' middleware on the same actors. It exports these as
// Prometheus metrics (it is a prometheus.Collector), aggregated by kind so
// that their number stays bounded however many actors run, and one by one
// as a snapshot for the admin API, and journals what happens to each actor (Events): started,
// failed with its cause, restarted with the time it took to recover,
// stopped, role and epoch changes.
//
// How it instruments an actor: at spawn, it copies the actor's props and
// gives the copy
//
//   - an unbounded mailbox whose middleware counts messages posted and
//     received (system messages included; the message being handled
//     counts as queued until it is done);
//   - receiver middleware that records the kind at each Started and
//     forgets the actor at Stopped, journaling both, and after each message
//     compares the actor's role with the one it last saw; then the fault
//     middleware;
//   - this spawn middleware, for the actor's own children.
//
// NB: the mailbox replaces whatever mailbox the props named; Skein's actors
// all use protoactor's default unbounded one.
//
// Failures and restarts come from the system's EventStream: a failure is
// journaled when its supervisor decides, from the Backoff strategy's
// RestartScheduled (published at the failure, before the delay) or from
// protoactor's SupervisorEvent (published at once by protoactor's
// strategies, and by Backoff for a resume or a stop); restarts are counted
// from the SupervisorEvents with RestartDirective (Backoff publishes one
// per restart, after the delay). The restarted instance's Started, which
// protoactor delivers through the same receiver middleware once the old
// instance has handled Restarting, ends the recovery: its time since the
// failure goes to the journal and to the skein_actor_recovery_seconds
// histogram, by kind. The handlers are O(1) (a map lookup under a read
// lock, a journal append), as EventStream handlers run on the publisher's
// goroutine.
//
// Concurrency: safe for concurrent use. Counters are atomics; the set of
// actors is behind a read-write lock that spawns and stops take briefly.
type Tree struct {
	sys        *actor.ActorSystem
	faults     *Faults
	sub        *eventstream.Subscription
	dispatcher *Dispatcher

	mu   sync.RWMutex
	byID map[string]*actorStats

	events *Journal

	restarts   *prometheus.CounterVec
	failures   *prometheus.CounterVec
	recovery   *prometheus.HistogramVec
	mailbox    *prometheus.Desc
	mailboxMax *prometheus.Desc
	count      *prometheus.Desc
}

// unknownKind labels the metrics of an actor whose first Started has not
// run yet, which has no kind.
const unknownKind = "unknown"

// NewTree returns a Tree for sys that installs faults' middleware (nil
// for none). Close it when the system stops.
func NewTree(sys *actor.ActorSystem, faults *Faults) *Tree {
	t := &Tree{
		sys:    sys,
		faults: faults,
		byID:   map[string]*actorStats{},
		// protoactor's default throughput; 128 goroutines kept cover the
		// partitions a node writes at once, and cost a few MiB of stacks.
		dispatcher: NewDispatcher(300, 128, 5*time.Second),
		events:     NewJournal(DefaultJournalCapacity),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_actor_restarts_total", Help: "Actor restarts by supervisors, by actor kind.",
		}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_actor_failures_total", Help: "Actor failures (panics a supervisor handled), by actor kind.",
		}, []string{"kind"}),
		recovery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skein_actor_recovery_seconds",
			Help:    "Time from an actor's failure to its restarted instance having handled Started (supervisor backoff included), by actor kind.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"kind"}),
		mailbox: prometheus.NewDesc("skein_actor_mailbox_length",
			"Messages queued for the live actors of a kind, the ones they are handling included: the sum over the actors.", []string{"kind"}, nil),
		mailboxMax: prometheus.NewDesc("skein_actor_mailbox_length_max",
			"The longest mailbox among the live actors of a kind (messages queued, the one being handled included).", []string{"kind"}, nil),
		count: prometheus.NewDesc("skein_actors",
			"Live actors, by kind.", []string{"kind"}, nil),
	}
	t.sub = sys.EventStream.SubscribeWithPredicate(t.onSupervision, func(evt any) bool {
		switch evt.(type) {
		case *actor.SupervisorEvent, *RestartScheduled:
			return true
		}
		return false
	})
	return t
}

// Events returns the tree's journal of actor events.
func (t *Tree) Events() *Journal { return t.events }

// Close stops counting failures and restarts.
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
			actor.WithDispatcher(t.dispatcher),
			actor.WithReceiverMiddleware(s.middleware),
			actor.WithSpawnMiddleware(t.spawn),
		)
		if t.faults != nil {
			cp.Configure(actor.WithReceiverMiddleware(t.faults.Middleware))
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

// onSupervision handles the supervision events, on the publisher's
// goroutine.
func (t *Tree) onSupervision(evt any) {
	switch e := evt.(type) {
	case *RestartScheduled:
		if s := t.lookup(e.Child); s != nil {
			s.scheduled.Store(true)
			t.failed(s, e.Reason, actor.RestartDirective, e.Delay)
		}
	case *actor.SupervisorEvent:
		if e.Child == nil {
			return
		}
		s := t.lookup(e.Child)
		if e.Directive == actor.RestartDirective {
			if s == nil {
				t.restarts.WithLabelValues(unknownKind).Inc()
				return
			}
			t.restarts.WithLabelValues(s.metricKind()).Inc()
			s.restarts.Add(1)
			if s.scheduled.Swap(false) {
				return // journaled at the failure, from RestartScheduled
			}
		}
		if s != nil {
			t.failed(s, e.Reason, e.Directive, 0)
		}
	}
}

func (t *Tree) lookup(pid *actor.PID) *actorStats {
	if pid == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byID[pid.Id]
}

// failed journals and counts a failure of s that its supervisor handles
// with d (after delay, for a restart with backoff); a restart starts the
// recovery that the restarted instance's Started ends.
func (t *Tree) failed(s *actorStats, reason any, d actor.Directive, delay time.Duration) {
	now := time.Now()
	kind, cause := s.kindName(), fmt.Sprint(reason)
	if d == actor.RestartDirective {
		// NB: a failure while an earlier one is still being recovered
		// from (the restarted instance panicked in Started) keeps the
		// earlier one: the actor has been down since then.
		s.failure.CompareAndSwap(nil, &pendingFailure{at: now, cause: cause})
	}
	s.lastFailure.Store(&Failure{Time: now, Cause: cause, Directive: directiveName(d)})
	t.failures.WithLabelValues(kind).Inc()
	t.events.Append(Event{Time: now, Actor: s.id, Kind: kind, Type: EventFailed, Cause: cause,
		Directive: directiveName(d), DelaySeconds: delay.Seconds()})
}

func directiveName(d actor.Directive) string {
	switch d {
	case actor.ResumeDirective:
		return "resume"
	case actor.RestartDirective:
		return "restart"
	case actor.StopDirective:
		return "stop"
	case actor.EscalateDirective:
		return "escalate"
	}
	return d.String()
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
	Restarts int64 `json:"restarts"`
	// Role and Epoch are what a Roled actor reported after the last
	// message it handled.
	Role  string `json:"role,omitempty"`
	Epoch int32  `json:"epoch,omitempty"`
	// LastFailure is the actor's latest failure since it was spawned,
	// absent when it has not failed.
	LastFailure *Failure     `json:"last_failure,omitempty"`
	Children    []*ActorInfo `json:"children"`
}

// Failure is a failure of an actor: when, what it panicked with or why
// it stopped, and what its supervisor decided (restart, stop, ...).
type Failure struct {
	Time      time.Time `json:"time"`
	Cause     string    `json:"cause"`
	Directive string    `json:"directive"`
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
	t.failures.Describe(ch)
	t.recovery.Describe(ch)
	ch <- t.mailbox
	ch <- t.mailboxMax
	ch <- t.count
}

// kindStats is the live actors of one kind, for Collect.
type kindStats struct {
	actors, queued, maxQueued int64
}

// Collect implements prometheus.Collector: the live actors and their
// mailbox lengths are read at scrape time and summed by kind. No series
// names an actor: a node runs an actor per partition, group and
// transactional id, so per-actor series would grow with the cluster; the
// admin API's /v1/actors (Snapshot) has them one by one.
func (t *Tree) Collect(ch chan<- prometheus.Metric) {
	t.restarts.Collect(ch)
	t.failures.Collect(ch)
	t.recovery.Collect(ch)
	byKind := map[string]*kindStats{}
	t.mu.RLock()
	for _, s := range t.byID {
		k := s.metricKind()
		ks := byKind[k]
		if ks == nil {
			ks = &kindStats{}
			byKind[k] = ks
		}
		n := s.mailboxLength()
		ks.actors++
		ks.queued += n
		ks.maxQueued = max(ks.maxQueued, n)
	}
	t.mu.RUnlock()
	for k, ks := range byKind {
		ch <- prometheus.MustNewConstMetric(t.count, prometheus.GaugeValue, float64(ks.actors), k)
		ch <- prometheus.MustNewConstMetric(t.mailbox, prometheus.GaugeValue, float64(ks.queued), k)
		ch <- prometheus.MustNewConstMetric(t.mailboxMax, prometheus.GaugeValue, float64(ks.maxQueued), k)
	}
}

// actorStats is what Tree knows of one spawned actor. It is the actor's
// mailbox middleware (posted and received counters) and, through
// middleware, its receiver middleware. It lives as long as the actor's
// context: across restarts, until Stopped.
type actorStats struct {
	id       string
	tree     *Tree
	kind     atomic.Pointer[string]
	posted   atomic.Int64
	received atomic.Int64
	restarts atomic.Int64
	// failure is the failure the actor is recovering from: set when its
	// supervisor decides to restart it, taken by the restarted instance's
	// Started.
	failure atomic.Pointer[pendingFailure]
	// scheduled is set while a failure journaled from RestartScheduled
	// waits for its restart's SupervisorEvent, which is then not journaled
	// again.
	scheduled atomic.Bool
	// role is what the actor reported after the last message it handled
	// (nil: none yet).
	role atomic.Pointer[roleSeen]
	// lastFailure is the actor's latest failure (nil: none since it was
	// spawned), kept past the journal's window.
	lastFailure atomic.Pointer[Failure]

	// Touched only by the receiver middleware, on the actor's goroutine.
	roled   Roled // the current instance, if Roled
	started bool  // an instance has handled Started
}

type pendingFailure struct {
	at    time.Time
	cause string
}

type roleSeen struct {
	role  string
	epoch int32
}

func (s *actorStats) MailboxStarted()         {}
func (s *actorStats) MessagePosted(any)       { s.posted.Add(1) }
func (s *actorStats) MessageReceived(any)     { s.received.Add(1) }
func (s *actorStats) MailboxEmpty()           {}
func (s *actorStats) mailboxLength() int64    { r := s.received.Load(); return s.posted.Load() - r }
func (s *actorStats) setKind(a actor.Actor)   { k := kindOf(a); s.kind.Store(&k) }
func (s *actorStats) kindName() (kind string) { return deref(s.kind.Load()) }

// metricKind is the actor's kind as its metrics are labelled: unknownKind
// before its first Started.
func (s *actorStats) metricKind() string {
	if k := s.kindName(); k != "" {
		return k
	}
	return unknownKind
}

func (s *actorStats) info() *ActorInfo {
	i := &ActorInfo{Name: s.id, Kind: s.kindName(), MailboxLength: s.mailboxLength(),
		Restarts: s.restarts.Load(), Children: []*ActorInfo{}}
	if r := s.role.Load(); r != nil {
		i.Role, i.Epoch = r.role, r.epoch
	}
	i.LastFailure = s.lastFailure.Load()
	return i
}

func (s *actorStats) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		// NB: a message the actor panics on never reaches the mailbox's
		// MessageReceived (the panic unwinds past it), so it is counted
		// here, or the mailbox would seem one longer after every failure.
		handled := false
		defer func() {
			if !handled {
				s.received.Add(1)
			}
		}()
		switch env.Message.(type) {
		case *actor.Started:
			// At a restart, c.Actor() is already the new instance.
			s.setKind(c.Actor())
			s.roled, _ = c.Actor().(Roled)
			next(c, env)
			handled = true
			s.onStarted()
		case *actor.Stopped:
			defer s.onStopped()
			next(c, env)
			handled = true
			return
		default:
			next(c, env)
			handled = true
		}
		if s.roled != nil {
			s.checkRole()
		}
	}
}

// onStarted journals an instance's Started, handled: the actor's first,
// or the end of its recovery from a failure.
func (s *actorStats) onStarted() {
	first := !s.started
	s.started = true
	f := s.failure.Swap(nil)
	switch {
	case f != nil:
		recovery := time.Since(f.at)
		kind := s.kindName()
		s.tree.recovery.WithLabelValues(kind).Observe(recovery.Seconds())
		s.tree.events.Append(Event{Actor: s.id, Kind: kind, Type: EventRestarted, Cause: f.cause,
			RecoverySeconds: recovery.Seconds()})
	case first:
		s.tree.events.Append(Event{Actor: s.id, Kind: s.kindName(), Type: EventStarted})
	default:
		// Restarted without a failure the tree saw: a strategy that
		// publishes no SupervisorEvent.
		s.tree.events.Append(Event{Actor: s.id, Kind: s.kindName(), Type: EventRestarted})
	}
}

func (s *actorStats) onStopped() {
	s.tree.events.Append(Event{Actor: s.id, Kind: s.kindName(), Type: EventStopped})
	s.tree.forget(s)
}

// checkRole journals a change of the actor's role or epoch since the last
// message: one interface call and two compares when nothing changed.
func (s *actorStats) checkRole() {
	role, epoch := s.roled.ActorRole()
	var prev roleSeen // none yet: no role, epoch 0
	if p := s.role.Load(); p != nil {
		prev = *p
	}
	if prev.role == role && prev.epoch == epoch {
		return
	}
	s.role.Store(&roleSeen{role: role, epoch: epoch})
	typ := EventEpoch
	if role != prev.role {
		typ = EventRole
	}
	s.tree.events.Append(Event{Actor: s.id, Kind: s.kindName(), Type: typ, Role: role, Epoch: epoch})
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
