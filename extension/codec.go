package extension

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// errCredit stops a walk over the records once the credit is used up.
var errCredit = errors.New("credit used up")

// decode returns the records of batches (whole batches, as the log holds
// them) from r.pos on and below stopAt, within the credit, the offset after
// the last one returned (after the last batch, when it was taken whole),
// and the batches left from the first one not taken whole, for the next
// call. Control batches and the batches of aborted transactions are
// skipped: an extension reads what a read_committed consumer would.
//
// The keys and values are copied into arenas of a chunk's own, not one
// allocation each.
func (r *runner) decode(batches []byte, aborted []store.AbortedTxn, stopAt int64) (out []Record, next int64, rest []byte, err error) {
	out = make([]Record, 0, min(r.maxRecords, 1024))
	next, size, at := r.pos, 0, 0
	var arena []byte
	keep := func(b []byte) []byte {
		switch {
		case b == nil:
			return nil
		case len(b) == 0:
			return []byte{}
		}
		if cap(arena)-len(arena) < len(b) {
			arena = make([]byte, 0, max(64<<10, len(b)))
		}
		start := len(arena)
		arena = append(arena, b...)
		return arena[start:len(arena):len(arena)]
	}
	err = store.ForEachBatch(batches, func(b []byte, h store.Header) error {
		start := at
		at += len(b)
		if h.BaseOffset >= stopAt {
			rest = batches[start:]
			return errCredit
		}
		if h.Control() || h.Transactional() && isAborted(aborted, h.ProducerID, h.BaseOffset) {
			next = h.NextOffset()
			return nil
		}
		err := store.ForEachRecord(b, &r.dec, func(rec *store.Record) error {
			off := h.BaseOffset + int64(rec.OffsetDelta)
			if off < r.pos {
				return nil
			}
			if off >= stopAt || len(out) >= r.maxRecords || len(out) > 0 && size >= r.maxSize {
				return errCredit
			}
			ts := h.BaseTimestamp + rec.TimestampDelta
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			hdrs, err := decodeHeaders(rec.Headers, rec.NumHeaders)
			if err != nil {
				return err
			}
			out = append(out, Record{Topic: r.key.topic, Partition: r.key.partition, Offset: off, Timestamp: time.UnixMilli(ts),
				Key: keep(rec.Key), Value: keep(rec.Value), Headers: hdrs, ProducerID: h.ProducerID})
			size += len(rec.Key) + len(rec.Value)
			next = off + 1
			return nil
		})
		if errors.Is(err, errCredit) {
			rest = batches[start:]
		}
		if err != nil {
			return err
		}
		next = h.NextOffset()
		return nil
	})
	if errors.Is(err, errCredit) {
		err = nil
	}
	return out, next, rest, err
}

// isAborted reports whether a transactional batch of producer at offset
// belongs to an aborted transaction.
func isAborted(aborted []store.AbortedTxn, producer, offset int64) bool {
	for _, t := range aborted {
		if t.ProducerID == producer && t.FirstOffset <= offset && offset <= t.LastOffset {
			return true
		}
	}
	return false
}

// clone copies b, keeping nil nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// decodeHeaders decodes a record's headers as the wire has them: per
// header a varint key length, the key, a varint value length (-1: null)
// and the value.
func decodeHeaders(b []byte, n int32) ([]Header, error) {
	if n == 0 {
		return nil, nil
	}
	out := make([]Header, 0, n)
	for range n {
		kl, m := binary.Varint(b)
		if m <= 0 || kl < 0 || int64(len(b)-m) < kl {
			return nil, errors.New("malformed record header")
		}
		key := string(b[m : m+int(kl)])
		b = b[m+int(kl):]
		vl, m := binary.Varint(b)
		if m <= 0 || int64(len(b)-m) < vl {
			return nil, errors.New("malformed record header")
		}
		var v []byte
		if vl >= 0 {
			v = clone(b[m : m+int(vl)])
			b = b[m+int(vl):]
		} else {
			b = b[m:]
		}
		out = append(out, Header{Key: key, Value: v})
	}
	return out, nil
}

// producer is who writes a batch: an idempotent producer id and epoch, and
// whether the batch is part of its transaction; a pid of -1 is none (a
// batch of no producer, seq -1).
type producer struct {
	pid   int64
	epoch int16
	txn   bool
}

// encodeBatch returns records as one batch of p for target, its first
// record numbered seq.
func encodeBatch(target partition.Key, seq int32, records []Record, p producer) ([]byte, error) {
	recs := make([]store.Record, len(records))
	base := records[0].Timestamp.UnixMilli()
	maxTs := base
	for _, r := range records {
		base = min(base, r.Timestamp.UnixMilli())
		maxTs = max(maxTs, r.Timestamp.UnixMilli())
	}
	est := store.HeaderSize
	for _, r := range records {
		est += 24 + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			est += 10 + len(h.Key) + len(h.Value)
		}
	}
	for i, r := range records {
		var hdrs []byte
		for _, h := range r.Headers {
			hdrs = binary.AppendVarint(hdrs, int64(len(h.Key)))
			hdrs = append(hdrs, h.Key...)
			if h.Value == nil {
				hdrs = binary.AppendVarint(hdrs, -1)
			} else {
				hdrs = binary.AppendVarint(hdrs, int64(len(h.Value)))
				hdrs = append(hdrs, h.Value...)
			}
		}
		recs[i] = store.Record{TimestampDelta: r.Timestamp.UnixMilli() - base, OffsetDelta: int32(i), Key: r.Key, Value: r.Value,
			NumHeaders: int32(len(r.Headers)), Headers: hdrs}
	}
	h := store.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: base, MaxTimestamp: maxTs,
		ProducerID: p.pid, ProducerEpoch: p.epoch, BaseSequence: seq, PartitionLeaderEpoch: -1}
	if p.pid < 0 {
		h.ProducerEpoch = -1
	}
	if p.txn {
		h.Attributes |= 0x10 // transactional
	}
	out, err := store.AppendBatch(make([]byte, 0, est), h, recs, store.CodecNone)
	if err != nil {
		return nil, fmt.Errorf("encoding the output for %s-%d: %w", target.Topic, target.Partition, err)
	}
	return out, nil
}

// keyPartitioner is Kafka's default partitioner for keyed records (murmur2
// of the key), as franz-go implements it.
var keyPartitioner = kgo.StickyKeyPartitioner(nil)

// partitionFor returns the partition of n that key hashes to; a record
// without a key goes to the source partition's number modulo n, which
// spreads the output as the input was spread and, unlike Kafka's sticky
// choice, is the same when the records are processed again.
func partitionFor(key []byte, source, n int32) int32 {
	if key == nil {
		return source % n
	}
	return int32(keyPartitioner.ForTopic("").Partition(&kgo.Record{Key: key}, int(n)))
}
