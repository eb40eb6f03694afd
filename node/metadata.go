package node

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/coordinator"
	"github.com/skeinlog/skein/extension"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/share"
	"github.com/skeinlog/skein/txn"
)

// metadataActor holds this node's image of the cluster and tells the
// partitions supervisor which partitions to host, with which configs.
//
//	message          from         does
//	ImagePublished   controller   hosts the partitions whose replicas include
//	                              this node, unhosts (and deletes) the rest,
//	                              with each topic's config resolved against
//	                              the node's and the image's dynamic broker
//	                              configs (a changed config reaches the
//	                              partition actors as SetConfig); tells
//	                              the groups supervisor which topics the
//	                              image deleted (coordinator.TopicsDeleted)
//
// It acts only on images that register this run of the node (and on every
// one after the first): those replayed from the node's own metadata log
// at start may be older than its partition directories, and a directory
// hosted under an older image's topic id would be taken for a deleted
// topic's. The first one it acts on, it sweeps the data directory first
// (Node.sweep).
//
// Restart: it starts empty and acts on the next image; the supervisor
// ignores Host messages for partitions it hosts with the same config.
// Deletions are found by comparing an image with the one before, so a
// topic deleted while this actor restarted keeps its groups' offsets (as
// in Kafka, whose publisher learns deletions from the delta between two
// images).
type metadataActor struct {
	node configs.Node
	// logDirs places the partitions this node hosts on its log dirs.
	logDirs *partition.LogDirs
	// incarnation is this run of the node: until an image registers it,
	// the node leads nothing (see leader).
	incarnation uint64
	partitions  *actor.PID
	groups      *actor.PID
	txns        *actor.PID
	// sharestate is the share coordinator, told which
	// __share_group_state partitions this node leads.
	sharestate *actor.PID
	fetchers   *actor.PID
	// extensions is told where the extension actors run (the partitions
	// this node leads).
	extensions *actor.PID
	// alterISR asks the active controller for a partition leader's ISR
	// change (partition.Config.AlterISR).
	alterISR func(partition.ISRChange, func(partition.ISRChanged))
	registry *partition.Registry
	current  func() *image.Image // the newest published image
	hosted   map[partition.Key]image.TopicID
	// topics are the topics of the last image applied, by id; nil before
	// the first.
	topics map[image.TopicID]string
	// caughtUp is set once an image registered this run of the node.
	caughtUp bool
	// sweep deletes the partition directories the first image acted on
	// does not place on this node (Node.sweep; once per run of the node).
	sweep func(*image.Image)
}

func (m *metadataActor) Receive(c actor.Context) {
	var im *image.Image
	switch msg := c.Message().(type) {
	case *controller.ImagePublished:
		im = msg.Image
	case *actor.Started, *resync:
		// A restart of this actor or of the partitions supervisor loses
		// what was hosted: tell the supervisor everything again.
		m.hosted = map[partition.Key]image.TopicID{}
		if im = m.current(); im.Offset < 0 {
			return // no metadata yet: the first image will come
		}
	default:
		return
	}
	if !m.caughtUp {
		if b, ok := im.Brokers[m.node.NodeID]; !ok || b.Incarnation != m.incarnation {
			return
		}
		m.caughtUp = true
		if m.sweep != nil {
			m.sweep(im)
		}
	}
	m.apply(c, im)
}

// resync asks the metadata actor to host every partition again.
type resync struct{}

func (m *metadataActor) apply(c actor.Context, im *image.Image) {
	// NB: an error means dynamic configs the controller validated under
	// other rules (an older or newer binary wrote the metadata log);
	// WithDynamic still applies every valid one, which is the best this
	// node can do.
	node, _ := m.node.WithDynamic(im.BrokerConfigs, im.PerBrokerConfigs[m.node.NodeID])
	// KIP-73's rates apply at once; the throttled replicas come with each
	// partition's config.
	m.registry.Quotas().SetRates(node.ReplicationThrottle, time.Now())
	want := map[partition.Key]image.TopicID{}
	follow := &partition.Follow{Leaders: map[int32]partition.Followed{}}
	me := m.node.NodeID
	for _, t := range im.Topics {
		cfg, err := configs.ResolveTopic(node, t.Configs)
		if err != nil {
			// The controller validated these configs; a node whose own
			// defaults make them invalid still serves the topic, on its
			// defaults.
			cfg = node.TopicDefaults.Topic()
		}
		for _, p := range t.Partitions {
			if !hosts(p, m.node.NodeID) {
				continue
			}
			k := partition.Key{Topic: t.Name, Partition: p.Index}
			if old, ok := m.hosted[k]; ok && old != t.ID {
				// The topic was deleted and created again under the same
				// name: the old partition goes first.
				m.registry.Deleting(t.Name, p.Index, old)
				c.Send(m.partitions, &partition.Unhost{Topic: t.Name, Partition: p.Index, TopicID: old, Delete: true})
			}
			want[k] = t.ID
			c.Send(m.partitions, &partition.Host{Config: partition.Config{
				Topic: t.Name, Partition: p.Index, TopicID: t.ID,
				Dir:         m.logDirs.Place(k),
				TopicConfig: cfg, Durability: m.node.Durability,
				NodeID:                 m.node.NodeID,
				State:                  m.stateOf(im, p),
				ReplicaLagMax:          time.Duration(m.node.ReplicaLagTimeMaxMs) * time.Millisecond,
				AlterISR:               m.alterISR,
				ProducerIDExpirationMs: m.node.ProducerIDExpirationMs,
			}})
			if p.Leader >= 0 && p.Leader != m.node.NodeID {
				f := follow.Leaders[p.Leader]
				b := im.Brokers[p.Leader]
				f.Addr, f.Peer = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), b.ClusterAddr
				f.Partitions = append(f.Partitions, k)
				follow.Leaders[p.Leader] = f
			}
		}
	}
	for k, id := range m.hosted {
		if want[k] != id {
			// The topic was deleted, or a reassignment took the replica
			// away from this node: its data goes too. Marked at once, so
			// that a node stopping before the supervisor gets to the
			// Unhost does not sync a log it deletes.
			m.registry.Deleting(k.Topic, k.Partition, id)
			c.Send(m.partitions, &partition.Unhost{Topic: k.Topic, Partition: k.Partition, TopicID: id, Delete: true})
			m.logDirs.Forget(k)
		}
	}
	m.hosted = want
	if m.fetchers != nil {
		c.Send(m.fetchers, follow)
	}
	if t := im.Topic(coordinator.OffsetsTopic); t != nil && m.groups != nil {
		led := &coordinator.Leading{Partitions: map[int32]bool{}, Of: int32(len(t.Partitions))}
		for _, p := range t.Partitions {
			if m.leader(im, p) == me {
				led.Partitions[p.Index] = true
			}
		}
		c.Send(m.groups, led)
	}
	if t := im.Topic(txn.StateTopic); t != nil && m.txns != nil {
		led := &txn.Leading{Partitions: map[int32]int32{}, Of: int32(len(t.Partitions))}
		for _, p := range t.Partitions {
			if m.leader(im, p) == me {
				led.Partitions[p.Index] = p.LeaderEpoch
			}
		}
		c.Send(m.txns, led)
	}
	if t := im.Topic(share.StateTopic); t != nil && m.sharestate != nil {
		led := &share.Leading{Partitions: map[int32]int32{}, Of: int32(len(t.Partitions))}
		for _, p := range t.Partitions {
			if m.leader(im, p) == me {
				led.Partitions[p.Index] = p.LeaderEpoch
			}
		}
		c.Send(m.sharestate, led)
	}
	if m.extensions != nil {
		led := map[partition.Key]bool{}
		for _, t := range im.Topics {
			for _, p := range t.Partitions {
				if m.leader(im, p) == me {
					led[partition.Key{Topic: t.Name, Partition: p.Index}] = true
				}
			}
		}
		c.Send(m.extensions, &extension.Placement{Image: im, Led: led})
	}
	m.topicsDeleted(c, im)
}

// topicsDeleted tells the groups supervisor about the topics of the last
// image that im no longer has, with the __consumer_offsets partitions
// this node coordinates, so that the groups forget their offsets on them.
func (m *metadataActor) topicsDeleted(c actor.Context, im *image.Image) {
	var deleted []string
	for id, name := range m.topics {
		if im.TopicsByID[id] == nil {
			deleted = append(deleted, name)
		}
	}
	m.topics = make(map[image.TopicID]string, len(im.TopicsByID))
	for id, t := range im.TopicsByID {
		m.topics[id] = t.Name
	}
	if len(deleted) == 0 || m.groups == nil {
		return
	}
	msg := &coordinator.TopicsDeleted{Topics: deleted}
	if t := im.Topic(coordinator.OffsetsTopic); t != nil {
		for _, p := range t.Partitions {
			// As transport's startGroupRequest: the leader coordinates.
			if m.leader(im, p) != m.node.NodeID {
				continue
			}
			// NB: one still loading (just after a start) is skipped,
			// and its groups without an actor keep their offsets on the
			// deleted topics; Kafka skips such a shard too
			// (COORDINATOR_LOAD_IN_PROGRESS, logged).
			if h := m.registry.Get(coordinator.OffsetsTopic, p.Index); h != nil && h.TopicID == t.ID && h.View() != nil {
				msg.Partitions = append(msg.Partitions, h)
			}
		}
	}
	c.Send(m.groups, msg)
}

// leader is p's leader for this node: the image's, except that a node
// leads nothing before an image registers this run of it. A restarted
// node replays the metadata it had, in which it may still lead; but its
// log may hold less than it acknowledged before (a torn tail, a lost
// disk cache), and followers truncate to their leader's log. Its new
// incarnation's registration comes with the controller's answer to the
// restart (controller.restarted: another in-sync replica leads, or it
// leads again in a new leader epoch), so that image is the first it may
// lead by.
func (m *metadataActor) leader(im *image.Image, p image.Partition) int32 {
	if p.Leader == m.node.NodeID && im.Brokers[p.Leader].Incarnation != m.incarnation {
		return -1
	}
	return p.Leader
}

// stateOf is stateOf(p) with leader's leader.
func (m *metadataActor) stateOf(im *image.Image, p image.Partition) partition.State {
	s := stateOf(p)
	s.Leader = m.leader(im, p)
	return s
}

func hosts(p image.Partition, node int32) bool {
	for _, r := range p.Replicas {
		if r == node {
			return true
		}
	}
	return false
}

// stateOf is a partition's state, as the partition actors take it, from
// the image.
func stateOf(p image.Partition) partition.State {
	return partition.State{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR)}
}

// alterISR asks this node's controller, which forwards it to the active
// one, for a partition leader's ISR change, and calls reply with the
// answer: the committed state, a refusal, or REQUEST_TIMED_OUT when none
// came.
func (n *Node) alterISR(req partition.ISRChange, reply func(partition.ISRChanged)) {
	ch := n.children.Load()
	go func() {
		res, err := actors.Ask(n.sys, ch.controller, &controller.AlterPartition{
			TopicID: req.TopicID, Partition: req.Partition, Leader: req.Leader,
			LeaderEpoch: req.LeaderEpoch, PartitionEpoch: req.PartitionEpoch, ISR: req.ISR, ISREpochs: req.ISREpochs,
		}, alterISRTimeout)
		r, ok := res.(*controller.AlterPartitionResult)
		switch {
		case err != nil:
			reply(partition.ISRChanged{Err: kerr.RequestTimedOut, Message: err.Error()})
		case !ok:
			reply(partition.ISRChanged{Err: kerr.UnknownServerError, Message: fmt.Sprintf("controller answered %T", res)})
		case r.Err != nil:
			reply(partition.ISRChanged{Err: r.Err, Message: r.Message})
		default:
			reply(partition.ISRChanged{State: stateOf(r.Partition)})
		}
	}()
}

// alterISRTimeout bounds the wait for an ISR change: a little more than
// the controller's own bound on a command (controller.Config.CommandTimeout).
const alterISRTimeout = 25 * time.Second
