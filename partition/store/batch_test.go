package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Test helpers shared by the package's tests.

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// baseTimestamp is the BaseTimestamp of the batches tests make.
const baseTimestamp = 1_700_000_000_000

// testRecords returns n records as a producer makes them: offset delta i,
// timestamp delta i, a key of keySize bytes (nil when keySize < 0) and a
// value of valueSize bytes, both filled with a pattern of i.
func testRecords(n, keySize, valueSize int) []Record {
	records := make([]Record, n)
	for i := range records {
		r := &records[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(i)
		if keySize >= 0 {
			r.Key = pattern(i, keySize)
		}
		r.Value = pattern(i+1<<16, valueSize)
	}
	return records
}

// pattern returns n bytes that depend on seed and compress somewhat.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i/7)
	}
	return b
}

// producedHeader is the header of a non-idempotent batch of n records as a
// producer sends it: offsets not yet assigned, epoch -1.
func producedHeader(n int) Header {
	return Header{
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(n - 1),
		BaseTimestamp:        baseTimestamp,
		MaxTimestamp:         baseTimestamp + int64(max(n-1, 0)),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
}

// makeBatch returns a batch of n records of the given key and value sizes
// (a negative keySize makes null keys), compressed with codec.
func makeBatch(tb testing.TB, n, keySize, valueSize int, codec Codec) []byte {
	tb.Helper()
	b, err := AppendBatch(nil, producedHeader(n), testRecords(n, keySize, valueSize), codec)
	if err != nil {
		tb.Fatalf("AppendBatch: %v", err)
	}
	return b
}

// headers encodes kmsg headers as Record.Headers holds them.
func headers(hs ...kmsg.Header) (int32, []byte) {
	var b []byte
	for i := range hs {
		b = hs[i].AppendTo(b)
	}
	return int32(len(hs)), b
}

// rawBatch frames a records section given as bytes into a batch with a
// correct length and CRC, through kmsg, so that tests can hand-make records
// that AppendBatch would refuse to write.
func rawBatch(numRecords int32, attrs int16, records []byte) []byte {
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(HeaderSize - batchOverhead + len(records)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      numRecords - 1,
		FirstTimestamp:       baseTimestamp,
		MaxTimestamp:         baseTimestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           numRecords,
		Records:              records,
	}
	b := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(b[:0])
}

// resealed returns a copy of b with its CRC recomputed after a test changed
// a covered field.
func resealed(b []byte) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[offCRC:], CRC(b))
	return b
}

// edit returns a copy of b changed by fn.
func edit(b []byte, fn func(b []byte)) []byte {
	b = bytes.Clone(b)
	fn(b)
	return b
}

func put16(off int, v int16) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint16(b[off:], uint16(v)) }
}

func put32(off int, v int32) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }
}

func put64(off int, v int64) func([]byte) {
	return func(b []byte) { binary.BigEndian.PutUint64(b[off:], uint64(v)) }
}

// wantErr checks that err wraps want (nil for success).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error %v, want one wrapping %v", err, want)
	}
}

func TestParseHeader(t *testing.T) {
	good := makeBatch(t, 3, 4, 10, CodecNone)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"valid", good, nil},
		{"header only", good[:HeaderSize], nil}, // ParseHeader does not need the records
		{"empty", nil, ErrCorrupt},
		{"short", good[:HeaderSize-1], ErrCorrupt},
		{"magic 1", edit(good, func(b []byte) { b[offMagic] = 1 }), ErrCorrupt},
		{"magic 3", edit(good, func(b []byte) { b[offMagic] = 3 }), ErrCorrupt},
		{"batch length under header", edit(good, put32(offBatchLength, HeaderSize-batchOverhead-1)), ErrCorrupt},
		{"negative batch length", edit(good, put32(offBatchLength, -1)), ErrCorrupt},
		{"batch length of header only", edit(good, put32(offBatchLength, HeaderSize-batchOverhead)), nil},
		{"negative record count", edit(good, put32(offNumRecords, -1)), ErrCorrupt},
		{"negative last offset delta", edit(good, put32(offLastOffsetDelta, -1)), ErrCorrupt},
		{"codec 5", edit(good, put16(offAttributes, 5)), ErrCorrupt},
		{"codec 7", edit(good, put16(offAttributes, 7)), ErrCorrupt},
		{"unknown attribute bits", edit(good, put16(offAttributes, -0x100)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(tt.b)
			wantErr(t, err, tt.want)
		})
	}
}

func TestParseHeaderFields(t *testing.T) {
	h := Header{
		BaseOffset:           1 << 40,
		PartitionLeaderEpoch: 7,
		Attributes:           attrTransactional | attrLogAppendTime,
		LastOffsetDelta:      1,
		BaseTimestamp:        baseTimestamp,
		MaxTimestamp:         baseTimestamp + 9,
		ProducerID:           12345,
		ProducerEpoch:        3,
		BaseSequence:         100,
	}
	b, err := AppendBatch(nil, h, testRecords(2, 3, 5), CodecSnappy)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	want := h
	want.BatchLength = int32(len(b) - batchOverhead)
	want.Magic = 2
	want.CRC = CRC(b)
	want.Attributes |= int16(CodecSnappy)
	want.NumRecords = 2
	if got != want {
		t.Fatalf("ParseHeader = %+v\nwant %+v", got, want)
	}
	if got.Size() != int64(len(b)) || got.LastOffset() != 1<<40+1 || got.NextOffset() != 1<<40+2 {
		t.Fatalf("Size %d LastOffset %d NextOffset %d", got.Size(), got.LastOffset(), got.NextOffset())
	}
	if got.Codec() != CodecSnappy || !got.LogAppendTime() || !got.Transactional() || got.Control() || got.DeleteHorizon() {
		t.Fatalf("attributes %#x read wrong", got.Attributes)
	}
}

func TestParseHeaderAllocs(t *testing.T) {
	b := makeBatch(t, 3, 4, 10, CodecNone)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseHeader(b) }); n != 0 {
		t.Fatalf("ParseHeader allocates %v times", n)
	}
}

func TestCheckCRC(t *testing.T) {
	good := makeBatch(t, 3, 4, 10, CodecNone)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"valid", good, nil},
		{"base offset is outside the crc", edit(good, put64(offBaseOffset, 99)), nil},
		{"leader epoch is outside the crc", edit(good, put32(offPartitionLeaderEpoch, 99)), nil},
		{"flipped crc", edit(good, func(b []byte) { b[offCRC] ^= 1 }), ErrCorrupt},
		{"flipped attributes", edit(good, func(b []byte) { b[offAttributes+1] ^= 0x10 }), ErrCorrupt},
		{"flipped record byte", edit(good, func(b []byte) { b[len(b)-1] ^= 0x80 }), ErrCorrupt},
		{"short", good[:HeaderSize-1], ErrCorrupt},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"trailing byte", append(bytes.Clone(good), 0), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, CheckCRC(tt.b), tt.want)
		})
	}
}

func TestCRCMatchesKmsgCastagnoli(t *testing.T) {
	b := makeBatch(t, 5, 8, 100, CodecNone)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if uint32(rb.CRC) != CRC(b) || uint32(rb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("crc %08x, kmsg read %08x", CRC(b), uint32(rb.CRC))
	}
}

func TestSetBaseOffsetAndLeaderEpoch(t *testing.T) {
	b := makeBatch(t, 3, 4, 10, CodecLZ4)
	before := bytes.Clone(b)
	SetBaseOffset(b, 1<<50)
	SetPartitionLeaderEpoch(b, 42)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 1<<50 || h.PartitionLeaderEpoch != 42 {
		t.Fatalf("header %+v", h)
	}
	if err := CheckCRC(b); err != nil {
		t.Fatalf("rewriting fields outside the crc broke it: %v", err)
	}
	if !bytes.Equal(b[offMagic:], before[offMagic:]) {
		t.Fatal("bytes from magic on changed")
	}
}

// TestSetLogAppendTime checks Kafka's magic 2 behaviour
// (DefaultRecordBatch.setMaxTimestamp): "the timestamp type attribute and
// MaxTimestamp are set and the CRC recomputed"; BaseTimestamp and the
// records stay.
func TestSetLogAppendTime(t *testing.T) {
	h := producedHeader(3)
	h.Attributes = attrTransactional
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, 0, 0
	b, err := AppendBatch(nil, h, testRecords(3, 4, 10), CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(b)
	const now = baseTimestamp + 1_000_000
	SetLogAppendTime(b, now)
	if err := CheckCRC(b); err != nil {
		t.Fatal(err)
	}
	got, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LogAppendTime() || got.MaxTimestamp != now || got.BaseTimestamp != baseTimestamp {
		t.Fatalf("header %+v", got)
	}
	if got.Codec() != CodecZstd || !got.Transactional() {
		t.Fatalf("other attribute bits lost: %#x", got.Attributes)
	}
	if !bytes.Equal(b[HeaderSize:], before[HeaderSize:]) {
		t.Fatal("records changed")
	}
	if !bytes.Equal(b[:offCRC], before[:offCRC]) || !bytes.Equal(b[offLastOffsetDelta:offMaxTimestamp], before[offLastOffsetDelta:offMaxTimestamp]) {
		t.Fatal("fields other than attributes, max timestamp and crc changed")
	}
	if _, err := ValidateProduced(b, ValidateOptions{RequireKeys: true}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestForEachBatch(t *testing.T) {
	batches := [][]byte{
		makeBatch(t, 1, 3, 10, CodecNone),
		makeBatch(t, 4, 3, 200, CodecGzip),
		makeBatch(t, 2, -1, 0, CodecNone),
	}
	set := bytes.Join(batches, nil)

	var got [][]byte
	err := ForEachBatch(set, func(b []byte, h Header) error {
		if h.Size() != int64(len(b)) || cap(b) != len(b) {
			t.Errorf("batch of %d bytes (cap %d) for header size %d", len(b), cap(b), h.Size())
		}
		got = append(got, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(batches) {
		t.Fatalf("%d batches, want %d", len(got), len(batches))
	}
	for i := range got {
		if !bytes.Equal(got[i], batches[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}

	stop := errors.New("stop")
	calls := 0
	if err := ForEachBatch(set, func([]byte, Header) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("callback error: got %v after %d calls", err, calls)
	}

	tests := []struct {
		name  string
		set   []byte
		calls int
		want  error
	}{
		{"empty", nil, 0, nil},
		{"one", batches[0], 1, nil},
		{"trailing partial header", append(bytes.Clone(set), batches[0][:30]...), 3, ErrCorrupt},
		{"trailing partial batch", append(bytes.Clone(set), batches[1][:len(batches[1])-1]...), 3, ErrCorrupt},
		{"bad magic in the middle", bytes.Join([][]byte{batches[0], edit(batches[1], func(b []byte) { b[offMagic] = 1 }), batches[2]}, nil), 1, ErrCorrupt},
		{"length past the end", edit(batches[0], put32(offBatchLength, 1<<30)), 0, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := ForEachBatch(tt.set, func([]byte, Header) error { calls++; return nil })
			wantErr(t, err, tt.want)
			if calls != tt.calls {
				t.Fatalf("%d calls, want %d", calls, tt.calls)
			}
		})
	}
}

func TestValidateProduced(t *testing.T) {
	good := makeBatch(t, 3, 4, 10, CodecNone)
	keyless := makeBatch(t, 3, -1, 10, CodecNone)
	keylessZstd := makeBatch(t, 3, -1, 10, CodecZstd)

	build := func(h Header, records []Record, codec Codec) []byte {
		b, err := AppendBatch(nil, h, records, codec)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	idempotent := producedHeader(3)
	idempotent.ProducerID, idempotent.ProducerEpoch, idempotent.BaseSequence = 7, 0, 0
	noSequence := idempotent
	noSequence.BaseSequence = -1
	control := producedHeader(3)
	control.Attributes = attrControl
	swapped := testRecords(3, 4, 10)
	swapped[0].OffsetDelta, swapped[1].OffsetDelta = 1, 0
	gappy := testRecords(3, 4, 10)
	gappy[2].OffsetDelta = 3
	gappyHeader := producedHeader(3)
	gappyHeader.LastOffsetDelta = 3

	// A compressed section that is not valid data for its codec.
	garbledGzip := rawBatch(3, int16(CodecGzip), []byte("not gzip at all"))

	tests := []struct {
		name string
		b    []byte
		opts ValidateOptions
		want error
	}{
		{"valid", good, ValidateOptions{}, nil},
		{"valid with keys required", good, ValidateOptions{RequireKeys: true}, nil},
		{"valid idempotent", build(idempotent, testRecords(3, 4, 10), CodecNone), ValidateOptions{}, nil},
		{"valid at the size limit", good, ValidateOptions{MaxBatchBytes: len(good)}, nil},

		{"short header", good[:HeaderSize-1], ValidateOptions{}, ErrCorrupt},
		{"bad magic", edit(good, func(b []byte) { b[offMagic] = 1 }), ValidateOptions{}, ErrCorrupt},
		{"truncated", good[:len(good)-1], ValidateOptions{}, ErrCorrupt},
		{"trailing byte", append(bytes.Clone(good), 0), ValidateOptions{}, ErrCorrupt},

		{"too large", good, ValidateOptions{MaxBatchBytes: len(good) - 1}, ErrMessageTooLarge},
		{"too large before crc", edit(good, func(b []byte) { b[len(b)-1] ^= 1 }), ValidateOptions{MaxBatchBytes: 10}, ErrMessageTooLarge},

		{"bad crc", edit(good, func(b []byte) { b[offCRC] ^= 1 }), ValidateOptions{}, ErrCorrupt},
		{"bad crc before record checks", edit(build(control, testRecords(3, 4, 10), CodecNone), func(b []byte) { b[offCRC] ^= 1 }), ValidateOptions{}, ErrCorrupt},

		{"no records", build(producedHeader(1), nil, CodecNone), ValidateOptions{}, ErrInvalidRecord},
		{"last offset delta past the records", resealed(edit(good, put32(offLastOffsetDelta, 3))), ValidateOptions{}, ErrInvalidRecord},
		{"last offset delta short of the records", resealed(edit(good, put32(offLastOffsetDelta, 1))), ValidateOptions{}, ErrInvalidRecord},
		{"control batch", build(control, testRecords(3, 4, 10), CodecNone), ValidateOptions{}, ErrInvalidRecord},
		{"idempotent without sequence", build(noSequence, testRecords(3, 4, 10), CodecNone), ValidateOptions{}, ErrInvalidRecord},
		{"offset deltas out of order", build(producedHeader(3), swapped, CodecNone), ValidateOptions{}, ErrInvalidRecord},
		{"offset delta gap", build(gappyHeader, gappy, CodecNone), ValidateOptions{}, ErrInvalidRecord},
		{"offset deltas out of order compressed, keys required", build(producedHeader(3), swapped, CodecGzip), ValidateOptions{RequireKeys: true}, ErrInvalidRecord},
		{"offset deltas out of order compressed, not inspected", build(producedHeader(3), swapped, CodecGzip), ValidateOptions{}, nil},

		{"null key", keyless, ValidateOptions{}, nil},
		{"null key, keys required", keyless, ValidateOptions{RequireKeys: true}, ErrInvalidRecord},
		{"null key compressed, keys required", keylessZstd, ValidateOptions{RequireKeys: true}, ErrInvalidRecord},
		{"null key compressed, not inspected", keylessZstd, ValidateOptions{}, nil},
		{"empty key, keys required", makeBatch(t, 2, 0, 10, CodecNone), ValidateOptions{RequireKeys: true}, nil},

		{"garbled gzip, not inspected", garbledGzip, ValidateOptions{}, nil},
		{"garbled gzip, keys required", garbledGzip, ValidateOptions{RequireKeys: true}, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := NewDecompressor()
			h, err := ValidateProduced(tt.b, tt.opts, dec)
			wantErr(t, err, tt.want)
			if err == nil {
				want, _ := ParseHeader(tt.b)
				if h != want {
					t.Fatalf("header %+v, want %+v", h, want)
				}
			}
			// A nil Decompressor gives the same answer.
			_, err2 := ValidateProduced(tt.b, tt.opts, nil)
			if fmt.Sprint(err) != fmt.Sprint(err2) {
				t.Fatalf("with a nil Decompressor: %v, with one: %v", err2, err)
			}
		})
	}
}

// TestValidateProducedAllocs guards the produce path: validating an
// uncompressed batch, keys required or not, allocates nothing.
func TestValidateProducedAllocs(t *testing.T) {
	b := makeBatch(t, 16, 16, 1000, CodecNone)
	for _, opts := range []ValidateOptions{{}, {RequireKeys: true, MaxBatchBytes: 1 << 20}} {
		n := testing.AllocsPerRun(100, func() {
			if _, err := ValidateProduced(b, opts, nil); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Fatalf("ValidateProduced(%+v) allocates %v times per batch", opts, n)
		}
	}
}

// BenchmarkValidateProduced validates uncompressed batches as the produce
// path does for every batch: 16 KiB of 1 KiB records (keyed, "default"
// and "compacted"), and, as franz-go batches 100-byte values under load,
// 1,500 records with null keys ("small").
func BenchmarkValidateProduced(b *testing.B) {
	for _, opts := range []struct {
		name string
		ValidateOptions
		n, keySize, valueSize int
	}{
		{"default", ValidateOptions{}, 16, 16, 1024 - 16},
		{"compacted", ValidateOptions{RequireKeys: true}, 16, 16, 1024 - 16},
		{"small", ValidateOptions{}, 1500, -1, 100},
	} {
		b.Run(opts.name, func(b *testing.B) {
			batch := makeBatch(b, opts.n, opts.keySize, opts.valueSize, CodecNone)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValidateProduced(batch, opts.ValidateOptions, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
