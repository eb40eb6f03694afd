package actors

import (
	"slices"
	"sync"
	"time"
)

// Dispatcher runs actors' mailboxes on goroutines that it keeps between
// runs, instead of protoactor's default of a new goroutine every time an
// idle mailbox gets a message.
//
// Why: a new goroutine starts on a small stack, and a partition's append
// goes deep (middleware, validation, the write path), so every run grew
// its stack by copying it two or three times, unwinding it each time: 6%
// of a node's CPU when producing 100-byte records to 6 partitions. A kept
// goroutine keeps its grown stack.
//
// A mailbox is handed to a goroutine that waits for work if there is one,
// else to a new goroutine, so no mailbox waits behind another. After a
// run a goroutine waits for the next one, unless maxIdle already wait.
// The one that waited least is handed work first (a stack, not a queue),
// so that when less work comes than the waiting goroutines could take,
// those at the bottom wait out idleTimeout and end: what stays tracks how
// many mailboxes ran at once lately, not the largest burst (ten thousand
// partitions starting), nor maxIdle under a trickle of timer ticks.
type Dispatcher struct {
	throughput  int
	maxIdle     int
	idleTimeout time.Duration

	mu    sync.Mutex
	ready []*worker // waiting goroutines, the one that waited least last
}

type worker struct {
	work chan func() // one slot: the Schedule that takes a worker never blocks
}

// NewDispatcher makes a Dispatcher that lets a mailbox process up to
// throughput messages before it yields (protoactor's default is 300).
func NewDispatcher(throughput, maxIdle int, idleTimeout time.Duration) *Dispatcher {
	return &Dispatcher{throughput: throughput, maxIdle: maxIdle, idleTimeout: idleTimeout}
}

// Throughput implements actor.Dispatcher.
func (d *Dispatcher) Throughput() int { return d.throughput }

// Schedule implements actor.Dispatcher.
func (d *Dispatcher) Schedule(fn func()) {
	d.mu.Lock()
	if n := len(d.ready); n > 0 {
		w := d.ready[n-1]
		d.ready[n-1] = nil
		d.ready = d.ready[:n-1]
		d.mu.Unlock()
		w.work <- fn
		return
	}
	d.mu.Unlock()
	go d.run(fn)
}

// idle returns how many goroutines wait for work.
func (d *Dispatcher) idle() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ready)
}

func (d *Dispatcher) run(fn func()) {
	w := &worker{work: make(chan func(), 1)}
	timer := time.NewTimer(d.idleTimeout)
	for {
		fn()
		d.mu.Lock()
		if len(d.ready) >= d.maxIdle {
			d.mu.Unlock()
			return
		}
		d.ready = append(d.ready, w)
		d.mu.Unlock()
		timer.Reset(d.idleTimeout)
		select {
		case fn = <-w.work:
			continue
		case <-timer.C:
		}
		if !d.leave(w) {
			fn = <-w.work // a Schedule took w as the timer fired: its run is on the way
			continue
		}
		return
	}
}

// leave takes w off the waiting goroutines, reporting false if a Schedule
// took it first.
func (d *Dispatcher) leave(w *worker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, r := range d.ready { // the longest waiting, the ones that time out, come first
		if r == w {
			d.ready = slices.Delete(d.ready, i, i+1)
			return true
		}
	}
	return false
}
