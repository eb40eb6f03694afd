package node

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
)

// Node is one running Skein node: its actor system and the root of its
// actor tree, node/<id>.
type Node struct {
	cfg  configs.Node
	log  zerolog.Logger
	sys  *actor.ActorSystem
	root *actor.PID
	done chan struct{} // closed when the root actor has stopped

	stopOnce sync.Once
	stopErr  error
}

// Start creates the data directory and starts the node's actor system and
// its root actor, node/<cfg.NodeID>. cfg must be valid (configs.Load
// validates it). The node runs until Stop.
func Start(cfg configs.Node, log zerolog.Logger) (*Node, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("node: creating data.dir: %w", err)
	}
	n := &Node{cfg: cfg, log: log, done: make(chan struct{})}
	n.sys = actors.NewSystem(log)
	props := actor.PropsFromProducer(
		func() actor.Actor { return &rootActor{node: n} },
		// NB: without a guardian, protoactor's default for a root-spawned
		// actor stops it for good after its 11th failure in 10 s.
		actor.WithGuardian(actor.NewOneForOneStrategy(10, time.Minute, rootDecider)),
	)
	root, err := n.sys.Root.SpawnNamed(props, Name(cfg.NodeID))
	if err != nil {
		n.sys.Shutdown()
		return nil, fmt.Errorf("node: spawning %s: %w", Name(cfg.NodeID), err)
	}
	n.root = root
	log.Info().Int32("node.id", cfg.NodeID).Str("data.dir", cfg.DataDir).Str("actor", root.Id).Msg("node started")
	return n, nil
}

// Name returns the name of a node's root actor, under which its whole actor
// tree is named: node/<id>.
func Name(id int32) string { return fmt.Sprintf("node/%d", id) }

// Done is closed when the node's root actor has stopped: after Stop, or
// when its supervisor gave up on it after repeated failures, in which case
// the process should exit.
func (n *Node) Done() <-chan struct{} { return n.done }

// Stop stops the node gracefully: the root actor processes the messages
// queued before the stop, then stops its children and itself. Stop returns
// ctx.Err() if ctx ends first. Calling it again returns the first result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		// Poison, not Stop: queued messages are handled first. NB: no
		// PoisonFuture, whose Future races under -race (protoactor #1145);
		// the root actor closes done instead.
		n.sys.Root.Poison(n.root)
		select {
		case <-n.done:
		case <-ctx.Done():
			n.stopErr = fmt.Errorf("node: stopping %s: %w", n.root.Id, ctx.Err())
			return
		}
		// NB: Shutdown stops no actor; it only marks the system stopped.
		n.sys.Shutdown()
		n.log.Info().Int32("node.id", n.cfg.NodeID).Msg("node stopped")
	})
	return n.stopErr
}

// rootActor is node/<id>, the root of the node's actor tree. It will
// supervise the controller, metadata, partitions and coordinators; for now
// it has no children.
//
// Supervised by a one-for-one guardian that restarts it up to 10 times a
// minute and then stops it, which closes Node.Done.
type rootActor struct {
	node *Node
}

func (a *rootActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.node.log.Debug().Str("actor", c.Self().Id).Msg("actor started")
	case *actor.Stopped:
		close(a.node.done)
	}
}

func rootDecider(reason any) actor.Directive {
	return actor.RestartDirective
}
