package controller

import (
	"math"
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
// heartbeats go to the active controller like a voter's.
//
// It keeps what it fetched in its metadata log directory, in the voters'
// format (logDisk): the snapshot it last pulled or took, and the entries
// after it, each synced before it is applied. A restart loads them, so
// that the node starts from its last known image before any voter
// answers, and fetches on from the last entry it has, as Kafka's brokers
// keep __cluster_metadata on disk. It takes a snapshot of its own image
// every SnapshotBytes of entries, which drops the entries before it.

func init() {
	actors.Register[MetadataFetch](106)
	actors.Register[MetadataEntries](107)
}

// MetadataFetch asks a voter for the committed entries after After.
// An observer pulling something in pieces (a snapshot of SnapIndex, or
// with SnapIndex 0 the entry After+1) says how many bytes of it it has.
type MetadataFetch struct {
	Origin    actors.Origin `msgpack:"origin"`
	After     uint64        `msgpack:"after"`
	SnapIndex uint64        `msgpack:"snap,omitempty"`
	Have      int           `msgpack:"have,omitempty"`
}

func (m *MetadataFetch) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// MetadataEntries answers MetadataFetch: the voter's snapshot when the
// entries after After are compacted away, or else committed entries, at
// most maxFetchBytes of them, and whom the voter takes for the active
// controller. A snapshot or an entry over chunkBytes comes in pieces, one
// an answer: Size is its whole size and Offset where this piece starts;
// the observer asks for the next piece (chunks.go).
type MetadataEntries struct {
	Leader    int32          `msgpack:"leader"`
	Term      uint64         `msgpack:"term"`
	Snapshot  []byte         `msgpack:"snap"` // a pb.Snapshot or a piece of it, or nil
	SnapIndex uint64         `msgpack:"snapidx,omitempty"`
	Entries   []FetchedEntry `msgpack:"entries"`
	Offset    int            `msgpack:"off,omitempty"`
	Size      int            `msgpack:"size,omitempty"`
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
	if first, _ := c.m.mem.FirstIndex(); from+1 < first || m.SnapIndex != 0 {
		b, idx, err := c.snapshotBytes(m.SnapIndex)
		if err != nil {
			return ans
		}
		if idx > from {
			have := 0
			if m.SnapIndex == idx && m.Have < len(b) {
				have = m.Have
			}
			ans.Snapshot, ans.SnapIndex = piece(b, have, &ans.Offset, &ans.Size), idx
			return ans // entries after it in the next answers
		}
	}
	if from >= c.applied {
		return ans
	}
	entries, err := c.m.mem.Entries(from+1, c.applied+1, maxFetchBytes)
	if err != nil || len(entries) == 0 {
		return ans
	}
	if e := entries[0]; len(e.GetData()) > chunkBytes {
		have := 0
		if m.SnapIndex == 0 && m.Have < len(e.GetData()) {
			have = m.Have
		}
		ans.Entries = []FetchedEntry{{Index: e.GetIndex(), Data: piece(e.GetData(), have, &ans.Offset, &ans.Size)}}
		return ans
	}
	for _, e := range entries {
		if len(e.GetData()) > chunkBytes {
			break // in pieces, in answers of its own
		}
		ans.Entries = append(ans.Entries, FetchedEntry{Index: e.GetIndex(), Data: e.GetData()})
	}
	return ans
}

// piece returns b whole if it fits a chunk, or else its chunk from have,
// setting offset and size.
func piece(b []byte, have int, offset, size *int) []byte {
	if len(b) <= chunkBytes {
		return b
	}
	*offset, *size = have, len(b)
	return b[have:min(len(b), have+chunkBytes)]
}

// snapshotBytes returns the encoding of this voter's snapshot and its
// index: the one an observer is pulling (pulling, the index it names) as
// long as this voter keeps its encoding, so that a newer snapshot does not
// start its pull over; else the newest.
func (c *Controller) snapshotBytes(pulling uint64) ([]byte, uint64, error) {
	if pulling != 0 && pulling == c.served.index {
		return c.served.bytes, c.served.index, nil
	}
	snap, err := c.m.mem.Snapshot()
	if err != nil {
		return nil, 0, err
	}
	idx := snap.GetMetadata().GetIndex()
	if c.served.index != idx || c.served.bytes == nil {
		b, err := proto.Marshal(snap)
		if err != nil {
			return nil, 0, err
		}
		c.served.index, c.served.bytes = idx, b
	}
	return c.served.bytes, idx, nil
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
	c.self.Request(to, &MetadataFetch{Origin: actors.Origin{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation},
		After: c.applied, SnapIndex: c.pulling.snapIndex, Have: len(c.pulling.data)})
}

// fetched applies what a voter sent, and fetches again at once if it
// sent anything (there may be more).
func (c *Controller) fetched(m *MetadataEntries) {
	if c.m != nil {
		return
	}
	snapshot, entries, dup := m.Snapshot, m.Entries, false
	if m.Size > 0 {
		if snapshot, entries, dup = c.pull(m); dup {
			return // the fetch for the next piece is under way
		}
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
	if m.Size > 0 && snapshot == nil && entries == nil {
		c.fetch() // the next piece
		return
	}
	if snapshot != nil {
		snap := &pb.Snapshot{}
		if err := proto.Unmarshal(snapshot, snap); err == nil && snap.GetMetadata().GetIndex() > c.applied {
			if err := c.restore(snap); err != nil {
				c.cfg.Logger.Error().Err(err).Msg("controller: a fetched metadata snapshot does not apply")
				return
			}
			c.keepSnapshot(snap)
		}
	}
	var answers []answer
	var kept []*pb.Entry
	for _, fe := range entries {
		if fe.Index != c.applied+1+uint64(len(kept)) {
			continue // already applied, or after a gap: the next fetch fills it
		}
		t := pb.EntryType_EntryNormal
		kept = append(kept, &pb.Entry{Index: proto.Uint64(fe.Index), Type: &t, Data: fe.Data})
	}
	// On disk before applied: what the node publishes, a restart finds.
	c.keep(kept)
	for _, e := range kept {
		if a, ok := c.apply(e); ok {
			answers = append(answers, a)
		}
	}
	if c.unsnapped >= c.cfg.SnapshotBytes {
		c.observerSnapshot()
	}
	c.appliedEntries(answers)
	if len(entries) > 0 || snapshot != nil {
		c.fetch()
	}
}

// pulling is a snapshot (snapIndex) or an entry (snapIndex 0, the entry
// after the last applied) an observer receives in pieces.
type pulling struct {
	snapIndex uint64
	data      []byte
}

// pull adds a piece to what is being pulled, and returns the snapshot or
// the entry once it is whole. A piece already received (the answer to a
// fetch sent again) is a duplicate: dup, and nothing is asked for it. A
// piece that is not the next (the voter took a newer snapshot) starts
// over if it is a first piece, and otherwise the pull starts over.
func (c *Controller) pull(m *MetadataEntries) (snapshot []byte, entries []FetchedEntry, dup bool) {
	same := c.pulling.data != nil && m.SnapIndex == c.pulling.snapIndex
	switch {
	case same && m.Offset < len(c.pulling.data):
		return nil, nil, true
	case same && m.Offset == len(c.pulling.data):
	case m.Offset == 0:
		c.pulling = pulling{snapIndex: m.SnapIndex, data: make([]byte, 0, m.Size)}
	default:
		c.pulling = pulling{}
		return nil, nil, false
	}
	var p []byte
	if m.SnapIndex != 0 {
		p = m.Snapshot
	} else if len(m.Entries) == 1 && m.Entries[0].Index == c.applied+1 {
		p = m.Entries[0].Data
	} else {
		c.pulling = pulling{}
		return nil, nil, false
	}
	c.pulling.data = append(c.pulling.data, p...)
	if len(c.pulling.data) < m.Size {
		return nil, nil, false
	}
	whole := c.pulling.data
	c.pulling = pulling{}
	if m.SnapIndex != 0 {
		return whole, nil, false
	}
	return nil, []FetchedEntry{{Index: m.Entries[0].Index, Data: whole}}, false
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

// loadObserved opens an observer's metadata log and applies what it
// holds: its snapshot, then its entries. Entries after the commit index
// of a hard state a voter wrote (the node was a voter before) may never
// have committed: they are left for the fetches to replace.
func (c *Controller) loadObserved() error {
	disk, err := openLogDisk(c.cfg.FS, c.cfg.Dir, c.cfg.Clock)
	if err != nil {
		return err
	}
	c.disk = disk
	hs, snap, entries, err := disk.Load()
	if err != nil {
		return err
	}
	if snap.GetMetadata().GetIndex() > 0 {
		if err := c.restore(snap); err != nil {
			return err
		}
	}
	limit := uint64(math.MaxUint64)
	if hs.GetTerm() > 0 {
		limit = hs.GetCommit()
	}
	for _, e := range entries {
		if e.GetIndex() > limit || e.GetIndex() != c.applied+1 {
			break
		}
		c.apply(e)
	}
	if c.applied > 0 {
		c.cfg.Logger.Info().Uint64("applied", c.applied).Msg("controller: observer loaded its metadata log; fetching on from there")
	}
	c.appliedEntries(nil)
	return nil
}

// keep writes fetched entries to the observer's log and syncs them. A
// write that fails closes the log: the node goes on from memory, and a
// restart loads what was kept before and fetches the rest.
func (c *Controller) keep(entries []*pb.Entry) {
	if c.disk == nil || len(entries) == 0 {
		return
	}
	if err := c.disk.Save(nil, entries); err != nil {
		c.diskFailed(err)
	}
}

// keepSnapshot replaces the observer's log with a fetched snapshot.
func (c *Controller) keepSnapshot(snap *pb.Snapshot) {
	if c.disk == nil {
		return
	}
	if err := c.disk.SaveSnapshot(snap, true); err != nil {
		c.diskFailed(err)
	}
}

// observerSnapshot takes a snapshot of the observer's image, which drops
// the entries before it from its log.
func (c *Controller) observerSnapshot() {
	if c.disk == nil {
		return
	}
	data, err := encodeSnapshot(c.committed, c.answered)
	if err == nil {
		err = c.disk.SaveSnapshot(&pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
			ConfState: &pb.ConfState{}, Index: proto.Uint64(c.applied), Term: proto.Uint64(0)}}, false)
	}
	if err != nil {
		c.diskFailed(err)
		return
	}
	c.unsnapped = 0
}

func (c *Controller) diskFailed(err error) {
	c.cfg.Logger.Error().Err(err).Str("dir", c.cfg.Dir).
		Msg("controller: writing the observer's metadata log failed; going on without it (a restart fetches what it lacks)")
	c.close()
}
