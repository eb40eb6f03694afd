package partition

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/replica"
)

// Handle is how the rest of the node reaches a hosted partition: its actor,
// for appends, and its published View, for reads that need no message.
// Handles are created by the partitions supervisor and outlive restarts of
// the actor (a restart keeps the PID).
//
// Concurrency: every method is safe for concurrent use.
type Handle struct {
	Topic     string
	Partition int32
	TopicID   image.TopicID
	PID       *actor.PID

	view atomic.Pointer[View]
	// deleted is set (Registry.Deleting, and the supervisor's Unhost)
	// before the actor of a partition whose data goes is stopped: the log
	// is closed without a sync or a checkpoint (store.Log.Abandon).
	deleted atomic.Bool
	// caughtUp is, while the replica follows, when an answer of its
	// leader last found its log up to the leader's high watermark, in
	// Unix nanoseconds by the node's clock; 0 before the first. It is no
	// part of the View: the fetcher sets it for the answers with nothing
	// new for the partition, which it does not hand to the actor, so
	// that a follower of an idle partition stays in sync without a
	// message or a new view per answer.
	caughtUp atomic.Int64

	mu        sync.Mutex
	waiters   map[chan<- struct{}]struct{}
	readyOnce sync.Once
	ready     chan struct{} // closed at the first view
}

func newHandle(topic string, p int32, id image.TopicID) *Handle {
	return &Handle{Topic: topic, Partition: p, TopicID: id, ready: make(chan struct{})}
}

// Ready is closed once the partition has loaded its log and published its
// first view.
func (h *Handle) Ready() <-chan struct{} { return h.ready }

// View is what readers see of a partition: the log's published view (its
// offsets and segments) and the topic config in force. A View never changes.
type View struct {
	// Log is nil when the partition failed before its log ever opened:
	// there is nothing to read (KAFKA_STORAGE_ERROR).
	Log *store.View
	// Failure is set while the partition is in the failed state: appends
	// are refused, and Log (if any) is the last view from before.
	Failure *Failure
	Config  configs.Topic
	// LeaderEpoch is the epoch this replica leads in, -1 when it does not.
	LeaderEpoch int32
	// State is the partition's state in force at this replica.
	State State
	// Follow is where this replica's next fetch from its leader starts;
	// nil unless it follows a leader and may fetch.
	Follow *replica.FetchPosition
	// Followers is the leader's account of its followers, as of this
	// view; nil unless this replica leads others.
	Followers []FollowerLag
}

// CheckLeaderEpoch compares the leader epoch a client or follower knows
// with the one a replica leads in (KIP-320): FENCED_LEADER_EPOCH when the
// caller's is older, UNKNOWN_LEADER_EPOCH when it is newer (this replica
// has not heard yet); -1 means the caller did not say.
func CheckLeaderEpoch(theirs, ours int32) *kerr.Error {
	switch {
	case theirs < 0 || theirs == ours:
		return nil
	case theirs < ours:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

// CaughtUp returns when, as a follower, the replica last heard from its
// leader with its log up to the leader's high watermark (by the node's
// clock); zero if it has not since it began following.
func (h *Handle) CaughtUp() time.Time {
	if n := h.caughtUp.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// setCaughtUp sets what CaughtUp returns; the zero time for never.
func (h *Handle) setCaughtUp(t time.Time) {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	h.caughtUp.Store(n)
}

// View returns the newest view, or nil while the partition is loading.
func (h *Handle) View() *View { return h.view.Load() }

// Watch arranges for ch to get a value (without blocking: give it a buffer
// of one) at the next publication of a view, and returns a function that
// cancels the watch. Fetch long-polls with it.
func (h *Handle) Watch(ch chan<- struct{}) (cancel func()) {
	h.mu.Lock()
	if h.waiters == nil {
		h.waiters = map[chan<- struct{}]struct{}{}
	}
	h.waiters[ch] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.waiters, ch)
		h.mu.Unlock()
	}
}

// publish stores a new view and wakes the watchers.
func (h *Handle) publish(v *View) {
	h.view.Store(v)
	h.readyOnce.Do(func() { close(h.ready) })
	h.mu.Lock()
	waiters := h.waiters
	h.waiters = nil
	h.mu.Unlock()
	for ch := range waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
