package share

import (
	"net/url"
	"strconv"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
)

// Open asks the shares supervisor for the actor of a share group's
// partition, spawning it if needed. Sent by transport with actors.Ask;
// answered with *OpenResult. The partition is led here (transport
// checked).
type Open struct {
	Group  string
	Handle *partition.Handle
}

// OpenResult answers Open; PID is nil while a previous actor of the same
// share-partition is stopping.
type OpenResult struct {
	PID *actor.PID
}

// Reload tells the shares supervisor that a share-partition's durable
// state was replaced (AlterShareGroupOffsets, DeleteShareGroupOffsets,
// a deleted group): its actor, if any, stops, and the next one reads the
// new state.
// Sent by the group's coordinator to the partition's leader, unanswered.
type Reload struct {
	Origin    actors.Origin `msgpack:"origin"`
	Group     string        `msgpack:"group"`
	Topic     string        `msgpack:"topic"`
	Partition int32         `msgpack:"partition"`
}

func (m *Reload) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

func init() { actors.Register[Reload](217) }

// dirKey names a share-partition on this node.
type dirKey struct {
	group, topic string
	partition    int32
}

// Directory maps share-partitions to their actors, for transport's
// lookups without a message. The shares supervisor writes it; any
// goroutine reads it.
type Directory struct {
	m sync.Map // dirKey → *actor.PID
}

// Get returns a share-partition's actor, nil if it has none.
func (d *Directory) Get(group, topic string, p int32) *actor.PID {
	if v, ok := d.m.Load(dirKey{group, topic, p}); ok {
		return v.(*actor.PID)
	}
	return nil
}

// Each calls fn for every share-partition of group that has an actor
// here (every share group's when group is ""), in no order.
func (d *Directory) Each(group string, fn func(group, topic string, partition int32, pid *actor.PID)) {
	d.m.Range(func(k, v any) bool {
		if dk := k.(dirKey); group == "" || dk.group == group {
			fn(dk.group, dk.topic, dk.partition, v.(*actor.PID))
		}
		return true
	})
}

// SupervisorProps returns the props of the "shares" supervisor: one actor
// per share group and partition led here, named <group>/<topic>-<n> (the
// group id path-escaped), spawned at its first ShareFetch or
// ShareAcknowledge and restarted by strategy; a restarted one reads its
// durable state again.
func SupervisorProps(cfg Config, strategy actor.SupervisorStrategy) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{cfg: cfg, children: map[dirKey]*actor.PID{}, byPID: map[string]dirKey{}, stopping: map[string]bool{}}
	}, actor.WithSupervisor(strategy))
}

type supervisor struct {
	cfg      Config
	children map[dirKey]*actor.PID
	byPID    map[string]dirKey
	// stopping holds the ids of actors stopped and not yet terminated: a
	// successor would take the same name.
	stopping map[string]bool
}

func (s *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Open:
		c.Respond(&OpenResult{PID: s.open(c, m)})
	case *ReleaseMember:
		for k, pid := range s.children {
			if k.group == m.Group {
				c.Send(pid, m)
			}
		}
	case *Reload:
		if pid := s.children[dirKey{m.Group, m.Topic, m.Partition}]; pid != nil {
			s.stop(c, pid)
		}
	case *actor.Terminated:
		delete(s.stopping, m.Who.Id)
		if k, ok := s.byPID[m.Who.Id]; ok {
			delete(s.byPID, m.Who.Id)
			if pid := s.children[k]; pid != nil && pid.Equal(m.Who) {
				delete(s.children, k)
				s.cfg.Directory.m.Delete(k)
			}
		}
	case *actor.Restarting, *actor.Stopping:
		for k := range s.children {
			s.cfg.Directory.m.Delete(k)
		}
	}
}

func (s *supervisor) stop(c actor.Context, pid *actor.PID) {
	k := s.byPID[pid.Id]
	delete(s.children, k)
	s.cfg.Directory.m.Delete(k)
	s.stopping[pid.Id] = true
	c.Stop(pid)
}

func (s *supervisor) open(c actor.Context, m *Open) *actor.PID {
	h := m.Handle
	k := dirKey{m.Group, h.Topic, h.Partition}
	if pid := s.children[k]; pid != nil {
		return pid
	}
	name := url.PathEscape(m.Group) + "/" + h.Topic + "-" + itoa(h.Partition)
	if s.stopping[c.Self().Id+"/"+name] {
		return nil
	}
	cfg := s.cfg
	key := Key{Group: m.Group, TopicID: h.TopicID, Partition: h.Partition}
	pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &partitionActor{cfg: cfg, key: key, handle: h}
	}), name)
	if err != nil {
		return nil
	}
	s.children[k], s.byPID[pid.Id] = pid, k
	s.cfg.Directory.m.Store(k, pid)
	return pid
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
