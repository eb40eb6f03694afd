package share

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition"
)

// String is the key's string form as Kafka's SharePartitionKey writes it
// (asCoordinatorKey, "%s:%s:%d"): group, topic id as Kafka's
// Uuid.toString (URL-safe base64 without padding), partition.
func (k Key) String() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// ParseKey reads a key in its string form (FindCoordinator's key type 2),
// refusing what Kafka's SharePartitionKey.validate refuses: not three
// ':'-separated parts, an empty group, a topic id or partition that does
// not parse. The group is trimmed, as Kafka's getInstance does.
func ParseKey(s string) (Key, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" {
		return Key{}, false
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(id) != 16 {
		return Key{}, false
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil {
		return Key{}, false
	}
	k := Key{Group: strings.TrimSpace(parts[0]), Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, true
}

// PartitionFor returns the __share_group_state partition holding a key's
// state, of partitions: Kafka's abs(key.asCoordinatorKey().hashCode()) %
// share.coordinator.state.topic.num.partitions. The node leading it is the
// key's share coordinator.
func PartitionFor(k Key, partitions int32) int32 { return partition.ForKey(k.String(), partitions) }

// Kafka's messages for the share coordinator's refusals
// (ShareCoordinatorShard's exceptions, Errors' default messages).
const (
	msgNegativePartition    = "The partition id cannot be a negative number."
	msgWriteUninitialized   = "Write operation on uninitialized share partition not allowed."
	msgReadUninitialized    = "Read operation on uninitialized share partition not allowed."
	msgFencedLeaderEpoch    = "The leader epoch in the request is older than the epoch on the broker."
	msgFencedStateEpoch     = "The coordinator rejected the request because the state epoch did not match."
	msgUnknownTopicOrPartit = "This server does not host this topic-partition."
)

// MsgReadUninitialized is the message of the INVALID_REQUEST Kafka answers
// a ReadShareGroupState for a share-partition without state (transport's
// 84 answers it where ReadState answers Found false).
const MsgReadUninitialized = msgReadUninitialized

// shard is the state of one __share_group_state partition: Kafka's
// ShareCoordinatorShard, a deterministic state machine. Requests go in,
// records to append and answers come out; the records are applied at
// once (replay), as Kafka's coordinator runtime applies a write's records
// when it appends them, and the caller answers only once they are
// durable. A failed append makes the caller rebuild the shard from the
// log.
//
// Not safe for concurrent use: one partition actor owns it.
type shard struct {
	// snapshotEvery is share.coordinator.snapshot.update.records.per.snapshot:
	// a write after that many updates of a key writes a snapshot instead.
	snapshotEvery int
	// known says whether the image has a topic id's partition
	// (UNKNOWN_TOPIC_OR_PARTITION otherwise); nil knows every one.
	known func(id [16]byte, p int32) bool
	keys  map[Key]*entry
	// end is the offset after the last record replayed from the log or
	// placed by the caller: with no key left, everything below it is
	// redundant.
	end int64
}

// entry is one share-partition's state: the merged state (the last
// snapshot and the updates after it, Kafka's shareStateMap), the highest
// epochs seen (leaderEpochMap, stateEpochMap), the updates since the last
// snapshot (snapshotUpdateCount), and for pruning the offset of its last
// snapshot.
type entry struct {
	state       Value
	leaderEpoch int32
	stateEpoch  int32
	updates     int
	// snapshotAt is the offset of the last snapshot, -1 while the record
	// is not yet appended.
	snapshotAt int64
	// lastWrite is the time of the last record (ms), for the cold
	// snapshots; coldDone is set by a cold snapshot and cleared by any
	// other record, so that an idle key is snapshotted once.
	lastWrite int64
	coldDone  bool
}

func newShard(snapshotEvery int, known func([16]byte, int32) bool) *shard {
	return &shard{snapshotEvery: snapshotEvery, known: known, keys: map[Key]*entry{}}
}

// replay applies one record of the partition (offset -1: just generated,
// not appended yet), as Kafka's ShareCoordinatorShard.replay does:
//   - a snapshot replaces the key's state, and raises the leader and
//     state epochs seen to its own;
//   - an update is merged into the state (its StartOffset and
//     DeliveryCompleteCount when not -1, its batches over the state's
//     overlapping ranges, ranges below the start offset dropped) and raises
//     the leader epoch seen; an update of a key without a snapshot stands
//     for the state;
//   - a tombstone forgets the key.
func (s *shard) replay(offset int64, r Record, ts int64) {
	if offset >= 0 {
		s.end = max(s.end, offset+1)
	}
	k := r.Key
	if r.Value == nil {
		delete(s.keys, k)
		return
	}
	v := r.Value
	e := s.keys[k]
	if e == nil {
		e = &entry{leaderEpoch: v.LeaderEpoch, stateEpoch: v.StateEpoch, snapshotAt: -1}
		s.keys[k] = e
		if !r.Snapshot {
			// Kafka counts a key's first update 0 (snapshotUpdateCount).
			e.state = *v
			e.state.Batches = combine(nil, v.Batches, v.StartOffset)
			e.lastWrite = ts
			return
		}
	}
	e.leaderEpoch = max(e.leaderEpoch, v.LeaderEpoch)
	e.coldDone = false
	if r.Snapshot {
		e.stateEpoch = max(e.stateEpoch, v.StateEpoch)
		e.state = *v
		e.state.Batches = slices.Clone(v.Batches)
		// NB: Kafka resets the count only when it had reached
		// snapshotEvery; every snapshot holds the whole state, so Skein
		// counts from each.
		e.updates = 0
		e.snapshotAt = offset
		e.lastWrite = max(ts, v.WriteTimestamp)
		return
	}
	e.merge(v)
	e.updates++
	e.lastWrite = max(e.lastWrite, ts)
}

// merge applies an update to the state (Kafka's ShareCoordinatorShard.merge).
func (e *entry) merge(u *Value) {
	st := &e.state
	if u.StartOffset != -1 {
		st.StartOffset = u.StartOffset
	}
	if u.LeaderEpoch != -1 {
		st.LeaderEpoch = u.LeaderEpoch
	}
	if u.DeliveryCompleteCount != -1 {
		st.DeliveryCompleteCount = u.DeliveryCompleteCount
	}
	st.Batches = combine(st.Batches, u.Batches, st.StartOffset)
}

// combine returns old with news laid over it (Kafka's
// PersisterStateBatchCombiner): a new batch replaces the offsets it
// covers, later news over earlier ones; offsets below start are dropped
// (start -1: none), batches with First > Last ignored; the result is
// sorted, and adjacent batches of the same state and count are joined.
// Neither input is modified.
func combine(old, news []StateBatch, start int64) []StateBatch {
	out := slices.Clone(old)
	for _, nb := range news {
		if nb.First > nb.Last {
			continue
		}
		kept := out[:0:0]
		for _, b := range out {
			if b.Last < nb.First || b.First > nb.Last {
				kept = append(kept, b)
				continue
			}
			if b.First < nb.First {
				left := b
				left.Last = nb.First - 1
				kept = append(kept, left)
			}
			if b.Last > nb.Last {
				right := b
				right.First = nb.Last + 1
				kept = append(kept, right)
			}
		}
		out = append(kept, nb)
	}
	slices.SortFunc(out, func(a, b StateBatch) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	joined := out[:0]
	for _, b := range out {
		if start >= 0 {
			if b.Last < start {
				continue
			}
			b.First = max(b.First, start)
		}
		if n := len(joined); n > 0 {
			p := &joined[n-1]
			if p.Last+1 == b.First && p.State == b.State && p.Count == b.Count {
				p.Last = b.Last
				continue
			}
		}
		joined = append(joined, b)
	}
	if len(joined) == 0 {
		return nil
	}
	return joined
}

// result is an answer with a Kafka error code.
func result(err *kerr.Error, msg string) *StateResult {
	if msg == "" && err != nil {
		msg = err.Message
	}
	return &StateResult{Code: err.Code, Message: msg, StartOffset: Uninitialized, LeaderEpoch: -1, DeliveryCompleteCount: -1}
}

// check refuses a request on a negative partition or on a topic partition
// the image does not have, as Kafka's shard does.
func (s *shard) check(k Key) *StateResult {
	if k.Partition < 0 {
		return result(kerr.InvalidRequest, msgNegativePartition)
	}
	if s.known != nil && !s.known(k.TopicID, k.Partition) {
		return result(kerr.UnknownTopicOrPartition, msgUnknownTopicOrPartit)
	}
	return nil
}

// found answers with a key's state.
func (e *entry) found(batches bool) *StateResult {
	r := &StateResult{Found: true, StateEpoch: e.state.StateEpoch, LeaderEpoch: e.state.LeaderEpoch,
		StartOffset: e.state.StartOffset, DeliveryCompleteCount: e.state.DeliveryCompleteCount}
	if batches {
		r.Batches = slices.Clone(e.state.Batches)
	}
	return r
}

// initialize handles InitializeState (Kafka's initializeState,
// ShareGroupOffset.fromRequest): a snapshot of the new state epoch with
// the start offset and no batches, in leader epoch 0 (Kafka's
// UNINITIALIZED_EPOCH: the share-partition's leader records its own
// when it reads the state). A known start offset has no record after it
// delivered yet (DeliveryCompleteCount 0, which makes the partition's lag
// known at once); an uninitialized one (-1) has no count either (-1). An
// older state epoch than the key's is FENCED_STATE_EPOCH.
func (s *shard) initialize(m *InitializeState, now int64) (*StateResult, []Record) {
	if r := s.check(m.Key); r != nil {
		return r, nil
	}
	e := s.keys[m.Key]
	delivered := int32(0)
	if m.StartOffset == Uninitialized {
		delivered = -1
	}
	v := &Value{StateEpoch: m.StateEpoch, LeaderEpoch: 0, StartOffset: m.StartOffset, DeliveryCompleteCount: delivered,
		CreateTimestamp: now, WriteTimestamp: now}
	if e != nil {
		if e.stateEpoch > m.StateEpoch {
			return result(kerr.FencedStateEpoch, msgFencedStateEpoch), nil
		}
		v.SnapshotEpoch = e.state.SnapshotEpoch + 1
	}
	recs := []Record{{Key: m.Key, Snapshot: true, Value: v}}
	s.apply(recs, now)
	return s.keys[m.Key].found(true), recs
}

// read handles ReadState (Kafka's readStateAndMaybeUpdateLeaderEpoch): the
// merged state, Found false for a key without any. A leader epoch older
// than the key's is FENCED_LEADER_EPOCH; a newer one is recorded (so
// that the older leader's later writes are fenced) with a snapshot that
// carries it. -1 reads without recording.
//
// NB: Kafka records a new leader epoch with an update record (a snapshot
// only when the updates are due one); Skein writes a snapshot, since a
// leader change is rare and a snapshot there lets everything before it be
// pruned sooner. The records differ, the state read back does not.
func (s *shard) read(m *ReadState, now int64) (*StateResult, []Record) {
	if r := s.check(m.Key); r != nil {
		return r, nil
	}
	e := s.keys[m.Key]
	if e == nil {
		return &StateResult{StartOffset: Uninitialized, LeaderEpoch: -1, DeliveryCompleteCount: -1}, nil
	}
	if m.LeaderEpoch != -1 && e.leaderEpoch > m.LeaderEpoch {
		return result(kerr.FencedLeaderEpoch, msgFencedLeaderEpoch), nil
	}
	res := e.found(true)
	if m.LeaderEpoch == -1 || e.leaderEpoch == m.LeaderEpoch {
		return res, nil
	}
	recs := []Record{{Key: m.Key, Snapshot: true, Value: e.snapshot(m.LeaderEpoch, now)}}
	s.apply(recs, now)
	res.LeaderEpoch = m.LeaderEpoch
	return res, recs
}

// snapshot returns the key's state as a new snapshot in leader epoch
// leaderEpoch (-1: the state's).
func (e *entry) snapshot(leaderEpoch int32, now int64) *Value {
	v := e.state
	v.SnapshotEpoch++
	if leaderEpoch != -1 {
		v.LeaderEpoch = leaderEpoch
	}
	v.WriteTimestamp = now
	v.Batches = slices.Clone(e.state.Batches)
	return &v
}

// write handles WriteState (Kafka's writeState): an update record with the
// request's batches, or a snapshot of the merged state once the key has
// had snapshotEvery updates since its last one. Refused: a key without
// state (INVALID_REQUEST: Kafka 4.2 writes only initialized state), an
// older leader epoch (FENCED_LEADER_EPOCH) or state epoch
// (FENCED_STATE_EPOCH) than the key's, -1 checking neither.
func (s *shard) write(m *WriteState, now int64) (*StateResult, []Record) {
	if m.Key.Partition < 0 {
		return result(kerr.InvalidRequest, msgNegativePartition), nil
	}
	e := s.keys[m.Key]
	if e == nil {
		return result(kerr.InvalidRequest, msgWriteUninitialized), nil
	}
	if m.LeaderEpoch != -1 && e.leaderEpoch > m.LeaderEpoch {
		return result(kerr.FencedLeaderEpoch, msgFencedLeaderEpoch), nil
	}
	if m.StateEpoch != -1 && e.stateEpoch > m.StateEpoch {
		return result(kerr.FencedStateEpoch, msgFencedStateEpoch), nil
	}
	if r := s.check(m.Key); r != nil {
		return r, nil
	}
	var rec Record
	if e.updates >= s.snapshotEvery {
		v := e.snapshot(m.LeaderEpoch, now)
		if m.StateEpoch != -1 {
			v.StateEpoch = m.StateEpoch
		}
		if m.StartOffset != -1 {
			v.StartOffset = m.StartOffset
		}
		if m.DeliveryCompleteCount != -1 {
			v.DeliveryCompleteCount = m.DeliveryCompleteCount
		}
		v.Batches = combine(e.state.Batches, m.Batches, v.StartOffset)
		rec = Record{Key: m.Key, Snapshot: true, Value: v}
	} else {
		rec = Record{Key: m.Key, Value: &Value{SnapshotEpoch: e.state.SnapshotEpoch, LeaderEpoch: m.LeaderEpoch,
			StartOffset: m.StartOffset, DeliveryCompleteCount: m.DeliveryCompleteCount,
			Batches: combine(nil, m.Batches, m.StartOffset)}}
	}
	recs := []Record{rec}
	s.apply(recs, now)
	return s.keys[m.Key].found(false), recs
}

// remove handles DeleteState (Kafka's deleteState): a tombstone for a key
// with state, nothing for one without.
func (s *shard) remove(m *DeleteState) (*StateResult, []Record) {
	if r := s.check(m.Key); r != nil {
		return r, nil
	}
	if s.keys[m.Key] == nil {
		return &StateResult{StartOffset: Uninitialized, LeaderEpoch: -1, DeliveryCompleteCount: -1}, nil
	}
	recs := []Record{{Key: m.Key, Snapshot: true}}
	s.apply(recs, 0)
	return &StateResult{StartOffset: Uninitialized, LeaderEpoch: -1, DeliveryCompleteCount: -1}, recs
}

// summary handles ReadSummary (Kafka's readStateSummary): the state's
// start offset and epochs, without its batches; no record, no fencing.
func (s *shard) summary(m *ReadSummary) *StateResult {
	if m.Key.Partition < 0 {
		return result(kerr.InvalidRequest, msgNegativePartition)
	}
	e := s.keys[m.Key]
	if e == nil {
		return &StateResult{StartOffset: Uninitialized, LeaderEpoch: -1, DeliveryCompleteCount: -1}
	}
	return e.found(false)
}

// apply replays records just generated.
func (s *shard) apply(recs []Record, now int64) {
	for _, r := range recs {
		s.replay(-1, r, now)
	}
}

// placed tells the shard where its generated records landed: records[i]
// at base+i.
func (s *shard) placed(recs []Record, base int64) {
	for i, r := range recs {
		off := base + int64(i)
		s.end = max(s.end, off+1)
		if e := s.keys[r.Key]; e != nil && r.Snapshot && r.Value != nil && e.snapshotAt < 0 {
			e.snapshotAt = off
		}
	}
}

// coldSnapshots returns snapshots for the keys not written for idle ms
// (Kafka's snapshotColdPartitions), each once until it is written again:
// the log below a key's last snapshot is redundant, so a key idle since an
// early snapshot or updates would otherwise hold the log back forever.
func (s *shard) coldSnapshots(now, idle int64) []Record {
	var recs []Record
	for k, e := range s.keys {
		if e.coldDone || now-e.lastWrite < idle {
			continue
		}
		recs = append(recs, Record{Key: k, Snapshot: true, Value: e.snapshot(-1, now)})
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	s.apply(recs, now)
	for _, r := range recs {
		s.keys[r.Key].coldDone = true
	}
	return recs
}

// redundant returns the offset below which no record is needed any more
// (Kafka's ShareCoordinatorOffsetsManager.lastRedundantOffset): the
// smallest offset of a key's last snapshot, or the end with no key; -1
// while a key's snapshot is not appended yet, or a key has no snapshot
// (its state is updates only, read from the log's start).
func (s *shard) redundant() int64 {
	low := s.end
	for _, e := range s.keys {
		if e.snapshotAt < 0 {
			return -1
		}
		low = min(low, e.snapshotAt)
	}
	return low
}

// gone returns tombstones for the keys whose topic the image no longer
// has (Kafka's maybeCleanupShareState on deleted topics).
func (s *shard) gone(topicExists func(id [16]byte) bool) []Record {
	var recs []Record
	for k := range s.keys {
		if !topicExists(k.TopicID) {
			recs = append(recs, Record{Key: k, Snapshot: true})
		}
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	s.apply(recs, 0)
	return recs
}
