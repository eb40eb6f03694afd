package partition

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Reads from followers (KIP-392). A consumer's Fetch v11+ may be served by
// any replica, not only the leader, as Kafka's brokers serve it: a
// follower reads its own log up to the high watermark its leader told it
// (or its last stable offset, for read_committed: a follower keeps the
// producers' state and aborted transactions as the leader does). Which
// replica a consumer reads from is the leader's choice: with
// replica.selector.class set to Kafka's RackAwareReplicaSelector, a leader
// answers a consumer that names its rack with the in-sync replica of that
// rack (PreferredReadReplica) instead of records, unless the leader is in
// that rack itself (PreferredReadReplica).
//
// A follower that is not in sync sends the consumer back to its leader the
// same way (FollowerInSync): Kafka's follower goes on serving the records
// it has, and its consumers come back to the leader only when their client
// forgets the preferred replica (metadata.max.age.ms in Java's consumer,
// RecheckPreferredReplicaInterval in franz-go, five minutes by default);
// until then they read nothing new. Both clients follow a
// PreferredReadReplica that names the leader.

// Followed returns the handle and newest view of partition topic-p if node
// hosts it as a follower in im: it is one of the partition's replicas, not
// its leader, and its actor has taken that role. Otherwise
// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, or
// KAFKA_STORAGE_ERROR when its log never opened, as Led.
func (r *Registry) Followed(im *image.Image, node int32, topic string, p int32) (*Handle, *View, *kerr.Error) {
	t := im.Topic(topic)
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return nil, nil, kerr.UnknownTopicOrPartition
	}
	tp := t.Partitions[p]
	h := r.Get(topic, p)
	if h == nil || t.ID != h.TopicID || tp.Leader == node || !slices.Contains(tp.Replicas, node) {
		return nil, nil, kerr.NotLeaderForPartition
	}
	v := h.View()
	switch {
	case v == nil, v.LeaderEpoch >= 0: // loading, or still leading by its own account
		return nil, nil, kerr.NotLeaderForPartition
	case v.Log == nil:
		return nil, nil, kerr.KafkaStorageError
	}
	return h, v, nil
}

// FollowerInSync reports whether a follower (replica self, its view v and
// its Handle's CaughtUp) is in sync with its leader at now: in the ISR of
// the newest metadata it has, and found up to the leader's high
// watermark by an answer within lagMax (replica.lag.time.max.ms, the
// leader's rule for the ISR). An isolated follower hears nothing from
// the metadata either, so the second test is what catches it.
func FollowerInSync(v *View, caughtUp time.Time, self int32, now time.Time, lagMax time.Duration) bool {
	return slices.Contains(v.State.ISR, self) && !caughtUp.IsZero() && now.Sub(caughtUp) <= lagMax
}

// PreferredReadReplica is Kafka's RackAwareReplicaSelector, run by the
// leader (self) of the partition whose view is v for a consumer in rack
// reading from fetchOffset through listener: the replica the consumer
// should read from, or -1 for this leader. The leader stays when the
// consumer names no rack, when the leader is in the consumer's rack, or
// when no replica there qualifies. A follower qualifies, as in Kafka's
// ReplicaManager.findPreferredReadReplica, when it is in the ISR, holds
// the fetch offset (its last fetch was at or past it), and its broker is
// live (not fenced) with an endpoint on the consumer's listener; of
// several, the one furthest ahead, then the one caught up last, then the
// lowest id. Kafka also wants the follower's log to start at or before the
// fetch offset; Skein's leader does not track followers' log starts, and a
// follower asked for an offset below its log answers OFFSET_OUT_OF_RANGE,
// on which both Kafka's consumer and franz-go go back to the leader.
func PreferredReadReplica(im *image.Image, v *View, self int32, rack, listener string, fetchOffset int64) int32 {
	if rack == "" {
		return -1
	}
	if b, ok := im.Brokers[self]; ok && b.Rack == rack {
		return -1
	}
	best := -1
	for i, f := range v.Followers {
		if f.FetchOffset < fetchOffset || !slices.Contains(v.State.ISR, f.Replica) {
			continue
		}
		b, ok := im.Brokers[f.Replica]
		if !ok || b.Fenced || b.Rack != rack {
			continue
		}
		if _, _, ok := b.Endpoint(listener); !ok {
			continue
		}
		if best >= 0 {
			o := v.Followers[best]
			if f.FetchOffset < o.FetchOffset || f.FetchOffset == o.FetchOffset && !f.CaughtUp.After(o.CaughtUp) {
				continue // Followers come by id: a tie keeps the lower
			}
		}
		best = i
	}
	if best < 0 {
		return -1
	}
	return v.Followers[best].Replica
}
