package partition

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/replica"
)

// Follow tells the fetchers supervisor which partitions this node follows
// on which leader node (every one, each time the metadata changes): it
// spawns a fetcher per leader node, named by its id, and tells each its
// partitions. A fetcher left with none idles, without timers, instead of
// stopping: leaderships come back, and an actor respawned under the name
// of one still stopping would race it (ErrNameExists).
type Follow struct {
	Leaders map[int32]Followed
}

// Followed is what a node follows on one leader node: the leader's
// remoting address and the partitions.
type Followed struct {
	Addr       string
	Partitions []Key
}

// FetcherConfig configures a node's fetchers.
type FetcherConfig struct {
	Origin   actors.Origin
	Registry *Registry
	// WaitMax, MaxBytes and PartMax are replica.fetch.wait.max.ms,
	// replica.fetch.response.max.bytes and replica.fetch.max.bytes.
	WaitMax           time.Duration
	MaxBytes, PartMax int32
	Logger            zerolog.Logger
}

// FetchersProps returns the props of the "fetchers" supervisor, whose
// children fetch for the follower replicas this node hosts, one per leader
// node, and restart with strategy when they fail.
func FetchersProps(cfg FetcherConfig, strategy actor.SupervisorStrategy) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &fetchers{cfg: cfg, children: map[int32]*fetcherChild{}}
	}, actor.WithSupervisor(strategy))
}

type fetchers struct {
	cfg      FetcherConfig
	children map[int32]*fetcherChild
}

// fetcherChild is a fetcher and what it is to follow: a restarted fetcher
// takes that up again at its start, without waiting for the next Follow.
type fetcherChild struct {
	pid    *actor.PID
	latest atomic.Pointer[following]
}

func (s *fetchers) Receive(c actor.Context) {
	m, ok := c.Message().(*Follow)
	if !ok {
		return
	}
	for leader, f := range m.Leaders {
		ch, ok := s.children[leader]
		if !ok {
			ch = &fetcherChild{}
			leader := leader
			pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
				return &fetcher{cfg: s.cfg, leader: leader, latest: &ch.latest}
			}), strconv.Itoa(int(leader)))
			if err != nil {
				s.cfg.Logger.Error().Err(err).Int32("leader", leader).Msg("spawning a fetcher")
				continue
			}
			ch.pid = pid
			s.children[leader] = ch
		}
		ch.latest.Store(&following{addr: f.Addr, partitions: f.Partitions})
		c.Send(ch.pid, followingChanged)
	}
	for leader, ch := range s.children {
		if _, ok := m.Leaders[leader]; !ok {
			ch.latest.Store(&following{})
			c.Send(ch.pid, followingChanged)
		}
	}
}

// following is a fetcher's leader's address and its partitions there.
type following struct {
	addr       string
	partitions []Key
}

// followingChanged tells a fetcher to take up its latest following.
type followingChangedMsg struct{}

var followingChanged = &followingChangedMsg{}

// fetcher fetches, for every partition this node follows on one leader
// node, what the leader has past the follower's end: one ReplicaFetch
// outstanding, long-polled by the leader; each answer goes to the
// partitions' actors (Replicate), and the next fetch leaves once they have
// all applied it (and, under durability fsync, made it durable), so that
// its offsets tell the leader what the follower holds.
//
// Restart: it takes up the partitions the supervisor last gave it and
// fetches at once, in fetch sequences of its own (its predecessor's late
// answers are ignored); a partition's position is its published view,
// never the fetcher's.
type fetcher struct {
	cfg        FetcherConfig
	leader     int32
	latest     *atomic.Pointer[following]
	addr       string
	partitions []Key
	seq        uint64
	busy       bool // a fetch is out, or its answer is being applied
	applying   int  // Replicates not done yet
	pause      bool // the next fetch waits retryPause
	// asked are the partitions of the fetch under way, in its order, with
	// the positions it asked from.
	asked []asked
	timer *time.Timer
}

type asked struct {
	key Key
	pos replica.FetchPosition
}

// fetchTimeout ends a fetch that got no answer, or whose answer was not
// all applied, in time; retry starts a fetch after a pause.
type (
	fetchTimeout struct{ seq uint64 }
	fetchRetry   struct{}
	replicated   struct{ seq uint64 }
)

// fetchSeqs numbers fetcher instances, for their fetch sequences.
var fetchSeqs atomic.Uint64

// retryPause is how long a fetcher waits after a failed fetch, or when it
// has nothing to fetch, before it looks again.
const retryPause = 200 * time.Millisecond

func (f *fetcher) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		// Fetch sequences no earlier instance used: their late answers
		// and Dones are ignored.
		f.seq = fetchSeqs.Add(1) << 32
		f.follow(c)
	case *followingChangedMsg:
		f.follow(c)
	case *ReplicaFetchResult:
		if m.Seq == f.seq && f.busy && f.applying == 0 {
			f.apply(c, m)
		}
	case *replicated:
		if m.seq == f.seq && f.applying > 0 {
			if f.applying--; f.applying == 0 {
				f.done(c)
			}
		}
	case *fetchTimeout:
		if m.seq == f.seq && f.busy {
			f.cfg.Logger.Debug().Int32("leader", f.leader).Msg("replica fetch unanswered; fetching again")
			f.done(c)
		}
	case *fetchRetry:
		f.fetch(c)
	case *actor.DeadLetterResponse:
		// The leader's node has no replicas actor (yet): look again soon.
		f.pause = true
		f.done(c)
	case *actors.Unknown:
		f.cfg.Logger.Warn().Uint32("type", m.TypeID).Str("reason", m.Reason).Msg("fetcher: dropping a message from the leader")
	case *actor.Stopping, *actor.Restarting:
		if f.timer != nil {
			f.timer.Stop()
		}
	}
}

// follow takes up the partitions the supervisor last gave, and fetches.
func (f *fetcher) follow(c actor.Context) {
	if l := f.latest.Load(); l != nil {
		f.addr, f.partitions = l.addr, l.partitions
	}
	f.fetch(c)
}

// done ends the fetch under way and starts the next, after a pause when
// the last answer was all errors.
func (f *fetcher) done(c actor.Context) {
	f.busy, f.applying = false, 0
	f.seq++ // late answers and Dones of this fetch are ignored
	if f.pause {
		f.pause = false
		f.after(c, retryPause, &fetchRetry{})
		return
	}
	f.fetch(c)
}

// fetch sends the next fetch unless one is under way. Partitions that
// wait for newer metadata, or follow another leader now, are left out;
// with none left it looks again after a pause.
func (f *fetcher) fetch(c actor.Context) {
	if f.busy || len(f.partitions) == 0 {
		return // under way, or idle until the next following
	}
	req := &ReplicaFetch{Origin: f.cfg.Origin, Seq: f.seq, MaxWaitMs: int32(f.cfg.WaitMax / time.Millisecond),
		MaxBytes: f.cfg.MaxBytes, PartMax: f.cfg.PartMax}
	f.asked = f.asked[:0]
	for _, k := range f.partitions {
		h := f.cfg.Registry.Get(k.Topic, k.Partition)
		if h == nil {
			continue
		}
		v := h.View()
		if v == nil || v.Follow == nil || v.Follow.Leader != f.leader || v.Log == nil {
			continue
		}
		req.Partitions = append(req.Partitions, FetchPartition{
			Topic: k.Topic, Partition: k.Partition, TopicID: h.TopicID,
			FetchOffset: v.Follow.FetchOffset, LastFetchedEpoch: v.Follow.LastFetchedEpoch,
			CurrentLeaderEpoch: v.Follow.CurrentLeaderEpoch, HighWatermark: v.Log.HighWatermark,
		})
		f.asked = append(f.asked, asked{key: k, pos: *v.Follow})
	}
	if len(req.Partitions) == 0 || f.addr == "" {
		f.after(c, retryPause, &fetchRetry{})
		return
	}
	f.busy = true
	c.Request(actor.NewPID(f.addr, "node/"+strconv.Itoa(int(f.leader))+"/replicas"), req)
	// The leader holds a fetch for WaitMax; an answer much later is lost.
	f.after(c, f.cfg.WaitMax+3*time.Second, &fetchTimeout{seq: f.seq})
}

// apply hands each partition its part of the answer.
func (f *fetcher) apply(c actor.Context, m *ReplicaFetchResult) {
	if m.Err != nil {
		f.cfg.Logger.Debug().Int32("leader", f.leader).Str("error", m.Err.Message).Msg("replica fetch refused")
		f.pause = true
		f.done(c)
		return
	}
	root, self, seq := c.ActorSystem().Root, c.Self(), f.seq
	records := m.Records
	failed := 0
	for i, fp := range m.Partitions {
		if fp.Err != nil {
			failed++
		}
		var b []byte
		if n := int(fp.Bytes); n > 0 && n <= len(records) {
			b, records = records[:n:n], records[n:]
		}
		if i >= len(f.asked) {
			break
		}
		k, pos := f.asked[i].key, f.asked[i].pos
		h := f.cfg.Registry.Get(k.Topic, k.Partition)
		if h == nil {
			continue
		}
		if v := h.View(); len(b) == 0 && fp.Err == nil && fp.DivergingEnd < 0 && v != nil && v.Log != nil &&
			fp.HighWatermark <= v.Log.HighWatermark && fp.LogStartOffset <= v.Log.LogStartOffset {
			continue // nothing new for it
		}
		f.applying++
		c.Send(h.PID, &Replicate{Position: pos, Answer: answerOf(fp), Records: b,
			Done: func() { root.Send(self, &replicated{seq: seq}) }})
	}
	// Every partition failed (a leader taking over, storage errors): the
	// leader answered at once, and would again; the next fetch pauses.
	f.pause = failed == len(m.Partitions)
	if f.applying == 0 {
		f.done(c)
	}
}

// after sends msg to the fetcher after d, replacing any timer set before.
func (f *fetcher) after(c actor.Context, d time.Duration, msg any) {
	if f.timer != nil {
		f.timer.Stop()
	}
	root, self := c.ActorSystem().Root, c.Self()
	f.timer = time.AfterFunc(d, func() { root.Send(self, msg) })
}
