package partition

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
