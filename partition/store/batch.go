package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// RecordBatch v2 framing (Kafka's DefaultRecordBatch, magic 2), the unit the
// log stores, replicates and serves. All integers are big endian.
//
//	+--------------------------------+
//	| @0  baseOffset           int64 |  the first offset of the batch
//	| @8  batchLength          int32 |  bytes after this field (size - 12)
//	| @12 partitionLeaderEpoch int32 |  set by the leader when it appends
//	| @16 magic                int8  |  2
//	| @17 crc                  uint32|  CRC-32C (Castagnoli) of bytes 21..end
//	+- - - - - - - - - - - - - - - - +  ---- the crc covers from here on ----
//	| @21 attributes           int16 |  bits 0-2 codec, 3 LogAppendTime,
//	|                                |  4 transactional, 5 control,
//	|                                |  6 delete horizon (KIP-534)
//	| @23 lastOffsetDelta      int32 |  last offset - baseOffset
//	| @27 baseTimestamp        int64 |
//	| @35 maxTimestamp         int64 |
//	| @43 producerId           int64 |  -1 when not idempotent
//	| @51 producerEpoch        int16 |
//	| @53 baseSequence         int32 |
//	| @57 recordCount          int32 |
//	| @61 records ...                |  compressed as a whole by the codec
//	+--------------------------------+
//
// A record (all varints zigzag encoded, as encoding/binary's Varint):
//
//	length          varint   bytes after this field
//	attributes      int8     unused
//	timestampDelta  varlong  from baseTimestamp
//	offsetDelta     varint   from baseOffset
//	keyLength       varint   -1 for a null key
//	key             bytes
//	valueLength     varint   -1 for a null value
//	value           bytes
//	headerCount     varint
//	headers         headerCount x (keyLength varint, key, valueLength varint (-1 null), value)
//
// The fields before the crc (baseOffset, batchLength, partitionLeaderEpoch,
// magic) are outside it, which is what lets a leader assign offsets and stamp
// its epoch by rewriting the header in place (SetBaseOffset,
// SetPartitionLeaderEpoch) without touching the CRC.

// HeaderSize is the size of a RecordBatch v2 header: the records start here.
const HeaderSize = 61

// Header field offsets, and the bytes batchLength does not count.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offNumRecords           = 57

	// batchOverhead is baseOffset and batchLength: a batch is
	// batchOverhead+batchLength bytes (Kafka's LOG_OVERHEAD).
	batchOverhead = 12
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// castagnoli is the CRC-32C table, made once: crc32 uses the CPU's CRC
// instruction for it where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a decoded RecordBatch v2 header. Field names follow Kafka's
// DefaultRecordBatch (BaseTimestamp is the protocol's firstTimestamp).
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the size of the whole batch in bytes, header included.
func (h Header) Size() int64 { return batchOverhead + int64(h.BatchLength) }

// LastOffset is the offset of the batch's last record (or, for a batch that
// compaction emptied, the offset it last covered).
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec of the records section.
func (h Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// LogAppendTime reports whether the batch's timestamps are the broker's
// append time (MaxTimestamp) rather than the producer's create times.
func (h Header) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional reports whether the batch is part of a transaction.
func (h Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds control records (transaction
// markers), which only the broker writes.
func (h Header) Control() bool { return h.Attributes&attrControl != 0 }

// DeleteHorizon reports whether BaseTimestamp holds the delete horizon that
// compaction set for the batch's tombstones and markers (KIP-534).
func (h Header) DeleteHorizon() bool { return h.Attributes&attrDeleteHorizon != 0 }

// ParseHeader decodes the batch header at the start of b, which needs at
// least HeaderSize bytes. It checks what the header alone can tell: magic 2,
// a batchLength that covers at least the header, a non-negative record count
// and last offset delta, and a known codec; errors wrap ErrCorrupt. It checks
// neither the CRC (CheckCRC) nor that b holds the whole batch (Size). It does
// not allocate unless it fails.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, corruptf("batch header needs %d bytes, have %d", HeaderSize, len(b))
	}
	_ = b[HeaderSize-1]
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
	switch {
	case h.Magic != 2:
		return h, corruptf("magic %d, only 2 is supported", h.Magic)
	case h.BatchLength < HeaderSize-batchOverhead:
		return h, corruptf("batch length %d is shorter than the header", h.BatchLength)
	case h.NumRecords < 0:
		return h, corruptf("negative record count %d", h.NumRecords)
	case h.LastOffsetDelta < 0:
		return h, corruptf("negative last offset delta %d", h.LastOffsetDelta)
	case !h.Codec().valid():
		return h, corruptf("unknown compression codec %d", h.Codec())
	}
	return h, nil
}

// CRC computes the CRC-32C of a batch: of b[21:], everything from the
// attributes on. b must hold at least the header.
func CRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// CheckCRC checks that b, exactly one batch, carries the CRC of its bytes;
// errors wrap ErrCorrupt.
func CheckCRC(b []byte) error {
	if len(b) < HeaderSize {
		return corruptf("batch header needs %d bytes, have %d", HeaderSize, len(b))
	}
	if n := batchOverhead + int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))); n != int64(len(b)) {
		return corruptf("batch length says %d bytes, have %d", n, len(b))
	}
	if want, got := binary.BigEndian.Uint32(b[offCRC:]), CRC(b); want != got {
		return corruptf("crc %08x, computed %08x", want, got)
	}
	return nil
}

// Header rewriting. A leader rewrites the fields outside the CRC of a batch
// it appends; these work in place on a batch that ParseHeader accepted (they
// index b directly, so b must hold at least the header).

// SetBaseOffset sets the batch's base offset. The CRC does not cover it.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch sets the batch's partition leader epoch. The CRC
// does not cover it.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps a batch for a topic with
// message.timestamp.type=LogAppendTime: it sets the timestamp-type attribute
// and MaxTimestamp to ts and recomputes the CRC, which covers both, so b
// must be exactly one batch.
//
// NB: this is what Kafka does for magic 2 (DefaultRecordBatch.setMaxTimestamp
// from LogValidator): BaseTimestamp and the records' timestamp deltas are
// left as the producer sent them, and readers take every record's timestamp
// from MaxTimestamp when the attribute is set. Unlike Kafka, which rebuilds
// the attributes from the bits it knows, the other attribute bits are kept
// as they are.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
}

// ForEachBatch walks a record set made of whole batches laid end to end, as a
// Produce request or a segment slice carries, calling fn with each batch (b is
// exactly the batch, its capacity capped at its end) and its parsed header.
// It stops at the first error fn returns and returns it. A header that does
// not parse or a trailing partial batch is ErrCorrupt; ForEachBatch checks
// neither CRCs nor records. An empty record set calls fn never.
func ForEachBatch(records []byte, fn func(b []byte, h Header) error) error {
	for pos := 0; pos < len(records); {
		rem := records[pos:]
		h, err := ParseHeader(rem)
		if err != nil {
			return atByte(pos, err)
		}
		size := h.Size()
		if size > int64(len(rem)) {
			return corruptf("batch at byte %d: %d bytes, only %d remain", pos, size, len(rem))
		}
		if err := fn(rem[:size:size], h); err != nil {
			return err
		}
		pos += int(size)
	}
	return nil
}

// ValidateOptions are the topic settings ValidateProduced enforces.
type ValidateOptions struct {
	// MaxBatchBytes is the largest batch accepted, header included
	// (max.message.bytes); 0 means no limit.
	MaxBatchBytes int
	// RequireKeys refuses records without a key, as a topic whose
	// cleanup.policy includes compact must.
	RequireKeys bool
}

// ValidateProduced validates b, exactly one batch as a producer sent it,
// following Kafka's LogValidator for magic 2, checks in this order:
//
//  1. the header parses and b is exactly one batch: ErrCorrupt;
//  2. the batch is at most opts.MaxBatchBytes: ErrMessageTooLarge;
//  3. the CRC matches: ErrCorrupt;
//  4. the batch has records and LastOffsetDelta is NumRecords-1:
//     ErrInvalidRecord ("Inconsistent batch offset range and record count");
//  5. it is not a control batch, which only brokers write: ErrInvalidRecord;
//  6. an idempotent batch (ProducerID >= 0) has BaseSequence >= 0:
//     ErrInvalidRecord ("Invalid sequence number");
//  7. the records, when uncompressed or when opts.RequireKeys makes the
//     broker look inside (then dec decompresses them): their framing is
//     sound and they are NumRecords (ErrCorrupt), each one's offset delta is
//     its index, and with opts.RequireKeys each has a key (ErrInvalidRecord).
//
// A compressed batch on a topic that does not require keys is not
// decompressed: the broker has no need to look inside it, and consumers will
// find any damage the CRC did not. Idempotent sequences, producer epochs and
// timestamps are the partition's to check.
//
// ValidateProduced returns the parsed header, also with an error from step 2
// on (a zero Header when the header itself is corrupt). It does not allocate
// for an uncompressed batch; dec may be nil, and then a compressed batch
// that must be inspected allocates a Decompressor. b is only read.
func ValidateProduced(b []byte, opts ValidateOptions, dec *Decompressor) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Header{}, err
	}
	if h.Size() != int64(len(b)) {
		return Header{}, corruptf("batch length says %d bytes, have %d", h.Size(), len(b))
	}
	if opts.MaxBatchBytes > 0 && h.Size() > int64(opts.MaxBatchBytes) {
		return h, tooLargef(h.Size(), opts.MaxBatchBytes)
	}
	if err := CheckCRC(b); err != nil {
		return h, err
	}
	if h.NumRecords == 0 {
		return h, invalidf("batch has no records")
	}
	if h.LastOffsetDelta != h.NumRecords-1 {
		return h, invalidf("last offset delta %d with %d records", h.LastOffsetDelta, h.NumRecords)
	}
	if h.Control() {
		return h, invalidf("producers may not write control batches")
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return h, invalidf("producer id %d with base sequence %d", h.ProducerID, h.BaseSequence)
	}
	data := b[HeaderSize:]
	if codec := h.Codec(); codec != CodecNone {
		if !opts.RequireKeys {
			return h, nil
		}
		if dec == nil {
			dec = new(Decompressor)
		}
		if data, err = dec.Decompress(codec, data); err != nil {
			return h, err
		}
	}
	return h, validateRecords(data, h.NumRecords, opts.RequireKeys)
}

// tooLargef returns an error that wraps ErrMessageTooLarge.
func tooLargef(size int64, limit int) error {
	return fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, size, limit)
}

// atByte says where in a record set err happened.
func atByte(pos int, err error) error {
	return fmt.Errorf("batch at byte %d: %w", pos, err)
}
