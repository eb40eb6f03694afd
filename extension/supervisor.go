package extension

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
)

// Config is what the extensions supervisor takes from its node.
type Config struct {
	NodeID int32
	// Origin is this node's run, sent with its appends.
	Origin   actors.Origin
	Registry *partition.Registry
	// Image returns the newest cluster metadata image.
	Image     func() *image.Image
	Positions Positions
	// ProducerID returns a producer id no one else has.
	ProducerID func() (int64, error)
	Cluster    Cluster
	// Runtime collects the statuses, for the admin API and /metrics.
	Runtime *Runtime
	// End returns a local partition's high watermark, if this node hosts
	// it: the status of a partition's actor shows its lag from it, the
	// actor stuck or not.
	End func(topic string, partition int32) (int64, bool)
	// CommitInterval is how often a partition that makes progress commits
	// its position; default 1 s.
	CommitInterval time.Duration
	Logger         zerolog.Logger
}

// Placement is the newest metadata for the extensions supervisor: the
// image and the partitions this node leads in it. Sent by the node's
// metadata actor.
type Placement struct {
	Image *image.Image
	Led   map[partition.Key]bool
}

// Runtime holds the statuses of a node's extension actors.
//
// Concurrency: safe for concurrent use.
type Runtime struct {
	mu     sync.Mutex
	m      map[runnerKey]*status
	totals map[string]*totals // by instance
	end    func(topic string, partition int32) (int64, bool)
}

// NewRuntime returns an empty Runtime.
func NewRuntime() *Runtime {
	return &Runtime{m: map[runnerKey]*status{}, totals: map[string]*totals{}}
}

// Totals returns each instance's counts on this node, by instance.
func (rt *Runtime) Totals() []Totals {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]Totals, 0, len(rt.totals))
	for _, name := range slices.Sorted(maps.Keys(rt.totals)) {
		out = append(out, rt.totals[name].get())
	}
	return out
}

// totalsOf returns an instance's totals, made on first use; rt.mu must be
// held.
func (rt *Runtime) totalsOf(instance, kind string) *totals {
	t := rt.totals[instance]
	if t == nil || t.kind != kind {
		t = &totals{instance: instance, kind: kind}
		rt.totals[instance] = t
	}
	return t
}

// Statuses returns the status of every source partition processed on this
// node, by instance, topic and partition.
func (rt *Runtime) Statuses() []Status {
	rt.mu.Lock()
	out := make([]Status, 0, len(rt.m))
	for _, st := range rt.m {
		s := st.get()
		if rt.end != nil && !st.remote {
			if hw, ok := rt.end(s.Topic, s.Partition); ok && hw > s.End {
				s.End, s.Lag = hw, lag(hw, s.Position)
			}
		}
		out = append(out, s)
	}
	rt.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int {
		if c := strings.Compare(a.Instance, b.Instance); c != 0 {
			return c
		}
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// runnerKey names an instance's source partition.
type runnerKey struct {
	instance  string
	topic     string
	partition int32
}

// SupervisorProps returns the props of the extensions supervisor, spawned
// as "extensions" under the node: it runs, for each instance in the
// metadata, an actor per source partition this node leads, named
// <instance>/<topic>-<n>, and stops it when the leadership moves, the
// instance is deleted or its definition changes.
func SupervisorProps(cfg Config, strategy actor.SupervisorStrategy) *actor.Props {
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = time.Second
	}
	cfg.Runtime.mu.Lock()
	cfg.Runtime.end = cfg.End
	cfg.Runtime.mu.Unlock()
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{cfg: &cfg, running: map[runnerKey]*placed{}, refused: map[string]string{}, remotes: map[string]*discovery{}}
	}, actor.WithSupervisor(strategy))
}

type supervisor struct {
	cfg     *Config
	running map[runnerKey]*placed
	// remotes are the instances that read another cluster, with what
	// their discovery last found there.
	remotes map[string]*discovery
	// refused are the instances this node cannot run (a kind it lacks,
	// settings it refuses), with why, logged once.
	refused map[string]string
	last    *Placement
}

// placed is a running source partition's actor.
type placed struct {
	pid *actor.PID
	def image.Extension
}

func (s *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Placement:
		s.last = m
		s.place(c, m)
	case *actor.Terminated:
		// A stopped actor's name is free again: one that replaces it (a
		// changed definition) can start.
		if s.last != nil {
			s.place(c, s.last)
		}
	case *remoteTopics:
		if d := s.remotes[m.instance]; d != nil && d.bootstrap == m.bootstrap {
			if m.err != nil {
				if d.err == nil || d.err.Error() != m.err.Error() {
					s.cfg.Logger.Warn().Str("extension", m.instance).Str("source.bootstrap.servers", m.bootstrap).Err(m.err).
						Msg("extension: cannot list the remote source's topics; trying again, and logging again once it can")
				}
				d.err = m.err
				return
			}
			if d.err != nil {
				s.cfg.Logger.Info().Str("extension", m.instance).Msg("extension: the remote source's topics are listed again")
			}
			d.err, d.topics = nil, m.topics
			if s.last != nil {
				s.place(c, s.last)
			}
		}
	case *actor.Stopping:
		for _, d := range s.remotes {
			d.cancel()
		}
		s.cfg.Runtime.mu.Lock()
		clear(s.cfg.Runtime.m)
		s.cfg.Runtime.mu.Unlock()
	}
}

// place starts and stops actors to match the metadata.
func (s *supervisor) place(c actor.Context, m *Placement) {
	type wanted struct {
		def      image.Extension
		kind     *Kind
		settings map[string]string
		parts    int32 // the source topic's
	}
	want := map[runnerKey]wanted{}
	refused := map[string]string{}
	remote := map[string]bool{}
	live := m.Image.LiveBrokerIDs()
	for _, name := range slices.Sorted(maps.Keys(m.Image.Extensions)) {
		def := *m.Image.Extensions[name]
		kind, ok := Lookup(def.Kind)
		if !ok {
			refused[name] = fmt.Sprintf("this node's binary has no extension kind %q", def.Kind)
			continue
		}
		settings, err := kind.Resolve(def.Settings)
		if err != nil {
			refused[name] = err.Error()
			continue
		}
		match, _ := NewTopicMatcher(settings[SettingSourceTopics])
		if bootstrap := settings[SettingSourceBootstrap]; bootstrap != "" {
			// Another cluster's partitions, spread over this one's live
			// brokers by a hash every node computes alike.
			remote[name] = true
			d := s.discover(c, name, bootstrap)
			for topic, parts := range d.topics {
				if !match.Match(topic) || kind.Skip != nil && kind.Skip(settings, topic) {
					continue
				}
				for p := range parts {
					if placeRemote(name, topic, p, live) == s.cfg.NodeID {
						want[runnerKey{name, topic, p}] = wanted{def, kind, settings, parts}
					}
				}
			}
			continue
		}
		for _, t := range m.Image.Topics {
			if !match.Match(t.Name) || isStateTopic(t.Name) || kind.Skip != nil && kind.Skip(settings, t.Name) {
				continue
			}
			for _, p := range t.Partitions {
				if m.Led[partition.Key{Topic: t.Name, Partition: p.Index}] {
					want[runnerKey{name, t.Name, p.Index}] = wanted{def, kind, settings, int32(len(t.Partitions))}
				}
			}
		}
	}
	for name, d := range s.remotes {
		if !remote[name] {
			d.cancel()
			delete(s.remotes, name)
		}
	}
	for name, why := range refused {
		if s.refused[name] != why {
			s.cfg.Logger.Error().Str("extension", name).Str("reason", why).Msg("extension: not run on this node")
		}
	}
	s.refused = refused
	for k, p := range s.running {
		if w, ok := want[k]; ok && sameDef(w.def, p.def) {
			continue
		}
		c.Stop(p.pid)
		delete(s.running, k)
		s.cfg.Runtime.mu.Lock()
		delete(s.cfg.Runtime.m, k)
		s.cfg.Runtime.mu.Unlock()
	}
	for k, w := range want {
		if _, ok := s.running[k]; ok {
			continue
		}
		s.cfg.Runtime.mu.Lock()
		st := &status{log: s.cfg.Logger, totals: s.cfg.Runtime.totalsOf(k.instance, w.kind.Name), remote: w.settings[SettingSourceBootstrap] != "", s: Status{Instance: k.instance, Kind: w.kind.Name,
			Topic: k.topic, Partition: k.partition, Node: s.cfg.NodeID, State: StateLoading, Position: -1, Committed: -1}}
		s.cfg.Runtime.mu.Unlock()
		cfg, kind, settings, parts := s.cfg, w.kind, w.settings, w.parts
		props := actor.PropsFromProducer(func() actor.Actor {
			return &runner{cfg: cfg, key: k, kind: kind, settings: settings, st: st, remote: settings[SettingSourceBootstrap] != "", sourceParts: parts}
		})
		pid, err := c.SpawnNamed(props, fmt.Sprintf("%s/%s-%d", k.instance, k.topic, k.partition))
		if err != nil {
			// The previous actor of that name still stops: its
			// Terminated places again.
			continue
		}
		s.running[k] = &placed{pid: pid, def: w.def}
		s.cfg.Runtime.mu.Lock()
		s.cfg.Runtime.m[k] = st
		s.cfg.Runtime.mu.Unlock()
	}
}

func sameDef(a, b image.Extension) bool {
	return a.Name == b.Name && a.Kind == b.Kind && maps.Equal(a.Settings, b.Settings)
}

// isStateTopic reports whether topic is an instance's state topic
// (StateTopic), which no instance reads.
func isStateTopic(topic string) bool {
	return strings.HasPrefix(topic, "skein-extension-") && strings.HasSuffix(topic, "-state")
}

// discovery lists the topics of an instance's remote source, every
// discoveryInterval, for the supervisor (remoteTopics).
type discovery struct {
	bootstrap string
	cancel    context.CancelFunc
	topics    map[string]int32 // partition counts, by topic
	err       error
}

// remoteTopics is a discovery's finding.
type remoteTopics struct {
	instance, bootstrap string
	topics              map[string]int32
	err                 error
}

const discoveryInterval = 5 * time.Second

// discover returns the instance's discovery of bootstrap, started if it
// has none (or one of another cluster).
func (s *supervisor) discover(c actor.Context, instance, bootstrap string) *discovery {
	if d := s.remotes[instance]; d != nil && d.bootstrap == bootstrap {
		return d
	} else if d != nil {
		d.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &discovery{bootstrap: bootstrap, cancel: cancel}
	s.remotes[instance] = d
	self, root := c.Self(), c.ActorSystem().Root
	go func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(splitList(bootstrap)...), kgo.ClientID("skein-extension-"+instance))
		if err != nil {
			root.Send(self, &remoteTopics{instance: instance, bootstrap: bootstrap, err: err})
			return
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		for {
			lctx, lcancel := context.WithTimeout(ctx, discoveryInterval)
			topics, err := adm.ListTopics(lctx)
			lcancel()
			if ctx.Err() != nil {
				return
			}
			m := &remoteTopics{instance: instance, bootstrap: bootstrap, err: err, topics: map[string]int32{}}
			if err == nil {
				for _, t := range topics {
					if t.Err == nil {
						m.topics[t.Topic] = int32(len(t.Partitions))
					}
				}
			}
			root.Send(self, m)
			select {
			case <-ctx.Done():
				return
			case <-time.After(discoveryInterval):
			}
		}
	}()
	return d
}

// placeRemote is the node that runs a remote source partition: one of the
// live brokers, by a hash of the instance, topic and partition.
func placeRemote(instance, topic string, p int32, live []int32) int32 {
	if len(live) == 0 {
		return -1
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", instance, topic, p)
	return live[h.Sum32()%uint32(len(live))]
}
