package replica

import "github.com/twmb/franz-go/pkg/kerr"

// Follower is a follower replica's fetch position, as a deterministic
// state machine: what its next fetch from the leader asks, and what the
// leader's answers make it do (append, truncate, wait for newer
// metadata). The actor that drives it does the IO.
//
// The rules are Kafka's (KIP-101, KIP-320): a fetch carries the offset
// after the follower's log and the epoch of its last batch, and the
// follower's leader epoch; a leader whose log diverges from there answers
// with the diverging epoch and where it ends on the leader, and the
// follower truncates to that end (or its own, if shorter) before fetching
// on. A follower never counts a high watermark beyond its own log.
type Follower struct {
	leader, epoch int32 // the leader and leader epoch followed
	end           int64 // the local log's end
	lastEpoch     int32 // the leader epoch of the local log's last batch, -1 if none
	hw            int64
	// waiting is set when only newer metadata can help (this follower's
	// epoch is stale, or the leader no longer leads).
	waiting bool
}

// NewFollower starts following leader in epoch, with the local log
// ending at end, its last batch of lastEpoch, and high watermark hw.
func NewFollower(leader, epoch int32, end int64, lastEpoch int32, hw int64) *Follower {
	return &Follower{leader: leader, epoch: epoch, end: end, lastEpoch: lastEpoch, hw: min(hw, end)}
}

// FetchPosition is what a follower's fetch asks for one partition.
type FetchPosition struct {
	Leader             int32
	FetchOffset        int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
}

// Fetch returns the next fetch's position; ok is false while the
// follower waits for newer metadata.
func (f *Follower) Fetch() (FetchPosition, bool) {
	return FetchPosition{Leader: f.leader, FetchOffset: f.end, LastFetchedEpoch: f.lastEpoch, CurrentLeaderEpoch: f.epoch}, !f.waiting
}

// HighWatermark returns the follower's high watermark.
func (f *Follower) HighWatermark() int64 { return f.hw }

// Answer is the leader's answer to a fetch, for this partition.
type Answer struct {
	Err *kerr.Error
	// DivergingEnd, when not -1, says the follower's log diverges from
	// the leader's after DivergingEnd, the end of DivergingEpoch on the
	// leader (-1 when the leader has no epoch to name: its log is empty,
	// or starts past every epoch the follower could share).
	DivergingEpoch int32
	DivergingEnd   int64
	HighWatermark  int64
	// LogStartOffset is the leader's log start offset.
	LogStartOffset int64
}

// Action is what an answer asks the follower's actor to do.
type Action struct {
	// Truncate, when not -1, is the offset to truncate the local log to,
	// before anything else; the actor then calls Truncated.
	Truncate int64
	// StartAt, when not -1, is the offset to empty the local log and
	// start it at: the fetch offset is below the leader's log start (it
	// deleted what this follower lacks). The actor then calls Truncated.
	StartAt int64
}

// EpochEnd is the local log's answer to "where does epoch end": for the
// largest epoch at most the one asked, that epoch and the offset after
// its last record; (-1, -1) when the log knows no epoch that old.
type EpochEnd func(epoch int32) (int32, int64)

var nothing = Action{Truncate: -1, StartAt: -1}

// Answered takes the leader's answer to the last fetch, with the local
// log's epoch history. Records in it are appended by the actor, which
// then calls Appended.
//
// A diverging epoch truncates as Kafka's fetcher does
// (AbstractFetcherThread.getOffsetTruncationState): to the smaller of
// the leader's and the local end of that epoch when both logs have it;
// when the local log's largest epoch at most it is an older one, to that
// one's local end, and the next fetch, from there with that older epoch,
// learns whether the logs agree up to it.
func (f *Follower) Answered(a Answer, local EpochEnd) Action {
	switch a.Err {
	case nil:
	case kerr.FencedLeaderEpoch:
		// This follower's epoch is stale: the next fetch waits for the
		// image (Become).
		f.waiting = true
		return nothing
	case kerr.OffsetOutOfRange:
		if a.LogStartOffset > f.end {
			return Action{Truncate: -1, StartAt: a.LogStartOffset}
		}
		return nothing
	default:
		// UNKNOWN_LEADER_EPOCH (the leader has not seen our epoch yet),
		// NOT_LEADER_OR_FOLLOWER (its metadata, or ours, is behind: the
		// image that settles it may be the one we have, so waiting for a
		// newer one could wait for ever), storage errors, timeouts: fetch
		// again as we are, after the fetcher's pause.
		return nothing
	}
	if a.DivergingEnd >= 0 {
		to := min(a.DivergingEnd, f.end)
		if e, end := local(a.DivergingEpoch); a.DivergingEpoch >= 0 && e >= 0 {
			to = min(to, end)
			if e != a.DivergingEpoch {
				to = min(end, f.end)
			}
		}
		return Action{Truncate: to, StartAt: -1}
	}
	f.hw = max(f.hw, min(a.HighWatermark, f.end))
	return nothing
}

// Appended records that the local log now ends at end, its last batch of
// lastEpoch.
func (f *Follower) Appended(end int64, lastEpoch int32) {
	f.end, f.lastEpoch = end, lastEpoch
}

// Truncated records a truncation: the local log ends at end, its last
// batch of lastEpoch; the high watermark is never beyond it.
func (f *Follower) Truncated(end int64, lastEpoch int32) {
	f.end, f.lastEpoch = end, lastEpoch
	f.hw = min(f.hw, end)
}

// Become follows a newer leader epoch from the metadata; an older one is
// ignored.
func (f *Follower) Become(leader, epoch int32) {
	if epoch < f.epoch {
		return
	}
	f.leader, f.epoch, f.waiting = leader, epoch, false
}
