package node

// A link fault on both sides: the console's cut and heal buttons act on a
// pair of nodes, but a node's /v1/links sets only its own side (what its
// actors send to the peer). With "both", the node asks the peer, over
// remoting, to set or heal the peer's side toward it too; remoting is
// the channel because the console can reach only its own node's admin
// API, and nodes already trust each other's remoting.

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
)

func init() {
	actors.Register[PeerLinkFault](302)
	actors.Register[PeerLinkFaultResult](303)
}

// PeerLinkFault asks a node's root actor to set (or, with Heal, remove)
// the fault on its link to the asking node, Origin.Node. The node refuses
// unless its own chaos.enable is on.
type PeerLinkFault struct {
	actors.Origin
	Heal   bool          `msgpack:"heal"`
	Cut    bool          `msgpack:"cut"`
	Drop   float64       `msgpack:"drop"`
	Delay  time.Duration `msgpack:"delay"`
	Jitter time.Duration `msgpack:"jitter"`
	For    time.Duration `msgpack:"for"`
}

func (m *PeerLinkFault) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// PeerLinkFaultResult answers a PeerLinkFault: Err says why it was
// refused, empty when it was done.
type PeerLinkFaultResult struct {
	actors.Origin
	Err string `msgpack:"err"`
}

func (m *PeerLinkFaultResult) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// peerLinkTimeout bounds the wait for the peer's answer; peerLinkGrace is
// how long after answering the peer sets its side.
const (
	peerLinkTimeout = 2 * time.Second
	peerLinkGrace   = 200 * time.Millisecond
)

// askPeerLink asks node peer to set or heal its side of the link to this
// node.
func (n *Node) askPeerLink(peer int32, m *PeerLinkFault) error {
	addr, err := n.peerAddr(peer)
	if err != nil {
		return err
	}
	m.Origin = n.origin()
	res, err := actors.Ask(n.sys, actor.NewPID(addr, Name(peer)), m, peerLinkTimeout)
	if err != nil {
		return err
	}
	r, ok := res.(*PeerLinkFaultResult)
	if !ok {
		return errors.New("an answer that is not a PeerLinkFaultResult")
	}
	if r.Err != "" {
		return errors.New(r.Err)
	}
	return nil
}

// answerPeerLink applies a PeerLinkFault the root actor received. A heal
// is answered once done; a fault is set peerLinkGrace after its answer,
// since the answer is itself a message on that link and leaves on
// remoting's stream later than Respond returns.
func (n *Node) answerPeerLink(c actor.Context, m *PeerLinkFault) {
	respond := func(err string) {
		if c.Sender() != nil {
			c.Respond(&PeerLinkFaultResult{Origin: n.origin(), Err: err})
		}
	}
	if !n.cfg.ChaosEnable {
		respond(fmt.Sprintf("chaos is not enabled on node %d: start it with chaos.enable=true to let faults be injected", n.cfg.NodeID))
		return
	}
	addr, err := n.peerAddr(m.Origin.Node)
	if err != nil {
		respond(err.Error())
		return
	}
	if m.Heal {
		if n.links.Remove(addr) {
			n.log.Warn().Int32("peer", m.Origin.Node).Msg("chaos: link fault removed, as the peer asked")
		}
		respond("")
		return
	}
	respond("")
	time.AfterFunc(peerLinkGrace, func() {
		f := n.links.Set(addr, actors.LinkFault{Cut: m.Cut, DropRate: m.Drop, Delay: m.Delay, Jitter: m.Jitter, For: m.For})
		n.chaos.injected[chaosLink].Add(1)
		n.log.Warn().Int32("peer", m.Origin.Node).Str("address", addr).Bool("cut", f.Cut).Float64("drop", f.DropRate).
			Dur("delay", f.Delay).Dur("jitter", f.Jitter).Dur("for", f.For).Msg("chaos: link fault injected, as the peer asked")
	})
}
