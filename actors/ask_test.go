package actors

import (
	"errors"
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
