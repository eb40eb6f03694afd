package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

// OffsetsTopic is the internal compacted topic holding committed offsets
// and group metadata.
const OffsetsTopic = partition.OffsetsTopic

// PartitionFor returns the __consumer_offsets partition of a group
// (partition.ForKey: Kafka's abs(groupId.hashCode()) % partitions).
func PartitionFor(groupID string, partitions int32) int32 {
	return partition.ForKey(groupID, partitions)
}

// Record is a key and value (nil for a tombstone) of __consumer_offsets.
type Record struct {
	Key, Value []byte
	// Offset is the record's offset in its partition, when read from it.
	Offset int64
	// Transactional says the record is part of ProducerID's transaction:
	// a transactional offset commit, pending until the marker.
	Transactional bool
	ProducerID    int64
}

// OffsetRecord encodes a committed offset as Kafka does: an
// OffsetCommitKey v1 and an OffsetCommitValue v3.
func OffsetRecord(group, topic string, partition int32, o Offset) Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = 3, o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// OffsetTombstone deletes a committed offset.
func OffsetTombstone(group, topic string, partition int32) Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	return Record{Key: k.AppendTo(nil)}
}

// MetadataRecord encodes the group's membership as Kafka does: a
// GroupMetadataKey v2 and a GroupMetadataValue v3.
func (g *Group) MetadataRecord() Record {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, g.ID
	if g.state == Dead {
		return Record{Key: k.AppendTo(nil)}
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, g.protocolType, g.generation
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	v.CurrentStateTimestamp = g.cfg.Now().UnixMilli()
	for _, id := range g.joinOrder {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.id, m.clientID, m.host
		if m.instanceID != "" {
			vm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription, vm.Assignment = m.metadata(g.protocol), m.assignment
		v.Members = append(v.Members, vm)
	}
	return Record{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// ErrBadRecord marks a __consumer_offsets record that does not decode.
var ErrBadRecord = errors.New("coordinator: undecodable __consumer_offsets record")

// Restore applies one record of the group's partition, read at start; it
// skips records of other groups. The records come in log order; the last
// one for a key wins, as compaction will leave it.
func (g *Group) Restore(r Record) error {
	if len(r.Key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(r.Key))
	}
	switch version := int16(binary.BigEndian.Uint16(r.Key)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		if k.Group != g.ID {
			return nil
		}
		if r.Value == nil {
			g.DeleteOffset(k.Topic, k.Partition)
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		epoch := v.LeaderEpoch
		if v.Version < 3 {
			epoch = -1
		}
		o := Offset{Offset: v.Offset, LeaderEpoch: epoch, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, RecordOffset: r.Offset}
		if r.Transactional {
			g.AddPendingTxn(r.ProducerID, k.Topic, k.Partition, o)
			return nil
		}
		// NB: not Commit, which would set an expiry timer per record.
		g.offsets[topicPartition{k.Topic, k.Partition}] = o
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		if k.Group != g.ID {
			return nil
		}
		g.members, g.joinOrder, g.static = map[string]*member{}, nil, map[string]string{}
		if r.Value == nil {
			// The classic group is gone (deleted, expired, or become a
			// consumer group); its offsets have tombstones of their own.
			g.state, g.generation, g.protocol, g.protocolType, g.leader = Empty, 0, "", "", ""
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		g.protocolType, g.generation = v.ProtocolType, v.Generation
		g.protocol, g.leader = deref(v.Protocol), deref(v.Leader)
		for _, vm := range v.Members {
			m := &member{id: vm.MemberID, instanceID: deref(vm.InstanceID), clientID: vm.ClientID, host: vm.ClientHost,
				protocolType: v.ProtocolType, assignment: vm.Assignment,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}}}
			if m.rebalanceTimeout <= 0 {
				m.rebalanceTimeout = m.sessionTimeout
			}
			g.members[m.id] = m
			g.joinOrder = append(g.joinOrder, m.id)
			if m.instanceID != "" {
				g.static[m.instanceID] = m.id
			}
		}
		g.state = Empty
		if len(g.members) > 0 {
			g.state = Stable
		}
		g.emptySince = v.CurrentStateTimestamp
	case recConsumerGroup, recConsumerMember, recConsumerTargetHdr, recConsumerTarget, recConsumerCurrent:
		group, member, err := consumerKeyFields(r.Key)
		if err != nil {
			return err
		}
		if group != g.ID {
			return nil
		}
		return g.restoreConsumer(version, member, r.Key, r.Value)
	case recShareMember, recShareGroup, recShareTargetHdr, recShareTarget, recShareCurrent, recShareState:
		group, member, err := shareKeyFields(r.Key)
		if err != nil {
			return err
		}
		if group != g.ID {
			return nil
		}
		return g.restoreShare(version, member, r.Key, r.Value)
	case recStreamsGroup, recStreamsMember, recStreamsTargetHdr, recStreamsTarget, recStreamsCurrent, recStreamsTopology:
		group, member, err := streamsKeyFields(r.Key)
		if err != nil {
			return err
		}
		if group != g.ID {
			return nil
		}
		return g.restoreStreams(version, member, r.Key, r.Value)
	}
	return nil
}

// shareKeyFields decodes a share group record's key: the group id and,
// for member records, the member id.
func shareKeyFields(key []byte) (group, member string, err error) {
	rd := kbin.Reader{Src: key}
	typ := rd.Int16()
	group = rd.String()
	if shareKeyHasMember(typ) {
		member = rd.String()
	}
	if err := rd.Complete(); err != nil {
		return "", "", fmt.Errorf("%w: share group key type %d: %v", ErrBadRecord, typ, err)
	}
	return group, member, nil
}

// consumerKeyFields decodes a consumer group record's key: the group id
// and, for member records, the member id.
func consumerKeyFields(key []byte) (group, member string, err error) {
	rd := kbin.Reader{Src: key}
	typ := rd.Int16()
	group = rd.String()
	if typ != recConsumerGroup && typ != recConsumerTargetHdr {
		member = rd.String()
	}
	if err := rd.Complete(); err != nil {
		return "", "", fmt.Errorf("%w: consumer group key type %d: %v", ErrBadRecord, typ, err)
	}
	return group, member, nil
}

// recordGroup returns the group a record key belongs to, "" if it does
// not decode.
func recordGroup(key []byte) string {
	if len(key) < 2 {
		return ""
	}
	switch int16(binary.BigEndian.Uint16(key)) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) == nil {
			return k.Group
		}
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) == nil {
			return k.Group
		}
	case recConsumerGroup, recConsumerMember, recConsumerTargetHdr, recConsumerTarget, recConsumerCurrent:
		if g, _, err := consumerKeyFields(key); err == nil {
			return g
		}
	case recShareMember, recShareGroup, recShareTargetHdr, recShareTarget, recShareCurrent, recShareState:
		if g, _, err := shareKeyFields(key); err == nil {
			return g
		}
	case recStreamsGroup, recStreamsMember, recStreamsTargetHdr, recStreamsTarget, recStreamsCurrent, recStreamsTopology:
		if g, _, err := streamsKeyFields(key); err == nil {
			return g
		}
	}
	return ""
}

// Loaded ends Restore: the restored members' sessions start now, so a
// member that does not come back expires and the rest rebalance.
func (g *Group) Loaded() {
	g.loadConsumer()
	g.loadShare()
	g.loadStreams()
	for _, id := range g.joinOrder {
		g.touch(g.members[id])
	}
	if g.state == Empty && len(g.offsets) > 0 {
		// The retention runs from when the group became empty or from the
		// last commit, whichever is later, as before the restart.
		ref := g.emptySince
		for _, o := range g.offsets {
			ref = max(ref, o.CommitTimestamp)
		}
		g.scheduleExpiry(ref)
	}
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
