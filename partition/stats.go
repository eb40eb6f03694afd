package partition

import (
	"sync/atomic"
	"time"
)

// Stats counts a node's replication events for /metrics: ISR changes its
// leaders made, and the record bytes its followers fetched and its leaders
// served to other nodes' followers.
//
// Concurrency: safe for concurrent use.
type Stats struct {
	ISRShrinks, ISRExpands atomic.Uint64
	BytesIn, BytesOut      atomic.Uint64
}

// FollowerLag is a leader's account of one follower: the offset of its
// last fetch (the end of what it holds, -1 before its first), how many
// offsets that was behind the leader's end, and when it was last caught
// up.
type FollowerLag struct {
	Replica     int32
	FetchOffset int64
	Offsets     int64
	CaughtUp    time.Time
}

// countISRChange counts a committed ISR change of a partition this node
// leads.
func (s *Stats) countISRChange(before, after []int32) {
	if s == nil {
		return
	}
	switch {
	case len(after) < len(before):
		s.ISRShrinks.Add(1)
	case len(after) > len(before):
		s.ISRExpands.Add(1)
	}
}
