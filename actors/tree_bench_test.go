package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// BenchmarkMessages measures one-way Send into one actor, plain and as a
// Tree instruments it (mailbox counters, kind, the fault middleware), with
// no fault set and with a fault set on another actor (the middleware then
// takes its lock and matches names on every message).
func BenchmarkMessages(b *testing.B) {
	for _, bc := range []struct {
		name       string
		instrument bool
		fault      bool
	}{
		{"plain", false, false},
		{"tree", true, false},
		{"tree+unrelated-fault", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sys := NewSystem(zerolog.Nop())
			defer sys.Shutdown()
			done := make(chan struct{})
			n := b.N
			props := actor.PropsFromFunc(func(c actor.Context) {
				if _, ok := c.Message().(int); ok {
					n--
					if n == 0 {
						close(done)
					}
				}
			})
			var pid *actor.PID
			var err error
			if bc.instrument {
				faults := NewFaults()
				if bc.fault {
					if _, err := faults.Add(Fault{Actor: "elsewhere", Kind: FaultDrop}); err != nil {
						b.Fatal(err)
					}
				}
				tree := NewTree(sys, faults)
				defer tree.Close()
				pid, err = tree.SpawnNamed(props, "sink")
			} else {
				pid, err = sys.Root.SpawnNamed(props, "sink")
			}
			if err != nil {
				b.Fatal(err)
			}
			defer sys.Root.Stop(pid)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sys.Root.Send(pid, i)
			}
			<-done
		})
	}
}
