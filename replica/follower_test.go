package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func ok(hw int64) Answer { return Answer{DivergingEpoch: -1, HighWatermark: hw} }

// A follower fetches from its end with its last epoch, appends, and takes
// the leader's high watermark no further than its own log.
func TestFollowerFetchesOn(t *testing.T) {
	f := NewFollower(2, 5, 10, 4, 8)
	if p, ok := f.Fetch(); !ok || p != (FetchPosition{Leader: 2, FetchOffset: 10, LastFetchedEpoch: 4, CurrentLeaderEpoch: 5}) {
		t.Fatalf("fetch %+v %v", p, ok)
	}
	if a := f.Answered(ok(30)); a.Truncate != -1 {
		t.Fatalf("truncate %d on a plain answer", a.Truncate)
	}
	if hw := f.HighWatermark(); hw != 10 {
		t.Fatalf("hw %d beyond the follower's end 10", hw)
	}
	f.Appended(25, 5)
	f.Answered(ok(30))
	if hw := f.HighWatermark(); hw != 25 {
		t.Fatalf("hw %d, want 25", hw)
	}
	if p, _ := f.Fetch(); p.FetchOffset != 25 || p.LastFetchedEpoch != 5 {
		t.Fatalf("next fetch %+v", p)
	}
}

// KIP-320: a diverging epoch truncates the follower to the end of that
// epoch on the leader, or to its own end if shorter, before it fetches on;
// the high watermark never stays beyond the log.
func TestFollowerTruncatesOnDivergence(t *testing.T) {
	f := NewFollower(2, 6, 40, 5, 30)
	if a := f.Answered(Answer{DivergingEpoch: 4, DivergingEnd: 28, HighWatermark: 28}); a.Truncate != 28 {
		t.Fatalf("truncate to %d, want 28", a.Truncate)
	}
	f.Truncated(28, 4)
	if hw := f.HighWatermark(); hw != 28 {
		t.Fatalf("hw %d after truncating to 28", hw)
	}
	if p, _ := f.Fetch(); p.FetchOffset != 28 || p.LastFetchedEpoch != 4 {
		t.Fatalf("fetch after the truncation %+v", p)
	}
	short := NewFollower(2, 6, 12, 3, 10)
	if a := short.Answered(Answer{DivergingEpoch: 3, DivergingEnd: 20, HighWatermark: 20}); a.Truncate != 12 {
		t.Fatalf("truncate to %d, want its own end 12", a.Truncate)
	}
}

// A stale epoch or a moved leader stops the fetching until the metadata
// names a newer epoch; an older one changes nothing; an unknown epoch at
// the leader is fetched again.
func TestFollowerWaitsForNewerMetadata(t *testing.T) {
	f := NewFollower(2, 5, 10, 5, 10)
	f.Answered(Answer{Err: kerr.UnknownLeaderEpoch, DivergingEpoch: -1})
	if _, ok := f.Fetch(); !ok {
		t.Fatal("UNKNOWN_LEADER_EPOCH stopped the fetching")
	}
	f.Answered(Answer{Err: kerr.FencedLeaderEpoch, DivergingEpoch: -1})
	if _, ok := f.Fetch(); ok {
		t.Fatal("FENCED_LEADER_EPOCH: still fetching with a stale epoch")
	}
	f.Become(3, 4)
	if _, ok := f.Fetch(); ok {
		t.Fatal("an older epoch resumed the fetching")
	}
	f.Become(3, 6)
	if p, ok := f.Fetch(); !ok || p.Leader != 3 || p.CurrentLeaderEpoch != 6 {
		t.Fatalf("after epoch 6: %+v %v", p, ok)
	}
}
