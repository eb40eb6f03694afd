package partition

import (
	"crypto/tls"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
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

// Followed is what a node follows on one leader node: the leader's Kafka
// listener, which its fetcher fetches from, its remoting address, which
// names the link to it (actors.Links), and the partitions.
type Followed struct {
	Addr       string
	Peer       string
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
	// Links are the node's injected network faults; nil for none.
	Links  *actors.Links
	Logger zerolog.Logger
	// TLS, when set, is how followers dial leaders: the inter-broker
	// listener is SSL, and the node's certificate is its client
	// certificate (a principal that needs CLUSTER_ACTION).
	TLS *tls.Config
	// Clock is the node's clock, which the partitions' Handles are
	// stamped with (CaughtUp); nil is the real one.
	Clock clock.Clock
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
	// stopping is set once the supervisor stops: a Follow still in its
	// mailbox then spawns no fetcher, as protoactor has already told the
	// children it had to stop and would wait forever for a new one.
	stopping bool
}

// fetcherChild is a fetcher and what it is to follow: a restarted fetcher
// takes that up again at its start, without waiting for the next Follow.
type fetcherChild struct {
	pid    *actor.PID
	latest atomic.Pointer[following]
}

func (s *fetchers) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Stopping); ok {
		s.stopping = true
		return
	}
	m, ok := c.Message().(*Follow)
	if !ok || s.stopping {
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
		ch.latest.Store(&following{addr: f.Addr, peer: f.Peer, partitions: f.Partitions})
		c.Send(ch.pid, followingChanged)
	}
	for leader, ch := range s.children {
		if _, ok := m.Leaders[leader]; !ok {
			ch.latest.Store(&following{})
			c.Send(ch.pid, followingChanged)
		}
	}
}

// following is a fetcher's leader's addresses and its partitions there.
type following struct {
	addr, peer string
	partitions []Key
}

// followingChanged tells a fetcher to take up its latest following.
type followingChangedMsg struct{}

var followingChanged = &followingChangedMsg{}

// fetcher fetches, for every partition this node follows on one leader
// node, what the leader has past the follower's end: one Fetch outstanding
// on its connection to the leader's Kafka listener (replication.go says
// why not remoting), long-polled by the leader; each answer goes to the
// partitions' actors (Replicate), and the next fetch leaves once they have
// all applied it (and, under durability fsync, made it durable), so that
// its offsets tell the leader what the follower holds. The connection's
// reads and writes run on a goroutine per fetch, which reports back to the
// actor (fetchAnswer).
//
// The answer's record bytes stay in the fetcher's buffer, which the next
// fetch reuses only once every partition has applied its part: a fetch
// that ends otherwise (an error, a timeout) leaves its buffer and its
// connection behind.
//
// Restart: it takes up the partitions the supervisor last gave it and
// fetches at once, on a new connection, in fetch sequences of its own (its
// predecessor's late answers are ignored); a partition's position is its
// published view, never the fetcher's.
type fetcher struct {
	cfg        FetcherConfig
	leader     int32
	latest     *atomic.Pointer[following]
	addr, peer string
	partitions []Key
	seq        uint64
	busy       bool // a fetch is out, or its answer is being applied
	applying   int  // Replicates not done yet
	pause      bool // the next fetch waits retryPause
	// asked are the partitions of the fetch under way, by topic id and
	// partition, with the positions it asked from.
	asked map[askedKey]asked
	// leaderHW is each partition's high watermark at the leader, from the
	// last answer: a follower whose end is below it is not in sync, and
	// may be throttled (KIP-73, throttle.go).
	leaderHW map[Key]int64
	conn     *leaderConn
	// buf is the buffer for the next answer; inUse the one of the answer
	// being applied.
	buf, inUse []byte
	timer      *time.Timer
}

type askedKey struct {
	topicID   image.TopicID
	partition int32
}

type asked struct {
	key Key
	pos replica.FetchPosition
}

// fetchTimeout ends a fetch that got no answer, or whose answer was not
// all applied, in time; retry starts a fetch after a pause; fetchAnswer
// is a fetch's outcome, from its goroutine.
type (
	fetchTimeout struct{ seq uint64 }
	fetchRetry   struct{}
	replicated   struct{ seq uint64 }
	fetchAnswer  struct {
		seq  uint64
		resp *kmsg.FetchResponse
		buf  []byte
		err  error
	}
)

// fetchSeqs numbers fetcher instances, for their fetch sequences.
var fetchSeqs atomic.Uint64

// retryPause is how long a fetcher waits after a failed fetch, or when it
// has nothing to fetch, before it looks again.
const retryPause = 200 * time.Millisecond

// errDropped is a fetch dropped by an injected link fault.
var errDropped = errors.New("dropped by an injected link fault")

func (f *fetcher) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		// Fetch sequences no earlier instance used: their late answers
		// and Dones are ignored.
		f.seq = fetchSeqs.Add(1) << 32
		f.follow(c)
	case *followingChangedMsg:
		f.follow(c)
	case *fetchAnswer:
		if m.seq == f.seq && f.busy && f.applying == 0 {
			f.apply(c, m)
		}
	case *replicated:
		if m.seq == f.seq && f.applying > 0 {
			if f.applying--; f.applying == 0 {
				f.buf, f.inUse = f.inUse, nil // every partition is done with it
				f.done(c)
			}
		}
	case *fetchTimeout:
		if m.seq == f.seq && f.busy {
			f.cfg.Logger.Debug().Int32("leader", f.leader).Msg("replica fetch unanswered; fetching again")
			f.abandon()
			f.done(c)
		}
	case *fetchRetry:
		f.fetch(c)
	case *actor.Stopping, *actor.Restarting:
		if f.timer != nil {
			f.timer.Stop()
		}
		if f.conn != nil {
			f.conn.close()
		}
	}
}

// abandon leaves the fetch under way to its goroutine and the partitions
// still applying it: its connection is closed, and neither it nor its
// buffers are used again.
func (f *fetcher) abandon() {
	if f.conn != nil {
		f.conn.close()
		f.conn = nil
	}
	f.buf, f.inUse = nil, nil
}

// follow takes up the partitions the supervisor last gave, and fetches.
func (f *fetcher) follow(c actor.Context) {
	if l := f.latest.Load(); l != nil {
		f.addr, f.peer, f.partitions = l.addr, l.peer, l.partitions
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
// wait for newer metadata, or follow another leader now, are left out, and
// so are the throttled ones behind their leader while the node's follower
// quota is exceeded (throttle.go); with none left it looks again after a
// pause.
func (f *fetcher) fetch(c actor.Context) {
	if f.busy || len(f.partitions) == 0 {
		return // under way, or idle until the next following
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.ReplicaState.ID = f.cfg.Origin.Node
	req.ReplicaState.Epoch = int64(f.cfg.Origin.Incarnation)
	req.MaxWaitMillis = int32(f.cfg.WaitMax / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, f.cfg.MaxBytes
	req.SessionEpoch = -1 // a full fetch each time, no session
	clear(f.asked)
	if f.asked == nil {
		f.asked = map[askedKey]asked{}
	}
	quota, now := &f.cfg.Registry.Quotas().Follower, time.Now()
	for _, k := range f.partitions {
		h := f.cfg.Registry.Get(k.Topic, k.Partition)
		if h == nil {
			continue
		}
		v := h.View()
		if v == nil || v.Follow == nil || v.Follow.Leader != f.leader || v.Log == nil {
			continue
		}
		if f.throttled(k, v) && quota.Exceeded(now) && quota.hold() {
			continue
		}
		if t := len(req.Topics) - 1; t < 0 || req.Topics[t].TopicID != h.TopicID {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = k.Topic, h.TopicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.Partition
		rp.CurrentLeaderEpoch, rp.FetchOffset, rp.LastFetchedEpoch = v.Follow.CurrentLeaderEpoch, v.Follow.FetchOffset, v.Follow.LastFetchedEpoch
		rp.LogStartOffset, rp.HighWatermark = v.Log.LogStartOffset, v.Log.HighWatermark
		rp.PartitionMaxBytes = f.cfg.PartMax
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
		f.asked[askedKey{h.TopicID, k.Partition}] = asked{key: k, pos: *v.Follow}
	}
	if len(f.asked) == 0 || f.addr == "" {
		f.after(c, retryPause, &fetchRetry{})
		return
	}
	f.busy = true
	if f.conn != nil && f.conn.addr != f.addr {
		f.conn.close() // the leader's listener moved
		f.conn = nil
	}
	if f.conn == nil {
		f.conn = newLeaderConn(f.addr, f.cfg.Origin.Node, f.cfg.TLS)
	}
	// The leader holds a fetch for WaitMax; an answer much later is lost.
	timeout := f.cfg.WaitMax + 3*time.Second
	root, self, seq, conn, buf, links, peer := c.ActorSystem().Root, c.Self(), f.seq, f.conn, f.buf, f.cfg.Links, f.peer
	f.buf = nil
	go func() {
		ans := &fetchAnswer{seq: seq, buf: buf}
		deadline := time.Now().Add(timeout)
		drop, delay := false, time.Duration(0)
		if links != nil {
			drop, delay = links.Draw(peer)
		}
		if drop {
			ans.err = errDropped
		} else {
			time.Sleep(delay)
			ans.resp, ans.buf, ans.err = conn.roundTrip(req, buf, deadline)
		}
		root.Send(self, ans)
	}()
	f.after(c, timeout+time.Second, &fetchTimeout{seq: f.seq})
}

// apply hands each partition its part of the answer.
func (f *fetcher) apply(c actor.Context, m *fetchAnswer) {
	if m.err != nil {
		if m.err != errDropped {
			f.cfg.Logger.Debug().Int32("leader", f.leader).Err(m.err).Msg("replica fetch failed")
		}
		f.abandon()
		f.pause = true
		f.done(c)
		return
	}
	f.inUse = m.buf
	if m.resp.ErrorCode != 0 {
		// STALE_BROKER_EPOCH: the leader's image does not have this
		// node's incarnation yet.
		f.cfg.Logger.Debug().Int32("leader", f.leader).Int16("error", m.resp.ErrorCode).Msg("replica fetch refused")
		f.buf, f.inUse = f.inUse, nil
		f.pause = true
		f.done(c)
		return
	}
	root, self, seq := c.ActorSystem().Root, c.Self(), f.seq
	failed, answered := 0, 0
	var throttledBytes int64
	for _, t := range m.resp.Topics {
		for i := range t.Partitions {
			fp := &t.Partitions[i]
			a, ok := f.asked[askedKey{t.TopicID, fp.Partition}]
			if !ok {
				continue
			}
			answered++
			ke := kerr.TypedErrorForCode(fp.ErrorCode)
			if ke != nil {
				failed++
			}
			h := f.cfg.Registry.Get(a.key.Topic, a.key.Partition)
			if h == nil {
				continue
			}
			if ke == nil {
				if f.leaderHW == nil {
					f.leaderHW = map[Key]int64{}
				}
				f.leaderHW[a.key] = fp.HighWatermark
			}
			if v := h.View(); v != nil && v.Config.FollowerReplicationThrottledReplicas.Throttles(a.key.Partition, f.cfg.Origin.Node) {
				throttledBytes += int64(len(fp.RecordBatches))
			}
			if v := h.View(); len(fp.RecordBatches) == 0 && ke == nil && fp.DivergingEpoch.EndOffset < 0 && v != nil && v.Log != nil &&
				fp.HighWatermark <= v.Log.HighWatermark && fp.LogStartOffset <= v.Log.LogStartOffset {
				// Nothing new for it: its log is up to the leader's high
				// watermark (read_replica.go).
				h.setCaughtUp(f.now())
				continue
			}
			f.applying++
			c.Send(h.PID, &Replicate{Position: a.pos, Records: fp.RecordBatches,
				Answer: replica.Answer{Err: ke, DivergingEpoch: fp.DivergingEpoch.Epoch, DivergingEnd: fp.DivergingEpoch.EndOffset,
					HighWatermark: fp.HighWatermark, LogStartOffset: fp.LogStartOffset},
				Done: func() { root.Send(self, &replicated{seq: seq}) }})
		}
	}
	f.cfg.Registry.Quotas().Follower.Record(throttledBytes, time.Now())
	// Every partition failed (a leader taking over, storage errors): the
	// leader answered at once, and would again; the next fetch pauses.
	f.pause = failed == answered
	if f.applying == 0 {
		f.buf, f.inUse = f.inUse, nil
		f.done(c)
	}
}

// throttled reports whether the follower quota applies to partition k:
// its follower.replication.throttled.replicas names this node, and it is
// not in sync, its end below the leader's last high watermark (unknown
// before the first answer, as Kafka's fetch state's lag).
func (f *fetcher) throttled(k Key, v *View) bool {
	if !v.Config.FollowerReplicationThrottledReplicas.Throttles(k.Partition, f.cfg.Origin.Node) {
		return false
	}
	hw, known := f.leaderHW[k]
	return !known || v.Follow.FetchOffset < hw
}

// now returns the time by the node's clock.
func (f *fetcher) now() time.Time {
	if f.cfg.Clock == nil {
		return time.Now()
	}
	return f.cfg.Clock.Now()
}

// after sends msg to the fetcher after d, replacing any timer set before.
func (f *fetcher) after(c actor.Context, d time.Duration, msg any) {
	if f.timer != nil {
		f.timer.Stop()
	}
	root, self := c.ActorSystem().Root, c.Self()
	f.timer = time.AfterFunc(d, func() { root.Send(self, msg) })
}
