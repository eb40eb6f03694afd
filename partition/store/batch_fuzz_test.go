package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzz targets for the batch decoders, with kfake's invariants: no panic,
// and whatever is accepted is accepted again, identically, from a copy.
//
// The seed corpus is in testdata/fuzz/<target>/ as well as added below; the
// files are fuzzSeeds and fuzzRecordSets written out in the go fuzz corpus
// format (go test fuzz v1, then a []byte literal).

// fuzzMaxSize bounds decompression while fuzzing: nothing the fuzzer makes
// may inflate beyond it.
const fuzzMaxSize = 1 << 20

// fuzzSeeds returns small batches, valid and not, by name.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	n1, h1 := headers(kmsg.Header{Key: "h", Value: []byte("v")}, kmsg.Header{Key: "nil"})
	small := []Record{
		{OffsetDelta: 0, Key: []byte("k0"), Value: []byte("value zero")},
		{OffsetDelta: 1, TimestampDelta: 5, Key: []byte{}, Value: nil, NumHeaders: n1, Headers: h1},
		{OffsetDelta: 2, TimestampDelta: -3, Key: []byte("k2"), Value: bytes.Repeat([]byte("abc"), 20)},
	}
	build := func(h Header, records []Record, codec Codec) []byte {
		b, err := AppendBatch(nil, h, records, codec)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	for _, codec := range allCodecs {
		valid := build(producedHeader(3), small, codec)
		seeds["valid-"+codec.String()] = valid
		seeds["badcrc-"+codec.String()] = edit(valid, func(b []byte) { b[offCRC+3] ^= 0x5a })
		seeds["truncated-"+codec.String()] = valid[:len(valid)-3]
		seeds["keyless-"+codec.String()] = makeBatch(tb, 2, -1, 5, codec)
	}
	seeds["header-only"] = seeds["valid-none"][:HeaderSize]
	seeds["short-header"] = seeds["valid-none"][:HeaderSize-10]
	seeds["trailing-byte"] = append(bytes.Clone(seeds["valid-none"]), 0)
	seeds["badmagic"] = edit(seeds["valid-none"], func(b []byte) { b[offMagic] = 1 })

	idem := producedHeader(3)
	idem.ProducerID, idem.ProducerEpoch, idem.BaseSequence = 1, 0, 0
	seeds["idempotent"] = build(idem, small, CodecNone)
	ctrl := producedHeader(1)
	ctrl.Attributes = attrControl
	seeds["control"] = build(ctrl, []Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}}, CodecNone)
	seeds["empty-batch"] = build(producedHeader(1), nil, CodecNone)

	var raw []byte
	raw, _ = appendRecords(raw, small)
	seeds["xerial-snappy"] = rawBatch(3, int16(CodecSnappy), xerialFrame(raw, 64))
	gz, _ := Compress(CodecGzip, nil, raw)
	seeds["gzip-truncated-section"] = rawBatch(3, int16(CodecGzip), gz[:len(gz)-4])
	zbomb, _ := Compress(CodecZstd, nil, make([]byte, 2*fuzzMaxSize))
	seeds["zstd-bomb"] = rawBatch(3, int16(CodecZstd), zbomb)
	return seeds
}

// fuzzRecordSets returns record sets, concatenated batches, by name.
func fuzzRecordSets(tb testing.TB) map[string][]byte {
	s := fuzzSeeds(tb)
	return map[string][]byte{
		"empty":           {},
		"one":             s["valid-none"],
		"three":           bytes.Join([][]byte{s["valid-none"], s["valid-gzip"], s["keyless-none"]}, nil),
		"trailing-header": bytes.Join([][]byte{s["valid-lz4"], s["header-only"]}, nil),
		"trailing-part":   bytes.Join([][]byte{s["valid-zstd"], s["short-header"]}, nil),
		"bad-middle":      bytes.Join([][]byte{s["valid-none"], s["badmagic"], s["valid-none"]}, nil),
	}
}

// sortedKeys returns m's keys in order, so that seeds are added in a
// stable order.
func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func FuzzValidateBatch(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, k := range sortedKeys(seeds) {
		f.Add(seeds[k])
	}
	// One Decompressor per role, reused across inputs as a broker reuses
	// them, so state carried from call to call is fuzzed as well.
	dec := &Decompressor{MaxSize: fuzzMaxSize}
	dec2 := &Decompressor{MaxSize: fuzzMaxSize}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkBatch(t, data, dec, dec2)
		// Most mutations break the length or the CRC, which stops
		// validation early; fix both so that mutations reach the records.
		if len(data) >= HeaderSize && len(data)-batchOverhead <= math.MaxInt32 {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[offBatchLength:], uint32(len(fixed)-batchOverhead))
			binary.BigEndian.PutUint32(fixed[offCRC:], CRC(fixed))
			checkBatch(t, fixed, dec, dec2)
		}
	})
}

// checkBatch runs one input through ValidateProduced and ForEachRecord and
// checks their invariants.
func checkBatch(t *testing.T, data []byte, dec, dec2 *Decompressor) {
	orig := bytes.Clone(data)
	h, parseErr := ParseHeader(data)

	accepted := map[bool]bool{} // by RequireKeys
	for _, opts := range []ValidateOptions{{}, {RequireKeys: true}, {MaxBatchBytes: 200}} {
		vh, err := ValidateProduced(data, opts, dec)
		checkErrClass(t, err, ErrCorrupt, ErrInvalidRecord, ErrMessageTooLarge)
		if opts.MaxBatchBytes == 0 {
			accepted[opts.RequireKeys] = err == nil
		}
		if err != nil {
			continue
		}
		if parseErr != nil || vh != h || CheckCRC(data) != nil || h.NumRecords == 0 || h.Control() {
			t.Fatalf("accepted %+v, ParseHeader %+v %v", vh, h, parseErr)
		}
		again, err := ValidateProduced(bytes.Clone(data), opts, dec2)
		if err != nil || again != vh {
			t.Fatalf("accepted %+v; from a copy: %+v, %v", vh, again, err)
		}
		checkKmsgHeader(t, data, vh)
	}

	if accepted[true] && !accepted[false] {
		t.Fatal("accepted with keys required, refused without")
	}

	records, err := readAll(data, dec)
	checkErrClass(t, err, ErrCorrupt)
	if err != nil {
		// What ValidateProduced accepted after reading the records, the
		// walk accepts too.
		if accepted[true] || accepted[false] && h.Codec() == CodecNone {
			t.Fatalf("ValidateProduced accepted what ForEachRecord refuses: %v", err)
		}
	} else {
		checkRecordsAccepted(t, data, h, records, dec, dec2)
	}
	if !bytes.Equal(data, orig) {
		t.Fatal("the input was modified")
	}
}

// checkRecordsAccepted checks a batch whose records ForEachRecord accepted.
func checkRecordsAccepted(t *testing.T, data []byte, h Header, records []ownedRecord, dec, dec2 *Decompressor) {
	if len(records) != int(h.NumRecords) {
		t.Fatalf("%d records, header says %d", len(records), h.NumRecords)
	}
	again, err := readAll(bytes.Clone(data), dec2)
	if err != nil || len(again) != len(records) {
		t.Fatalf("from a copy: %d records, %v", len(again), err)
	}
	for i := range again {
		if !equalRecord(again[i], records[i]) {
			t.Fatalf("record %d: %v, from a copy %v", i, records[i], again[i])
		}
	}

	if h.NumRecords == 0 {
		return // the section was not looked at
	}
	// The section, decompressed, is within the bound, and kmsg reads the
	// same records from it.
	section, err := dec.Decompress(h.Codec(), data[HeaderSize:])
	if err != nil {
		t.Fatalf("records were read but the section does not decompress: %v", err)
	}
	if h.Codec() != CodecNone && len(section) > fuzzMaxSize {
		t.Fatalf("decompressed %d bytes, bound %d", len(section), fuzzMaxSize)
	}
	for i := range records {
		length, n := binary.Varint(section)
		var kr kmsg.Record
		if err := kr.ReadFrom(section[:n+int(length)]); err != nil {
			t.Fatalf("record %d: kmsg: %v", i, err)
		}
		section = section[n+int(length):]
		var hb []byte
		for j := range kr.Headers {
			hb = kr.Headers[j].AppendTo(hb)
		}
		r := records[i]
		if kr.OffsetDelta != r.OffsetDelta || kr.TimestampDelta64 != r.TimestampDelta || kr.Attributes != r.Attributes ||
			!bytes.Equal(kr.Key, r.Key) || (kr.Key == nil) != (r.Key == nil) || !bytes.Equal(kr.Value, r.Value) ||
			(kr.Value == nil) != (r.Value == nil) || len(kr.Headers) != int(r.NumHeaders) || !bytes.Equal(hb, r.Headers) {
			t.Fatalf("record %d: we read %v, kmsg %+v", i, r, kr)
		}
	}

	// Rebuilt uncompressed from what was read, the batch reads the same.
	in := make([]Record, len(records))
	for i := range records {
		in[i] = Record(records[i])
	}
	rebuilt, err := AppendBatch(nil, h, in, CodecNone)
	if err != nil {
		t.Fatalf("rebuilding: %v", err)
	}
	back, err := readAll(rebuilt, nil)
	if err != nil || len(back) != len(records) {
		t.Fatalf("rebuilt: %d records, %v", len(back), err)
	}
	for i := range back {
		if !equalRecord(back[i], records[i]) {
			t.Fatalf("rebuilt record %d: %v, want %v", i, back[i], records[i])
		}
	}
}

// checkKmsgHeader checks that kmsg reads the header we accepted the same.
func checkKmsgHeader(t *testing.T, data []byte, h Header) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(data); err != nil {
		t.Fatalf("we accepted a batch kmsg cannot read: %v", err)
	}
	theirs := Header{rb.FirstOffset, rb.Length, rb.PartitionLeaderEpoch, rb.Magic, uint32(rb.CRC), rb.Attributes,
		rb.LastOffsetDelta, rb.FirstTimestamp, rb.MaxTimestamp, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.NumRecords}
	if theirs != h {
		t.Fatalf("we read %+v, kmsg %+v", h, theirs)
	}
}

// checkErrClass checks that err is nil or wraps one of the sentinels.
func checkErrClass(t *testing.T, err error, sentinels ...error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps none of %v", err, sentinels)
}

func FuzzForEachBatch(f *testing.F) {
	sets := fuzzRecordSets(f)
	for _, k := range sortedKeys(sets) {
		f.Add(sets[k])
	}
	dec := &Decompressor{MaxSize: fuzzMaxSize}
	f.Fuzz(func(t *testing.T, data []byte) {
		walk := func(data []byte) (int, []Header, error) {
			total := 0
			var hs []Header
			err := ForEachBatch(data, func(b []byte, h Header) error {
				if len(b) == 0 || &b[0] != &data[total] || int64(len(b)) != h.Size() || cap(b) != len(b) {
					t.Fatalf("batch of %d bytes at %d for header size %d", len(b), total, h.Size())
				}
				if ph, err := ParseHeader(b); err != nil || ph != h {
					t.Fatalf("header %+v, ParseHeader %+v %v", h, ph, err)
				}
				_, _ = ValidateProduced(b, ValidateOptions{RequireKeys: true}, dec)
				total += len(b)
				hs = append(hs, h)
				return nil
			})
			return total, hs, err
		}
		total, hs, err := walk(data)
		checkErrClass(t, err, ErrCorrupt)
		if err == nil && total != len(data) {
			t.Fatalf("walked %d of %d bytes without an error", total, len(data))
		}
		if err != nil && total >= len(data) {
			t.Fatalf("error %v after walking all %d bytes", err, total)
		}
		total2, hs2, err2 := walk(bytes.Clone(data))
		if total2 != total || fmt.Sprint(err2) != fmt.Sprint(err) || len(hs2) != len(hs) {
			t.Fatalf("from a copy: %d bytes, %d batches, %v; first %d, %d, %v", total2, len(hs2), err2, total, len(hs), err)
		}
		for i := range hs {
			if hs[i] != hs2[i] {
				t.Fatalf("batch %d: %+v, from a copy %+v", i, hs[i], hs2[i])
			}
		}
	})
}
