package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
)

// Brokers and their liveness, as KRaft keeps them: every node's
// controller registers the node's broker (id, incarnation, addresses,
// rack) and then heartbeats the active controller every heartbeat
// interval. The active controller keeps the time of each broker's last
// heartbeat in memory only, and commits a change only when a broker's
// state changes: one that misses its heartbeats for a session timeout is
// fenced (its partitions lose their leader), and one that heartbeats
// again, same incarnation, is unfenced (they get it back). A restarted
// broker registers its new incarnation, which replaces the old
// registration unless that one is still heartbeating (two live nodes with
// one id). A newly active controller starts every broker's session when
// it becomes active, so a leader change fences nobody.

func init() {
	actors.Register[BrokerHeartbeat](103)
}

// BrokerHeartbeat says that a broker's incarnation is alive. It is sent
// to the active controller and not answered: the next one follows.
type BrokerHeartbeat struct {
	Origin actors.Origin `msgpack:"origin"`
}

func (m *BrokerHeartbeat) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// registerBroker records a broker's registration.
type registerBroker struct {
	Broker image.Broker `msgpack:"broker"`
}

func (*registerBroker) kind() commandKind      { return kindRegisterBroker }
func (*registerBroker) timeout() time.Duration { return 0 }
func (m *registerBroker) decide(c *Controller) (any, []image.Record) {
	b := m.Broker
	old, ok := c.head.Brokers[b.ID]
	if ok && image.SameAddresses(old, b) && old.Incarnation == b.Incarnation && old.Fenced == b.Fenced {
		return &commandDone{}, nil
	}
	if ok && !old.Fenced && old.Incarnation != b.Incarnation && c.heartbeating(b.ID) {
		return &commandDone{Err: kerr.DuplicateBrokerRegistration, Message: fmt.Sprintf(
			"node %d at %s (Kafka %s:%d) is registered and heartbeating", old.ID, old.ClusterAddr, old.Host, old.Port)}, nil
	}
	// Its session starts now: it just spoke.
	c.heard[b.ID] = c.cfg.Clock.Now()
	records := []image.Record{b.Record()}
	if ok && old.Incarnation != b.Incarnation {
		return &commandDone{}, append(records, c.restarted(b.ID)...)
	}
	return &commandDone{}, append(records, c.leadAgain(b.ID)...)
}
func (*registerBroker) failed(err *kerr.Error, msg string) any {
	return &commandDone{Err: err, Message: msg}
}
func (*registerBroker) newResult() any { return &commandDone{} }

// fenceBroker fences or unfences one incarnation of a broker.
type fenceBroker struct {
	ID          int32  `msgpack:"id"`
	Incarnation uint64 `msgpack:"inc"`
	Fenced      bool   `msgpack:"fenced"`
}

func (*fenceBroker) kind() commandKind      { return kindFenceBroker }
func (*fenceBroker) timeout() time.Duration { return 0 }
func (m *fenceBroker) decide(c *Controller) (any, []image.Record) {
	b, ok := c.head.Brokers[m.ID]
	if !ok || b.Incarnation != m.Incarnation || b.Fenced == m.Fenced {
		return &commandDone{}, nil
	}
	records := []image.Record{&image.FenceBroker{ID: m.ID, Incarnation: m.Incarnation, Fenced: m.Fenced}}
	if m.Fenced {
		records = append(records, c.stopLeading(m.ID)...)
	} else {
		records = append(records, c.leadAgain(m.ID)...)
	}
	return &commandDone{}, records
}
func (*fenceBroker) failed(err *kerr.Error, msg string) any {
	return &commandDone{Err: err, Message: msg}
}
func (*fenceBroker) newResult() any { return &commandDone{} }

// stopLeading takes a fenced broker out of every ISR it is in, and its
// leaderships away: the next leader is the first replica, in the
// preferred order, of the ISR left that is live; with none (a replication
// factor of 1, or every other member gone) the partition goes offline,
// and its ISR keeps the broker, the last member that holds every
// acknowledged record, so that it leads again when it comes back.
func (c *Controller) stopLeading(broker int32) []image.Record {
	return c.changePartitions(func(t *image.Topic, p image.Partition) (image.Partition, bool) {
		if !slices.Contains(p.ISR, broker) && p.Leader != broker {
			return p, false
		}
		if len(p.ISR) > 1 {
			p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
		}
		if p.Leader == broker {
			p.Leader = c.electLive(p, broker)
			if l := c.firstLive(p, broker); p.Leader < 0 && l >= 0 && c.uncleanAllowed(t) {
				p = c.leadUnclean(t, p, l)
			}
		}
		return p, true
	})
}

// electLive returns the first replica, in the preferred order, that is in
// p's ISR, live, and not except; -1 if none.
func (c *Controller) electLive(p image.Partition, except int32) int32 {
	for _, r := range p.Replicas {
		if r != except && c.live(r) && slices.Contains(p.ISR, r) {
			return r
		}
	}
	return -1
}

// restarted moves the partitions of a broker that came back in a new
// incarnation, as Kafka does when a broker registers a new epoch: what
// its earlier incarnation led, or was in sync for, it must earn again.
// Where another live ISR member exists, the broker leaves the ISR (it
// rejoins once its fetches catch up) and that member leads if it led;
// where none does, it keeps its place, and leads, in a new leader epoch,
// what it led or what has no leader: its log is the only one known to
// hold every acknowledged record.
func (c *Controller) restarted(broker int32) []image.Record {
	return c.changePartitions(func(t *image.Topic, p image.Partition) (image.Partition, bool) {
		if !slices.Contains(p.ISR, broker) && p.Leader != broker {
			return p, false
		}
		if next := c.electLive(p, broker); next >= 0 {
			p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
			if p.Leader == broker || p.Leader < 0 {
				p.Leader = next
			}
			return p, true
		}
		switch {
		case p.Leader == broker:
			p.LeaderEpoch++ // the earlier incarnation's epoch is over
		case p.Leader < 0 && slices.Contains(p.ISR, broker):
			p.Leader = broker
		default:
			return p, false
		}
		return p, true
	})
}

// leadAgain gives broker back the leaderless partitions it is in sync
// for, and those it is a replica of whose topic allows unclean elections.
func (c *Controller) leadAgain(broker int32) []image.Record {
	return c.changePartitions(func(t *image.Topic, p image.Partition) (image.Partition, bool) {
		switch {
		case p.Leader >= 0 || !slices.Contains(p.Replicas, broker):
			return p, false
		case slices.Contains(p.ISR, broker):
			p.Leader = broker
		case c.uncleanAllowed(t):
			p = c.leadUnclean(t, p, broker)
		default:
			return p, false
		}
		return p, true
	})
}

// changePartitions rewrites the partitions change picks, in topic name
// order: each change is a new partition epoch, and a new leader epoch when
// the leader changed.
func (c *Controller) changePartitions(change func(*image.Topic, image.Partition) (image.Partition, bool)) []image.Record {
	var records []image.Record
	for _, name := range c.head.TopicNames() {
		t := c.head.Topics[name]
		for _, p := range t.Partitions {
			if q, ok := change(t, p); ok {
				records = append(records, changePartition(t, p, q))
			}
		}
	}
	return records
}

// heartbeat records a broker's heartbeat at the active controller, and
// unfences it if it was fenced.
func (c *Controller) heartbeat(o actors.Origin) {
	if !c.active() {
		return
	}
	b, ok := c.head.Brokers[o.Node]
	if !ok || b.Incarnation != o.Incarnation {
		return // its registration is on the way
	}
	c.heard[o.Node] = c.cfg.Clock.Now()
	c.heartbeatsReceived++
	if b.Fenced && !c.pendingFence(o.Node, false) {
		c.takeOwn(&fenceBroker{ID: o.Node, Incarnation: o.Incarnation, Fenced: false})
	}
}

// heartbeating reports whether broker has heartbeat this active
// controller within a session timeout.
func (c *Controller) heartbeating(broker int32) bool {
	heard, ok := c.heard[broker]
	return ok && c.cfg.Clock.Now().Sub(heard) < c.cfg.SessionTimeout
}

// silent reports whether broker's session, which starts at the latest of
// its last heartbeat and this controller becoming active, has expired.
func (c *Controller) silent(broker int32) bool {
	last := c.activeSince
	if heard := c.heard[broker]; heard.After(last) {
		last = heard
	}
	return c.cfg.Clock.Now().Sub(last) >= c.cfg.SessionTimeout
}

// fenceSilent fences, at the active controller, the brokers not heard
// from for a session timeout.
func (c *Controller) fenceSilent() {
	if !c.active() {
		return
	}
	for _, id := range c.head.BrokerIDs() {
		b := c.head.Brokers[id]
		if !b.Fenced && c.silent(id) && !c.pendingFence(id, true) {
			c.cfg.Logger.Warn().Int32("broker", id).Dur("broker.session.timeout.ms", c.cfg.SessionTimeout).Msg("controller: fencing a broker that stopped heartbeating")
			c.takeOwn(&fenceBroker{ID: id, Incarnation: b.Incarnation, Fenced: true})
		}
	}
}

func (c *Controller) pendingFence(broker int32, fenced bool) bool {
	for _, p := range c.outbox {
		if f, ok := p.cmd.(*fenceBroker); ok && f.ID == broker && f.Fenced == fenced {
			return true
		}
	}
	return false
}

// ShutDown asks a node's own controller for a controlled shutdown (the
// node stops): its broker stops heartbeating and is fenced at once, which
// moves its leaderships to the other live members of their ISRs and takes
// it out of the ISRs, so that clients and followers move on before it
// stops. The node watches its image for the fence. Local only; no reply.
type ShutDown struct{}

func (c *Controller) shutDown() {
	if c.leaving || c.cfg.NoBroker {
		return
	}
	c.leaving = true
	c.cfg.Logger.Info().Msg("controller: controlled shutdown: fencing this broker so that its leaderships move")
	c.takeOwn(&fenceBroker{ID: c.cfg.NodeID, Incarnation: c.cfg.Incarnation, Fenced: true})
}

// beat runs every heartbeat interval on every controller: its own
// broker's registration when the image lacks it or holds another, else
// its heartbeat to the active controller. A broker shutting down does
// neither: a heartbeat would unfence it; nor does a controller-only
// node, which has no broker.
func (c *Controller) beat() {
	if c.committed.ClusterID == "" || c.leader == 0 || c.leaving || c.cfg.NoBroker {
		return
	}
	me := c.cfg.Broker
	if b, ok := c.committed.Brokers[me.ID]; !ok || b.Incarnation != me.Incarnation || !image.SameAddresses(b, me) {
		c.register()
		return
	}
	hb := &BrokerHeartbeat{Origin: actors.Origin{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation}}
	c.heartbeatsSent++
	if c.leader == raftID(c.cfg.NodeID) {
		c.heartbeat(hb.Origin)
	} else if to := c.cfg.Peers[nodeID(c.leader)]; to != nil {
		c.self.Send(to, hb)
	}
}

// register asks for this broker's registration, unless a request is
// under way.
func (c *Controller) register() {
	for _, p := range c.outbox {
		if _, ok := p.cmd.(*registerBroker); ok {
			return
		}
	}
	c.takeOwn(&registerBroker{Broker: c.cfg.Broker})
}

// registered takes a registration's answer. A refusal because another
// live node has this id is retried (the other may be this node's own
// earlier run, not yet fenced) for two session timeouts, and then this
// node gives up: cfg.Refused.
func (c *Controller) registered(d *commandDone) {
	now := c.cfg.Clock.Now()
	if d.Err == nil {
		if !c.refusedSince.IsZero() {
			c.cfg.Logger.Info().Msg("controller: broker registered after all")
		}
		c.refusedSince = time.Time{}
		return
	}
	if c.refusedSince.IsZero() {
		c.refusedSince = now
		c.cfg.Logger.Warn().Str("error", d.Err.Message).Str("reason", d.Message).Msg("controller: broker registration refused; retrying until the other registration's session expires")
	}
	if d.Err == kerr.DuplicateBrokerRegistration && now.Sub(c.refusedSince) > 2*c.cfg.SessionTimeout && c.cfg.Refused != nil {
		c.cfg.Refused(fmt.Errorf("another live node has node.id %d: %s; give this node an id of its own (node.id)", c.cfg.NodeID, d.Message))
	}
}
