package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

type named struct{}

func (named) Receive(actor.Context) {}
func (named) ActorKind() string     { return "named-kind" }

// TestTreeSnapshot: grandchildren are instrumented too (the spawn
// middleware passes itself on), the snapshot nests actors by name, kinds
// come from ActorKind or the Go type, and a stopped actor disappears.
func TestTreeSnapshot(t *testing.T) {
	f := newFamily(t, restartAtOnce(), nil)
	grand := make(chan *actor.PID, 1)
	// A second root, whose child is spawned from an actor's context.
	helper, err := f.tree.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); ok {
			pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return named{} }), "leaf")
			if err != nil {
				panic(err)
			}
			grand <- pid
		}
	}), "helper")
	if err != nil {
		t.Fatal(err)
	}
	leaf := <-grand
	eventually(t, "kinds recorded at Started", func() bool {
		l := f.tree.Find(leaf.Id)
		return l != nil && l.Kind == "named-kind"
	})
	roots := f.tree.Snapshot()
	if len(roots) != 2 || roots[0].Name != "helper" || roots[1].Name != "parent" {
		t.Fatalf("roots: %+v", roots)
	}
	if c := roots[0].Children; len(c) != 1 || c[0].Name != "helper/leaf" || c[0].Kind != "named-kind" {
		t.Fatalf("helper's children: %+v", c)
	}
	if c := roots[1].Children; len(c) != 1 || c[0].Name != "parent/child" || c[0].Kind != "*actors.probe" {
		t.Fatalf("parent's children: %+v", c)
	}
	if roots[1].Kind != "actor.ReceiveFunc" {
		t.Fatalf("parent kind %q", roots[1].Kind)
	}
	if err := f.sys.Root.StopFuture(helper).Wait(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stopped actors are forgotten", func() bool {
		return f.tree.Find("helper") == nil && f.tree.Find("helper/leaf") == nil
	})
}

// TestTreeNameExists: spawning under a taken name fails and leaves the
// live actor's entry alone.
func TestTreeNameExists(t *testing.T) {
	f := newFamily(t, restartAtOnce(), nil)
	f.sys.Root.Send(f.child, "panic")
	f.expect(t, "restarting@1", "started@2")
	if _, err := f.tree.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return named{} }), "parent"); err == nil {
		t.Fatal("spawned a second parent")
	}
	if p := f.tree.Find("parent/child"); p == nil || p.Restarts != 1 {
		t.Fatalf("child entry: %+v", p)
	}
	if lf := f.tree.Find("parent/child").LastFailure; lf == nil || lf.Directive != "restart" || lf.Cause != "boom" {
		t.Fatalf("the child's last failure: %+v", lf)
	}
	if p := f.tree.Find("parent"); p.LastFailure != nil {
		t.Fatalf("the parent never failed, but: %+v", p.LastFailure)
	}
	if p := f.tree.Find("parent"); p == nil || p.Kind != "actor.ReceiveFunc" {
		t.Fatalf("parent entry: %+v", p)
	}
}

// TestTreeMetrics: restarts, mailbox lengths (their sum and their max)
// and the live actors are exported by actor kind, never by actor name.
func TestTreeMetrics(t *testing.T) {
	ts := make(timers, 10)
	f := newFamily(t, NewBackoffStrategy(Backoff{AfterFunc: ts.afterFunc}), nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.tree)
	f.sys.Root.Send(f.child, "panic")
	f.sys.Root.Send(f.child, "queued")
	c := ts.next(t)
	eventually(t, "one message queued behind the failure", func() bool { return f.tree.Find(f.child.Id).MailboxLength == 1 })
	const kind = "*actors.probe"
	for name, want := range map[string]float64{"skein_actor_mailbox_length": 1, "skein_actor_mailbox_length_max": 1, "skein_actors": 1} {
		if got := gather(t, reg, name, kind); got != want {
			t.Fatalf("%s{kind=%q} = %v, want %v", name, kind, got, want)
		}
	}
	if got := gather(t, reg, "skein_actors", "actor.ReceiveFunc"); got != 1 {
		t.Fatalf("skein_actors{parent's kind} = %v, want 1", got)
	}
	c.f()
	f.expect(t, "restarting@1", "started@2", "msg:queued@2")
	if got := gather(t, reg, "skein_actor_restarts_total", kind); got != 1 {
		t.Fatalf("restart counter = %v, want 1", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "kind" {
					t.Errorf("%s has label %s=%q: only kind is bounded", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// gather returns the value of the metric name with label kind=kind.
func gather(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					if m.Counter != nil {
						return m.Counter.GetValue()
					}
					return m.Gauge.GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{kind=%q}", name, kind)
	return 0
}
