package partition

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// A topic deleted and created again at once: the new partition actor has
// the old one's name, so its PID, and the old one's Terminated must not be
// taken for the new one stopping. (It was: the supervisor tried to respawn
// the "stopped" partition, failed with "name exists" and dropped the new
// one from the registry.) And the supervisor, stopping, still stops the new
// actor, which closes its log cleanly.
func TestSupervisorHostAfterUnhostKeepsTheNewPartition(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	reg := NewRegistry()
	fs := vfs.NewCrashableMem()
	sup, err := sys.Root.SpawnNamed(SupervisorProps(SupervisorConfig{Registry: reg, FS: fs, Logger: zerolog.Nop()},
		actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), "partitions")
	if err != nil {
		t.Fatal(err)
	}
	host := func(topic string, id byte) {
		cfg := testConfig(fs, clock.Real)
		cfg.Topic, cfg.Dir, cfg.TopicID = topic, Dir("/data", topic, 0), image.TopicID{id}
		sys.Root.Send(sup, &Host{Config: cfg})
	}
	done := make(chan struct{})
	defer close(done)
	host("t", 1)
	for round := range byte(20) {
		sys.Root.Send(sup, &Unhost{Topic: "t", TopicID: image.TopicID{round + 1}, Delete: true})
		host("t", round+2)
		// Once a partition hosted after them is ready, the Unhost was
		// handled, so the registry no longer has the old t/0.
		marker := fmt.Sprintf("m%d", round)
		host(marker, 1)
		if reg.WaitReady(marker, 0, done) == nil {
			t.Fatalf("%s/0 not hosted", marker)
		}
		h := reg.WaitReady("t", 0, done)
		if h == nil || h.TopicID != (image.TopicID{round + 2}) {
			t.Fatalf("round %d: the recreated t/0 is not hosted: %+v", round, h)
		}
		if round == 19 {
			// A record, so that the last t/0 has files to close.
			ch := make(chan AppendResult, 1)
			sys.Root.Send(h.PID, &Append{Records: batch(t, -1, -1, -1, 1), Acks: -1, Reply: func(r AppendResult) { ch <- r }})
			if r := <-ch; r.Err != nil {
				t.Fatalf("append to the last t/0: %v (%s)", r.Err, r.Message)
			}
		}
	}
	if err := sys.Root.StopFuture(sup).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(path.Join(Dir("/data", "t", 0), ".clean-shutdown")); err != nil {
		t.Errorf("the last t/0 was not closed when the supervisor stopped: %v", err)
	}
}
