package store

import (
	"encoding/binary"
	"math"
	"sync"
)

// AppendBatch appends to dst a complete RecordBatch v2 made of h's fields and
// records, the records section compressed with codec, and returns the
// extended slice. Compaction uses it to rewrite batches, tests to make them.
//
// From h it takes BaseOffset, PartitionLeaderEpoch, LastOffsetDelta,
// BaseTimestamp, MaxTimestamp, ProducerID, ProducerEpoch, BaseSequence and
// the attribute bits other than the codec's; it sets Magic (2), BatchLength,
// NumRecords (len(records)), the codec bits and the CRC itself. Each
// record's OffsetDelta and TimestampDelta are written as given.
//
// NB: LastOffsetDelta is taken from h, never recomputed from the records:
// compaction keeps a batch's original LastOffsetDelta (and its producer
// fields) even when it drops the batch's last records, or all of them, so
// that the offsets and the idempotent producer's sequence the batch covered
// stay accounted for, as Kafka's cleaner does. For a freshly built batch
// pass len(records)-1.
//
// It fails, wrapping ErrInvalidRecord and leaving dst's contents as they
// were, when the codec is unknown, LastOffsetDelta is negative, a record's
// Headers do not hold exactly NumHeaders well-formed headers, or a length
// does not fit its field. records are only read.
func AppendBatch(dst []byte, h Header, records []Record, codec Codec) ([]byte, error) {
	start := len(dst)
	switch {
	case !codec.valid():
		return dst, invalidf("unknown compression codec %d", codec)
	case h.LastOffsetDelta < 0:
		return dst, invalidf("negative last offset delta %d", h.LastOffsetDelta)
	case len(records) > math.MaxInt32:
		return dst, invalidf("%d records do not fit a batch", len(records))
	}
	for i := range records {
		r := &records[i]
		if n, err := scanHeaders(r.Headers, r.NumHeaders); r.NumHeaders < 0 || err != nil || n != len(r.Headers) {
			return dst, invalidf("record %d: headers do not hold %d headers", i, r.NumHeaders)
		}
	}

	dst = append(dst, make([]byte, HeaderSize)...)
	var err error
	if codec == CodecNone {
		dst, err = appendRecords(dst, records)
	} else {
		scratch := recordScratch.Get().(*[]byte)
		var raw []byte
		if raw, err = appendRecords((*scratch)[:0], records); err == nil {
			dst, err = Compress(codec, dst, raw)
		}
		if cap(raw) <= recordScratchCap {
			*scratch = raw[:0]
			recordScratch.Put(scratch)
		}
	}
	if err != nil {
		return dst[:start], invalidf("%v", err)
	}
	size := len(dst) - start
	if size-batchOverhead > math.MaxInt32 {
		return dst[:start], invalidf("batch of %d bytes is too large", size)
	}

	b := dst[start:]
	attrs := uint16(h.Attributes)&^attrCodecMask | uint16(codec)
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(size-batchOverhead))
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offNumRecords:], uint32(len(records)))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return dst, nil
}

// recordScratch holds the buffers AppendBatch encodes records into before
// compressing them; buffers grown beyond recordScratchCap are not kept.
var recordScratch = sync.Pool{New: func() any { return new([]byte) }}

const recordScratchCap = 1 << 20

// errRecordTooLarge is a record whose encoding does not fit an int32 length.
const errRecordTooLarge framingError = "record too large"

// appendRecords appends the records' encodings to dst.
func appendRecords(dst []byte, records []Record) ([]byte, error) {
	for i := range records {
		r := &records[i]
		body := 1 + varlongLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
			nullableLen(r.Key) + nullableLen(r.Value) +
			varintLen(int64(r.NumHeaders)) + len(r.Headers)
		if body > math.MaxInt32 || len(r.Key) > math.MaxInt32 || len(r.Value) > math.MaxInt32 {
			return dst, errRecordTooLarge
		}
		dst = binary.AppendVarint(dst, int64(body))
		dst = append(dst, byte(r.Attributes))
		dst = binary.AppendVarint(dst, r.TimestampDelta)
		dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
		dst = appendNullable(dst, r.Key)
		dst = appendNullable(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(r.NumHeaders))
		dst = append(dst, r.Headers...)
	}
	return dst, nil
}

// appendNullable appends b's varint length (-1 for nil) and b.
func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func nullableLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int { return varlongLen(v) }

func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
