package actors

import (
	"sync/atomic"
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
// run a goroutine waits for the next one for idleTimeout, unless maxIdle
// already wait; so a burst (ten thousand partitions starting) leaves at
// most maxIdle goroutines behind, and those for idleTimeout only.
type Dispatcher struct {
	throughput  int
	maxIdle     int32
	idleTimeout time.Duration
	work        chan func() // unbuffered: a send is taken by a waiting goroutine or not at all
	idle        atomic.Int32
}

// NewDispatcher makes a Dispatcher that lets a mailbox process up to
// throughput messages before it yields (protoactor's default is 300).
func NewDispatcher(throughput, maxIdle int, idleTimeout time.Duration) *Dispatcher {
	return &Dispatcher{throughput: throughput, maxIdle: int32(maxIdle), idleTimeout: idleTimeout, work: make(chan func())}
}

// Throughput implements actor.Dispatcher.
func (d *Dispatcher) Throughput() int { return d.throughput }

// Schedule implements actor.Dispatcher.
func (d *Dispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go d.worker(fn)
	}
}

func (d *Dispatcher) worker(fn func()) {
	var timer *time.Timer
	for {
		fn()
		if d.idle.Add(1) > d.maxIdle {
			d.idle.Add(-1)
			return
		}
		if timer == nil {
			timer = time.NewTimer(d.idleTimeout)
		} else {
			timer.Reset(d.idleTimeout)
		}
		select {
		case fn = <-d.work:
			d.idle.Add(-1)
		case <-timer.C:
			d.idle.Add(-1)
			return
		}
	}
}
