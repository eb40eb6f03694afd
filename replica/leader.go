package replica

import (
	"maps"
	"slices"
	"time"
)

// Leader is a partition leader's account of its replicas, as a
// deterministic state machine: offsets, times and committed ISR changes
// go in; the high watermark and the ISR changes to ask the controller for
// come out. It does no IO and keeps no clock.
//
// The rules are Kafka's (ReplicaManager, Partition):
//
//   - a follower's fetch at offset o says it holds every offset below o;
//   - a follower is caught up as of a fetch if that fetch reached the
//     leader's end, or as of its previous fetch if this one reached the
//     end the leader had then;
//   - an ISR member not caught up for the lag time is to be removed, a
//     follower outside the ISR whose fetch reaches the high watermark is to
//     be added back;
//   - the high watermark is the smallest end among the leader and the ISR
//     members, the ISR being the committed one plus the members asked to be
//     added (KIP-497's maximal ISR: a member is counted from the moment it
//     is proposed, so that the high watermark is never one its addition
//     would have to lower); it never goes back.
type Leader struct {
	self    int32
	lagMax  time.Duration
	isr     []int32 // committed, sorted
	pending []int32 // proposed and not yet committed, sorted; nil if none
	end     int64   // the leader's own end (durable under fsync)
	hw      int64
	follow  map[int32]*follower
	// followers are follow's keys, sorted, for Lag.
	followers []int32
	// retryAt is when a change may be asked for again after a refusal.
	retryAt time.Time
}

// retryAfter spaces the ISR changes asked for after a refusal, so a
// controller that keeps refusing (a follower fenced while it still
// fetches) is not asked at every fetch.
const retryAfter = time.Second

type follower struct {
	offset int64 // the last fetch's offset: it holds everything below
	// leaderEndAtFetch is the leader's end when the last fetch came.
	leaderEndAtFetch int64
	lastFetch        time.Time
	caughtUp         time.Time
}

// NewLeader starts the account of a leader (self) of replicas with the
// committed ISR, its log ending at end with high watermark hw, at now.
// Every follower counts as caught up now: a new leader gives each one a
// lag time to show it is.
func NewLeader(self int32, replicas, isr []int32, end, hw int64, lagMax time.Duration, now time.Time) *Leader {
	l := &Leader{self: self, lagMax: lagMax, isr: sorted(isr), end: end, hw: hw, follow: map[int32]*follower{}}
	l.SetReplicas(replicas, now)
	return l
}

// HighWatermark returns the high watermark.
func (l *Leader) HighWatermark() int64 { return l.hw }

// ISR returns the committed ISR.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// ISRSize returns the size of the committed ISR, which
// min.insync.replicas is checked against.
func (l *Leader) ISRSize() int { return len(l.isr) }

// Lag calls fn for each follower, by id: the offset of its last fetch
// (what it holds; -1 before its first), how far that was behind the
// leader's end, and when it was last caught up.
func (l *Leader) Lag(fn func(replica int32, offset, behind int64, caughtUp time.Time)) {
	for _, r := range l.followers {
		f := l.follow[r]
		fn(r, f.offset, max(l.end-f.offset, 0), f.caughtUp)
	}
}

// SetReplicas takes the partition's replicas (at the start, or after a
// reassignment changed them), at now: a new follower is accounted from now
// on, one gone is forgotten.
func (l *Leader) SetReplicas(replicas []int32, now time.Time) {
	for r := range l.follow {
		if !slices.Contains(replicas, r) {
			delete(l.follow, r)
		}
	}
	for _, r := range replicas {
		if r != l.self && l.follow[r] == nil {
			l.follow[r] = &follower{offset: -1, caughtUp: now}
		}
	}
	l.followers = slices.Sorted(maps.Keys(l.follow))
	l.advance()
}

// Appended records that the leader's own end moved to end.
func (l *Leader) Appended(end int64) {
	l.end = end
	l.advance()
}

// Fetched records a follower's fetch at offset, at now. It returns the
// ISR to ask the controller for, if the fetch earns the follower its
// place back and no change is in flight; nil otherwise.
func (l *Leader) Fetched(replica int32, offset int64, now time.Time) []int32 {
	f := l.follow[replica]
	if f == nil {
		return nil // not a replica of this partition
	}
	switch {
	case offset >= l.end:
		f.caughtUp = now
	case offset >= f.leaderEndAtFetch && !f.lastFetch.IsZero():
		f.caughtUp = f.lastFetch
	}
	f.offset, f.leaderEndAtFetch, f.lastFetch = offset, l.end, now
	l.advance()
	if l.pending == nil && !now.Before(l.retryAt) && !slices.Contains(l.isr, replica) && offset >= l.hw {
		return l.propose(append(slices.Clone(l.isr), replica))
	}
	return nil
}

// Tick checks the ISR at now: it returns the ISR to ask the controller
// for when members have not caught up for the lag time and no change is
// in flight; nil otherwise.
func (l *Leader) Tick(now time.Time) []int32 {
	if l.pending != nil || now.Before(l.retryAt) {
		return nil
	}
	keep := []int32{}
	for _, r := range l.isr {
		if f := l.follow[r]; r == l.self || f == nil || now.Sub(f.caughtUp) <= l.lagMax {
			keep = append(keep, r)
		}
	}
	if len(keep) == len(l.isr) {
		return nil
	}
	return l.propose(keep)
}

// Committed takes the ISR the controller committed: the change asked for
// or another. Either way nothing is in flight any more.
func (l *Leader) Committed(isr []int32) {
	l.isr, l.pending = sorted(isr), nil
	l.advance()
}

// Refused says the controller refused the change in flight (a stale
// partition epoch, a fenced follower) or did not answer: a fetch or tick
// a second after now may ask again.
func (l *Leader) Refused(now time.Time) {
	l.pending, l.retryAt = nil, now.Add(retryAfter)
}

func (l *Leader) propose(isr []int32) []int32 {
	l.pending = sorted(isr)
	l.advance()
	return slices.Clone(l.pending)
}

// advance raises the high watermark to the smallest end among the leader
// and the maximal ISR.
func (l *Leader) advance() {
	hw := l.end
	for _, r := range l.maximal() {
		if f := l.follow[r]; f != nil {
			hw = min(hw, f.offset)
		}
	}
	l.hw = max(l.hw, hw)
}

// maximal is the committed ISR and the members a change in flight adds.
func (l *Leader) maximal() []int32 {
	out := slices.Clone(l.isr)
	for _, r := range l.pending {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
