package actors

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// seqs returns the sequence numbers of events.
func seqs(events []Event) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

// TestJournalSince: a full journal keeps the newest events; Since reads
// after a sequence number, up to a limit, and a number past the newest
// reads from the oldest held (a journal that started again).
func TestJournalSince(t *testing.T) {
	j := NewJournal(3)
	if got := j.Since(0, 0); got == nil || len(got) != 0 {
		t.Fatalf("empty journal: %v, want an empty slice", got)
	}
	for i := 1; i <= 5; i++ {
		if seq := j.Append(Event{Actor: fmt.Sprint("a", i), Type: EventStarted}); seq != uint64(i) {
			t.Fatalf("append %d: seq %d", i, seq)
		}
	}
	for _, tc := range []struct {
		since uint64
		limit int
		want  []uint64
	}{
		{0, 0, []uint64{3, 4, 5}}, // 1 and 2 were dropped
		{1, 0, []uint64{3, 4, 5}},
		{3, 0, []uint64{4, 5}},
		{4, 1, []uint64{5}},
		{0, 2, []uint64{3, 4}},
		{5, 0, []uint64{}},
		{99, 0, []uint64{3, 4, 5}},
	} {
		got := j.Since(tc.since, tc.limit)
		if fmt.Sprint(seqs(got)) != fmt.Sprint(tc.want) {
			t.Errorf("Since(%d, %d) = %v, want %v", tc.since, tc.limit, seqs(got), tc.want)
		}
		for _, e := range got {
			if e.Actor != fmt.Sprint("a", e.Seq) || e.Time.IsZero() {
				t.Errorf("event %d: %+v", e.Seq, e)
			}
		}
	}
	if j.Last() != 5 {
		t.Fatalf("Last = %d, want 5", j.Last())
	}
}

// TestJournalConcurrentAppends: appends from many goroutines get distinct
// sequence numbers without gaps, and the journal holds the newest.
func TestJournalConcurrentAppends(t *testing.T) {
	j := NewJournal(100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				j.Append(Event{Actor: fmt.Sprint(g, "/", i)})
			}
		})
	}
	wg.Wait()
	got := j.Since(0, 0)
	if len(got) != 100 || got[0].Seq != 301 || got[99].Seq != 400 {
		t.Fatalf("held %d events, %v..%v; want 301..400", len(got), got[0].Seq, got[len(got)-1].Seq)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("gap between %d and %d", got[i-1].Seq, got[i].Seq)
		}
	}
}

// actorEvents returns the journal's events for actor, once cond holds for
// them (a bounded wait: the middleware journals after the actor has
// handled the message, so after what the test waits on).
func actorEvents(t *testing.T, j *Journal, actor string, what string, cond func([]Event) bool) []Event {
	t.Helper()
	var out []Event
	eventually(t, what, func() bool {
		out = out[:0]
		for _, e := range j.Since(0, 0) {
			if e.Actor == actor {
				out = append(out, e)
			}
		}
		return cond(out)
	})
	return out
}

func types(events []Event) string {
	s := make([]string, len(events))
	for i, e := range events {
		s[i] = string(e.Type)
	}
	return strings.Join(s, " ")
}

// TestTreeJournalsFailureAndRecovery: an actor's life in the journal:
// started; failed, with the panic value as the cause and the supervisor's
// directive and delay, when the supervisor decides (before the delay);
// restarted, with the cause and the time from the failure to the new
// instance's Started handled; stopped. The recovery is observed in the
// histogram and the failure counted, by kind.
func TestTreeJournalsFailureAndRecovery(t *testing.T) {
	ts := make(timers, 10)
	f := newFamily(t, NewBackoffStrategy(Backoff{Min: 50 * time.Millisecond, Jitter: -1, AfterFunc: ts.afterFunc}), nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.tree)
	j := f.tree.Events()
	actorEvents(t, j, "parent/child", "started", func(es []Event) bool { return types(es) == "started" })

	f.sys.Root.Send(f.child, "panic")
	c := ts.next(t)
	// The failure is journaled when the supervisor decides, before the
	// restart waits out its delay.
	es := actorEvents(t, j, "parent/child", "failed", func(es []Event) bool { return types(es) == "started failed" })
	if e := es[1]; e.Cause != "boom" || e.Directive != "restart" || e.DelaySeconds != 0.05 || e.Kind != "*actors.probe" {
		t.Fatalf("failed event: %+v", e)
	}
	c.f()
	f.expect(t, "restarting@1", "started@2")
	es = actorEvents(t, j, "parent/child", "restarted", func(es []Event) bool { return types(es) == "started failed restarted" })
	if e := es[2]; e.Cause != "boom" || e.RecoverySeconds <= 0 || e.Kind != "*actors.probe" {
		t.Fatalf("restarted event: %+v", e)
	}
	if !(es[0].Seq < es[1].Seq && es[1].Seq < es[2].Seq) {
		t.Fatalf("events out of order: %v", seqs(es))
	}
	if got := gatherKind(t, reg, "skein_actor_recovery_seconds", "*actors.probe"); got != 1 {
		t.Fatalf("recovery histogram count = %v, want 1", got)
	}
	if got := gatherKind(t, reg, "skein_actor_failures_total", "*actors.probe"); got != 1 {
		t.Fatalf("failure counter = %v, want 1", got)
	}

	done := make(chan struct{})
	f.sys.Root.Send(f.parent, &stopChild{done: done})
	<-done
	f.expect(t, "stopped@2")
	actorEvents(t, j, "parent/child", "stopped", func(es []Event) bool { return types(es) == "started failed restarted stopped" })
}

// TestTreeJournalsInjectedFault: a panic injected by Faults is journaled
// with a cause that says so; protoactor's own one-for-one strategy, which
// publishes only SupervisorEvent, is journaled the same way (failed, then
// restarted).
func TestTreeJournalsInjectedFault(t *testing.T) {
	fs := NewFaults()
	f := newFamily(t, actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider), fs)
	addFault(t, fs, Fault{Actor: "parent/child", Kind: FaultPanic})
	f.sys.Root.Send(f.child, "x")
	f.expect(t, "restarting@1", "started@2")
	es := actorEvents(t, f.tree.Events(), "parent/child", "failed and restarted", func(es []Event) bool {
		return types(es) == "started failed restarted"
	})
	if e := es[1]; !strings.Contains(e.Cause, "injected panic") || e.Directive != "restart" || e.DelaySeconds != 0 {
		t.Fatalf("failed event: %+v", e)
	}
	if e := es[2]; !strings.Contains(e.Cause, "injected panic") || e.RecoverySeconds <= 0 {
		t.Fatalf("restarted event: %+v", e)
	}
}

// TestTreeJournalsStopDirective: a failure whose supervisor stops the
// actor is journaled with that directive, then the stop; no restart.
func TestTreeJournalsStopDirective(t *testing.T) {
	f := newFamily(t, NewBackoffStrategy(Backoff{Decider: func(any) actor.Directive { return actor.StopDirective }}), nil)
	f.sys.Root.Send(f.child, "panic")
	f.expect(t, "stopped@1")
	es := actorEvents(t, f.tree.Events(), "parent/child", "failed and stopped", func(es []Event) bool {
		return types(es) == "started failed stopped"
	})
	if e := es[1]; e.Directive != "stop" || e.Cause != "boom" {
		t.Fatalf("failed event: %+v", e)
	}
}

// roler is a Roled actor: "lead", "follow" and "bump" change its role and
// epoch, which it publishes in an atomic, as ActorRole's contract asks.
type roler struct {
	role  atomic.Pointer[roleSeen]
	done  chan<- string
	epoch int32
}

func (r *roler) ActorRole() (string, int32) {
	if v := r.role.Load(); v != nil {
		return v.role, v.epoch
	}
	return "", 0
}

func (r *roler) Receive(c actor.Context) {
	m, ok := c.Message().(string)
	if !ok {
		return
	}
	cur, _ := r.ActorRole()
	switch m {
	case "lead":
		r.epoch++
		r.role.Store(&roleSeen{"leader", r.epoch})
	case "follow":
		r.role.Store(&roleSeen{"follower", r.epoch})
	case "bump":
		r.epoch++
		r.role.Store(&roleSeen{cur, r.epoch})
	}
	r.done <- m
}

// TestTreeJournalsRoles: a Roled actor's role and epoch changes are
// journaled after the message that made them (role when the role
// changes, epoch when only the epoch does), a message that changes
// neither journals nothing, and the snapshot shows the role.
func TestTreeJournalsRoles(t *testing.T) {
	f := newFamily(t, restartAtOnce(), nil)
	done := make(chan string, 10)
	pid, err := f.tree.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &roler{done: done} }), "roler")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"lead", "bump", "other", "follow", "lead"} {
		f.sys.Root.Send(pid, m)
		<-done
	}
	es := actorEvents(t, f.tree.Events(), "roler", "the role changes", func(es []Event) bool { return len(es) == 5 })
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s:%s/%d", e.Type, e.Role, e.Epoch))
	}
	want := "started:/0 role:leader/1 epoch:leader/2 role:follower/2 role:leader/3"
	if strings.Join(got, " ") != want {
		t.Fatalf("events %q, want %q", strings.Join(got, " "), want)
	}
	if a := f.tree.Find("roler"); a == nil || a.Role != "leader" || a.Epoch != 3 {
		t.Fatalf("snapshot: %+v, want leader in epoch 3", a)
	}
}

// gatherKind returns the value (a histogram's sample count) of the metric
// name with label kind.
func gatherKind(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
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
					if m.Histogram != nil {
						return float64(m.Histogram.GetSampleCount())
					}
					return m.Counter.GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{kind=%q}", name, kind)
	return 0
}
