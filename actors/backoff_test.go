package actors

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/internal/clock"
)

// guard bounds every wait in these tests, so that a bug fails a test
// instead of hanging it. It is never what a test waits for.
const guard = 20 * time.Second

// probe is a child actor that reports what it handles on events, tagged
// with its incarnation: "started@2", "msg:x@2". The string "panic" makes
// it panic; a *question is answered.
type probe struct {
	inc    int64
	events chan<- string
}

type question struct{ text string }

func (p *probe) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.emit("started")
	case *actor.Restarting:
		p.emit("restarting")
	case *actor.Stopped:
		p.emit("stopped")
	case string:
		if m == "panic" {
			panic("boom")
		}
		p.emit("msg:" + m)
	case *question:
		if m.text == "panic" {
			panic("boom on request")
		}
		c.Respond(m.text + "!")
	}
}

func (p *probe) emit(s string) { p.events <- fmt.Sprintf("%s@%d", s, p.inc) }

// family is a parent actor named "parent", supervising one probe named
// "parent/child" with the strategy under test, spawned through a Tree.
type family struct {
	sys    *actor.ActorSystem
	tree   *Tree
	parent *actor.PID
	child  *actor.PID
	events chan string
	incs   atomic.Int64
	logs   syncBuffer // the actor system's log
}

// spawnChild is sent to the parent to spawn its child again.
type spawnChild struct{ done chan *actor.PID }

// stopChild is sent to the parent to stop its child and wait for it.
type stopChild struct{ done chan struct{} }

func newFamily(t *testing.T, strategy actor.SupervisorStrategy, faults *Faults) *family {
	t.Helper()
	f := &family{events: make(chan string, 1000)}
	f.sys = NewSystem(zerolog.New(&f.logs).Level(zerolog.WarnLevel))
	f.tree = NewTree(f.sys, faults)
	childProps := func() *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor {
			return &probe{inc: f.incs.Add(1), events: f.events}
		})
	}
	spawned := make(chan *actor.PID, 1)
	parent := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			pid, err := c.SpawnNamed(childProps(), "child")
			if err != nil {
				panic(err)
			}
			spawned <- pid
		case *spawnChild:
			pid, err := c.SpawnNamed(childProps(), "child")
			if err != nil {
				panic(err)
			}
			m.done <- pid
		case *stopChild:
			if err := c.StopFuture(c.Children()[0]).Wait(); err != nil {
				panic(err)
			}
			close(m.done)
		}
	}, actor.WithSupervisor(strategy))
	pid, err := f.tree.SpawnNamed(parent, "parent")
	if err != nil {
		t.Fatal(err)
	}
	f.parent = pid
	f.child = <-spawned
	t.Cleanup(func() {
		f.sys.Root.Stop(f.parent)
		f.tree.Close()
		f.sys.Shutdown()
	})
	f.expect(t, "started@1")
	return f
}

// expect reads the next events and compares them with want, in order.
func (f *family) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-f.events:
			if got != w {
				t.Fatalf("event %q, want %q", got, w)
			}
		case <-time.After(guard):
			t.Fatalf("no event within %v, want %q", guard, w)
		}
	}
}

// eventually polls cond, a bounded poll of an observable condition.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", guard, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// timers is an AfterFunc that the test fires by hand.
type timers chan timerCall

type timerCall struct {
	d time.Duration
	f func()
}

func (ts timers) afterFunc(d time.Duration, f func()) { ts <- timerCall{d, f} }

func (ts timers) next(t *testing.T) timerCall {
	t.Helper()
	select {
	case c := <-ts:
		return c
	case <-time.After(guard):
		t.Fatalf("no restart scheduled within %v", guard)
		return timerCall{}
	}
}

// TestBackoffDelaysGrowAndChildStaysSuspended: each failure schedules a
// restart after twice the previous delay, up to Max; until the timer
// fires, the failed child handles nothing (a message sent after the panic
// waits in its mailbox) and is not restarted; when it fires, the old
// instance gets Restarting, a new one Started, and the waiting message goes
// to the new one.
func TestBackoffDelaysGrowAndChildStaysSuspended(t *testing.T) {
	ts := make(timers, 10)
	f := newFamily(t, NewBackoffStrategy(Backoff{
		Min: 10 * time.Millisecond, Max: 80 * time.Millisecond,
		AfterFunc: ts.afterFunc, Random: func() float64 { return 0.5 }, // no jitter
	}), nil)
	want := []time.Duration{10, 20, 40, 80, 80}
	for i, w := range want {
		inc := i + 1
		f.sys.Root.Send(f.child, "panic")
		f.sys.Root.Send(f.child, fmt.Sprint("after-", inc))
		c := ts.next(t)
		if c.d != w*time.Millisecond {
			t.Fatalf("failure %d: delay %v, want %v", inc, c.d, w*time.Millisecond)
		}
		// Suspended: once the failure is handled, the message stays queued
		// for as long as the restart waits.
		eventually(t, "the message sent after the panic is the only one queued", func() bool {
			return f.tree.Find(f.child.Id).MailboxLength == 1
		})
		select {
		case e := <-f.events:
			t.Fatalf("failure %d: event %q before the restart", inc, e)
		default:
		}
		if r := f.tree.Find(f.child.Id).Restarts; r != int64(i) {
			t.Fatalf("restarts = %d before the timer fired, want %d", r, i)
		}
		c.f()
		f.expect(t, fmt.Sprintf("restarting@%d", inc), fmt.Sprintf("started@%d", inc+1), fmt.Sprintf("msg:after-%d@%d", inc, inc+1))
		if r := f.tree.Find(f.child.Id).Restarts; r != int64(inc) {
			t.Fatalf("restarts = %d, want %d", r, inc)
		}
	}
	// Five failures in a row are logged at the 1st, 2nd and 4th.
	if lines := f.logs.lines(); strings.Count(strings.Join(lines, "\n"), `"actor failed"`) != 3 {
		t.Fatalf("failures logged:\n%s\nwant the 1st, 2nd and 4th", strings.Join(lines, "\n"))
	}
}

// TestBackoffResetsAfterQuiet: a child that ran for the quiet period since
// its last restart starts again from Min; one that ran less does not.
func TestBackoffResetsAfterQuiet(t *testing.T) {
	ts := make(timers, 10)
	clk := clock.NewManual(time.Unix(1000, 0))
	f := newFamily(t, NewBackoffStrategy(Backoff{
		Min: 10 * time.Millisecond, Max: time.Second, Quiet: time.Minute, Clock: clk,
		AfterFunc: ts.afterFunc, Random: func() float64 { return 0.5 },
	}), nil)
	fail := func(wantDelay time.Duration) {
		t.Helper()
		f.sys.Root.Send(f.child, "panic")
		c := ts.next(t)
		if c.d != wantDelay {
			t.Fatalf("delay %v, want %v", c.d, wantDelay)
		}
		c.f()
		<-f.events // restarting
		<-f.events // started
	}
	fail(10 * time.Millisecond)
	fail(20 * time.Millisecond)
	clk.Advance(59 * time.Second) // not quiet long enough
	fail(40 * time.Millisecond)
	clk.Advance(time.Minute)
	fail(10 * time.Millisecond)
	fail(20 * time.Millisecond)
}

// TestBackoffJitter: the jitter spreads a delay over ±Jitter, and never
// past Max.
func TestBackoffJitter(t *testing.T) {
	for _, tc := range []struct {
		random float64
		n      int
		want   time.Duration
	}{
		{0, 1, 80 * time.Millisecond},
		{0.999999999, 1, 120 * time.Millisecond},
		{0, 3, 320 * time.Millisecond},
		{0.999999999, 5, time.Second}, // 1600 ms × 1.2, capped
	} {
		s := NewBackoffStrategy(Backoff{Min: 100 * time.Millisecond, Max: time.Second, Jitter: 0.2,
			Random: func() float64 { return tc.random }}).(*backoffStrategy)
		if got := s.delay(tc.n); got.Round(time.Millisecond) != tc.want {
			t.Errorf("random %v, failure %d: delay %v, want %v", tc.random, tc.n, got, tc.want)
		}
	}
}

// TestBackoffStoppedChildStaysStopped: a child stopped while its restart
// waits is not restarted, and neither is a new actor spawned under its
// name meanwhile.
func TestBackoffStoppedChildStaysStopped(t *testing.T) {
	ts := make(timers, 10)
	f := newFamily(t, NewBackoffStrategy(Backoff{AfterFunc: ts.afterFunc}), nil)
	f.sys.Root.Send(f.child, "panic")
	c := ts.next(t)
	stopped := make(chan struct{})
	f.sys.Root.Send(f.parent, &stopChild{done: stopped})
	<-stopped
	f.expect(t, "stopped@1")
	respawned := make(chan *actor.PID)
	f.sys.Root.Send(f.parent, &spawnChild{done: respawned})
	<-respawned
	f.expect(t, "started@2")
	c.f() // the stale restart
	if r := f.tree.Find(f.child.Id).Restarts; r != 0 {
		t.Fatalf("the new actor was restarted %d times", r)
	}
	f.sys.Root.Send(f.child, "still here")
	f.expect(t, "msg:still here@2")
}

// TestBackoffDecider: the decider's stop and resume directives apply at
// once, without a timer.
func TestBackoffDecider(t *testing.T) {
	ts := make(timers, 10)
	directive := actor.ResumeDirective
	f := newFamily(t, NewBackoffStrategy(Backoff{AfterFunc: ts.afterFunc,
		Decider: func(any) actor.Directive { return directive }}), nil)
	f.sys.Root.Send(f.child, "panic")
	f.sys.Root.Send(f.child, "resumed")
	f.expect(t, "msg:resumed@1") // the same instance
	directive = actor.StopDirective
	f.sys.Root.Send(f.child, "panic")
	f.expect(t, "stopped@1")
	select {
	case c := <-ts:
		t.Fatalf("a restart was scheduled after %v", c.d)
	default:
	}
}

// TestBackoffAbandonsRequest: the sender of the request a child failed on
// is answered Abandoned at once, so Ask does not wait for its timeout.
func TestBackoffAbandonsRequest(t *testing.T) {
	ts := make(timers, 10)
	f := newFamily(t, NewBackoffStrategy(Backoff{AfterFunc: ts.afterFunc}), nil)
	_, err := Ask(f.sys, f.child, &question{"panic"}, time.Hour)
	if !errors.Is(err, ErrAbandoned) {
		t.Fatalf("Ask = %v, want ErrAbandoned", err)
	}
	ts.next(t).f()
	if res, err := Ask(f.sys, f.child, &question{"hi"}, guard); err != nil || res != "hi!" {
		t.Fatalf("after the restart: %v, %v", res, err)
	}
}
