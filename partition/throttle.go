package partition

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinlog/skein/configs"
)

// Replication throttling (Kafka's KIP-73): a node's ReplicationQuotas bound
// the bytes its leaders serve to throttled followers
// (leader.replication.throttled.rate) and the bytes its followers fetch for
// throttled replicas (follower.replication.throttled.rate). Which replicas
// are throttled is each topic's config (leader.replication.throttled.replicas
// and follower.replication.throttled.replicas, in the partition's View), and
// a replica in sync is never held back, as in Kafka:
//
//   - Leader side (ReadForFollower): a partition whose list names
//     partition:<this node>, fetched by a follower outside the ISR while
//     the leader quota is exceeded, is answered without records (its high
//     watermark and log start as usual), so the follower asks again; the
//     records served for listed partitions are recorded against the quota
//     when the answer goes (RecordLeader).
//   - Follower side (the fetcher): a partition whose list names
//     partition:<this node>, behind the leader's last high watermark, is
//     left out of the next fetch while the follower quota is exceeded; the
//     records it receives are recorded.
//
// Unthrottled partitions are never delayed: the quota decides per
// partition, never for a whole fetch.
//
// Each Quota is a token bucket rather than Kafka's rate sampled over
// windows: it holds at most one second of the rate, refills at the rate,
// and goes into debt by what a fetch served past it. It is exceeded while
// in debt: the fetch that finds it not exceeded takes what it reads (at
// most replica.fetch.max.bytes per partition), and later ones wait until
// the debt is paid. Over time, bytes served stay within rate × elapsed +
// one second's burst + one fetch.

// ReplicationQuotas are a node's two replication quotas. The metadata
// actor sets their rates from the node's dynamic configs at each image;
// transport's replica fetches (leader) and the fetchers (follower) use
// them. Safe for concurrent use.
type ReplicationQuotas struct {
	Leader, Follower Quota
}

// Quotas returns the node's replication quotas.
func (r *Registry) Quotas() *ReplicationQuotas { return &r.quotas }

// SetRates sets both rates from the node's configuration in force.
func (q *ReplicationQuotas) SetRates(t configs.ReplicationThrottle, now time.Time) {
	q.Leader.SetRate(t.LeaderReplicationThrottledRate, now)
	q.Follower.SetRate(t.FollowerReplicationThrottledRate, now)
}

// Quota is one replication rate in bytes per second, measured with a
// token bucket (see above). The zero Quota is unlimited. Safe for
// concurrent use.
type Quota struct {
	mu      sync.Mutex
	limited bool
	rate    float64 // bytes per second, when limited
	tokens  float64 // bytes that may still pass; negative: a debt
	last    time.Time

	// Bytes counts the record bytes of throttled replicas recorded
	// against the quota (skein_replication_throttled_bytes_total).
	Bytes atomic.Uint64
	// Held counts the partitions held back because the quota was
	// exceeded: answered without records (leader), or left out of a
	// fetch (follower).
	Held atomic.Uint64
}

// SetRate sets the rate: configs.Unlimited for none. A quota that becomes
// limited starts with a full bucket; one whose rate changes keeps its
// tokens (or its debt), within the new second's worth.
func (q *Quota) SetRate(rate int64, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if rate >= configs.Unlimited || rate < 0 {
		q.limited = false
		return
	}
	r := float64(rate)
	if !q.limited {
		q.limited, q.tokens, q.last = true, r, now
	} else if q.rate != r {
		q.refill(now)
		q.tokens = min(q.tokens, r)
	}
	q.rate = r
}

// refill adds the tokens earned since last, up to a second's worth.
func (q *Quota) refill(now time.Time) {
	if d := now.Sub(q.last); d > 0 {
		q.tokens = min(q.tokens+d.Seconds()*q.rate, q.rate)
		q.last = now
	}
}

// Exceeded reports whether the quota is in debt at now: what is throttled
// must wait.
func (q *Quota) Exceeded(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.limited {
		return false
	}
	q.refill(now)
	return q.tokens < 0
}

// Record takes n bytes of throttled replicas from the quota, into debt if
// need be.
func (q *Quota) Record(n int64, now time.Time) {
	if n <= 0 {
		return
	}
	q.Bytes.Add(uint64(n))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.limited {
		q.refill(now)
		q.tokens -= float64(n)
	}
}

// hold counts a partition held back and reports true, for the callers'
// brevity.
func (q *Quota) hold() bool {
	q.Held.Add(1)
	return true
}
