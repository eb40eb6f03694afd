package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors of ParseRecord.
var (
	// ErrNotTxnKey marks a record whose key is not a TxnMetadataKey v0:
	// Kafka skips such keys when it loads the topic, and so should the
	// caller.
	ErrNotTxnKey = errors.New("txn: not a TxnMetadataKey v0")
	// ErrBadRecord marks a TxnMetadataKey record that does not decode or
	// holds what Kafka never writes: the log is corrupt.
	ErrBadRecord = errors.New("txn: undecodable __transaction_state record")
)

// clientTV2 is Kafka's TransactionVersion.TV_2 feature level, written in
// ClientTransactionVersion (TV_0, 0, for older clients).
const clientTV2 = 2

// Record encodes a transactional id's state as Kafka does: the key a
// kmsg.TxnMetadataKey v0, the value a kmsg.TxnMetadataValue v1 (flexible,
// with the tagged PreviousProducerID, NextProducerID and
// ClientTransactionVersion of KIP-890). A nil m is the tombstone of an
// expired id: a nil value.
//
// NB: Kafka writes v0 until the transaction.version feature is 1 or more;
// Skein always writes v1, which Kafka 3.5+ reads.
func Record(id string, m *Metadata) (key, value []byte) {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	key = k.AppendTo(nil)
	if m == nil {
		return key, nil
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 1
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.ProducerID, m.Epoch, m.TimeoutMs
	v.State = kmsg.TransactionState(m.Status)
	v.LastUpdateTimestamp, v.StartTimestamp = m.UpdateMs, m.StartMs
	v.PreviousProducerID, v.NextProducerID = m.PrevProducerID, m.NextProducerID
	if m.TV2 {
		v.ClientTransactionVersion = clientTV2
	}
	// Kafka writes a null partition list for Empty, a list otherwise.
	if m.Status != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.Partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			t := &v.Topics[len(v.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
	}
	return key, v.AppendTo(nil)
}

// ParseRecord decodes one record of __transaction_state. m is nil for a
// tombstone (a nil value). A key that is not a TxnMetadataKey v0 returns
// ErrNotTxnKey; a value that does not decode, or whose status Kafka never
// writes (Dead, PrepareEpochFence, unknown), ErrBadRecord. LastEpoch is
// always -1: Kafka's record does not hold it.
func ParseRecord(key, value []byte) (id string, m *Metadata, err error) {
	if len(key) < 2 || binary.BigEndian.Uint16(key) != 0 {
		return "", nil, ErrNotTxnKey
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	// NB: kmsg decodes any version; Kafka knows values v0 and v1 only.
	if len(value) < 2 || binary.BigEndian.Uint16(value) > 1 {
		return "", nil, fmt.Errorf("%w: value of %d bytes, not a TxnMetadataValue v0 or v1", ErrBadRecord, len(value))
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: value: %v", ErrBadRecord, err)
	}
	st := Status(v.State)
	if st < Empty || st > CompleteAbort {
		return "", nil, fmt.Errorf("%w: status %v is never written", ErrBadRecord, st)
	}
	m = &Metadata{
		ProducerID: v.ProducerID, PrevProducerID: v.PreviousProducerID, NextProducerID: v.NextProducerID,
		Epoch: v.ProducerEpoch, LastEpoch: -1, TimeoutMs: v.TimeoutMillis, Status: st,
		StartMs: v.StartTimestamp, UpdateMs: v.LastUpdateTimestamp,
		TV2: v.ClientTransactionVersion >= clientTV2,
	}
	// As Kafka's readTxnRecordValue: an Empty transaction has no
	// partitions, whatever the record lists.
	if st != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.Partitions = append(m.Partitions, TopicPartition{t.Topic, p})
			}
		}
		m.Partitions = normalize(m.Partitions)
	}
	return k.TransactionalID, m, nil
}
