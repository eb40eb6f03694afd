package partition

import (
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
)

// Replication's data path is Kafka's: a follower node's fetcher
// (fetcher.go) sends the leader node a Fetch as a replica (ReplicaState:
// its node id and incarnation) on the leader's Kafka listener, and the
// leader's transport answers it from the partitions' published views with
// ReadForFollower, the record bytes going from the segment files to the
// socket as a client's Fetch does. Remoting carries everything else between
// nodes, not the record bytes: measured on this project's 2-core machine,
// protoactor's gRPC remoting spends 1.7-3.4 CPU-s per GB on each side for
// bulk bytes (marshalling copies, HTTP/2 framing, large allocations and
// their garbage collection) against about 0.3 for a plain TCP connection,
// and replication with RF 3 spent half of its nodes' CPU there.

// FollowerPosition is one partition of a follower's fetch: where the
// follower's log ends, the epoch of its last batch, the leader epoch it
// follows in, and the high watermark it knows (KIP-1166: a leader whose
// high watermark passed it answers without waiting).
type FollowerPosition struct {
	Topic              string
	Partition          int32
	TopicID            image.TopicID
	FetchOffset        int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
	HighWatermark      int64
}

// FollowerRead is a leader's answer for one partition of a follower's
// fetch: an error, a divergence (KIP-320) or the records past the
// follower's end, with the leader's high watermark and log start offset.
type FollowerRead struct {
	Err                           *kerr.Error
	HighWatermark, LogStartOffset int64 // -1 with an error
	DivergingEpoch                int32 // -1 when the logs agree
	DivergingEnd                  int64
	Records                       store.Slice
	// Throttled says the partition's leader.replication.throttled.replicas
	// names this leader: its records count against the leader quota
	// (ReplicationQuotas). Held says they were held back, the quota being
	// exceeded and the follower outside the ISR: no records, and not
	// Ready for the sake of them.
	Throttled, Held bool
	// Handle and View are the partition and the view read, for the
	// caller to wait on; nil when this node does not lead it.
	Handle *Handle
	View   *View
}

// Ready reports whether the answer should go without waiting for more:
// it has records, an error or a divergence, or tells the follower of a
// higher high watermark.
func (r *FollowerRead) Ready(p FollowerPosition) bool {
	if r.Held {
		return false // an error or a divergence is never held
	}
	return r.Err != nil || r.DivergingEpoch >= 0 || r.Records.Size > 0 || r.HighWatermark > p.HighWatermark
}

// ReadForFollower reads, at the leader node, one partition of a fetch
// from the follower node: at most maxBytes of records past its end
// (minOne: at least one batch, however large). first says whether this
// is the fetch's first read: only then does the partition's actor hear of
// the follower's position (FollowerFetched), which is the leader's account
// of its followers, and so of the high watermark and the ISR; it carries
// incarnation, the follower's run that fetched, which the leader's ISR
// changes name (KIP-903). A partition
// the leader throttles (throttle.go) is read only while the node's leader
// quota is not exceeded or the follower is in the ISR; the caller records
// what it serves of Throttled partitions with RecordLeader.
func (r *Registry) ReadForFollower(im *image.Image, node, follower int32, incarnation uint64, p FollowerPosition, maxBytes int64, minOne, first bool, root *actor.RootContext) FollowerRead {
	out := FollowerRead{HighWatermark: -1, LogStartOffset: -1, DivergingEpoch: -1, DivergingEnd: -1}
	h, v, err := r.Led(im, node, p.Topic, p.Partition)
	switch {
	case err == kerr.NotLeaderForPartition && leadsInImage(im, node, p):
		err = kerr.UnknownLeaderEpoch // the partition actor has not taken the leadership yet
	case err != nil:
	case !p.TopicID.IsZero() && p.TopicID != h.TopicID:
		err = kerr.UnknownTopicID
	default:
		err = CheckLeaderEpoch(p.CurrentLeaderEpoch, v.LeaderEpoch)
	}
	if err != nil {
		out.Err = err
		return out
	}
	out.Handle, out.View = h, v
	lv := v.Log
	out.HighWatermark, out.LogStartOffset = lv.HighWatermark, lv.LogStartOffset
	if e, end, diverges := divergence(lv, p); diverges {
		out.DivergingEpoch, out.DivergingEnd = e, end
		return out
	}
	if p.FetchOffset < lv.LogStartOffset {
		out.Err = kerr.OffsetOutOfRange
		return out
	}
	if first {
		root.Send(h.PID, &FollowerFetched{Replica: follower, Offset: p.FetchOffset, LeaderEpoch: p.CurrentLeaderEpoch, Incarnation: incarnation})
	}
	if maxBytes <= 0 && !minOne {
		return out
	}
	out.Throttled = v.Config.LeaderReplicationThrottledReplicas.Throttles(p.Partition, node)
	if out.Throttled && !slices.Contains(v.State.ISR, follower) && r.quotas.Leader.Exceeded(time.Now()) {
		out.Held = r.quotas.Leader.hold()
		return out
	}
	sl, rerr := lv.Read(p.FetchOffset, store.ReadOptions{MaxBytes: max(maxBytes, 0), MaxOffset: lv.LogEndOffset, MinOneBatch: minOne})
	if rerr != nil {
		out.Err = kerr.KafkaStorageError
		return out
	}
	out.Records = sl
	return out
}

// RecordLeader records against the leader quota the records an answer to
// a follower's fetch serves of throttled partitions (FollowerRead.Throttled).
func (r *Registry) RecordLeader(reads []FollowerRead) {
	var n int64
	for i := range reads {
		if reads[i].Throttled {
			n += reads[i].Records.Size
		}
	}
	r.quotas.Leader.Record(n, time.Now())
}

// leadsInImage reports whether im makes node the leader of p's partition
// in the epoch the follower knows.
func leadsInImage(im *image.Image, node int32, p FollowerPosition) bool {
	t := im.Topic(p.Topic)
	if t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Partitions) {
		return false
	}
	tp := t.Partitions[p.Partition]
	return tp.Leader == node && tp.LeaderEpoch == p.CurrentLeaderEpoch
}

// divergence checks a follower's position against the leader's epoch
// history (KIP-320): the follower's last epoch must end on the leader at
// or after the follower's end, and be an epoch the leader had. If not, it
// returns the largest epoch at most the follower's and where it ends on
// the leader. A follower past the leader's end with no epoch to tell is
// sent back to the leader's end in its latest epoch.
func divergence(lv *store.View, fp FollowerPosition) (int32, int64, bool) {
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
