package partition

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/replica"
)

// TestKIP320CurrentLeaderEpoch: "If the epoch is smaller than the
// leader's, the leader responds with FENCED_LEADER_EPOCH; if larger,
// UNKNOWN_LEADER_EPOCH" (KIP-320); a client that sends -1 is not checked.
// Fetch, ListOffsets and OffsetForLeaderEpoch share the check with
// followers' fetches and other nodes' appends.
func TestKIP320CurrentLeaderEpoch(t *testing.T) {
	for _, tc := range []struct {
		client, ours int32
		want         *kerr.Error
	}{
		{-1, 3, nil},
		{3, 3, nil},
		{2, 3, kerr.FencedLeaderEpoch},
		{4, 3, kerr.UnknownLeaderEpoch},
		{0, 0, nil},
	} {
		if got := CheckLeaderEpoch(tc.client, tc.ours); got != tc.want {
			t.Errorf("client %d, ours %d: %v, want %v", tc.client, tc.ours, got, tc.want)
		}
	}
}

// TestFollowerOfAnEpochTheLeaderNeverHad: a leader that wrote records in
// epoch 0 and lost its leadership before they were replicated comes back
// as a follower of the epoch-1 leader, which wrote other records at those
// offsets. The leader's answer must send it back to offset 0, where epoch
// 1 starts, and the follower must truncate everything it has (TestRolling-
// Restart lost acknowledged records when the leader knew no epoch that
// old and sent no divergence: the follower kept its records below 31 and
// fetched on from there, and then led with them).
func TestFollowerOfAnEpochTheLeaderNeverHad(t *testing.T) {
	open := func(dir string, epoch int32, batches int) *store.Log {
		l, err := store.Open(store.Config{FS: vfs.NewCrashableMem(), Dir: dir, Options: store.DefaultOptions()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		for i := range batches {
			if _, err := l.Append(batch(t, -1, -1, -1, 1+i%3), epoch); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	leader, follower := open("/leader", 1, 40), open("/follower", 0, 15)
	end := follower.LogEndOffset()
	epoch, divergesAt, ok := divergence(leader.View(), FollowerPosition{FetchOffset: end, LastFetchedEpoch: 0, CurrentLeaderEpoch: 1})
	if !ok || epoch != 0 || divergesAt != 0 {
		t.Fatalf("leader's answer to a follower at %d in epoch 0: epoch %d, diverging at %d, %v; want 0, 0, true", end, epoch, divergesAt, ok)
	}
	f := replica.NewFollower(1, 1, end, 0, 0)
	act := f.Answered(replica.Answer{DivergingEpoch: epoch, DivergingEnd: divergesAt, HighWatermark: leader.LogEndOffset()}, follower.EndOffsetForEpoch)
	if act.Truncate != 0 {
		t.Fatalf("follower told to truncate to %d (start at %d), want 0", act.Truncate, act.StartAt)
	}
}
