package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Transactional offset commits (KIP-98, KIP-447).
//
// TxnOffsetCommit writes a group's offsets as part of a producer's
// transaction: as a transactional batch of that producer in the group's
// __consumer_offsets partition, after which they are pending (a group keeps
// them per producer id) until the transaction's marker reaches that
// partition. A commit marker makes them the group's committed offsets,
// unless an offset of the same partition was committed after them (a later
// record wins, as in Kafka); an abort drops them. OffsetFetch with
// RequireStable answers UNSTABLE_OFFSET_COMMIT for a partition with a
// pending offset, or one whose record is still being written, so that a
// consumer taking over never starts from an offset that may still move. Restore replays the same from the log: offsets of
// transactional batches are pending until the marker read after them.

// TxnCompleted tells the groups supervisor that a transaction's marker is
// written in one of this node's __consumer_offsets partitions (of Of): the
// group actors of that partition apply or drop the producer's pending
// offsets. Sent by the node when a marker is written; no reply.
type TxnCompleted struct {
	Partition, Of int32
	ProducerID    int64
	Commit        bool
	// Offset is the marker's offset in the partition.
	Offset int64
}

// CheckTxnCommit decides whether a member may commit offsets in a
// transaction, as Kafka's validateOffsetCommit for transactional commits:
// without a member id and generation (a producer that does not use the
// group's membership) always; a member must be the group's in its
// generation (or member epoch, for a consumer-protocol group: a stale one is
// ILLEGAL_GENERATION here, since TxnOffsetCommit has no STALE_MEMBER_EPOCH),
// so that a zombie's commit is fenced (KIP-447). A rebalance in progress does
// not refuse it.
func (g *Group) CheckTxnCommit(generation int32, memberID string, instanceID *string) *kerr.Error {
	return g.checkCommit(generation, memberID, instanceID, true)
}

// WritingTxn records that a transactional offset of the partition is being
// written (verified with the transaction's coordinator, appended,
// replicated): it is unstable already, as Kafka's prepareTxnOffsetCommit
// makes it pending before the append. Otherwise an OffsetFetch with
// RequireStable meanwhile would answer the offset the transaction is about
// to move, and a consumer taking the partition over would process again
// what the transaction commits (KIP-447). TxnWritten ends it, whatever
// the write's outcome.
func (g *Group) WritingTxn(topic string, partition int32) {
	if g.writingTxn == nil {
		g.writingTxn = map[topicPartition]int{}
	}
	g.writingTxn[topicPartition{topic, partition}]++
}

// TxnWritten ends a WritingTxn: the record is durable (AddPendingTxn
// follows) or its write failed.
func (g *Group) TxnWritten(topic string, partition int32) {
	tp := topicPartition{topic, partition}
	if n := g.writingTxn[tp]; n > 1 {
		g.writingTxn[tp] = n - 1
	} else {
		delete(g.writingTxn, tp)
	}
}

// AddPendingTxn records an offset a producer's transaction committed, once
// its record is durable; it waits for the transaction's marker.
func (g *Group) AddPendingTxn(producerID int64, topic string, partition int32, o Offset) {
	if g.pendingTxn == nil {
		g.pendingTxn = map[int64]map[topicPartition]Offset{}
	}
	p := g.pendingTxn[producerID]
	if p == nil {
		p = map[topicPartition]Offset{}
		g.pendingTxn[producerID] = p
	}
	p[topicPartition{topic, partition}] = o
}

// CompleteTxn applies (commit) or drops (abort) a producer's pending
// offsets: its marker is in the log. A pending offset older in the log than
// the one committed since does not replace it.
func (g *Group) CompleteTxn(producerID int64, commit bool) {
	p := g.pendingTxn[producerID]
	delete(g.pendingTxn, producerID)
	if !commit {
		return
	}
	for tp, o := range p {
		if cur, ok := g.offsets[tp]; ok && cur.RecordOffset > o.RecordOffset {
			continue
		}
		g.offsets[tp] = o
		if g.state == Empty {
			g.scheduleExpiry(o.CommitTimestamp)
		}
	}
}

// Unstable reports whether a transaction not over yet committed an offset
// of the partition, or is committing one (OffsetFetch's
// UNSTABLE_OFFSET_COMMIT).
func (g *Group) Unstable(topic string, partition int32) bool {
	if g.writingTxn[topicPartition{topic, partition}] > 0 {
		return true
	}
	for _, p := range g.pendingTxn {
		if _, ok := p[topicPartition{topic, partition}]; ok {
			return true
		}
	}
	return false
}
