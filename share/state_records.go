package share

// The records of __share_group_state, in Kafka's formats
// (share-coordinator/src/main/resources/common/message/Share*.json, Kafka
// 4.2), encoded with kbin since kmsg does not carry them. A record's key
// is the record type (Kafka's coordinator-key apiKey, written where an
// older key's version was) and the share-partition it is about; its value
// is a flexible struct of version 0:
//
//	key (not flexible), both types:
//	+--------+------------------+-------------+-------------+
//	| int16  | int16 len + utf8 | 16 bytes    | int32       |
//	| type   | GroupId          | TopicId     | Partition   |
//	+--------+------------------+-------------+-------------+
//	  type 0 = ShareSnapshot, 1 = ShareUpdate
//
//	ShareSnapshotValue v0:
//	  int16 version (0)
//	  int32 SnapshotEpoch, int32 StateEpoch, int32 LeaderEpoch,
//	  int64 StartOffset, int64 CreateTimestamp, int64 WriteTimestamp,
//	  StateBatches: uvarint count+1, each
//	    int64 FirstOffset, int64 LastOffset, int8 DeliveryState,
//	    int16 DeliveryCount, tagged fields (none)
//	  tagged fields: tag 0 DeliveryCompleteCount int32 (KIP-1226, Kafka
//	    4.2), written only when not its default -1
//
//	ShareUpdateValue v0:
//	  int16 version (0)
//	  int32 SnapshotEpoch, int32 LeaderEpoch, int64 StartOffset (-1: not
//	  changed), StateBatches (as above, only the ranges that changed),
//	  tagged fields: tag 0 DeliveryCompleteCount as above
//
// A snapshot holds a share-partition's whole state; an update holds what
// changed since, and is read on top of the last snapshot (state.go,
// replay). A tombstone (a key with a null value) forgets the
// share-partition (DeleteShareGroupState).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The record types of __share_group_state (ShareSnapshotKey.json,
// ShareUpdateKey.json: "apiKey" 0 and 1).
const (
	recSnapshot int16 = 0
	recUpdate   int16 = 1
)

// Record is one record of __share_group_state, decoded. Value nil is a
// tombstone.
type Record struct {
	Key      Key
	Snapshot bool // ShareSnapshot; else ShareUpdate
	Value    *Value
}

// Value is a ShareSnapshotValue or a ShareUpdateValue. An update has no
// StateEpoch nor timestamps (they are zero here and not encoded), and its
// StartOffset is -1 when it does not change it.
type Value struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: not known (Kafka before 4.2)
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []StateBatch
}

// ErrNotStateKey is returned by ParseRecord for a key of a type it does
// not know: a later Kafka's record, skipped as Kafka's
// CoordinatorRecordSerde skips an unknown type.
var ErrNotStateKey = errors.New("share: not a share state record type")

// ErrCorruptRecord marks a record whose bytes do not decode as its type
// says: a damaged log or a format this version does not read. The loader
// skips it and counts it.
var ErrCorruptRecord = errors.New("share: corrupt share state record")

// EncodeRecord returns the key and value bytes of r (value nil for a
// tombstone).
func EncodeRecord(r Record) (key, value []byte) {
	typ := recUpdate
	if r.Snapshot {
		typ = recSnapshot
	}
	key = kbin.AppendInt16(nil, typ)
	key = kbin.AppendString(key, r.Key.Group)
	key = kbin.AppendUuid(key, r.Key.TopicID)
	key = kbin.AppendInt32(key, r.Key.Partition)
	if r.Value == nil {
		return key, nil
	}
	v := r.Value
	value = kbin.AppendInt16(nil, 0)
	value = kbin.AppendInt32(value, v.SnapshotEpoch)
	if r.Snapshot {
		value = kbin.AppendInt32(value, v.StateEpoch)
	}
	value = kbin.AppendInt32(value, v.LeaderEpoch)
	value = kbin.AppendInt64(value, v.StartOffset)
	if r.Snapshot {
		value = kbin.AppendInt64(value, v.CreateTimestamp)
		value = kbin.AppendInt64(value, v.WriteTimestamp)
	}
	value = kbin.AppendCompactArrayLen(value, len(v.Batches))
	for _, b := range v.Batches {
		value = kbin.AppendInt64(value, b.First)
		value = kbin.AppendInt64(value, b.Last)
		value = kbin.AppendInt8(value, b.State)
		value = kbin.AppendInt16(value, b.Count)
		value = kbin.AppendUvarint(value, 0) // the batch's tagged fields
	}
	// NB: a tagged field with its default value is not written, as
	// Kafka's generated code does; a reader of Kafka before 4.2 skips the
	// tag it does not know.
	if v.DeliveryCompleteCount == -1 {
		return key, kbin.AppendUvarint(value, 0)
	}
	value = kbin.AppendUvarint(value, 1)
	value = kbin.AppendUvarint(value, 0)
	value = kbin.AppendUvarint(value, 4)
	return key, kbin.AppendInt32(value, v.DeliveryCompleteCount)
}

// ParseRecord decodes a record of __share_group_state: ErrNotStateKey for
// a type it does not know, an error wrapping ErrCorruptRecord for bytes
// that do not decode. It never panics and keeps no reference to key or
// value.
func ParseRecord(key, value []byte) (Record, error) {
	var r Record
	if len(key) < 2 {
		return r, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch typ := int16(binary.BigEndian.Uint16(key)); typ {
	case recSnapshot:
		r.Snapshot = true
	case recUpdate:
	default:
		return r, fmt.Errorf("%w: type %d", ErrNotStateKey, typ)
	}
	kr := kbin.Reader{Src: key[2:]}
	r.Key.Group = kr.String()
	r.Key.TopicID = kr.Uuid()
	r.Key.Partition = kr.Int32()
	if err := complete(&kr); err != nil {
		return r, fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	if value == nil {
		return r, nil
	}
	vr := kbin.Reader{Src: value}
	if version := vr.Int16(); vr.Ok() && version != 0 {
		return r, fmt.Errorf("%w: value version %d", ErrCorruptRecord, version)
	}
	v := &Value{DeliveryCompleteCount: -1}
	v.SnapshotEpoch = vr.Int32()
	if r.Snapshot {
		v.StateEpoch = vr.Int32()
	}
	v.LeaderEpoch = vr.Int32()
	v.StartOffset = vr.Int64()
	if r.Snapshot {
		v.CreateTimestamp = vr.Int64()
		v.WriteTimestamp = vr.Int64()
	}
	n := vr.CompactArrayLen()
	// NB: each batch takes 20 bytes at least, so a count the bytes left
	// cannot hold is corrupt: no allocation follows a damaged length.
	if n < 0 || int(n) > len(vr.Src)/20 {
		return r, fmt.Errorf("%w: %d state batches in %d bytes", ErrCorruptRecord, n, len(vr.Src))
	}
	if n > 0 {
		v.Batches = make([]StateBatch, 0, n)
	}
	for ; n > 0 && vr.Ok(); n-- {
		b := StateBatch{First: vr.Int64(), Last: vr.Int64(), State: vr.Int8(), Count: vr.Int16()}
		skipTags(&vr)
		v.Batches = append(v.Batches, b)
	}
	readTags(&vr, func(tag uint32, field []byte) {
		if tag == 0 && len(field) == 4 {
			v.DeliveryCompleteCount = int32(binary.BigEndian.Uint32(field))
		}
	})
	if err := complete(&vr); err != nil {
		return r, fmt.Errorf("%w: value: %v", ErrCorruptRecord, err)
	}
	r.Value = v
	return r, nil
}

// complete says whether rd read all its bytes and no more.
func complete(rd *kbin.Reader) error {
	if err := rd.Complete(); err != nil {
		return err
	}
	if len(rd.Src) > 0 {
		return fmt.Errorf("%d bytes after the end", len(rd.Src))
	}
	return nil
}

// readTags reads a flexible struct's tagged fields, calling fn with each.
func readTags(rd *kbin.Reader, fn func(tag uint32, field []byte)) {
	for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
		tag, size := rd.Uvarint(), rd.Uvarint()
		if field := rd.Span(int(size)); fn != nil && rd.Ok() {
			fn(tag, field)
		}
	}
}

func skipTags(rd *kbin.Reader) { readTags(rd, nil) }
