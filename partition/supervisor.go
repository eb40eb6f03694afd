package partition

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/internal/vfs"
)

// Key names a partition.
type Key struct {
	Topic     string
	Partition int32
}

// Registry maps partitions to their handles, for transport's lookups.
// The supervisor writes it; any goroutine reads it.
type Registry struct {
	mu      sync.RWMutex
	m       map[Key]*Handle
	changed chan struct{} // closed and replaced at every change
	quotas  ReplicationQuotas
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[Key]*Handle{}, changed: make(chan struct{})} }

// WaitReady returns the handle of a partition once it is hosted and has
// loaded its log, or nil when done closes first. CreateTopics waits with it
// so that a client producing right after creating a topic is not told
// NOT_LEADER_OR_FOLLOWER while the partition's actor starts.
func (r *Registry) WaitReady(topic string, partition int32, done <-chan struct{}) *Handle {
	for {
		r.mu.RLock()
		h, changed := r.m[Key{topic, partition}], r.changed
		r.mu.RUnlock()
		if h != nil {
			select {
			case <-h.Ready(): // first, so that a ready one counts even once done is closed
				return h
			default:
			}
			select {
			case <-h.Ready():
				return h
			case <-changed: // replaced or removed meanwhile: look again
				continue
			case <-done:
				return nil
			}
		}
		select {
		case <-changed:
		case <-done:
			return nil
		}
	}
}

// notify wakes WaitReady callers; r.mu must be held for writing.
func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Get returns the handle of a hosted partition, or nil.
func (r *Registry) Get(topic string, partition int32) *Handle {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[Key{topic, partition}]
}

// Led returns the handle and newest view of partition topic-p if this
// node (node) hosts it and leads it in im; otherwise
// NOT_LEADER_OR_FOLLOWER: it does not host it or still loads it, or it
// hosts the partition of a deleted topic of that name (which stays hosted
// until the metadata actor unhosts it: records for the new topic must not
// go to the old log, deleted with it), or it no longer leads it (its
// broker was fenced), or its actor has not taken the leadership yet (it
// still follows, or leads in an older epoch). KAFKA_STORAGE_ERROR
// (retriable) when the partition failed before its log ever opened:
// nothing to read or write until it recovers. UNKNOWN_TOPIC_OR_PARTITION
// when im has no such topic or the topic no such partition, as Kafka
// answers.
func (r *Registry) Led(im *image.Image, node int32, topic string, p int32) (*Handle, *View, *kerr.Error) {
	if t := im.Topic(topic); t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return nil, nil, kerr.UnknownTopicOrPartition
	}
	h := r.Get(topic, p)
	if h == nil {
		return nil, nil, kerr.NotLeaderForPartition
	}
	t := im.Topic(topic)
	if t == nil || t.ID != h.TopicID || int(p) >= len(t.Partitions) || t.Partitions[p].Leader != node {
		return nil, nil, kerr.NotLeaderForPartition
	}
	v := h.View()
	switch {
	case v == nil, v.LeaderEpoch != t.Partitions[p].LeaderEpoch:
		return nil, nil, kerr.NotLeaderForPartition
	case v.Log == nil:
		return nil, nil, kerr.KafkaStorageError
	}
	return h, v, nil
}

// Deleting marks the hosted partition topic-p of topic id as deleted
// ahead of its Unhost: its actor, stopped by the Unhost or by the node's
// stop if that comes first, closes its log without a sync (see Handle).
func (r *Registry) Deleting(topic string, p int32, id image.TopicID) {
	if h := r.Get(topic, p); h != nil && h.TopicID == id {
		h.deleted.Store(true)
	}
}

// All returns every hosted partition's handle.
func (r *Registry) All() []*Handle {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Handle, 0, len(r.m))
	for _, h := range r.m {
		out = append(out, h)
	}
	return out
}

func (r *Registry) put(h *Handle) {
	r.mu.Lock()
	r.m[Key{h.Topic, h.Partition}] = h
	r.notify()
	r.mu.Unlock()
}

func (r *Registry) remove(k Key) {
	r.mu.Lock()
	delete(r.m, k)
	r.notify()
	r.mu.Unlock()
}

// SupervisorConfig configures the partitions supervisor.
type SupervisorConfig struct {
	Registry *Registry
	FS       vfs.FS
	// Clock is the partitions' clock (record times, retention, timers);
	// nil means clock.Real.
	Clock  clock.Clock
	Logger zerolog.Logger
	// Failures rate-limits the lines partitions log when their storage
	// fails and recovers, node-wide; nil means no limit.
	Failures *logging.Limiter
	// LogDirs, when set, is told when partitions fail and recover, so
	// that it knows which log dirs are offline.
	LogDirs *LogDirs
	// Syncer is the node-wide group commit the partitions share; nil
	// means each fsyncs its own files.
	Syncer *Syncer
	// Stats counts the partitions' replication events; nil counts none.
	Stats *Stats
	// Trash deletes the directories of deleted partitions.
	Trash *Trash
	// Middleware is applied to every partition actor (fault injection,
	// metrics).
	Middleware []actor.ReceiverMiddleware
	// Restarted is called when the supervisor restarts after a failure:
	// its children are gone, and whoever knows what to host must say it
	// again.
	Restarted func()
}

// SupervisorProps returns the props of the "partitions" supervisor: it
// spawns one actor per hosted partition, named "<topic>-<partition>", and
// restarts a failed one from disk (one-for-one).
func SupervisorProps(cfg SupervisorConfig, strategy actor.SupervisorStrategy) *actor.Props {
	var incarnations atomic.Int32
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{cfg: cfg, children: map[Key]*child{}, stopping: map[string]*unhosting{}, restarted: incarnations.Add(1) > 1,
			gate: &openGate{turns: make(chan struct{}, openTurns), leaving: make(chan struct{})}}
	}, actor.WithSupervisor(strategy))
}

type supervisor struct {
	cfg       SupervisorConfig
	children  map[Key]*child
	restarted bool // set on the instance that replaces a failed one
	leaving   bool // stopping or restarting: children stop for good
	gate      *openGate
	// stopping holds, by actor name, the partitions Unhost stopped whose
	// Terminated has not come yet. A Host for one of them waits here until
	// it has: the new actor takes the same name, so the same PID, and the
	// old one's Terminated would otherwise be taken for the new one's (and
	// protoactor would drop the new one from the children it stops).
	stopping map[string]*unhosting
}

type unhosting struct {
	cfg    Config
	delete bool
	next   *Config // a Host that came meanwhile
}

type child struct {
	handle *Handle
	cfg    Config
	props  *actor.Props
}

func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Host:
		s.host(ctx, m.Config)
	case *Unhost:
		s.unhost(ctx, m)
	case *actor.Terminated:
		if u, ok := s.stopping[m.Who.Id]; ok {
			s.unhosted(ctx, m.Who, u)
			return
		}
		s.respawn(ctx, m.Who)
	case *actor.Restarting, *actor.Stopping:
		// protoactor stops the children next, and their Terminated comes
		// here: they must not be respawned; those still waiting to open
		// their logs do not.
		if !s.leaving {
			close(s.gate.leaving)
		}
		s.leaving = true
		for k := range s.children {
			s.cfg.Registry.remove(k)
		}
	case *actor.Started:
		if s.restarted && s.cfg.Restarted != nil {
			s.cfg.Restarted()
		}
	}
}

func (s *supervisor) host(ctx actor.Context, cfg Config) {
	if s.leaving {
		// A Host queued behind the stop: a child spawned now would never be
		// stopped, and the node's stop would wait for it for ever.
		return
	}
	k := Key{cfg.Topic, cfg.Partition}
	name := fmt.Sprintf("%s-%d", cfg.Topic, cfg.Partition)
	if u, ok := s.stopping[ctx.Self().Id+"/"+name]; ok {
		u.next = &cfg
		return
	}
	if c, ok := s.children[k]; ok {
		if c.cfg.TopicConfig != cfg.TopicConfig {
			c.cfg.TopicConfig = cfg.TopicConfig
			ctx.Send(c.handle.PID, &SetConfig{Config: cfg.TopicConfig})
		}
		if !c.cfg.State.equal(cfg.State) {
			c.cfg.State = cfg.State
			ctx.Send(c.handle.PID, &SetState{State: cfg.State})
		}
		return
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = time.Second
	}
	if cfg.ReplicaLagMax <= 0 {
		cfg.ReplicaLagMax = 30 * time.Second
	}
	if cfg.FileIdleTimeout <= 0 {
		cfg.FileIdleTimeout = 30 * time.Second
	}
	if cfg.Failures == nil {
		cfg.Failures = s.cfg.Failures
	}
	if cfg.LogDirs == nil {
		cfg.LogDirs = s.cfg.LogDirs
	}
	if cfg.Syncer == nil {
		cfg.Syncer = s.cfg.Syncer
	}
	if cfg.Stats == nil {
		cfg.Stats = s.cfg.Stats
	}
	if cfg.Trash == nil {
		cfg.Trash = s.cfg.Trash
	}
	cfg.gate = s.gate
	if cfg.FS == nil {
		cfg.FS = s.cfg.FS
	}
	if cfg.Clock == nil {
		cfg.Clock = s.cfg.Clock
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	cfg.Logger = s.cfg.Logger.With().Str("topic", cfg.Topic).Int32("partition", cfg.Partition).Logger()
	h := newHandle(cfg.Topic, cfg.Partition, cfg.TopicID)
	props := actor.PropsFromProducer(func() actor.Actor {
		// NB: a restart must keep the topic config and partition state
		// in force (SetConfig and SetState may have changed them since
		// the spawn): the handle's last view has them.
		c := cfg
		if v := h.View(); v != nil {
			c.TopicConfig, c.State = v.Config, v.State
		}
		return newPartition(c, h)
	}, actor.WithReceiverMiddleware(s.cfg.Middleware...))
	pid, err := ctx.SpawnNamed(props, name)
	if err != nil {
		s.cfg.Logger.Error().Err(err).Str("topic", cfg.Topic).Int32("partition", cfg.Partition).Msg("spawning partition actor")
		return
	}
	h.PID = pid
	s.children[k] = &child{handle: h, cfg: cfg, props: props}
	s.cfg.Registry.put(h)
}

func (s *supervisor) unhost(ctx actor.Context, m *Unhost) {
	k := Key{m.Topic, m.Partition}
	c, ok := s.children[k]
	if !ok || (c.handle.TopicID != m.TopicID && !m.TopicID.IsZero()) {
		return
	}
	delete(s.children, k)
	s.cfg.Registry.remove(k)
	// The actor closes its log while it stops; its files are touched only
	// once its Terminated has come (unhosted).
	s.stopping[c.handle.PID.Id] = &unhosting{cfg: c.cfg, delete: m.Delete}
	c.handle.deleted.Store(m.Delete)
	ctx.Stop(c.handle.PID)
}

// unhosted finishes an Unhost once the partition's actor has stopped: its
// data is deleted if its topic was, and a Host that came meanwhile is done.
func (s *supervisor) unhosted(ctx actor.Context, who *actor.PID, u *unhosting) {
	delete(s.stopping, who.Id)
	if u.delete && s.cfg.Trash != nil {
		if err := s.cfg.Trash.Delete(u.cfg.Dir, u.cfg.TopicID); err != nil {
			// It stays where it is, recording its topic's id: a new
			// topic of that name moves it out of the way, and the next
			// start deletes it (the node's sweep).
			s.cfg.Logger.Error().Err(err).Str("dir", u.cfg.Dir).Msg("deleting partition directory")
		}
	}
	if u.next != nil {
		s.host(ctx, *u.next)
	}
}

// Dir returns a partition's directory under dataDir.
func Dir(dataDir, topic string, partition int32) string {
	return filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, partition))
}

// respawn brings back a partition actor that stopped while it was still to
// be hosted (a stop fault, or a stop by hand): a node heals itself. A stop
// the supervisor asked for (Unhost) removed the child first, and is ignored.
func (s *supervisor) respawn(ctx actor.Context, who *actor.PID) {
	if s.leaving {
		return
	}
	for k, c := range s.children {
		if !c.handle.PID.Equal(who) {
			continue
		}
		s.cfg.Logger.Warn().Str("actor", who.Id).Msg("partition actor stopped while hosted: starting it again")
		if _, err := ctx.SpawnNamed(c.props, fmt.Sprintf("%s-%d", k.Topic, k.Partition)); err != nil {
			s.cfg.Logger.Error().Err(err).Str("actor", who.Id).Msg("respawning partition actor")
			delete(s.children, k)
			s.cfg.Registry.remove(k)
		}
		return
	}
}
