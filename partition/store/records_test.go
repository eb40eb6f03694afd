package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ownedRecord is a Record with its slices copied out of the batch.
type ownedRecord Record

func own(r *Record) ownedRecord {
	return ownedRecord{
		Attributes:     r.Attributes,
		TimestampDelta: r.TimestampDelta,
		OffsetDelta:    r.OffsetDelta,
		Key:            clonePreservingNil(r.Key),
		Value:          clonePreservingNil(r.Value),
		NumHeaders:     r.NumHeaders,
		Headers:        bytes.Clone(r.Headers),
	}
}

func clonePreservingNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func (r ownedRecord) String() string {
	return fmt.Sprintf("{attrs %d ts %d off %d key %q value %q headers %d %x}",
		r.Attributes, r.TimestampDelta, r.OffsetDelta, r.Key, r.Value, r.NumHeaders, r.Headers)
}

// equalRecord compares two records, telling null from empty.
func equalRecord(a, b ownedRecord) bool {
	return a.Attributes == b.Attributes && a.TimestampDelta == b.TimestampDelta &&
		a.OffsetDelta == b.OffsetDelta && (a.Key == nil) == (b.Key == nil) &&
		bytes.Equal(a.Key, b.Key) && (a.Value == nil) == (b.Value == nil) &&
		bytes.Equal(a.Value, b.Value) && a.NumHeaders == b.NumHeaders && bytes.Equal(a.Headers, b.Headers)
}

// readAll returns b's records, copied.
func readAll(b []byte, dec *Decompressor) ([]ownedRecord, error) {
	var out []ownedRecord
	err := ForEachRecord(b, dec, func(r *Record) error {
		out = append(out, own(r))
		return nil
	})
	return out, err
}

func checkRecords(t *testing.T, got []ownedRecord, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if w := own(&want[i]); !equalRecord(got[i], w) {
			t.Fatalf("record %d = %v\nwant %v", i, got[i], w)
		}
	}
}

// variedRecords covers the shapes a record takes: null and empty keys and
// values, headers with null and empty values, negative and large timestamp
// deltas, a set attribute byte, and values large enough to span several
// xerial (32 KiB) and LZ4 (64 KiB) blocks.
func variedRecords() []Record {
	n1, h1 := headers(kmsg.Header{Key: "trace", Value: []byte("abc")})
	n2, h2 := headers(kmsg.Header{Key: "", Value: nil}, kmsg.Header{Key: "k", Value: []byte{}}, kmsg.Header{Key: "big", Value: pattern(9, 300)})
	return []Record{
		{OffsetDelta: 0, TimestampDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
		{OffsetDelta: 1, TimestampDelta: -5, Key: nil, Value: []byte("null key")},
		{OffsetDelta: 2, TimestampDelta: 1 << 40, Key: []byte{}, Value: nil},
		{OffsetDelta: 3, Attributes: 0x7f, Key: []byte("tombstone"), Value: nil, NumHeaders: n1, Headers: h1},
		{OffsetDelta: 4, TimestampDelta: 3, Key: pattern(4, 200), Value: pattern(5, 150_000), NumHeaders: n2, Headers: h2},
		{OffsetDelta: 5, TimestampDelta: -1 << 40, Key: []byte("last"), Value: []byte{}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		for _, tc := range []struct {
			name    string
			records []Record
		}{
			{"varied", variedRecords()},
			{"one", testRecords(1, 1, 1)},
			{"many small", testRecords(1000, 8, 20)},
			{"empty keys and values", testRecords(50, 0, 0)},
		} {
			t.Run(codec.String()+"/"+tc.name, func(t *testing.T) {
				h := producedHeader(len(tc.records))
				b, err := AppendBatch([]byte("prefix"), h, tc.records, codec)
				if err != nil {
					t.Fatal(err)
				}
				if string(b[:6]) != "prefix" {
					t.Fatal("AppendBatch changed dst's contents")
				}
				b = b[6:]
				dec := NewDecompressor()
				got, err := ValidateProduced(b, ValidateOptions{MaxBatchBytes: len(b)}, dec)
				if err != nil {
					t.Fatal(err)
				}
				if got.Codec() != codec || got.NumRecords != int32(len(tc.records)) || got.Size() != int64(len(b)) {
					t.Fatalf("header %+v", got)
				}
				records, err := readAll(b, dec)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, records, tc.records)
				// Again with the same Decompressor, and with none.
				for _, dec := range []*Decompressor{dec, nil} {
					if again, err := readAll(b, dec); err != nil || len(again) != len(records) {
						t.Fatalf("second read: %d records, %v", len(again), err)
					}
				}
			})
		}
	}
}

// TestForEachRecordStops checks that fn's error ends the walk and is
// returned as it is.
func TestForEachRecordStops(t *testing.T) {
	b := makeBatch(t, 5, 3, 3, CodecNone)
	stop := errors.New("stop")
	calls := 0
	err := ForEachRecord(b, nil, func(*Record) error {
		if calls++; calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

// TestForEachRecordAllocs guards the record walk: an uncompressed batch is
// iterated without allocating when a Decompressor lends its scratch Record.
func TestForEachRecordAllocs(t *testing.T) {
	b := makeBatch(t, 16, 16, 1000, CodecNone)
	dec := NewDecompressor()
	var sum int
	fn := func(r *Record) error { sum += len(r.Value); return nil }
	n := testing.AllocsPerRun(100, func() {
		if err := ForEachRecord(b, dec, fn); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("ForEachRecord allocates %v times per batch", n)
	}
}

// Hand-made records for the framing checks, as zigzag varints.
func vi(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendVarint(b, v)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rec frames a record body with its length.
func rec(body []byte) []byte { return cat(vi(int64(len(body))), body) }

// body is a record body: attributes, timestamp delta and offset delta, then
// the rest as given.
func body(offsetDelta int64, rest ...[]byte) []byte {
	return cat(append([][]byte{{0}, vi(0, offsetDelta)}, rest...)...)
}

func TestRecordFraming(t *testing.T) {
	key := cat(vi(1), []byte("k"))
	value := cat(vi(1), []byte("v"))
	ok := rec(body(0, key, value, vi(0)))
	tests := []struct {
		name       string
		numRecords int32
		records    []byte
		want       error
	}{
		{"valid", 1, ok, nil},
		{"valid with headers", 1, rec(body(0, key, value, vi(2, 1), []byte("a"), vi(-1), vi(0, 2), []byte("xy"))), nil},
		{"valid null key and value", 1, rec(body(0, vi(-1, -1, 0))), nil},
		{"valid non-minimal varint", 1, cat([]byte{0x80 | byte(2*len(body(0, key, value, vi(0)))), 0x00}, body(0, key, value, vi(0))), nil},

		{"no records section", 1, nil, ErrCorrupt},
		{"fewer records than counted", 2, ok, ErrCorrupt},
		{"more records than counted", 1, cat(ok, rec(body(1, key, value, vi(0)))), ErrCorrupt},
		{"trailing byte", 1, cat(ok, []byte{0}), ErrCorrupt},
		{"count beyond what fits", 1 << 30, ok, ErrCorrupt},

		{"negative record length", 1, cat(vi(-1), body(0, key, value, vi(0))), ErrCorrupt},
		{"record length past the end", 1, cat(vi(100), body(0, key, value, vi(0))), ErrCorrupt},
		{"record length short of its fields", 1, cat(vi(int64(len(body(0, key, value, vi(0)))-1)), body(0, key, value, vi(0))), ErrCorrupt},
		{"record length beyond its fields", 1, rec(body(0, key, value, vi(0), []byte{0})), ErrCorrupt},
		{"empty record", 1, cat(vi(0), make([]byte, 6)), ErrCorrupt},
		{"truncated record length varint", 1, []byte{0x80}, ErrCorrupt},
		{"six byte varint", 1, cat([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, body(0, vi(-1, -1, 0))), ErrCorrupt},
		{"five byte varint over 32 bits", 1, cat([]byte{0x80, 0x80, 0x80, 0x80, 0x10}, body(0, vi(-1, -1, 0))), ErrCorrupt},
		{"timestamp varlong too long", 1, rec(cat([]byte{0}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}, vi(0, -1, -1, 0))), ErrCorrupt},

		{"key length -2", 1, rec(body(0, vi(-2), value, vi(0))), ErrCorrupt},
		{"key past the record", 1, rec(body(0, vi(50), []byte("k"), value, vi(0))), ErrCorrupt},
		{"value length -2", 1, rec(body(0, key, vi(-2), vi(0))), ErrCorrupt},
		{"value past the record", 1, rec(body(0, key, vi(5), []byte("v"), vi(0))), ErrCorrupt},
		{"missing header count", 1, rec(body(0, key, value)), ErrCorrupt},
		{"negative header count", 1, rec(body(0, key, value, vi(-1))), ErrCorrupt},
		{"header count beyond what fits", 1, rec(body(0, key, value, vi(3), vi(0, 0))), ErrCorrupt},
		{"null header key", 1, rec(body(0, key, value, vi(1, -1, 0))), ErrCorrupt},
		{"header key past the record", 1, rec(body(0, key, value, vi(1, 9, 0))), ErrCorrupt},
		{"header value length -2", 1, rec(body(0, key, value, vi(1, 0, -2))), ErrCorrupt},
		{"header value past the record", 1, rec(body(0, key, value, vi(1, 0, 4), []byte("ab"))), ErrCorrupt},
		{"fewer headers than counted", 1, rec(body(0, key, value, vi(2, 0, 0))), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := rawBatch(tt.numRecords, 0, tt.records)
			_, err := readAll(b, nil)
			wantErr(t, err, tt.want)
			_, verr := ValidateProduced(b, ValidateOptions{}, nil)
			wantErr(t, verr, tt.want)

			// The same records compressed fail the same way when the
			// broker looks inside.
			z, err := Compress(CodecZstd, nil, tt.records)
			if err != nil {
				t.Fatal(err)
			}
			zb := rawBatch(tt.numRecords, int16(CodecZstd), z)
			_, err = readAll(zb, nil)
			wantErr(t, err, tt.want)
			want := tt.want
			if want == nil && strings.Contains(tt.name, "null key") {
				want = ErrInvalidRecord // a keyless record on a compacted topic
			}
			_, err = ValidateProduced(zb, ValidateOptions{RequireKeys: true}, nil)
			wantErr(t, err, want)
		})
	}
}

// TestKmsgBuiltBatch reads a batch that kmsg encoded, CRC filled in: its
// header and records must come out as kmsg wrote them.
func TestKmsgBuiltBatch(t *testing.T) {
	krecs := []kmsg.Record{
		{Key: []byte("a"), Value: []byte("one"), TimestampDelta64: 0, OffsetDelta: 0},
		{Key: nil, Value: nil, TimestampDelta64: -7, OffsetDelta: 1, Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
		{Key: []byte{}, Value: pattern(3, 5000), TimestampDelta64: 1 << 35, OffsetDelta: 2, Attributes: 1},
	}
	var raw []byte
	for i := range krecs {
		r := &krecs[i]
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the one byte length itself does not count
		raw = r.AppendTo(raw)
	}
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			section, err := Compress(codec, nil, raw)
			if err != nil {
				t.Fatal(err)
			}
			b := rawBatch(int32(len(krecs)), int16(codec), section)
			h, err := ValidateProduced(b, ValidateOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.NumRecords != 3 || h.Codec() != codec || h.BaseTimestamp != baseTimestamp {
				t.Fatalf("header %+v", h)
			}
			got, err := readAll(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(krecs) {
				t.Fatalf("%d records", len(got))
			}
			for i, g := range got {
				k := &krecs[i]
				var hb []byte
				for j := range k.Headers {
					hb = k.Headers[j].AppendTo(hb)
				}
				want := ownedRecord{Attributes: k.Attributes, TimestampDelta: k.TimestampDelta64, OffsetDelta: k.OffsetDelta,
					Key: k.Key, Value: k.Value, NumHeaders: int32(len(k.Headers)), Headers: hb}
				if !equalRecord(g, want) {
					t.Fatalf("record %d = %v\nwant %v", i, g, want)
				}
			}
		})
	}
}

// TestKmsgReadsOurBatch reads what AppendBatch writes with kmsg.
func TestKmsgReadsOurBatch(t *testing.T) {
	records := variedRecords()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			h := producedHeader(len(records))
			h.BaseOffset, h.PartitionLeaderEpoch = 1000, 4
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = 99, 2, 17
			h.Attributes = attrTransactional
			b, err := AppendBatch(nil, h, records, codec)
			if err != nil {
				t.Fatal(err)
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			ours, _ := ParseHeader(b)
			theirs := Header{rb.FirstOffset, rb.Length, rb.PartitionLeaderEpoch, rb.Magic, uint32(rb.CRC), rb.Attributes,
				rb.LastOffsetDelta, rb.FirstTimestamp, rb.MaxTimestamp, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.NumRecords}
			if ours != theirs {
				t.Fatalf("kmsg read %+v\nwe read %+v", theirs, ours)
			}
			section, err := new(Decompressor).Decompress(codec, rb.Records)
			if err != nil {
				t.Fatal(err)
			}
			for i := range records {
				length, n := binary.Varint(section)
				var kr kmsg.Record
				if err := kr.ReadFrom(section[:n+int(length)]); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				section = section[n+int(length):]
				r := &records[i]
				if kr.OffsetDelta != r.OffsetDelta || kr.TimestampDelta64 != r.TimestampDelta || kr.Attributes != r.Attributes ||
					!bytes.Equal(kr.Key, r.Key) || (kr.Key == nil) != (r.Key == nil) ||
					!bytes.Equal(kr.Value, r.Value) || (kr.Value == nil) != (r.Value == nil) || len(kr.Headers) != int(r.NumHeaders) {
					t.Fatalf("record %d: kmsg read %+v", i, kr)
				}
				var hb []byte
				for j := range kr.Headers {
					hb = kr.Headers[j].AppendTo(hb)
				}
				if !bytes.Equal(hb, r.Headers) {
					t.Fatalf("record %d headers: kmsg read %+v", i, kr.Headers)
				}
			}
			if len(section) != 0 {
				t.Fatalf("%d bytes left after the records", len(section))
			}
		})
	}
}

func BenchmarkForEachRecord(b *testing.B) {
	for _, codec := range allCodecs {
		b.Run(codec.String(), func(b *testing.B) {
			batch := makeBatch(b, 16, 16, 1024-16, codec)
			dec := NewDecompressor()
			var n int
			fn := func(r *Record) error { n += len(r.Value); return nil }
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ForEachRecord(batch, dec, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzScanRecord holds validateRecords' fast path to readRecord: whatever
// scanRecord accepts, readRecord accepts too, with the same size, offset
// delta and key nullness; what it declines goes to readRecord anyway.
func FuzzScanRecord(f *testing.F) {
	key, value := cat(vi(1), []byte("k")), cat(vi(1), []byte("v"))
	for _, seed := range [][]byte{
		rec(body(0, key, value, vi(0))),
		rec(body(1500, vi(-1), vi(100), make([]byte, 100), vi(0))),
		rec(body(0, vi(-1, -1, 0))),
		rec(body(0, vi(0, 0, 0))),
		rec(body(0, key, value, vi(1, 1), []byte("a"), vi(-1))),
		cat([]byte{0x80 | byte(2*len(body(0, key, value, vi(0)))), 0x00}, body(0, key, value, vi(0))),
		rec(body(0, key, value, vi(0), []byte{0})),
		rec(body(0, vi(-2), value, vi(0))),
		rec(cat([]byte{0}, vi(-70000, 3), key, value, vi(0))),
		rec(body(0, vi(9000), make([]byte, 9000), value, vi(0))),
		{0x80},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, offsetDelta, nullKey, ok := scanRecord(data)
		if !ok {
			return
		}
		var r Record
		rn, err := readRecord(data, &r)
		if err != nil {
			t.Fatalf("scanRecord accepted what readRecord refuses: %v", err)
		}
		if n != rn || offsetDelta != r.OffsetDelta || nullKey != (r.Key == nil) {
			t.Fatalf("scanRecord: size %d, offset delta %d, null key %v; readRecord: %d, %d, %v",
				n, offsetDelta, nullKey, rn, r.OffsetDelta, r.Key == nil)
		}
	})
}

// TestScanRecordTakesProducedRecords: the fast path takes the records
// producers send (no headers, fields under two varint bytes), so the
// produce path does not fall back to readRecord for them.
func TestScanRecordTakesProducedRecords(t *testing.T) {
	for _, r := range testRecords(2000, -1, 100) {
		b, err := appendRecords(nil, []Record{r})
		if err != nil {
			t.Fatal(err)
		}
		if n, offsetDelta, nullKey, ok := scanRecord(b); !ok || n != len(b) || offsetDelta != r.OffsetDelta || !nullKey {
			t.Fatalf("record %d: scanRecord = %d, %d, %v, %v", r.OffsetDelta, n, offsetDelta, nullKey, ok)
		}
	}
}
