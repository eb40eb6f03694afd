package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition/store"
)

// Idempotent and transactional producers (KIP-98), as Kafka 4.x's
// ProducerStateManager and ProducerAppendInfo implement them.
//
// producers is a deterministic state machine: no actors, no IO, no clock of
// its own (callers pass the time). The partition actor drives it:
//
//  1. check each idempotent batch (ProducerID >= 0) before it is appended:
//     a duplicate is answered with the offsets it got the first time and not
//     appended again; an error (OUT_OF_ORDER_SEQUENCE_NUMBER,
//     INVALID_PRODUCER_EPOCH) is definite: nothing is appended;
//  2. update with the batch's header once the log has assigned its offsets;
//  3. on start, restore the newest snapshot and replay the headers of the
//     batches after it (update again, as Kafka's log loading does);
//  4. expire producers idle for producer.id.expiration.ms on its tick, and
//     encode a snapshot at segment rolls, periodically and at a clean stop.
//
// For each producer id it keeps the current epoch, the first offset of its
// transaction in progress here, the coordinator epoch of its last marker,
// and the metadata of the producer's last five batches (Kafka's NUM_BATCHES_TO_RETAIN, which is
// also the most in-flight requests an idempotent producer may have), so a
// retry of any request still in flight is recognised.
//
// The rules of check, in Kafka's order (UnifiedLog.analyzeAndValidateProducerState,
// then ProducerAppendInfo.checkProducerEpoch and checkSequence):
//
//   - Duplicate (KIP-98): same epoch as the producer's current one and the
//     same first and last sequence as one of its last five batches: answer
//     that batch's offsets.
//   - Fencing (KIP-98): an epoch below the current one is
//     INVALID_PRODUCER_EPOCH. Kafka answered PRODUCER_FENCED before 2.7;
//     since 2.7 (KIP-588) Produce answers INVALID_PRODUCER_EPOCH, which a
//     client can recover from, and Kafka 4.x does so for every version.
//   - New epoch (KIP-360): a newer epoch than the current one must start at
//     sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER.
//   - Unknown producer (KIP-360, KAFKA-7190): a producer id the partition
//     has no epoch for, because it never wrote here, because its state
//     expired, or because retention or DeleteRecords removed its batches
//     before any snapshot kept them, is accepted at any sequence. Before
//     Kafka 2.5 this was UNKNOWN_PRODUCER_ID; Kafka 4.x never returns that
//     code from Produce, and neither do we.
//   - Same epoch: the first sequence must follow the last one (last + 1, or
//     0 after math.MaxInt32: sequences wrap), else
//     OUT_OF_ORDER_SEQUENCE_NUMBER. That covers gaps and retries of batches
//     older than the last five.
//   - A batch that is not transactional from a producer whose transaction
//     is in progress here is INVALID_TXN_STATE (Kafka's appendDataBatch).
//
// Transactions: a producer's first transactional batch here starts its
// transaction at that batch's offset; its marker (endTxn) ends it. The
// last stable offset is the smallest first offset of a transaction not
// known to be over, which includes those whose marker is above the high
// watermark (Kafka's unreplicated transactions: a marker a new leader may
// not have does not end a transaction for readers). A marker from an older
// producer epoch is INVALID_PRODUCER_EPOCH, from an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED (Kafka's appendEndTxnMarker); under
// transaction version 2 a marker carries the epoch its coordinator bumped
// to, so the producer moves to it and a late batch of the finished
// transaction is refused.
//
// Concurrency: owned by the partition actor; not safe for concurrent use.
type producers struct {
	entries map[int64]*producerEntry
	// ongoing maps the producers with a transaction in progress here to
	// its first offset (producerEntry.TxnFirstOffset), for the last stable
	// offset.
	ongoing map[int64]int64
	// unreplicated are the transactions whose marker is at or above the
	// high watermark, by marker offset: not over yet for readers.
	unreplicated []completedTxn
	// expirationMs is producer.id.expiration.ms.
	expirationMs int64
}

// completedTxn is a transaction whose marker is in the log.
type completedTxn struct {
	producerID        int64
	first, markerOffs int64
}

// maxBatchesRetained is how many batches of each producer are remembered
// for duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
const maxBatchesRetained = 5

// noProducerEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const noProducerEpoch = -1

// producerEntry is what a partition knows of one producer id.
type producerEntry struct {
	Epoch int16
	// Batches are its last batches in the current epoch, oldest first, at
	// most maxBatchesRetained.
	Batches []batchMetadata
	// LastTimestamp is the broker's time (ms) of its last append, for
	// expiry. NB: Kafka uses the batch's max timestamp, which is the
	// producer's clock under CreateTime: a producer sending back-dated or
	// skewed timestamps would expire early or never. Idleness is measured
	// by the broker's clock here.
	LastTimestamp int64
	// TxnFirstOffset is the first offset of the producer's transaction in
	// progress in this partition, -1 when none.
	TxnFirstOffset int64
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// marker, -1 before any.
	CoordinatorEpoch int32
}

func newProducerEntry() *producerEntry {
	return &producerEntry{Epoch: noProducerEpoch, TxnFirstOffset: -1, CoordinatorEpoch: -1}
}

// batchMetadata describes one appended batch of a producer (Kafka's
// BatchMetadata).
type batchMetadata struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	// Timestamp is the batch's max timestamp as stored (the append time on
	// LogAppendTime topics), which a duplicate's answer repeats.
	Timestamp int64
}

func newProducers(expirationMs int64) *producers {
	return &producers{entries: map[int64]*producerEntry{}, ongoing: map[int64]int64{}, expirationMs: expirationMs}
}

// lastSeq returns the last sequence of the producer's newest batch, -1 if
// it has none in its current epoch (Kafka's NO_SEQUENCE).
func (e *producerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// setEpoch moves the producer to epoch; a change forgets its batches, whose
// sequences belonged to the old epoch (Kafka's maybeUpdateProducerEpoch).
func (e *producerEntry) setEpoch(epoch int16) {
	if e.Epoch != epoch {
		e.Epoch = epoch
		e.Batches = e.Batches[:0]
	}
}

// incrementSequence returns seq advanced by inc, wrapping past
// math.MaxInt32 to 0 (Kafka's DefaultRecordBatch.incrementSequence).
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// lastSequence is the sequence of a batch's last record.
func lastSequence(h *store.Header) int32 {
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// inSequence reports whether next may follow last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkResult is check's verdict on a batch: append it (the zero value), or
// answer with Duplicate's offsets, or refuse it with Err.
type checkResult struct {
	Duplicate *batchMetadata
	Err       *kerr.Error
	Message   string
}

// check decides what to do with an idempotent batch (h.ProducerID >= 0)
// before it is appended; see the rules above. A coordinator's batch
// (Append.Coordinator) is checked for its epoch and transaction only: a
// coordinator writes no sequence numbers. It changes nothing.
func (s *producers) check(h *store.Header, coordinator bool) checkResult {
	e := s.entries[h.ProducerID]
	current := int16(noProducerEpoch)
	if e != nil {
		current = e.Epoch
		if h.ProducerEpoch == e.Epoch && !coordinator {
			first, last := h.BaseSequence, lastSequence(h)
			for i := range e.Batches {
				if b := &e.Batches[i]; b.FirstSeq == first && b.LastSeq == last {
					dup := *b
					return checkResult{Duplicate: &dup}
				}
			}
		}
	}
	if h.ProducerEpoch < current {
		return checkResult{Err: kerr.InvalidProducerEpoch, Message: fmt.Sprintf(
			"Epoch of producer %d is %d, which is smaller than the last seen epoch %d", h.ProducerID, h.ProducerEpoch, current)}
	}
	if coordinator {
		return s.checkTxn(e, h)
	}
	if h.ProducerEpoch != current {
		if h.BaseSequence != 0 && current != noProducerEpoch {
			return checkResult{Err: kerr.OutOfOrderSequenceNumber, Message: fmt.Sprintf(
				"Invalid sequence number for new epoch of producer %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				h.ProducerID, h.ProducerEpoch, h.BaseSequence, current)}
		}
		return checkResult{}
	}
	if current == noProducerEpoch {
		return checkResult{}
	}
	if last := e.lastSeq(); !inSequence(last, h.BaseSequence) {
		return checkResult{Err: kerr.OutOfOrderSequenceNumber, Message: fmt.Sprintf(
			"Out of order sequence number for producer %d: %d (incoming seq. number), %d (current end sequence number)",
			h.ProducerID, h.BaseSequence, last)}
	}
	return s.checkTxn(e, h)
}

// checkTxn refuses a batch that is not transactional from a producer whose
// transaction is in progress here.
func (s *producers) checkTxn(e *producerEntry, h *store.Header) checkResult {
	if e != nil && e.TxnFirstOffset >= 0 && !h.Transactional() {
		return checkResult{Err: kerr.InvalidTxnState, Message: fmt.Sprintf(
			"Expected transactional write from producer %d, whose transaction started at offset %d", h.ProducerID, e.TxnFirstOffset)}
	}
	return checkResult{}
}

// inTxn reports whether the producer has a transaction in progress here in
// epoch (Kafka's hasOngoingTransaction): its transactional batches need no
// verification with the coordinator.
func (s *producers) inTxn(id int64, epoch int16) bool {
	e := s.entries[id]
	return e != nil && e.TxnFirstOffset >= 0 && e.Epoch == epoch
}

// checkMarker decides whether a marker of the producer may be appended.
func (s *producers) checkMarker(m *Marker) (*kerr.Error, string) {
	e := s.entries[m.ProducerID]
	if e == nil {
		return nil, ""
	}
	if m.ProducerEpoch < e.Epoch {
		return kerr.InvalidProducerEpoch, fmt.Sprintf("marker of producer %d in epoch %d, which is older than its epoch %d", m.ProducerID, m.ProducerEpoch, e.Epoch)
	}
	if m.CoordinatorEpoch < e.CoordinatorEpoch {
		return kerr.TransactionCoordinatorFenced, fmt.Sprintf("marker of producer %d from coordinator epoch %d, older than %d", m.ProducerID, m.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil, ""
}

// update records a batch that is now in the log: h carries its assigned
// offsets. now (ms) is the broker's time of the append, or of the replay.
// Batches without a producer id are ignored. It does not check anything:
// after check for a producer's own batches, and for batches replayed from
// the log, which were checked when they were written (Kafka's REPLICATION
// origin).
func (s *producers) update(h *store.Header, now int64) {
	if h.ProducerID < 0 {
		return
	}
	e := s.entry(h.ProducerID)
	e.LastTimestamp = now
	if h.Control() {
		return // endTxn's
	}
	e.setEpoch(h.ProducerEpoch)
	if h.Transactional() && e.TxnFirstOffset < 0 {
		e.TxnFirstOffset = h.BaseOffset
		s.ongoing[h.ProducerID] = h.BaseOffset
	}
	if len(e.Batches) == maxBatchesRetained {
		e.Batches = append(e.Batches[:0], e.Batches[1:]...)
	}
	e.Batches = append(e.Batches, batchMetadata{
		FirstSeq: h.BaseSequence, LastSeq: lastSequence(h),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(),
		Timestamp: h.MaxTimestamp,
	})
}

func (s *producers) entry(id int64) *producerEntry {
	e := s.entries[id]
	if e == nil {
		e = newProducerEntry()
		s.entries[id] = e
	}
	return e
}

// endTxn records a marker now in the log: h is its control batch's header,
// with its offset. It ends the producer's transaction here and returns the
// aborted transaction's index entry when the marker aborts one that wrote
// here (ok false otherwise). It does not check: after checkMarker for the
// leader's markers, and for markers replicated or replayed (Kafka's
// REPLICATION origin). A marker that compaction emptied says nothing.
func (s *producers) endTxn(h *store.Header, m Marker, now int64) (aborted store.AbortedTxn, ok bool) {
	if h.NumRecords == 0 {
		return store.AbortedTxn{}, false
	}
	e := s.entry(h.ProducerID)
	e.LastTimestamp = now
	e.setEpoch(h.ProducerEpoch)
	e.CoordinatorEpoch = m.CoordinatorEpoch
	first := e.TxnFirstOffset
	if first < 0 {
		return store.AbortedTxn{}, false // nothing of it here
	}
	e.TxnFirstOffset = -1
	delete(s.ongoing, h.ProducerID)
	s.unreplicated = append(s.unreplicated, completedTxn{producerID: h.ProducerID, first: first, markerOffs: h.BaseOffset})
	if m.Commit {
		return store.AbortedTxn{}, false
	}
	// Kafka's lastStableOffset(completedTxn): where the next transaction
	// of another producer starts, else right after the marker.
	lastStable := h.BaseOffset + 1
	for _, f := range s.ongoing {
		lastStable = min(lastStable, f)
	}
	return store.AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, LastStableOffset: lastStable}, true
}

// replicated forgets the transactions whose marker is below the high
// watermark hw: readers see them over.
func (s *producers) replicated(hw int64) {
	n := 0
	for n < len(s.unreplicated) && s.unreplicated[n].markerOffs < hw {
		n++
	}
	if n > 0 {
		s.unreplicated = append(s.unreplicated[:0], s.unreplicated[n:]...)
	}
}

// firstUnstable returns the smallest first offset of a transaction not
// over for readers, and false when there is none: the last stable offset
// is the smaller of it and the high watermark.
func (s *producers) firstUnstable() (int64, bool) {
	first, ok := int64(math.MaxInt64), false
	for _, f := range s.ongoing {
		first, ok = min(first, f), true
	}
	for _, t := range s.unreplicated {
		first, ok = min(first, t.first), true
	}
	return first, ok
}

// expire forgets the producers idle for producer.id.expiration.ms or longer
// at now (ms), as Kafka's removeExpiredProducers, and returns how many. A
// producer with a transaction in progress here is never forgotten.
func (s *producers) expire(now int64) int {
	n := 0
	for id, e := range s.entries {
		if e.TxnFirstOffset < 0 && now-e.LastTimestamp >= s.expirationMs {
			delete(s.entries, id)
			n++
		}
	}
	return n
}

// Snapshot payload (the store frames it with a version and a CRC; see
// store.WriteSnapshot). All integers big-endian; entries by producer id:
//
//	+-----------+------------------------------------------------------------+
//	| version 1 | 1 (0: before transactions, without the two txn fields)    |
//	| count   4 | number of producers                                       |
//	+-----------+------------------------------------------------------------+
//	| per producer:                                                          |
//	|   producerId 8 | epoch 2 | lastTimestamp 8 | txnFirstOffset 8 |      |
//	|   coordinatorEpoch 4 | batches 1                                     |
//	|   per batch: firstSeq 4 | lastSeq 4 | firstOffset 8 | lastOffset 8 |   |
//	|              timestamp 8                                               |
//	+------------------------------------------------------------------------+
//
// NB: Kafka's snapshot keeps only each producer's last batch, so after a
// restart it recognises a retry of that batch only. Keeping all five costs
// 128 bytes per producer and recognises every retry still in flight.
const (
	producersSnapshotV0 = 0
	producersSnapshotV1 = 1
	snapshotEntrySizeV0 = 8 + 2 + 8 + 1
	snapshotEntrySize   = snapshotEntrySizeV0 + 8 + 4
	snapshotBatchSize   = 4 + 4 + 8 + 8 + 8
)

// errBadSnapshot marks a snapshot payload that does not decode.
var errBadSnapshot = errors.New("partition: bad producer-state snapshot")

// encode returns the state as a snapshot payload.
func (s *producers) encode() []byte {
	ids := make([]int64, 0, len(s.entries))
	for id := range s.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, 0, 5+len(ids)*(snapshotEntrySize+maxBatchesRetained*snapshotBatchSize))
	b = append(b, producersSnapshotV1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := s.entries[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint64(b, uint64(e.TxnFirstOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = append(b, byte(len(e.Batches)))
		for _, m := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	return b
}

// restore replaces the state with a snapshot payload's. On error (wrapping
// errBadSnapshot) the state is left empty. Transactions whose marker was
// above the high watermark are not in a snapshot: the state counts them
// over (Kafka's snapshot does not keep them either).
func (s *producers) restore(b []byte) error {
	clear(s.entries)
	clear(s.ongoing)
	s.unreplicated = s.unreplicated[:0]
	if err := s.decode(b); err != nil {
		clear(s.entries)
		return err
	}
	for id, e := range s.entries {
		if e.TxnFirstOffset >= 0 {
			s.ongoing[id] = e.TxnFirstOffset
		}
	}
	return nil
}

func (s *producers) decode(b []byte) error {
	if len(b) < 5 || (b[0] != producersSnapshotV0 && b[0] != producersSnapshotV1) {
		return fmt.Errorf("%w: unknown version or short header", errBadSnapshot)
	}
	entrySize := snapshotEntrySize
	if b[0] == producersSnapshotV0 {
		entrySize = snapshotEntrySizeV0
	}
	n := binary.BigEndian.Uint32(b[1:])
	b = b[5:]
	// Every entry takes at least entrySize bytes: check the count before
	// trusting it.
	if uint64(n)*uint64(entrySize) > uint64(len(b)) {
		return fmt.Errorf("%w: %d producers in %d bytes", errBadSnapshot, n, len(b))
	}
	for range n {
		if len(b) < entrySize {
			return fmt.Errorf("%w: truncated entry", errBadSnapshot)
		}
		id := int64(binary.BigEndian.Uint64(b))
		e := newProducerEntry()
		e.Epoch = int16(binary.BigEndian.Uint16(b[8:]))
		e.LastTimestamp = int64(binary.BigEndian.Uint64(b[10:]))
		if entrySize == snapshotEntrySize {
			e.TxnFirstOffset = int64(binary.BigEndian.Uint64(b[18:]))
			e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(b[26:]))
		}
		nb := int(b[entrySize-1])
		b = b[entrySize:]
		if id < 0 || nb > maxBatchesRetained || len(b) < nb*snapshotBatchSize || e.TxnFirstOffset < -1 {
			return fmt.Errorf("%w: producer %d with %d batches", errBadSnapshot, id, nb)
		}
		if _, dup := s.entries[id]; dup {
			return fmt.Errorf("%w: producer %d twice", errBadSnapshot, id)
		}
		for range nb {
			e.Batches = append(e.Batches, batchMetadata{
				FirstSeq:    int32(binary.BigEndian.Uint32(b)),
				LastSeq:     int32(binary.BigEndian.Uint32(b[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(b[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(b[16:])),
				Timestamp:   int64(binary.BigEndian.Uint64(b[24:])),
			})
			b = b[snapshotBatchSize:]
		}
		s.entries[id] = e
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(b))
	}
	return nil
}
