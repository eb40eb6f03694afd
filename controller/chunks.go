package controller

import "github.com/skeinlog/skein/actors"

// A raft message or an observer's snapshot can outgrow a remoting frame
// (actors.MaxRemoteMessage, 2 MiB): a snapshot of 100,000 partitions'
// metadata is megabytes. They travel in chunks of chunkBytes, and a frame
// over the limit is never sent (actors refuses it).
//
// A raft message in parts is a run of RaftMessages with the same Seq,
// Part 0 to Parts-1, in order on the one connection remoting keeps to the
// peer. The receiver assembles one message per sender at a time: a part
// out of its place (one was lost, or the sender restarted) drops the
// assembly, and raft sends the snapshot again when the follower refuses
// its next append. An observer pulls a snapshot chunk by chunk
// (observer.go).

// chunkBytes is the largest piece of a raft message or snapshot one
// frame carries: half a frame, for the framing around it.
const chunkBytes = 1 << 20

// raftMessages returns the RaftMessages that carry the encoded raft
// message b: one, or its parts.
func (c *Controller) raftMessages(b []byte) []*RaftMessage {
	origin, cluster := actors.Origin{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation}, c.committed.ClusterID
	if len(b) <= chunkBytes {
		return []*RaftMessage{{Origin: origin, Cluster: cluster, Data: b}}
	}
	c.chunkSeq++
	parts := (len(b) + chunkBytes - 1) / chunkBytes
	out := make([]*RaftMessage, 0, parts)
	for i := range parts {
		out = append(out, &RaftMessage{Origin: origin, Cluster: cluster, Seq: c.chunkSeq, Part: i, Parts: parts,
			Data: b[i*chunkBytes : min(len(b), (i+1)*chunkBytes)]})
	}
	return out
}

// assembly is a raft message in parts being received from one sender.
type assembly struct {
	incarnation, seq uint64
	next             int // the part expected
	data             []byte
}

// assemble takes a RaftMessage and returns the encoded raft message it
// completes, if it does.
func (c *Controller) assemble(m *RaftMessage) ([]byte, bool) {
	if m.Parts <= 1 {
		return m.Data, true
	}
	from := m.Origin.Node
	a := c.assembling[from]
	if m.Part == 0 {
		a = &assembly{incarnation: m.Origin.Incarnation, seq: m.Seq, data: make([]byte, 0, m.Parts*chunkBytes)}
		c.assembling[from] = a
	}
	if a == nil || a.incarnation != m.Origin.Incarnation || a.seq != m.Seq || a.next != m.Part {
		delete(c.assembling, from) // a part was lost: raft sends again
		return nil, false
	}
	a.data = append(a.data, m.Data...)
	a.next++
	if a.next < m.Parts {
		return nil, false
	}
	delete(c.assembling, from)
	return a.data, true
}
