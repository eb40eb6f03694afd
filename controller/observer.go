package controller

import (
	"slices"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skeinlog/skein/actors"
)

// A broker-only node follows the committed metadata log as Kafka's
// brokers follow __cluster_metadata: its controller is an observer that
// asks a voter (the active controller when it knows it, any other
// otherwise) for the entries after the last it applied, every tick, and
// applies them as a voter does. Its commands, registration and
// heartbeats go to the active controller like a voter's. It keeps
// nothing on disk: a restart fetches everything again (from the voter's
// snapshot, then the entries after it).

func init() {
	actors.Register[MetadataFetch](106)
	actors.Register[MetadataEntries](107)
}

// MetadataFetch asks a voter for the committed entries after After.
type MetadataFetch struct {
	Origin actors.Origin `msgpack:"origin"`
	After  uint64        `msgpack:"after"`
}

func (m *MetadataFetch) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// MetadataEntries answers MetadataFetch: the voter's snapshot when the
// entries after After are compacted away, then committed entries, at
// most maxFetchBytes of them, and whom the voter takes for the active
// controller.
type MetadataEntries struct {
	Leader   int32          `msgpack:"leader"`
	Term     uint64         `msgpack:"term"`
	Snapshot []byte         `msgpack:"snap"` // a pb.Snapshot, or nil
	Entries  []FetchedEntry `msgpack:"entries"`
}

func (m *MetadataEntries) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// FetchedEntry is one committed entry: its index and data.
type FetchedEntry struct {
	Index uint64 `msgpack:"i"`
	Data  []byte `msgpack:"d"`
}

// maxFetchBytes bounds the entries of one MetadataEntries, well within a
// remoting frame (actors.MaxRemoteMessage).
const maxFetchBytes = 1 << 20

// fetchTimeout is how long an observer waits for an answer before it
// asks again, of another voter.
const fetchTimeout = time.Second

// serveFetch answers an observer's fetch from this voter's log.
func (c *Controller) serveFetch(m *MetadataFetch) *MetadataEntries {
	ans := &MetadataEntries{Leader: c.status.Leader, Term: c.status.Term}
	from := m.After
	if first, _ := c.m.mem.FirstIndex(); from+1 < first {
		snap, err := c.m.mem.Snapshot()
		if err != nil {
			return ans
		}
		if ans.Snapshot, err = proto.Marshal(snap); err != nil {
			return &MetadataEntries{Leader: c.status.Leader, Term: c.status.Term}
		}
		from = snap.GetMetadata().GetIndex()
	}
	if from >= c.applied {
		return ans
	}
	entries, err := c.m.mem.Entries(from+1, c.applied+1, maxFetchBytes)
	if err != nil {
		return &MetadataEntries{Leader: c.status.Leader, Term: c.status.Term}
	}
	for _, e := range entries {
		ans.Entries = append(ans.Entries, FetchedEntry{Index: e.GetIndex(), Data: e.GetData()})
	}
	return ans
}

// observerLeaderTimeout is how long an observer goes on naming the active
// controller it last heard of without hearing of one again: a voter
// forgets its leader after raft's election timeout, 10 to 20 ticks.
const observerLeaderTimeout = 3 * fetchTimeout

// fetch asks a voter for the entries after the last applied, unless a
// fetch is under way, and forgets the active controller when no voter
// has named one for observerLeaderTimeout.
func (c *Controller) fetch() {
	now := c.cfg.Clock.Now()
	if c.leader != 0 && now.Sub(c.leaderHeard) > observerLeaderTimeout {
		c.leader = 0
		c.cfg.Logger.Info().Int32("leader", -1).Uint64("term", c.term).Dur("unheard", now.Sub(c.leaderHeard)).
			Msg("controller: quorum leader changed: no voter named one")
		c.redispatch()
	}
	if c.fetching && now.Sub(c.fetchSent) < fetchTimeout {
		return
	}
	if c.fetching {
		c.fetchTurn++ // no answer: try another voter
	}
	to := c.cfg.Peers[nodeID(c.leader)]
	if to == nil || c.fetching {
		ids := c.voterIDs()
		if len(ids) == 0 {
			return
		}
		to = c.cfg.Peers[ids[c.fetchTurn%len(ids)]]
	}
	c.fetching, c.fetchSent = true, now
	c.self.Request(to, &MetadataFetch{Origin: actors.Origin{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation}, After: c.applied})
}

// fetched applies what a voter sent, and fetches again at once if it
// sent anything (there may be more).
func (c *Controller) fetched(m *MetadataEntries) {
	if c.m != nil {
		return
	}
	c.fetching = false
	if m.Leader >= 0 {
		c.leaderHeard = c.cfg.Clock.Now()
	}
	if m.Leader >= 0 && (raftID(m.Leader) != c.leader || m.Term != c.term) {
		if raftID(m.Leader) != c.leader {
			c.cfg.Logger.Info().Int32("leader", m.Leader).Uint64("term", m.Term).Msg("controller: quorum leader changed")
		}
		c.leader, c.term = raftID(m.Leader), m.Term
		c.redispatch()
	}
	if m.Snapshot != nil {
		snap := &pb.Snapshot{}
		if err := proto.Unmarshal(m.Snapshot, snap); err == nil && snap.GetMetadata().GetIndex() > c.applied {
			if err := c.restore(snap); err != nil {
				c.cfg.Logger.Error().Err(err).Msg("controller: a fetched metadata snapshot does not apply")
				return
			}
		}
	}
	var answers []answer
	for _, fe := range m.Entries {
		if fe.Index != c.applied+1 {
			continue // already applied, or after a gap: the next fetch fills it
		}
		t := pb.EntryType_EntryNormal
		if a, ok := c.apply(&pb.Entry{Index: &fe.Index, Type: &t, Data: fe.Data}); ok {
			answers = append(answers, a)
		}
	}
	c.appliedEntries(answers)
	if len(m.Entries) > 0 || m.Snapshot != nil {
		c.fetch()
	}
}

// voterIDs returns the voters' node ids, sorted.
func (c *Controller) voterIDs() []int32 {
	var ids []int32
	for id := range c.cfg.Peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
