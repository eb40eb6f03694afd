package txn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var recordCases = []*Metadata{
	{ProducerID: 7, PrevProducerID: -1, NextProducerID: -1, Epoch: 0, LastEpoch: -1, TimeoutMs: 60000,
		Status: Empty, StartMs: -1, UpdateMs: 5},
	{ProducerID: 7, PrevProducerID: 7, NextProducerID: -1, Epoch: 3, LastEpoch: -1, TimeoutMs: 1000, Status: Ongoing,
		Partitions: []TopicPartition{{"__consumer_offsets", 3}, {"a", 0}, {"a", 2}, {"b", 1}}, StartMs: 10, UpdateMs: 11},
	{ProducerID: 7, PrevProducerID: 6, NextProducerID: 8, Epoch: 32767, LastEpoch: -1, TimeoutMs: 900000,
		Status: PrepareCommit, Partitions: []TopicPartition{{"a", 0}}, StartMs: 10, UpdateMs: 12, TV2: true},
	{ProducerID: 8, PrevProducerID: 7, NextProducerID: -1, Epoch: 0, LastEpoch: -1, TimeoutMs: 900000,
		Status: CompleteAbort, StartMs: 10, UpdateMs: 13, TV2: true},
}

// TestRecordRoundTrip: what Record writes, ParseRecord reads back, but
// LastEpoch, which Kafka's record does not hold.
func TestRecordRoundTrip(t *testing.T) {
	for _, m := range recordCases {
		key, value := Record("tx", m)
		id, got, err := ParseRecord(key, value)
		if err != nil || id != "tx" || !reflect.DeepEqual(got, m) {
			t.Errorf("%s: got %q %+v %v, want %+v", m.Status, id, got, err, m)
		}
		withLast := *m
		withLast.LastEpoch = 2
		if _, got, _ := ParseRecord(Record("tx", &withLast)); got.LastEpoch != -1 {
			t.Errorf("%s: LastEpoch %d read back", m.Status, got.LastEpoch)
		}
	}
	key, value := Record("tx", nil)
	if id, m, err := ParseRecord(key, value); value != nil || id != "tx" || m != nil || err != nil {
		t.Errorf("tombstone: value %x, got %q %+v %v", value, id, m, err)
	}
}

// TestRecordFormat checks the fields as Kafka's TransactionLog writes
// them: key v0; value v1 with a null partition list for Empty, the
// KIP-890 tagged fields, ClientTransactionVersion 2 for TV2.
func TestRecordFormat(t *testing.T) {
	key, value := Record("tx", recordCases[0])
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil || k.Version != 0 || k.TransactionalID != "tx" {
		t.Fatalf("key %+v %v", k, err)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil || v.Version != 1 || v.Topics != nil {
		t.Fatalf("Empty value %+v %v", v, err)
	}
	_, value = Record("tx", recordCases[2])
	if err := v.ReadFrom(value); err != nil || v.Topics == nil || v.PreviousProducerID != 6 ||
		v.NextProducerID != 8 || v.ClientTransactionVersion != 2 || v.State != 2 {
		t.Fatalf("PrepareCommit value %+v %v", v, err)
	}
	_, value = Record("tx", recordCases[1])
	if err := v.ReadFrom(value); err != nil || len(v.Topics) != 3 || v.Topics[1].Topic != "a" ||
		!reflect.DeepEqual(v.Topics[1].Partitions, []int32{0, 2}) {
		t.Fatalf("Ongoing value %+v %v", v, err)
	}
}

func TestParseRecordErrors(t *testing.T) {
	offsetKey := kmsg.NewOffsetCommitKey()
	offsetKey.Version = 1
	if _, _, err := ParseRecord(offsetKey.AppendTo(nil), nil); !errors.Is(err, ErrNotTxnKey) {
		t.Errorf("OffsetCommitKey: %v", err)
	}
	if _, _, err := ParseRecord([]byte{0}, nil); !errors.Is(err, ErrNotTxnKey) {
		t.Errorf("short key: %v", err)
	}
	key, value := Record("tx", recordCases[1])
	for name, v := range map[string][]byte{
		"truncated": value[:len(value)-3],
		"v2":        append([]byte{0, 2}, value[2:]...),
		"empty":     {},
		"dead":      statusValue(Dead),
		"fence":     statusValue(PrepareEpochFence),
		"unknown":   statusValue(9),
	} {
		if _, _, err := ParseRecord(key, v); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s value: %v", name, err)
		}
	}
	if _, _, err := ParseRecord(key[:len(key)-1], value); !errors.Is(err, ErrBadRecord) {
		t.Errorf("truncated key: %v", err)
	}
}

func statusValue(s Status) []byte {
	m := *recordCases[1]
	m.Status = s
	_, v := Record("tx", &m)
	return v
}

// FuzzParseRecord feeds ParseRecord what a damaged log could hold: it
// returns an error or metadata that Record writes back identically, and a
// Txn restored from it loads and steps without a panic.
func FuzzParseRecord(f *testing.F) {
	for _, m := range recordCases {
		key, value := Record("tx", m)
		f.Add(key, value, false)
	}
	key, _ := Record("tx", nil)
	f.Add(key, []byte(nil), true)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		id, m, err := ParseRecord(key, value)
		if err != nil {
			return
		}
		id2, m2, err := ParseRecord(Record(id, m))
		if err != nil || id2 != id || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-parse: %q %+v %v, want %q %+v", id2, m2, err, id, m)
		}
		pids := int64(100)
		txn := New(id, Config{MaxTimeoutMs: 900000, IDExpirationMs: 1000,
			NewProducerID:    func() (int64, *kerr.Error) { pids++; return pids, nil },
			OffsetsPartition: func(string) int32 { return 0 }})
		txn.Restore(m)
		txn.Loaded(1, 0)
		if m != nil {
			for _, tp := range m.Partitions {
				txn.MarkerWritten(tp, 1)
			}
		}
		txn.Written(nil, 1)
		txn.Tick(1 << 40)
		txn.Written(nil, 1<<40)
		txn.Describe()
		txn.Ready()
	})
}
