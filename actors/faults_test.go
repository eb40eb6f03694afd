package actors

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// restartAtOnce restarts failed children without delay.
func restartAtOnce() actor.SupervisorStrategy {
	return NewBackoffStrategy(Backoff{AfterFunc: func(_ time.Duration, f func()) { f() }})
}

func addFault(t *testing.T, fs *Faults, f Fault) Fault {
	t.Helper()
	added, err := fs.Add(f)
	if err != nil {
		t.Fatal(err)
	}
	return added
}

// TestFaultPanic: a panic fault with a count fails the actor on that many
// messages, which are lost; the supervisor restarts it each time; then the
// fault is gone.
func TestFaultPanic(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultPanic, Count: 2})
	for i := 1; i <= 3; i++ {
		f.sys.Root.Send(f.child, fmt.Sprint("m", i))
	}
	f.expect(t, "restarting@1", "started@2", "restarting@2", "started@3", "msg:m3@3")
	if n := len(fs.List()); n != 0 {
		t.Fatalf("%d faults left, want none", n)
	}
	if r := f.tree.Find(f.child.Id).Restarts; r != 2 {
		t.Fatalf("restarts = %d, want 2", r)
	}
	// A request the fault fails is abandoned, with the injected reason.
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultPanic})
	_, err := Ask(f.sys, f.child, &question{"x"}, time.Hour)
	if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "injected panic") {
		t.Fatalf("Ask on a panicking actor: %v, want ErrAbandoned with the injected reason", err)
	}
}

// TestFaultPanicAfter: with After, the actor handles the message (and
// replies) before it fails.
func TestFaultPanicAfter(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultPanic, After: true})
	f.sys.Root.Send(f.child, "handled")
	f.expect(t, "msg:handled@1", "restarting@1", "started@2")
}

// TestFaultDrop: the next Count messages vanish; the rest arrive in order.
func TestFaultDrop(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultDrop, Count: 2})
	for i := 1; i <= 4; i++ {
		f.sys.Root.Send(f.child, fmt.Sprint("m", i))
	}
	f.expect(t, "msg:m3@1", "msg:m4@1")
}

// TestFaultDelay: delayed messages still arrive, in order; Fired counts
// them and an unlimited delay stays until removed.
func TestFaultDelay(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	d := addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultDelay, Delay: time.Millisecond})
	for i := 1; i <= 3; i++ {
		f.sys.Root.Send(f.child, fmt.Sprint("m", i))
	}
	f.expect(t, "msg:m1@1", "msg:m2@1", "msg:m3@1")
	list := fs.List()
	if len(list) != 1 || list[0].Fired != 3 {
		t.Fatalf("faults = %+v, want the delay, fired 3 times", list)
	}
	if !fs.Remove(d.ID) || fs.Remove(d.ID) {
		t.Fatal("Remove: want true once")
	}
}

// TestFaultStop: the actor stops (no restart) instead of handling the
// message.
func TestFaultStop(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	addFault(t, fs, Fault{Actor: "parent/*", Kind: FaultStop})
	f.sys.Root.Send(f.child, "m1")
	f.expect(t, "stopped@1")
	eventually(t, "the tree forgets the stopped actor", func() bool { return f.tree.Find(f.child.Id) == nil })
}

// TestFaultSelectors: faults select actors by exact id or prefix, and
// messages by type; others pass.
func TestFaultSelectors(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, restartAtOnce(), fs)
	addFault(t, fs, Fault{Actor: "parent", Kind: FaultDrop, Count: 100})         // the parent only
	addFault(t, fs, Fault{Actor: "parent/ch*", Kind: FaultDrop, Message: "int"}) // ints only
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultDrop, Message: "*actors.question"})
	addFault(t, fs, Fault{Actor: "other/*", Kind: FaultDrop, Count: 100})
	f.sys.Root.Send(f.child, 7)
	f.sys.Root.Send(f.child, &question{"dropped"})
	f.sys.Root.Send(f.child, "kept")
	f.expect(t, "msg:kept@1")
	left := fs.List()
	if len(left) != 2 || left[0].Actor != "parent" || left[1].Actor != "other/*" {
		t.Fatalf("faults left: %+v", left)
	}
	if n := fs.Clear(); n != 2 || len(fs.List()) != 0 {
		t.Fatalf("Clear = %d", n)
	}
}

// TestFaultLifecycleUntouched: a fault on every message of every actor
// lets Started, Stopping and Stopped through, and a PoisonPill still stops
// the actor.
func TestFaultLifecycleUntouched(t *testing.T) {
	fs := NewFaults()
	addFault(t, fs, Fault{Actor: "*", Kind: FaultDrop, Count: 1000})
	f := newFamily(t, restartAtOnce(), fs) // sees started@1
	f.sys.Root.Send(f.child, "dropped")
	f.sys.Root.Poison(f.child)
	f.expect(t, "stopped@1")
}

func TestFaultValidation(t *testing.T) {
	fs := NewFaults()
	for _, f := range []Fault{
		{Kind: FaultPanic},
		{Actor: "a", Kind: "explode"},
		{Actor: "a", Kind: FaultPanic, Count: -1},
		{Actor: "a", Kind: FaultDelay},
		{Actor: "a", Kind: FaultDelay, Delay: time.Hour},
		{Actor: "a", Kind: FaultDrop, Delay: time.Second},
		{Actor: "a", Kind: FaultDrop, After: true},
	} {
		if _, err := fs.Add(f); !errors.Is(err, ErrBadFault) {
			t.Errorf("Add(%+v) = %v, want ErrBadFault", f, err)
		}
	}
	a := addFault(t, fs, Fault{Actor: "a", Kind: FaultPanic})
	b := addFault(t, fs, Fault{Actor: "a", Kind: FaultDelay, Delay: time.Second})
	if a.ID == 0 || b.ID == a.ID || a.Count != 1 || b.Count != 0 {
		t.Fatalf("added %+v and %+v", a, b)
	}
}

// TestFaultsOffCostsNothing: with no fault set, the middleware allocates
// nothing and touches no context (it is called with none).
func TestFaultsOffCostsNothing(t *testing.T) {
	fs := NewFaults()
	calls := 0
	mw := fs.Middleware(func(actor.ReceiverContext, *actor.MessageEnvelope) { calls++ })
	env := &actor.MessageEnvelope{Message: "m"}
	if allocs := testing.AllocsPerRun(1000, func() { mw(nil, env) }); allocs != 0 {
		t.Fatalf("%v allocations per message", allocs)
	}
	if calls == 0 {
		t.Fatal("the message was not passed on")
	}
}

func TestMatchActor(t *testing.T) {
	for _, tc := range []struct {
		pattern, id string
		want        bool
	}{
		{"node/1/controller", "node/1/controller", true},
		{"node/1/controller", "node/1/controllers", false},
		{"*", "node/1/partitions/orders-0", true},
		{"node/1/partitions/orders-*", "node/1/partitions/orders-12", true},
		{"node/1/partitions/orders-*", "node/2/partitions/orders-12", false},
		{"node/*/groups/*", "node/3/groups/g1", true},
		{"node/*/groups/*", "node/3/partitions/g1", false},
		{"node/*/groups", "node/3/groups/g1", false},
		{"*-0", "node/1/partitions/orders-0", true},
		{"*-0", "node/1/partitions/orders-10", false},
		{"*-0", "node/1/partitions/orders-01", false},
		{"a*ab", "ab", false},
		{"*x*x", "x", false},
		{"*x*x", "xx", true},
	} {
		if got := matchActor(tc.pattern, tc.id); got != tc.want {
			t.Errorf("matchActor(%q, %q) = %v, want %v", tc.pattern, tc.id, got, tc.want)
		}
	}
}

// TestFaultLifetime: a fault with For is removed when it ends, used up or
// not, and Expired hears of it.
func TestFaultLifetime(t *testing.T) {
	fs := NewFaults()
	expired := make(chan Fault, 1)
	fs.Expired = func(f Fault) { expired <- f }
	added := addFault(t, fs, Fault{Actor: "a", Kind: FaultDelay, Delay: time.Millisecond, For: 20 * time.Millisecond})
	if added.Expires.IsZero() {
		t.Fatal("a fault with a lifetime has no end")
	}
	select {
	case f := <-expired:
		if f.ID != added.ID {
			t.Fatalf("expired %+v, want %+v", f, added)
		}
	case <-time.After(guard):
		t.Fatal("the fault did not expire")
	}
	if n := len(fs.List()); n != 0 {
		t.Fatalf("%d faults left after the lifetime", n)
	}
	if _, err := fs.Add(Fault{Actor: "a", Kind: FaultDrop, For: 25 * time.Hour}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("a 25-hour fault: %v, want ErrBadFault", err)
	}
}

// TestFaultEveryAndRate: Every spaces the messages a fault takes, Rate
// takes a fraction of them; neither is used up.
func TestFaultEveryAndRate(t *testing.T) {
	fs := NewFaults()
	addFault(t, fs, Fault{Actor: "a", Kind: FaultDrop, Every: time.Hour})
	hits := 0
	for range 100 {
		if _, ok := fs.take("a", "m"); ok {
			hits++
		}
	}
	if hits != 1 || len(fs.List()) != 1 {
		t.Fatalf("every hour: %d of 100 messages taken, %d faults left; want 1 and 1", hits, len(fs.List()))
	}
	fs.Clear()
	addFault(t, fs, Fault{Actor: "a", Kind: FaultDrop, Rate: 0.5})
	hits = 0
	for range 10000 {
		if _, ok := fs.take("a", "m"); ok {
			hits++
		}
	}
	// Binomial(10000, 0.5): outside [4000, 6000] has probability < 1e-80.
	if hits < 4000 || hits > 6000 || len(fs.List()) != 1 {
		t.Fatalf("rate 0.5: %d of 10000 messages taken, %d faults left", hits, len(fs.List()))
	}
	if _, err := fs.Add(Fault{Actor: "a", Kind: FaultDrop, Rate: 1.5}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("rate 1.5: %v, want ErrBadFault", err)
	}
}
