package actors

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A mailbox never waits behind another: runs that block until all of them
// have started all start.
func TestDispatcherRunsMailboxesConcurrently(t *testing.T) {
	d := NewDispatcher(300, 4, time.Minute)
	const n = 50
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	done := make(chan struct{}, n)
	for range n {
		d.Schedule(func() {
			started.Done()
			release.Wait()
			done <- struct{}{}
		})
	}
	started.Wait()
	release.Done()
	for range n {
		<-done
	}
	eventually(t, "maxIdle of the runs' goroutines wait for work, the others are gone", func() bool { return d.idle() == 4 })
}

// A goroutine that finished a run takes the next one: sequential runs
// start no goroutine.
func TestDispatcherReusesAnIdleGoroutine(t *testing.T) {
	d := NewDispatcher(300, 4, time.Minute)
	ran := make(chan struct{})
	run := func() { ran <- struct{}{} }
	d.Schedule(run)
	<-ran
	eventually(t, "the goroutine waits for work", func() bool { return d.idle() == 1 })
	before := runtime.NumGoroutine()
	for range 100 {
		d.Schedule(run)
		<-ran
		eventually(t, "the goroutine waits for work", func() bool { return d.idle() == 1 })
	}
	if after := runtime.NumGoroutine(); after != before {
		t.Fatalf("goroutines went from %d to %d over 100 sequential runs", before, after)
	}
}

// A burst leaves at most maxIdle goroutines waiting, and those go after the
// idle timeout.
func TestDispatcherLetsIdleGoroutinesGo(t *testing.T) {
	base := runtime.NumGoroutine()
	d := NewDispatcher(300, 8, 50*time.Millisecond)
	const n = 200
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		d.Schedule(func() {
			started.Done()
			release.Wait()
		})
	}
	// All n started and none returned: n goroutines run them. (A count
	// of goroutines here would also count an earlier test's that are
	// still ending.)
	started.Wait()
	release.Done()
	eventually(t, "at most maxIdle goroutines are left", func() bool { return runtime.NumGoroutine() <= base+8 })
	eventually(t, "the idle goroutines are gone", func() bool { return d.idle() == 0 && runtime.NumGoroutine() <= base })
}

// Under a trickle of runs, as ten thousand idle partitions' timer ticks
// are, the goroutines a burst left behind still end: the one that waited
// least takes the next run, and the others time out.
func TestDispatcherShrinksUnderATrickle(t *testing.T) {
	d := NewDispatcher(300, 8, 50*time.Millisecond)
	var started, release sync.WaitGroup
	started.Add(8)
	release.Add(1)
	for range 8 {
		d.Schedule(func() {
			started.Done()
			release.Wait()
		})
	}
	started.Wait()
	release.Done()
	eventually(t, "the burst's goroutines wait for work", func() bool { return d.idle() == 8 })

	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		ran := make(chan struct{})
		tick := time.NewTicker(5 * time.Millisecond) // the trickle's pace, not a wait for anything
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				d.Schedule(func() { ran <- struct{}{} })
				<-ran
			}
		}
	}()
	eventually(t, "all but the trickle's goroutines end", func() bool { return d.idle() <= 2 })
	close(stop)
	<-trickled
}

// Actors spawned through a Tree run on its Dispatcher and get their
// messages in order.
func TestTreeActorsRunOnTheDispatcher(t *testing.T) {
	sys := actor.NewActorSystem()
	tree := NewTree(sys, nil)
	defer tree.Close()
	got := make(chan int, 1000)
	pid, err := tree.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if n, ok := c.Message().(int); ok {
			got <- n
		}
	}), "counter")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		sys.Root.Send(pid, i)
	}
	for i := range 1000 {
		if n := <-got; n != i {
			t.Fatalf("message %d arrived as %d", i, n)
		}
	}
	// The mailbox's goroutine came from the tree's dispatcher: it waits
	// there for the next run.
	eventually(t, "the actor's goroutine waits in the tree's dispatcher", func() bool { return tree.dispatcher.idle() >= 1 })
}

// deep recurses to use about n KiB of stack, as a partition's append does.
//
//go:noinline
func deep(n int) int {
	var pad [1024]byte
	pad[n%1024] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%1024])
}

// BenchmarkDispatcher schedules runs that use 16 KiB of stack, one at a
// time as an idle partition's mailbox is: protoactor's default dispatcher
// (a new goroutine each time, growing its stack) against Dispatcher.
func BenchmarkDispatcher(b *testing.B) {
	for _, c := range []struct {
		name string
		d    actor.Dispatcher
	}{
		{"default", actor.NewDefaultDispatcher(300)},
		{"kept", NewDispatcher(300, 128, time.Minute)},
	} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan struct{})
			run := func() { deep(16); done <- struct{}{} }
			for b.Loop() {
				c.d.Schedule(run)
				<-done
			}
		})
	}
}
