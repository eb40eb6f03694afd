package partition

import (
	"testing"
	"time"

	"github.com/skeinlog/skein/configs"
)

// TestQuotaKIP73 drives a replication quota's token bucket with a clock of
// its own: a second's burst, debt past it, refill at the rate.
func TestQuotaKIP73(t *testing.T) {
	var q Quota
	t0 := time.Unix(1000, 0)
	q.Record(1<<30, t0)
	if q.Exceeded(t0) {
		t.Fatal("the zero Quota is unlimited")
	}
	if q.Bytes.Load() != 1<<30 {
		t.Errorf("Bytes = %d", q.Bytes.Load())
	}
	q.SetRate(1000, t0) // starts with a full bucket: one second's worth
	if q.Exceeded(t0) {
		t.Fatal("exceeded with a full bucket")
	}
	q.Record(1000, t0)
	if q.Exceeded(t0) {
		t.Fatal("exceeded at exactly the burst")
	}
	q.Record(5000, t0) // a fetch past it goes into debt
	for _, tc := range []struct {
		after    time.Duration
		exceeded bool
	}{{0, true}, {4 * time.Second, true}, {5 * time.Second, false}, {time.Hour, false}} {
		if got := q.Exceeded(t0.Add(tc.after)); got != tc.exceeded {
			t.Errorf("after %v: exceeded %v, want %v", tc.after, got, tc.exceeded)
		}
	}
	// The bucket holds one second's worth however long it waited.
	t1 := t0.Add(time.Hour)
	q.Record(1001, t1)
	if !q.Exceeded(t1) {
		t.Error("a bucket idle for an hour held more than a second's worth")
	}
	// A new rate keeps the debt, and pays it at the new rate.
	q.SetRate(1<<20, t1)
	if !q.Exceeded(t1) || q.Exceeded(t1.Add(time.Millisecond)) {
		t.Error("the debt of one byte is not paid within a millisecond at 1 MiB/s")
	}
	// 0 lets the first fetch through and nothing after it.
	var zero Quota
	zero.SetRate(0, t0)
	if zero.Exceeded(t0) {
		t.Error("rate 0 exceeded before anything passed")
	}
	zero.Record(1, t0)
	if !zero.Exceeded(t0.Add(24 * time.Hour)) {
		t.Error("rate 0 refilled")
	}
	// Unlimited again: nothing is held.
	zero.SetRate(configs.Unlimited, t0)
	if zero.Exceeded(t0) {
		t.Error("exceeded once unlimited")
	}
	var qs ReplicationQuotas
	qs.SetRates(configs.ReplicationThrottle{LeaderReplicationThrottledRate: 1, FollowerReplicationThrottledRate: configs.Unlimited}, t0)
	qs.Leader.Record(2, t0)
	qs.Follower.Record(2, t0)
	if !qs.Leader.Exceeded(t0) || qs.Follower.Exceeded(t0) {
		t.Error("SetRates")
	}
}

// TestFollowerReadHeldIsNotReady: a partition held back by the leader
// quota does not end the follower's long poll for the sake of a high
// watermark it could not catch up to anyway.
func TestFollowerReadHeldIsNotReady(t *testing.T) {
	r := FollowerRead{HighWatermark: 100, DivergingEpoch: -1, DivergingEnd: -1, Throttled: true, Held: true}
	if r.Ready(FollowerPosition{HighWatermark: 10}) {
		t.Error("a held partition is ready")
	}
	r.Held = false
	if !r.Ready(FollowerPosition{HighWatermark: 10}) {
		t.Error("a newer high watermark is not ready")
	}
}
