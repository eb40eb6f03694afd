package store

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendBatchCompacted builds a batch as compaction does: the records
// left keep their offset and timestamp deltas and the batch keeps its
// LastOffsetDelta and producer fields, so the offsets it covers do not move.
func TestAppendBatchCompacted(t *testing.T) {
	records := testRecords(10, 4, 10)
	kept := []Record{records[2], records[7]}
	h := producedHeader(10)
	h.BaseOffset, h.PartitionLeaderEpoch = 500, 3
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 77, 1, 40
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			b, err := AppendBatch(nil, h, kept, codec)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckCRC(b); err != nil {
				t.Fatal(err)
			}
			got, err := ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.LastOffsetDelta != 9 || got.NumRecords != 2 || got.NextOffset() != 510 ||
				got.ProducerID != 77 || got.BaseSequence != 40 || got.PartitionLeaderEpoch != 3 {
				t.Fatalf("header %+v", got)
			}
			read, err := readAll(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, read, kept)
			// Not what a producer may send: the offsets have gaps.
			_, err = ValidateProduced(b, ValidateOptions{}, nil)
			wantErr(t, err, ErrInvalidRecord)
		})
	}

	// Compaction may empty a batch and keep it for its producer state.
	b, err := AppendBatch(nil, h, nil, CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParseHeader(b); err != nil || got.NumRecords != 0 || got.LastOffsetDelta != 9 || got.Size() != HeaderSize {
		t.Fatalf("empty batch %+v, %v", got, err)
	}
	if err := ForEachRecord(b, nil, func(*Record) error { t.Fatal("a record in an empty batch"); return nil }); err != nil {
		t.Fatal(err)
	}
	// Nor is the section of an empty compressed batch decompressed, as
	// Kafka's DefaultRecordBatch does not.
	for _, section := range [][]byte{nil, []byte("not gzip")} {
		b, err := AppendBatch(nil, h, nil, CodecGzip)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b[:HeaderSize], section...)
		binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchOverhead))
		b = resealed(b)
		if err := ForEachRecord(b, nil, func(*Record) error { t.Fatal("a record in an empty batch"); return nil }); err != nil {
			t.Fatalf("empty gzip batch with section %q: %v", section, err)
		}
	}
}

// TestAppendBatchIgnoresComputedFields checks that AppendBatch sets Magic,
// BatchLength, CRC, NumRecords and the codec bits itself.
func TestAppendBatchIgnoresComputedFields(t *testing.T) {
	h := producedHeader(2)
	h.Magic, h.BatchLength, h.CRC, h.NumRecords = 1, 5, 0xdeadbeef, 99
	h.Attributes = int16(CodecZstd) | attrTransactional
	b, err := AppendBatch(nil, h, testRecords(2, 1, 1), CodecGzip)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ValidateProduced(b, ValidateOptions{RequireKeys: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Magic != 2 || got.Size() != int64(len(b)) || got.NumRecords != 2 || got.Codec() != CodecGzip || !got.Transactional() {
		t.Fatalf("header %+v", got)
	}
}

func TestAppendBatchErrors(t *testing.T) {
	n, hs := headers(kmsg.Header{Key: "a", Value: []byte("b")})
	negative := producedHeader(1)
	negative.LastOffsetDelta = -1
	tests := []struct {
		name    string
		h       Header
		records []Record
		codec   Codec
	}{
		{"unknown codec", producedHeader(1), testRecords(1, 1, 1), Codec(5)},
		{"negative codec", producedHeader(1), testRecords(1, 1, 1), Codec(-1)},
		{"negative last offset delta", negative, testRecords(1, 1, 1), CodecNone},
		{"more headers than counted", producedHeader(1), []Record{{NumHeaders: n - 1, Headers: hs}}, CodecNone},
		{"fewer headers than counted", producedHeader(1), []Record{{NumHeaders: n + 1, Headers: hs}}, CodecNone},
		{"negative header count", producedHeader(1), []Record{{NumHeaders: -1}}, CodecNone},
		{"garbled headers", producedHeader(1), []Record{{NumHeaders: 1, Headers: []byte{0x7f}}}, CodecSnappy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := AppendBatch(dst, tt.h, tt.records, tt.codec)
			wantErr(t, err, ErrInvalidRecord)
			if !bytes.Equal(out, []byte("keep")) {
				t.Fatalf("dst became %q", out)
			}
		})
	}
}

// TestAppendBatchMatchesKmsg builds the same uncompressed batch with kmsg and
// with AppendBatch: the bytes must be identical.
func TestAppendBatchMatchesKmsg(t *testing.T) {
	records := variedRecords()
	var raw []byte
	for i := range records {
		r := &records[i]
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for rest := r.Headers; len(rest) > 0; {
			var kh kmsg.Header
			// Read one header: its length is what AppendTo writes back.
			if err := kh.ReadFrom(rest); err != nil {
				t.Fatal(err)
			}
			kr.Headers = append(kr.Headers, kh)
			rest = rest[len(kh.AppendTo(nil)):]
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // a zero Length takes one byte
		raw = kr.AppendTo(raw)
	}
	want := rawBatch(int32(len(records)), 0, raw)
	got, err := AppendBatch(nil, producedHeader(len(records)), records, CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := ParseHeader(got); g.MaxTimestamp != baseTimestamp+int64(len(records)-1) {
		t.Fatalf("max timestamp %d", g.MaxTimestamp)
	}
	// rawBatch sets MaxTimestamp to the base timestamp: align before comparing.
	copy(want[offMaxTimestamp:], got[offMaxTimestamp:offMaxTimestamp+8])
	want = resealed(want)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendBatch and kmsg differ:\n%x\n%x", got, want)
	}
}
