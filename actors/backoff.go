package actors

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/internal/clock"
)

// Backoff configures a one-for-one supervisor strategy that restarts a
// failed child after a delay that doubles with each failure (with jitter),
// from Min up to Max, and starts again from Min once the child has run for
// Quiet without failing. Zero fields take the defaults below.
type Backoff struct {
	// Min is the delay before the first restart after a quiet period.
	// Default 10 ms.
	Min time.Duration
	// Max caps the delay. Default 10 s.
	Max time.Duration
	// Quiet is how long a child must run after a restart for its next
	// failure to count as a first one again. Default 1 min.
	Quiet time.Duration
	// Jitter spreads each delay uniformly over ±Jitter of itself, so that
	// actors that failed together do not restart together. Default 0.2; a
	// negative value means none. Below 1/3 the delays still grow strictly
	// until they reach Max.
	Jitter float64
	// Decider chooses what to do with a failure from the panic value:
	// restart (with backoff), resume, stop, or escalate to the
	// supervisor's own parent. Default: restart always.
	Decider actor.DeciderFunc
	// Clock measures the quiet period. Default clock.Real.
	Clock clock.Clock
	// AfterFunc runs f after d on another goroutine. Default time.AfterFunc;
	// tests substitute one they fire by hand.
	AfterFunc func(d time.Duration, f func())
	// Random returns a number in [0, 1) for the jitter. Default math/rand/v2.
	Random func() float64
}

// RestartScheduled is published on the actor system's EventStream when a
// Backoff strategy has decided to restart a failed child, before the delay.
// The restart itself is published later as protoactor's SupervisorEvent
// with RestartDirective, unless the child was stopped in between.
type RestartScheduled struct {
	Child *actor.PID
	// Reason is the panic value.
	Reason any
	// Failures counts the child's failures since its last quiet period,
	// this one included.
	Failures int
	Delay    time.Duration
}

// Abandoned is the reply a Backoff strategy sends to the sender of the
// message its child was handling when it failed (if the message was a
// request, with a sender): that message is lost, and without this the
// sender would wait for its timeout. Ask turns it into ErrAbandoned.
//
// NB: an actor that replied and then failed on the same message leaves
// its sender a second reply, this one; Ask keeps only the first reply, and
// actors that Request must ignore an Abandoned they do not expect.
type Abandoned struct {
	// Actor is the id of the actor that failed.
	Actor string
	// Reason is the panic value, formatted.
	Reason string
}

// NewBackoffStrategy returns the strategy b describes. The strategy keeps
// per-child state, so give each supervisor its own.
//
// What it does with a failure, by the decider's directive:
//
//   - restart: the child stays suspended (protoactor suspends its mailbox
//     when it fails; messages queue but are not handled) until the delay
//     has passed, and is then restarted: it gets Restarting, its children
//     are stopped, a new instance gets Started, and the queued messages
//     follow. A second failure reported while a restart is pending (from a
//     system message the suspended child still handles) joins that restart.
//     A child stopped before its delay ends stays stopped.
//   - resume: the child's mailbox resumes at once, with the same instance.
//   - stop: the child is stopped.
//   - escalate: the supervisor fails in turn, to its own supervisor.
//
// In every case but escalate (where the supervisor's supervisor does it) a
// request's sender is answered Abandoned. Restarts, resumes and stops are
// published on the EventStream as protoactor's SupervisorEvent, and
// failures are logged at warn through the actor system's logger: each one
// that stops or resumes a child, and of a child restarting again and again
// its 1st, 2nd, 4th, 8th, ... failure since it was last quiet.
//
// Unlike protoactor's NewExponentialBackoffStrategy (whose delays grow
// linearly, with nanoseconds of noise) the delays really double, and
// unlike NewOneForOneStrategy it never stops a child for failing often: a
// partition or controller that gives up serves nothing, and the backoff
// already bounds a persistent failure to one restart per Max.
//
// Concurrency: HandleFailure runs on the supervisor's goroutine (or, for a
// guardian, on the failing child's); restarts run on timer goroutines. The
// strategy's state is behind a mutex.
func NewBackoffStrategy(b Backoff) actor.SupervisorStrategy {
	if b.Min <= 0 {
		b.Min = 10 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Second
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	if b.Quiet <= 0 {
		b.Quiet = time.Minute
	}
	if b.Jitter == 0 {
		b.Jitter = 0.2
	}
	b.Jitter = min(max(b.Jitter, 0), 1)
	if b.Decider == nil {
		b.Decider = actor.DefaultDecider
	}
	if b.Clock == nil {
		b.Clock = clock.Real
	}
	if b.AfterFunc == nil {
		b.AfterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	if b.Random == nil {
		b.Random = rand.Float64
	}
	return &backoffStrategy{cfg: b, children: map[*actor.RestartStatistics]*backoffState{}}
}

type backoffStrategy struct {
	cfg Backoff

	mu sync.Mutex
	// children is keyed by the child's RestartStatistics, which protoactor
	// keeps in the child's context: it survives restarts, and a new actor
	// spawned under the same name gets a new one, so it starts afresh.
	children map[*actor.RestartStatistics]*backoffState
}

type backoffState struct {
	failures    int       // since the last quiet period
	restartedAt time.Time // when the last restart was issued
	pending     bool      // a restart is scheduled
}

func (s *backoffStrategy) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason any, message any) {
	directive := s.cfg.Decider(reason)
	if directive != actor.EscalateDirective {
		abandon(sys, child, reason, message)
	}
	switch directive {
	case actor.ResumeDirective:
		logFailure(sys, child, reason, directive, 0, 0)
		publish(sys, child, reason, directive)
		sup.ResumeChildren(child)
	case actor.StopDirective:
		logFailure(sys, child, reason, directive, 0, 0)
		publish(sys, child, reason, directive)
		sup.StopChildren(child)
	case actor.EscalateDirective:
		sup.EscalateFailure(reason, message)
	default:
		s.scheduleRestart(sys, sup, child, rs, reason)
	}
}

func (s *backoffStrategy) scheduleRestart(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason any) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	st := s.children[rs]
	if st == nil {
		st = &backoffState{}
		s.children[rs] = st
	}
	if st.pending {
		s.mu.Unlock()
		return
	}
	if st.failures > 0 && now.Sub(st.restartedAt) >= s.cfg.Quiet {
		st.failures = 0
	}
	st.failures++
	st.pending = true
	failures := st.failures
	s.sweep(now)
	s.mu.Unlock()

	delay := s.delay(failures)
	// The child's process now, to tell at the restart whether it is still
	// the same actor: it may have been stopped meanwhile, and even replaced
	// by a new actor of the same name, which must not be restarted.
	proc, _ := sys.ProcessRegistry.GetLocal(child.Id)
	// A child that keeps failing is logged at its 1st, 2nd, 4th, 8th, ...
	// failure since its last quiet period, not at every restart: a storm
	// of restarts costs a few lines, each with the count so far.
	if failures&(failures-1) == 0 {
		logFailure(sys, child, reason, actor.RestartDirective, failures, delay)
	}
	sys.EventStream.Publish(&RestartScheduled{Child: child, Reason: reason, Failures: failures, Delay: delay})
	restart := func() {
		s.mu.Lock()
		st.pending = false
		st.restartedAt = s.cfg.Clock.Now()
		s.mu.Unlock()
		// NB: a Stop sent to the child between this check and the Restart
		// below is handled first, and protoactor then restarts the stopped
		// instance anyway (handleRestart does not look at the state). Its
		// own one-for-one strategy has the same window; the check here
		// closes the wide one, a stop at any time during the delay.
		if cur, ok := sys.ProcessRegistry.GetLocal(child.Id); !ok || cur != proc {
			return
		}
		publish(sys, child, reason, actor.RestartDirective)
		sup.RestartChildren(child)
	}
	s.cfg.AfterFunc(delay, restart)
}

// sweep forgets children that have been quiet for a whole period: their
// next failure would start from Min anyway. Called with mu held.
func (s *backoffStrategy) sweep(now time.Time) {
	for rs, st := range s.children {
		if !st.pending && st.failures > 0 && now.Sub(st.restartedAt) >= s.cfg.Quiet {
			delete(s.children, rs)
		}
	}
}

// delay returns the delay before the restart after the n-th failure:
// Min·2^(n-1) with jitter, at most Max.
func (s *backoffStrategy) delay(n int) time.Duration {
	d := s.cfg.Min
	for i := 1; i < n && d < s.cfg.Max; i++ {
		d *= 2
	}
	if s.cfg.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + s.cfg.Jitter*(2*s.cfg.Random()-1)))
	}
	return min(max(d, 0), s.cfg.Max)
}

func publish(sys *actor.ActorSystem, child *actor.PID, reason any, directive actor.Directive) {
	sys.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: directive})
}

func logFailure(sys *actor.ActorSystem, child *actor.PID, reason any, directive actor.Directive, failures int, delay time.Duration) {
	attrs := []any{slog.String("actor", child.Id), slog.String("reason", fmt.Sprint(reason)),
		slog.String("directive", directive.String())}
	if directive == actor.RestartDirective {
		attrs = append(attrs, slog.Int("failures", failures), slog.Duration("delay", delay))
	}
	sys.Logger().Warn("actor failed", attrs...)
}

// abandon answers the sender of the message a failed child was handling.
func abandon(sys *actor.ActorSystem, child *actor.PID, reason, message any) {
	if sender := actor.UnwrapEnvelopeSender(message); sender != nil {
		sys.Root.Send(sender, &Abandoned{Actor: child.Id, Reason: fmt.Sprint(reason)})
	}
}
