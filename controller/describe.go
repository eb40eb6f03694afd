package controller

import (
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
	return d
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
