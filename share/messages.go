package share

import (
	"github.com/skeinlog/skein/actors"
)

func init() {
	actors.Register[ReadState](210)
	actors.Register[WriteState](211)
	actors.Register[InitializeState](212)
	actors.Register[DeleteState](213)
	actors.Register[ReadSummary](214)
	actors.Register[StateResult](215)
	actors.Register[ReleaseMember](216)
}

// StateTopic is the internal topic holding share-partitions' durable state
// (Kafka's __share_group_state): snapshots and updates per Key.
const StateTopic = "__share_group_state"

// Key names one share-partition's state: a share group and one partition
// of a topic, by topic id. Its string form, Kafka's "group:topicId:partition"
// (topic id in Kafka's base64), picks the state topic's partition.
type Key struct {
	Group     string   `msgpack:"group"`
	TopicID   [16]byte `msgpack:"topic_id"`
	Partition int32    `msgpack:"partition"`
}

// Delivery states of a StateBatch, as Kafka persists them
// (ShareUpdateValue.json): acquired records are never persisted.
const (
	Available    int8 = 0
	Acknowledged int8 = 2
	Archived     int8 = 4
)

// StateBatch is the state of a range of offsets: their delivery state and
// how many times they were delivered.
type StateBatch struct {
	First int64 `msgpack:"first"`
	Last  int64 `msgpack:"last"`
	State int8  `msgpack:"state"`
	Count int16 `msgpack:"count"`
}

// Uninitialized is the StartOffset of a share-partition whose start
// offset is not decided yet: its leader picks it from
// share.auto.offset.reset at first use.
const Uninitialized int64 = -1

// The share coordinator's requests (Kafka's InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
// ReadShareGroupStateSummary, one key each). Each is sent with a request to
// node/<leader of Key's state partition>/sharestate and answered with a
// StateResult.
type (
	// InitializeState sets a share-partition's start offset in a new state
	// epoch, dropping every batch (AlterShareGroupOffsets, or a first
	// use).
	InitializeState struct {
		Origin      actors.Origin `msgpack:"origin"`
		Key         Key           `msgpack:"key"`
		StateEpoch  int32         `msgpack:"state_epoch"`
		StartOffset int64         `msgpack:"start_offset"`
	}
	// ReadState returns the state and records LeaderEpoch as the
	// share-partition's leader epoch: a later write with an older one is
	// FENCED_LEADER_EPOCH. A key without state is answered Found false.
	ReadState struct {
		Origin      actors.Origin `msgpack:"origin"`
		Key         Key           `msgpack:"key"`
		LeaderEpoch int32         `msgpack:"leader_epoch"`
	}
	// WriteState records the batches that changed since the last write
	// (an update record, or a snapshot now and then) and, unless it is
	// -1, a new start offset. Answered only once durable.
	WriteState struct {
		Origin                actors.Origin `msgpack:"origin"`
		Key                   Key           `msgpack:"key"`
		StateEpoch            int32         `msgpack:"state_epoch"`
		LeaderEpoch           int32         `msgpack:"leader_epoch"`
		StartOffset           int64         `msgpack:"start_offset"`
		DeliveryCompleteCount int32         `msgpack:"delivery_complete_count"`
		Batches               []StateBatch  `msgpack:"batches"`
	}
	// DeleteState forgets a share-partition's state (tombstones).
	DeleteState struct {
		Origin actors.Origin `msgpack:"origin"`
		Key    Key           `msgpack:"key"`
	}
	// ReadSummary returns the start offset and epochs without the batches
	// (DescribeShareGroupOffsets).
	ReadSummary struct {
		Origin actors.Origin `msgpack:"origin"`
		Key    Key           `msgpack:"key"`
	}
	// StateResult answers each of them: Code is a Kafka error code (0,
	// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, FENCED_STATE_EPOCH,
	// FENCED_LEADER_EPOCH, ...). Found is false when the key has no
	// state (or it was deleted).
	StateResult struct {
		Code                  int16        `msgpack:"code"`
		Message               string       `msgpack:"message"`
		Found                 bool         `msgpack:"found"`
		StateEpoch            int32        `msgpack:"state_epoch"`
		LeaderEpoch           int32        `msgpack:"leader_epoch"`
		StartOffset           int64        `msgpack:"start_offset"`
		DeliveryCompleteCount int32        `msgpack:"delivery_complete_count"`
		Batches               []StateBatch `msgpack:"batches"`
	}
)

func (m *InitializeState) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
func (m *ReadState) Serialize() (actors.Serialized, error)       { return actors.Encode(m) }
func (m *WriteState) Serialize() (actors.Serialized, error)      { return actors.Encode(m) }
func (m *DeleteState) Serialize() (actors.Serialized, error)     { return actors.Encode(m) }
func (m *ReadSummary) Serialize() (actors.Serialized, error)     { return actors.Encode(m) }
func (m *StateResult) Serialize() (actors.Serialized, error)     { return actors.Encode(m) }

// ReleaseMember tells a node's share-partition actors (node/<id>/shares)
// that a member left its share group or was fenced: every record it holds
// acquired there becomes available again (or is archived at the delivery
// limit). Sent by the group's coordinator to every broker, unanswered.
type ReleaseMember struct {
	Origin actors.Origin `msgpack:"origin"`
	Group  string        `msgpack:"group"`
	Member string        `msgpack:"member"`
}

func (m *ReleaseMember) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
