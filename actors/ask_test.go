package actors

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

func TestAsk(t *testing.T) {
	sys := NewSystem(zerolog.Nop())
	echo, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case string:
			if m != "ignore" {
				c.Respond(m + "!")
			}
		}
	}), "echo")
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Root.Stop(echo)
	res, err := Ask(sys, echo, "hi", 5*time.Second)
	if err != nil || res != "hi!" {
		t.Fatalf("got %v, %v", res, err)
	}
	if _, err := Ask(sys, echo, "ignore", 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("no reply: %v, want ErrTimeout", err)
	}
	if _, err := Ask(sys, actor.NewPID(sys.Address(), "nobody"), "hi", 5*time.Second); !errors.Is(err, ErrDeadLetter) {
		t.Fatalf("missing actor: %v, want ErrDeadLetter", err)
	}
}

// TestCall: an actor's calls are answered each to its own callback, with
// the reply, a timeout or a dead letter, and leave no reply process behind.
func TestCall(t *testing.T) {
	sys := NewSystem(zerolog.Nop())
	echo, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(string); ok && m != "ignore" {
			c.Respond(m + "!")
		}
	}), "echo")
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res any
		err error
	}
	first := askSeq.Load() + 1
	got := map[string]chan outcome{}
	for _, m := range []string{"a", "b", "ignore", "nobody"} {
		got[m] = make(chan outcome, 1)
	}
	caller, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*actor.Started); !ok {
			return
		}
		for m, ch := range got {
			to := echo
			if m == "nobody" {
				to = actor.NewPID(sys.Address(), "nobody")
			}
			Call(c, to, m, 50*time.Millisecond, func(res any, err error) { ch <- outcome{res, err} })
		}
	}), "caller")
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Root.Stop(caller)
	defer sys.Root.Stop(echo)
	for _, m := range []string{"a", "b"} {
		if o := <-got[m]; o.err != nil || o.res != m+"!" {
			t.Errorf("%s: %v, %v", m, o.res, o.err)
		}
	}
	if o := <-got["ignore"]; !errors.Is(o.err, ErrTimeout) {
		t.Errorf("no reply: %v, want ErrTimeout", o.err)
	}
	if o := <-got["nobody"]; !errors.Is(o.err, ErrDeadLetter) {
		t.Errorf("missing actor: %v, want ErrDeadLetter", o.err)
	}
	for i := first; i <= askSeq.Load(); i++ {
		if _, ok := sys.ProcessRegistry.GetLocal(fmt.Sprintf("call$%d", i)); ok {
			t.Errorf("reply process call$%d left", i)
		}
	}
}
