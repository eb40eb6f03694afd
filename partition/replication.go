package partition

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/replica"
)

func init() {
	actors.Register[ReplicaFetch](202)
	actors.Register[ReplicaFetchResult](203)
}

// ReplicaFetch is a follower node's fetch from a leader node, for every
// partition it follows there (Kafka's Fetch from a replica, over
// remoting). A node's fetcher for that leader sends it, one at a time, to
// the leader node's replicas actor (ReplicasProps), which answers
// ReplicaFetchResult once it has something to say or MaxWaitMs passed.
type ReplicaFetch struct {
	Origin actors.Origin `msgpack:"origin"`
	// Seq tells this fetch's answer from a late one to an earlier fetch.
	Seq        uint64           `msgpack:"seq"`
	MaxWaitMs  int32            `msgpack:"wait"`
	MaxBytes   int32            `msgpack:"max"`      // over all partitions
	PartMax    int32            `msgpack:"part_max"` // per partition
	Partitions []FetchPartition `msgpack:"parts"`
}

func (m *ReplicaFetch) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// FetchPartition is one partition of a ReplicaFetch: where the follower's
// log ends, the epoch of its last batch, the leader epoch it follows in,
// and the high watermark it knows (a leader whose high watermark passed it
// answers without waiting).
type FetchPartition struct {
	Topic              string        `msgpack:"topic"`
	Partition          int32         `msgpack:"part"`
	TopicID            image.TopicID `msgpack:"topic_id"`
	FetchOffset        int64         `msgpack:"offset"`
	LastFetchedEpoch   int32         `msgpack:"last_epoch"`
	CurrentLeaderEpoch int32         `msgpack:"epoch"`
	HighWatermark      int64         `msgpack:"hw"`
}

// ReplicaFetchResult answers ReplicaFetch: per partition, in the request's
// order, an error, a diverging epoch or records, with the leader's high
// watermark and log start offset. The record bytes of every partition are
// concatenated in Records, outside msgpack (Bytes says how many are each
// partition's).
type ReplicaFetchResult struct {
	Seq uint64 `msgpack:"seq"`
	// Err, when set, refuses the whole fetch: STALE_BROKER_EPOCH for a
	// follower whose incarnation the leader's image does not have.
	Err        *kerr.Error        `msgpack:"err"`
	Partitions []FetchedPartition `msgpack:"parts"`
	Records    []byte             `msgpack:"-"`
}

func (m *ReplicaFetchResult) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
func (m *ReplicaFetchResult) Raw() []byte                           { return m.Records }
func (m *ReplicaFetchResult) SetRaw(b []byte)                       { m.Records = b }

// FetchedPartition is one partition of a ReplicaFetchResult.
type FetchedPartition struct {
	Err            *kerr.Error `msgpack:"err"`
	HighWatermark  int64       `msgpack:"hw"`
	LogStartOffset int64       `msgpack:"start"`
	DivergingEpoch int32       `msgpack:"div_epoch"`
	DivergingEnd   int64       `msgpack:"div_end"`
	Bytes          int32       `msgpack:"bytes"`
}

// ReplicasConfig configures a node's replicas actor.
type ReplicasConfig struct {
	NodeID   int32
	Registry *Registry
	// Image returns the newest cluster metadata image.
	Image  func() *image.Image
	Logger zerolog.Logger
	// Stats counts the record bytes served; nil counts none.
	Stats *Stats
}

// ReplicasProps returns the props of the actor that answers followers'
// ReplicaFetches at a leader node. Spawn it as "replicas" under the node.
// Each fetch is served on a goroutine of its own (there is one at a time
// per follower node), from the partitions' published views, as a client's
// Fetch is: no message to a partition actor carries bytes. Each partition's
// actor hears of the follower's position (FollowerFetched).
func ReplicasProps(cfg ReplicasConfig) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &replicas{cfg: cfg} })
}

type replicas struct{ cfg ReplicasConfig }

// served is a fetch's answer, back from its goroutine: the actor sends it
// on, so that it leaves through the actor's sender middleware (the link
// faults of fault injection), as everything else between nodes does.
type served struct {
	to  *actor.PID
	res *ReplicaFetchResult
}

func (r *replicas) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *ReplicaFetch:
		if c.Sender() == nil {
			return
		}
		sys, self, to := c.ActorSystem(), c.Self(), c.Sender()
		go func() { sys.Root.Send(self, &served{to: to, res: r.serve(sys, m)}) }()
	case *served:
		if r.cfg.Stats != nil {
			r.cfg.Stats.BytesOut.Add(uint64(len(m.res.Records)))
		}
		c.Send(m.to, m.res)
	}
}

// serve answers a fetch: at once when a partition has records past the
// follower's end, an error, a divergence, or a high watermark past the
// follower's; otherwise when a view is published that may change that,
// or after MaxWaitMs.
func (r *replicas) serve(sys *actor.ActorSystem, m *ReplicaFetch) *ReplicaFetchResult {
	res := &ReplicaFetchResult{Seq: m.Seq}
	if b, ok := r.cfg.Image().Brokers[m.Origin.Node]; !ok || b.Incarnation != m.Origin.Incarnation {
		res.Err = kerr.StaleBrokerEpoch
		return res
	}
	wait := time.NewTimer(time.Duration(m.MaxWaitMs) * time.Millisecond)
	defer wait.Stop()
	woken := make(chan struct{}, 1)
	for first := true; ; first = false {
		// Watch before reading: a view published after the read wakes us.
		var cancels []func()
		for _, fp := range m.Partitions {
			if h := r.cfg.Registry.Get(fp.Topic, fp.Partition); h != nil {
				cancels = append(cancels, h.Watch(woken))
			}
		}
		ready := r.read(sys, m, res, first)
		if !ready {
			select {
			case <-woken:
			case <-wait.C:
				ready = true
			}
		}
		for _, cancel := range cancels {
			cancel()
		}
		if ready {
			return res
		}
	}
}

// read fills res from the partitions' views; it reports whether the
// answer should go now. first says whether this is the fetch's first
// read: only then do the partitions hear of the follower's position. The
// records are read in two passes: the slices of every partition first,
// then one buffer of their total size, read into directly (no copy beyond
// the one from the page cache).
func (r *replicas) read(sys *actor.ActorSystem, m *ReplicaFetch, res *ReplicaFetchResult, first bool) bool {
	im := r.cfg.Image()
	res.Partitions, res.Records = res.Partitions[:0], nil
	ready := false
	budget := int64(m.MaxBytes)
	reads := make([]store.Slice, len(m.Partitions)) // by partition, in request order
	for i, fp := range m.Partitions {
		out := FetchedPartition{HighWatermark: -1, LogStartOffset: -1, DivergingEpoch: -1, DivergingEnd: -1}
		h, v, err := r.cfg.Registry.Led(im, r.cfg.NodeID, fp.Topic, fp.Partition)
		switch {
		case err == kerr.NotLeaderForPartition && r.leadsInImage(im, fp):
			err = kerr.UnknownLeaderEpoch // the partition actor has not taken the leadership yet
		case err != nil:
		case !fp.TopicID.IsZero() && fp.TopicID != h.TopicID:
			err = kerr.UnknownTopicID
		default:
			err = CheckLeaderEpoch(fp.CurrentLeaderEpoch, v.LeaderEpoch)
		}
		if err != nil {
			out.Err = err
			res.Partitions = append(res.Partitions, out)
			ready = true
			continue
		}
		lv := v.Log
		out.HighWatermark, out.LogStartOffset = lv.HighWatermark, lv.LogStartOffset
		if e, end, diverges := divergence(lv, fp); diverges {
			out.DivergingEpoch, out.DivergingEnd = e, end
			res.Partitions = append(res.Partitions, out)
			ready = true
			continue
		}
		if fp.FetchOffset < lv.LogStartOffset {
			out.Err = kerr.OffsetOutOfRange
			res.Partitions = append(res.Partitions, out)
			ready = true
			continue
		}
		if first {
			sys.Root.Send(h.PID, &FollowerFetched{Replica: m.Origin.Node, Offset: fp.FetchOffset, LeaderEpoch: fp.CurrentLeaderEpoch})
		}
		if budget > 0 {
			sl, rerr := lv.Read(fp.FetchOffset, store.ReadOptions{
				MaxBytes: min(int64(m.PartMax), budget), MaxOffset: lv.LogEndOffset, MinOneBatch: budget == int64(m.MaxBytes),
			})
			if rerr != nil {
				out.Err = kerr.KafkaStorageError
				ready = true
			}
			reads[i] = sl
			out.Bytes = int32(sl.Size)
			budget -= sl.Size
		}
		ready = ready || out.Bytes > 0 || lv.HighWatermark > fp.HighWatermark
		res.Partitions = append(res.Partitions, out)
	}
	if total := int64(m.MaxBytes) - budget; total > 0 {
		res.Records = make([]byte, 0, total)
		for i, sl := range reads {
			if sl.Size == 0 {
				continue
			}
			n := len(res.Records)
			buf := res.Records[n : n+int(sl.Size)]
			if got, err := sl.File.ReadAt(buf, sl.Pos); got < len(buf) {
				// A segment retention deleted under the read: this
				// partition answers a storage error, which the follower
				// retries, and the others go on.
				r.cfg.Logger.Debug().Err(err).Str("topic", m.Partitions[i].Topic).Int32("partition", m.Partitions[i].Partition).Msg("replica fetch: short read")
				res.Partitions[i].Err, res.Partitions[i].Bytes = kerr.KafkaStorageError, 0
				continue
			}
			res.Records = res.Records[:n+int(sl.Size)]
		}
	}
	return ready
}

// leadsInImage reports whether im makes this node the leader of fp's
// partition in the epoch the follower knows.
func (r *replicas) leadsInImage(im *image.Image, fp FetchPartition) bool {
	t := im.Topic(fp.Topic)
	if t == nil || fp.Partition < 0 || int(fp.Partition) >= len(t.Partitions) {
		return false
	}
	p := t.Partitions[fp.Partition]
	return p.Leader == r.cfg.NodeID && p.LeaderEpoch == fp.CurrentLeaderEpoch
}

// divergence checks a follower's position against the leader's epoch
// history (KIP-320): the follower's last epoch must end on the leader at
// or after the follower's end, and be an epoch the leader had. If not, it
// returns the largest epoch at most the follower's and where it ends on
// the leader. A follower past the leader's end with no epoch to tell is
// sent back to the leader's end in its latest epoch.
func divergence(lv *store.View, fp FetchPartition) (int32, int64, bool) {
	if fp.LastFetchedEpoch >= 0 {
		e, end := lv.EndOffsetForEpoch(fp.LastFetchedEpoch)
		if e >= 0 && (e < fp.LastFetchedEpoch || end < fp.FetchOffset) {
			return e, end, true
		}
	}
	if fp.FetchOffset > lv.LogEndOffset {
		return lv.LatestEpoch(), lv.LogEndOffset, true
	}
	return -1, -1, false
}

// answerOf turns one partition of a fetch result into the follower's
// Answer.
func answerOf(fp FetchedPartition) replica.Answer {
	return replica.Answer{Err: fp.Err, DivergingEpoch: fp.DivergingEpoch, DivergingEnd: fp.DivergingEnd,
		HighWatermark: fp.HighWatermark, LogStartOffset: fp.LogStartOffset}
}
