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

// Idempotent producers (KIP-98), as Kafka 4.x's ProducerStateManager and
// ProducerAppendInfo implement them, for producers without a transactional
// id.
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
// For each producer id it keeps the current epoch and the metadata of the
// producer's last five batches (Kafka's NUM_BATCHES_TO_RETAIN, which is
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
//
// Concurrency: owned by the partition actor; not safe for concurrent use.
type producers struct {
	entries map[int64]*producerEntry
	// expirationMs is producer.id.expiration.ms.
	expirationMs int64
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
	return &producers{entries: map[int64]*producerEntry{}, expirationMs: expirationMs}
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
// before it is appended; see the rules above. It changes nothing.
func (s *producers) check(h *store.Header) checkResult {
	e := s.entries[h.ProducerID]
	current := int16(noProducerEpoch)
	if e != nil {
		current = e.Epoch
		if h.ProducerEpoch == e.Epoch {
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
	return checkResult{}
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
	e := s.entries[h.ProducerID]
	if e == nil {
		e = &producerEntry{Epoch: noProducerEpoch}
		s.entries[h.ProducerID] = e
	}
	e.LastTimestamp = now
	if h.Control() {
		// A transaction marker moves the producer to the marker's epoch
		// and carries no sequence; one that compaction emptied says
		// nothing (Kafka's appendEndTxnMarker).
		if h.NumRecords > 0 {
			e.setEpoch(h.ProducerEpoch)
		}
		return
	}
	e.setEpoch(h.ProducerEpoch)
	if len(e.Batches) == maxBatchesRetained {
		e.Batches = append(e.Batches[:0], e.Batches[1:]...)
	}
	e.Batches = append(e.Batches, batchMetadata{
		FirstSeq: h.BaseSequence, LastSeq: lastSequence(h),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(),
		Timestamp: h.MaxTimestamp,
	})
}

// expire forgets the producers idle for producer.id.expiration.ms or longer
// at now (ms), as Kafka's removeExpiredProducers, and returns how many.
func (s *producers) expire(now int64) int {
	n := 0
	for id, e := range s.entries {
		if now-e.LastTimestamp >= s.expirationMs {
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
//	| version 1 | 0                                                          |
//	| count   4 | number of producers                                       |
//	+-----------+------------------------------------------------------------+
//	| per producer:                                                          |
//	|   producerId 8 | epoch 2 | lastTimestamp 8 | batches 1                 |
//	|   per batch: firstSeq 4 | lastSeq 4 | firstOffset 8 | lastOffset 8 |   |
//	|              timestamp 8                                               |
//	+------------------------------------------------------------------------+
//
// NB: Kafka's snapshot keeps only each producer's last batch, so after a
// restart it recognises a retry of that batch only. Keeping all five costs
// 128 bytes per producer and recognises every retry still in flight.
const (
	producersSnapshotV0 = 0
	snapshotEntrySize   = 8 + 2 + 8 + 1
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
	b = append(b, producersSnapshotV0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := s.entries[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
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
// errBadSnapshot) the state is left empty.
func (s *producers) restore(b []byte) error {
	clear(s.entries)
	if err := s.decode(b); err != nil {
		clear(s.entries)
		return err
	}
	return nil
}

func (s *producers) decode(b []byte) error {
	if len(b) < 5 || b[0] != producersSnapshotV0 {
		return fmt.Errorf("%w: unknown version or short header", errBadSnapshot)
	}
	n := binary.BigEndian.Uint32(b[1:])
	b = b[5:]
	// Every entry takes at least snapshotEntrySize bytes: check the count
	// before trusting it.
	if uint64(n)*snapshotEntrySize > uint64(len(b)) {
		return fmt.Errorf("%w: %d producers in %d bytes", errBadSnapshot, n, len(b))
	}
	for range n {
		if len(b) < snapshotEntrySize {
			return fmt.Errorf("%w: truncated entry", errBadSnapshot)
		}
		id := int64(binary.BigEndian.Uint64(b))
		e := &producerEntry{
			Epoch:         int16(binary.BigEndian.Uint16(b[8:])),
			LastTimestamp: int64(binary.BigEndian.Uint64(b[10:])),
		}
		nb := int(b[18])
		b = b[snapshotEntrySize:]
		if id < 0 || nb > maxBatchesRetained || len(b) < nb*snapshotBatchSize {
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
