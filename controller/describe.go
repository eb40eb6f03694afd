package controller

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/skeinlog/skein/actors"
)

func init() {
	actors.Register[DescribeQuorum](104)
	actors.Register[QuorumDescription](105)
}

// DescribeQuorum asks the active controller for the quorum's state
// (Kafka's DescribeQuorum): any node's transport sends it there, over
// remoting when that is another node, and gets a QuorumDescription. A
// controller that is not active answers NOT_LEADER_OR_FOLLOWER.
type DescribeQuorum struct{}

func (m *DescribeQuorum) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// QuorumDescription is the active controller's view of the quorum.
// Offsets are raft indexes: the end offset of a voter's log is the index
// of its last entry the leader knows it has.
type QuorumDescription struct {
	Err           *kerr.Error  `msgpack:"err"`
	Leader        int32        `msgpack:"leader"`
	Term          uint64       `msgpack:"term"`
	HighWatermark uint64       `msgpack:"hw"`
	Voters        []VoterState `msgpack:"voters"`
	// Observers are the broker-only nodes that fetched from this leader.
	Observers []VoterState `msgpack:"observers"`
}

func (m *QuorumDescription) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// VoterState is one voter as the active controller sees it. The
// timestamps are Unix milliseconds, -1 when unknown.
type VoterState struct {
	ID             int32  `msgpack:"id"`
	LogEnd         uint64 `msgpack:"end"`
	LastFetchMs    int64  `msgpack:"fetch"`
	LastCaughtUpMs int64  `msgpack:"caught"`
}

// describe answers DescribeQuorum.
func (c *Controller) describe() *QuorumDescription {
	self := raftID(c.cfg.NodeID)
	if c.leader != self {
		return &QuorumDescription{Err: kerr.NotLeaderForPartition, Leader: c.status.Leader, Term: c.status.Term}
	}
	st := c.m.rn.Status()
	d := &QuorumDescription{Leader: c.cfg.NodeID, Term: st.GetTerm(), HighWatermark: st.GetCommit()}
	now := c.cfg.Clock.Now().UnixMilli()
	for id, pr := range st.Progress {
		v := VoterState{ID: nodeID(id), LogEnd: pr.Match, LastFetchMs: -1, LastCaughtUpMs: -1}
		if id == self {
			v.LastFetchMs, v.LastCaughtUpMs = now, now
		} else {
			if t, ok := c.peerHeard[nodeID(id)]; ok {
				v.LastFetchMs = t.UnixMilli()
			}
			if t, ok := c.peerCaughtUp[nodeID(id)]; ok {
				v.LastCaughtUpMs = t.UnixMilli()
			}
		}
		d.Voters = append(d.Voters, v)
	}
	slices.SortFunc(d.Voters, func(a, b VoterState) int { return int(a.ID - b.ID) })
	for _, id := range slices.Sorted(maps.Keys(c.observers)) {
		o := c.observers[id]
		d.Observers = append(d.Observers, VoterState{ID: id, LogEnd: o.after, LastFetchMs: o.at.UnixMilli(), LastCaughtUpMs: o.caughtUp})
	}
	return d
}

// observed is what a leader knows of an observer from its fetches.
type observed struct {
	after    uint64    // the last entry it had
	at       time.Time // its last fetch
	caughtUp int64     // Unix ms of its last fetch that had every applied entry, -1 if none
}

// sawFetch notes an observer's fetch at the leader.
func (c *Controller) sawFetch(m *MetadataFetch) {
	if c.leader != raftID(c.cfg.NodeID) {
		return
	}
	o := c.observers[m.Origin.Node]
	if o == nil {
		o = &observed{caughtUp: -1}
		c.observers[m.Origin.Node] = o
	}
	o.after, o.at = m.After, c.cfg.Clock.Now()
	if m.After >= c.applied {
		o.caughtUp = o.at.UnixMilli()
	}
}

// trackPeers notes, at the leader, when each voter was last caught up
// with the commit index.
func (c *Controller) trackPeers() {
	if c.m == nil || c.leader != raftID(c.cfg.NodeID) {
		return
	}
	now := c.cfg.Clock.Now()
	commit := c.status.Commit
	c.m.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pr.Match >= commit {
			c.peerCaughtUp[nodeID(id)] = now
		}
	})
}

// heardFrom notes a raft message from a voter.
func (c *Controller) heardFrom(m *pb.Message, at time.Time) {
	c.peerHeard[nodeID(m.GetFrom())] = at
}
