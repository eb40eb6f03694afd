package partition

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition/store"
)

// TestValidateAsKafka checks that a produced record set wrong in one way
// gets the code Kafka 4.2 answers for it (tests/diff found each by sending
// both brokers the same bytes): framing errors before size, size before
// CRC, CRC before contents, and the contents' errors marked for the log
// start offset.
func TestValidateAsKafka(t *testing.T) {
	good := func(baseOffset int64) []byte {
		h := store.Header{BaseOffset: baseOffset, Magic: 2, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			NumRecords: 1, BaseTimestamp: 1000, MaxTimestamp: 1000}
		b, err := store.AppendBatch(nil, h, []store.Record{{Key: []byte("k"), Value: []byte("v")}}, store.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	reseal := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	withMagic := func(m byte) []byte {
		b := good(0)
		b[16] = m
		return b
	}
	cfg := configs.DefaultTopic()
	cases := []struct {
		name     string
		records  []byte
		want     *kerr.Error
		contents bool
	}{
		{"good", good(0), nil, false},
		{"empty", nil, kerr.InvalidRecord, false},
		{"shorter than the length field", good(0)[:11], kerr.InvalidRecord, false},
		{"truncated", good(0)[:40], kerr.InvalidRecord, false},
		{"length below a record's", func() []byte { b := good(0); binary.BigEndian.PutUint32(b[8:], 13); return b }(), kerr.CorruptMessage, false},
		{"magic 1", withMagic(1), kerr.InvalidRecord, false},
		{"magic 3", withMagic(3), kerr.CorruptMessage, false},
		{"garbage", []byte(strings.Repeat("not a batch ", 8)), kerr.CorruptMessage, false},
		{"two batches", append(good(0), good(0)...), kerr.InvalidRecord, false},
		{"bad crc", func() []byte { b := good(0); b[len(b)-2] ^= 1; return b }(), kerr.CorruptMessage, false},
		{"base offset 7", reseal(good(7)), kerr.InvalidRecord, true},
	}
	for _, tc := range cases {
		_, rej := Validate(tc.records, cfg, nil)
		switch {
		case tc.want == nil && rej != nil:
			t.Errorf("%s: refused with %v (%s)", tc.name, rej.Err, rej.Message)
		case tc.want != nil && (rej == nil || rej.Err != tc.want || rej.Contents != tc.contents):
			t.Errorf("%s: got %+v, want %v (contents %v)", tc.name, rej, tc.want, tc.contents)
		}
	}
}
