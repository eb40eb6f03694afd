package store

import (
	"encoding/binary"
	"sync"
)

// Record is one record of a batch, decoded in place: Key, Value and Headers
// are subslices of the batch (or of the Decompressor's buffer), valid only
// while the callback that received the Record runs; copy what you keep.
type Record struct {
	// Attributes is the record's attribute byte, unused by Kafka so far.
	Attributes int8
	// TimestampDelta is the record's timestamp minus the batch's
	// BaseTimestamp (meaningless when the batch has LogAppendTime).
	TimestampDelta int64
	// OffsetDelta is the record's offset minus the batch's BaseOffset.
	OffsetDelta int32
	// Key and Value are nil when null, empty when empty.
	Key, Value []byte
	// NumHeaders is how many headers Headers holds.
	NumHeaders int32
	// Headers is the headers as encoded on the wire, headerCount excluded:
	// per header a varint key length, the key, a varint value length (-1 for
	// a null value) and the value. ForEachRecord has checked their framing.
	Headers []byte
}

// Framing limits.
const (
	// minRecordSize is the smallest encoded record: a one byte length and
	// six fields of one byte each (attributes, timestamp delta, offset
	// delta, key length, value length, header count).
	minRecordSize = 7
	// minHeaderSize is the smallest encoded header: two one byte lengths.
	minHeaderSize = 2
)

// recordPool holds scratch Records for ForEachRecord calls without a
// Decompressor: the Record handed to the callback escapes, so it cannot live
// on the stack.
var recordPool = sync.Pool{New: func() any { return new(Record) }}

// ForEachRecord calls fn for each record of b, exactly one batch, in order,
// decompressing the records section with dec when the batch is compressed.
// It validates the framing as it goes: each record's length covers exactly
// its fields, lengths are -1 (null key, value or header value) or within
// bounds, header counts fit, no bytes are left over and the records number
// NumRecords; errors wrap ErrCorrupt. It does not check the CRC (CheckCRC)
// nor the records' offset deltas, which compaction leaves with gaps. As in
// Kafka, a compressed batch of no records is not decompressed. It stops at
// the first error fn returns and returns it.
//
// The Record passed to fn, and the slices in it, are valid only during the
// call. dec may be nil; a non-nil dec also lends its scratch Record, so that
// an uncompressed batch is iterated without allocating. dec must not be used
// by anything else, fn included, until ForEachRecord returns.
func ForEachRecord(b []byte, dec *Decompressor, fn func(r *Record) error) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() != int64(len(b)) {
		return corruptf("batch length says %d bytes, have %d", h.Size(), len(b))
	}
	data := b[HeaderSize:]
	if codec := h.Codec(); codec != CodecNone {
		if h.NumRecords == 0 {
			// As Kafka's DefaultRecordBatch: an empty batch has
			// nothing to decompress.
			return nil
		}
		if dec == nil {
			dec = new(Decompressor)
		}
		if data, err = dec.Decompress(codec, data); err != nil {
			return err
		}
	}
	if err := checkRecordCount(h.NumRecords, len(data)); err != nil {
		return err
	}

	var r *Record
	if dec != nil {
		r = &dec.rec
	} else {
		r = recordPool.Get().(*Record)
		defer recordPool.Put(r)
	}
	// Do not keep the batch reachable from the scratch Record.
	defer func() { *r = Record{} }()

	for i := int32(0); i < h.NumRecords; i++ {
		n, err := readRecord(data, r)
		if err != nil {
			return recordErr(i, err)
		}
		data = data[n:]
		if err := fn(r); err != nil {
			return err
		}
	}
	if len(data) != 0 {
		return corruptf("%d bytes after the last of %d records", len(data), h.NumRecords)
	}
	return nil
}

// validateRecords is ValidateProduced's walk over a records section: the
// framing of ForEachRecord, plus Kafka's per-record rules for produced data.
func validateRecords(data []byte, numRecords int32, requireKeys bool) error {
	if err := checkRecordCount(numRecords, len(data)); err != nil {
		return err
	}
	for i := int32(0); i < numRecords; i++ {
		n, offsetDelta, nullKey, ok := scanRecord(data)
		if !ok {
			// Not a record the fast path knows: readRecord decides, and
			// says why it is refused.
			var r Record
			var err error
			if n, err = readRecord(data, &r); err != nil {
				return recordErr(i, err)
			}
			offsetDelta, nullKey = r.OffsetDelta, r.Key == nil
		}
		data = data[n:]
		if offsetDelta != i {
			return &RecordError{Index: i, Err: invalidf("record %d has offset delta %d", i, offsetDelta)}
		}
		if requireKeys && nullKey {
			return &RecordError{Index: i, Err: invalidf("record %d has no key, which a compacted topic requires", i)}
		}
	}
	if len(data) != 0 {
		return corruptf("%d bytes after the last of %d records", len(data), numRecords)
	}
	return nil
}

// scanRecord is validateRecords' fast path over the record at the start of
// src: readRecord's framing checks, inline, for the records producers
// send most, those whose varints take one or two bytes (records under
// 8 KiB) and that have no headers. It returns the record's size, offset
// delta and whether its key is null; ok is false for anything else, valid
// or not, which readRecord then decides. Where ok is true, readRecord
// accepts the record and agrees on all three (FuzzScanRecord).
//
// NB: with 100-byte values the walk over the records was a fifth of the
// broker's produce CPU, most of it calls: ten per record through
// readRecord, varint32, binary.Varint, readNullable and scanHeaders.
func scanRecord(src []byte) (n int, offsetDelta int32, nullKey, ok bool) {
	length, p, ok := varint2(src, 0)
	if !ok || length < 0 || int(length) > len(src)-p {
		return 0, 0, false, false
	}
	body := src[p : p+int(length)]
	if len(body) < 1 { // attributes
		return 0, 0, false, false
	}
	q := 1
	if _, q, ok = varint2(body, q); !ok { // timestamp delta
		return 0, 0, false, false
	}
	if offsetDelta, q, ok = varint2(body, q); !ok {
		return 0, 0, false, false
	}
	key, q, ok := varint2(body, q)
	if !ok || key < -1 || int(key) > len(body)-q {
		return 0, 0, false, false
	}
	q += max(int(key), 0)
	value, q, ok := varint2(body, q)
	if !ok || value < -1 || int(value) > len(body)-q {
		return 0, 0, false, false
	}
	q += max(int(value), 0)
	if headers, q, ok := varint2(body, q); !ok || headers != 0 || q != len(body) {
		return 0, 0, false, false
	}
	return p + int(length), offsetDelta, key == -1, true
}

// varint2 decodes the zigzag varint at b[p:] if it takes one or two bytes
// (as varint32 does, overlong encodings included), and returns the
// position after it; ok is false otherwise.
func varint2(b []byte, p int) (v int32, next int, ok bool) {
	if p >= len(b) {
		return 0, p, false
	}
	x := uint32(b[p])
	if x >= 0x80 {
		if p+1 >= len(b) || b[p+1] >= 0x80 {
			return 0, p, false
		}
		x = x&0x7f | uint32(b[p+1])<<7
		p++
	}
	return int32(x>>1) ^ -int32(x&1), p + 1, true
}

// checkRecordCount refuses a record count that the records section cannot
// hold before any work is done on it.
func checkRecordCount(numRecords int32, size int) error {
	if int64(numRecords)*minRecordSize > int64(size) {
		return corruptf("%d records cannot fit in %d bytes", numRecords, size)
	}
	return nil
}

// recordErr says which record err is about. It is only called on failure.
func recordErr(i int32, err error) error {
	return corruptf("record %d: %v", i, err)
}

// framingError is a record framing failure, before recordErr adds the
// record's index and ErrCorrupt. A string constant, so that failing costs
// nothing until the error is reported.
type framingError string

func (e framingError) Error() string { return string(e) }

const (
	errRecordLength   framingError = "bad record length"
	errAttributes     framingError = "truncated attributes"
	errTimestampDelta framingError = "bad timestamp delta"
	errOffsetDelta    framingError = "bad offset delta"
	errKey            framingError = "bad key length"
	errValue          framingError = "bad value length"
	errHeaderCount    framingError = "bad header count"
	errHeaderKey      framingError = "bad header key length"
	errHeaderValue    framingError = "bad header value length"
	errRecordSize     framingError = "record length does not match its fields"
)

// readRecord decodes the record at the start of src into r and returns the
// bytes it used. r's slices alias src, capped so that appending to them
// cannot overwrite what follows.
func readRecord(src []byte, r *Record) (int, error) {
	length, n := varint32(src)
	if n <= 0 || length < 0 || int(length) > len(src)-n {
		return 0, errRecordLength
	}
	body := src[n : n+int(length)]
	if len(body) < 1 {
		return 0, errAttributes
	}
	r.Attributes = int8(body[0])
	p := 1

	ts, m := binary.Varint(body[p:])
	if m <= 0 {
		return 0, errTimestampDelta
	}
	r.TimestampDelta = ts
	p += m

	off, m := varint32(body[p:])
	if m <= 0 {
		return 0, errOffsetDelta
	}
	r.OffsetDelta = off
	p += m

	var ok bool
	if r.Key, p, ok = readNullable(body, p); !ok {
		return 0, errKey
	}
	if r.Value, p, ok = readNullable(body, p); !ok {
		return 0, errValue
	}

	count, m := varint32(body[p:])
	if m <= 0 || count < 0 || int(count) > (len(body)-p-m)/minHeaderSize {
		return 0, errHeaderCount
	}
	p += m
	r.NumHeaders = count
	hn, err := scanHeaders(body[p:], count)
	if err != nil {
		return 0, err
	}
	r.Headers = body[p : p+hn : p+hn]
	p += hn

	if p != len(body) {
		return 0, errRecordSize
	}
	return n + len(body), nil
}

// readNullable reads a varint length and that many bytes of b from p, a
// length of -1 being nil. It returns the bytes, the position after them, and
// false when the length is bad or out of bounds.
func readNullable(b []byte, p int) ([]byte, int, bool) {
	l, m := varint32(b[p:])
	if m <= 0 || l < -1 {
		return nil, p, false
	}
	p += m
	if l == -1 {
		return nil, p, true
	}
	if int(l) > len(b)-p {
		return nil, p, false
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), true
}

// scanHeaders checks that b starts with count well-formed headers and returns
// their size. Header keys may not be null; values may.
func scanHeaders(b []byte, count int32) (int, error) {
	p := 0
	for range count {
		l, m := varint32(b[p:])
		if m <= 0 || l < 0 || int(l) > len(b)-p-m {
			return 0, errHeaderKey
		}
		p += m + int(l)
		var ok bool
		if _, p, ok = readNullable(b, p); !ok {
			return 0, errHeaderValue
		}
	}
	return p, nil
}

// varint32 decodes a zigzag varint of at most five bytes whose value fits in
// 32 bits, as Kafka's ByteUtils.readVarint (and kmsg) read an int32. n is 0
// when b ends first and negative when the encoding is too long.
func varint32(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint32(b[0])
		return int32(x>>1) ^ -int32(x&1), 1
	}
	var x uint32
	for i := 0; i < 5; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, -5
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1
		}
	}
	return 0, -5 // unreachable: the fifth byte returns above
}
