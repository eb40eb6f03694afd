//go:build !race

package nodetest

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/txn"
)

// A cut drops every kind of message one node sends another, from outside
// any actor too: a partition leader's transaction verification, an
// extension's or a coordinator's remote append, a DescribeQuorum, each an
// Ask (a future) from the node's root context. Each is answered before
// the cut and not while it lasts. The cut is one way, from node 1 to node
// 2: what node 2 answers would pass, so an answer means the request did.
func TestCutDropsEveryKind(t *testing.T) {
	c := Start(t, 2)
	sys, to := c.Nodes[0].ActorSystem(), c.cluster[1]
	kinds := []struct {
		name   string
		target string
		msg    any
	}{
		{"transaction verification", "node/2/txns", &txn.Verify{TransactionalID: "cut", ProducerID: 1, Topic: "t", Add: true}},
		{"remote append", "node/2/appends", &partition.RemoteAppend{Topic: "no-such-topic", LeaderEpoch: -1, Acks: -1}},
		{"DescribeQuorum", "node/2/controller", &controller.DescribeQuorum{}},
	}
	ask := func(target string, msg any) error {
		_, err := actors.Ask(sys, actor.NewPID(to, target), msg, 3*time.Second)
		return err
	}
	for _, k := range kinds {
		if err := ask(k.target, k.msg); err != nil {
			t.Fatalf("%s before the cut: %v", k.name, err)
		}
	}
	c.FaultOneWay(0, 1, actors.LinkFault{Cut: true})
	for _, k := range kinds {
		if err := ask(k.target, k.msg); !errors.Is(err, actors.ErrTimeout) {
			t.Errorf("%s across the cut: %v, want a timeout", k.name, err)
		}
	}
	c.Heal()
	for _, k := range kinds {
		if err := ask(k.target, k.msg); err != nil {
			t.Errorf("%s after the heal: %v", k.name, err)
		}
	}
}
