package actors

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrTimeout is returned by Ask when no reply came in time.
var ErrTimeout = errors.New("actors: request timed out")

// ErrDeadLetter is returned by Ask when the target does not exist.
var ErrDeadLetter = errors.New("actors: no such actor")

// ErrAbandoned is returned by Ask when the target failed while handling
// the request (its supervisor answered Abandoned): the request may or may
// not have taken effect.
var ErrAbandoned = errors.New("actors: the actor failed handling the request")

// Ask sends msg to pid as a request (the target answers with ctx.Respond)
// and waits for the reply, from outside any actor: a connection goroutine
// asking the controller, for example. It is protoactor's RequestFuture
// without its Future, whose result field is written without its lock when
// a reply races the timeout (protoactor #1145): the reply goes to a
// one-slot channel behind a process registered for this request only.
//
// Never call Ask from inside an actor's Receive on an actor that may call
// back: use ctx.Request and a reply message there.
func Ask(sys *actor.ActorSystem, pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	p := &replyProcess{ch: make(chan any, 1)}
	id := fmt.Sprintf("ask$%d", askSeq.Add(1))
	self, ok := sys.ProcessRegistry.Add(p, id)
	if !ok {
		return nil, fmt.Errorf("actors: reply process %s exists", id)
	}
	defer sys.ProcessRegistry.Remove(self)
	sys.Root.RequestWithCustomSender(pid, msg, self)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-p.ch:
		switch r := res.(type) {
		case *actor.DeadLetterResponse:
			return nil, fmt.Errorf("%w: %s", ErrDeadLetter, pid.Id)
		case *Abandoned:
			return nil, fmt.Errorf("%w: %s: %s", ErrAbandoned, r.Actor, r.Reason)
		}
		return res, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: %T to %s after %v", ErrTimeout, msg, pid.Id, timeout)
	}
}

var askSeq atomic.Uint64

// replyProcess takes the first reply to an Ask and drops the rest.
type replyProcess struct {
	ch chan any
}

func (p *replyProcess) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	select {
	case p.ch <- msg:
	default:
	}
}

func (p *replyProcess) SendSystemMessage(*actor.PID, any) {}
func (p *replyProcess) Stop(*actor.PID)                   {}

// Call sends msg to pid as a request from inside an actor, through c (so
// the actor's sender middleware, the link faults among it, applies), and
// calls done once with the reply, or with an error when none came within
// timeout (ErrTimeout), the target does not exist (ErrDeadLetter) or it
// failed handling the request (ErrAbandoned). done runs on whatever
// goroutine delivered the outcome: it should send a message to the actor,
// not touch its state. Unlike Ask it never blocks, so an actor may keep
// many calls outstanding and tell their answers apart.
func Call(c actor.SenderContext, pid *actor.PID, msg any, timeout time.Duration, done func(any, error)) {
	p := &callProcess{done: done}
	id := fmt.Sprintf("call$%d", askSeq.Add(1))
	self, ok := c.ActorSystem().ProcessRegistry.Add(p, id)
	if !ok {
		done(nil, fmt.Errorf("actors: reply process %s exists", id))
		return
	}
	reg := c.ActorSystem().ProcessRegistry
	p.finish = func() { reg.Remove(self) }
	p.timer.Store(time.AfterFunc(timeout, func() {
		p.complete(nil, fmt.Errorf("%w: %T to %s after %v", ErrTimeout, msg, pid.Id, timeout))
	}))
	c.RequestWithCustomSender(pid, msg, self)
}

// callProcess takes the first outcome of a Call.
type callProcess struct {
	once   sync.Once
	done   func(any, error)
	timer  atomic.Pointer[time.Timer] // set before the request leaves
	finish func()
}

func (p *callProcess) complete(res any, err error) {
	p.once.Do(func() {
		if t := p.timer.Load(); t != nil {
			t.Stop()
		}
		p.finish()
		p.done(res, err)
	})
}

func (p *callProcess) SendUserMessage(pid *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	switch r := msg.(type) {
	case *actor.DeadLetterResponse:
		p.complete(nil, fmt.Errorf("%w: %s", ErrDeadLetter, r.Target))
	case *Abandoned:
		p.complete(nil, fmt.Errorf("%w: %s: %s", ErrAbandoned, r.Actor, r.Reason))
	default:
		p.complete(msg, nil)
	}
}

func (p *callProcess) SendSystemMessage(*actor.PID, any) {}
func (p *callProcess) Stop(*actor.PID)                   {}
