package coordinator

// Persistence of share groups (KIP-932): the records Kafka's group
// coordinator writes to __consumer_offsets for them, in Kafka's formats
// (group-coordinator/src/main/resources/common/message/ShareGroup*.json),
// encoded with kbin as the consumer groups' (consumer_records.go):
//
//	key type 10  ShareGroupMemberMetadata            a member's rack, client and subscription
//	key type 11  ShareGroupMetadata                  group epoch, metadata hash
//	key type 12  ShareGroupTargetAssignmentMetadata  the target's epoch
//	key type 13  ShareGroupTargetAssignmentMember    a member's target
//	key type 14  ShareGroupCurrentMemberAssignment   a member's epochs and partitions
//	key type 15  ShareGroupStatePartitionMetadata    the topic partitions with share state
//
// Keys are the type, the group id and (10, 13, 14) the member id, as
// int16-length strings; values are version 0, flexible. As for consumer
// groups, persistShare writes the difference between the group in memory
// and what was last written, tombstones for what is gone, the group's
// records after its members'. A tombstone of the group record (type 11)
// deletes the whole share group when replayed, and so does the index.
//
// ShareGroupStatePartitionMetadata lists the initialized partitions by
// topic id and name (InitializingTopics and DeletingTopics stay empty:
// Skein's share coordinator creates a partition's state when its
// share-partition first needs it, so there is no initializing phase to
// remember).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Kafka's record types (the key's version) for share groups.
const (
	recShareMember    = 10
	recShareGroup     = 11
	recShareTargetHdr = 12
	recShareTarget    = 13
	recShareCurrent   = 14
	recShareState     = 15
)

// isShareType reports whether a key type is a share group's.
func isShareType(typ int16) bool { return typ >= recShareMember && typ <= recShareState }

// shareKeyHasMember reports whether a share record's key names a member.
func shareKeyHasMember(typ int16) bool {
	return typ == recShareMember || typ == recShareTarget || typ == recShareCurrent
}

// persistShare returns the records that bring the log in line with the
// share group in memory.
func (g *Group) persistShare() []Record {
	s := g.share
	if !s.exists && len(s.persisted.values) == 0 {
		return nil // never a share group
	}
	now := g.shareValues()
	var out []Record
	var gone []string
	for k := range s.persisted.values {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, func(a, b string) int { return compareShareKeys([]byte(a), []byte(b)) })
	for _, k := range gone {
		out = append(out, Record{Key: []byte(k)})
		delete(s.persisted.values, k)
	}
	keys := make([]string, 0, len(now))
	for k, v := range now {
		if old, ok := s.persisted.values[k]; !ok || !bytes.Equal(old, v) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return -compareShareKeys([]byte(a), []byte(b)) })
	for _, k := range keys {
		out = append(out, Record{Key: []byte(k), Value: now[k]})
		s.persisted.values[k] = now[k]
	}
	return out
}

// shareOrder ranks share record types as Kafka writes a group: members'
// records, then the group's, so that a tombstone of the group comes last
// and a new group's record first (reversed for values).
var shareOrder = map[int16]int{recShareCurrent: 0, recShareTarget: 1, recShareMember: 2, recShareTargetHdr: 3, recShareState: 4, recShareGroup: 5}

// compareShareKeys orders tombstones: members' records before the
// group's, then by key bytes. Values are written in the reverse order.
func compareShareKeys(a, b []byte) int {
	ta, tb := shareOrder[int16(binary.BigEndian.Uint16(a))], shareOrder[int16(binary.BigEndian.Uint16(b))]
	if ta != tb {
		return ta - tb
	}
	return bytes.Compare(a, b)
}

// ShareTombstones deletes an empty share group: it returns the tombstones
// of its records, none for a group that is not a share group.
func (g *Group) ShareTombstones() []Record {
	g.share.deleted = true
	return g.persistShare()
}

// shareValues encodes the share group as it is now, by key. A deleted
// group has none.
func (g *Group) shareValues() map[string][]byte {
	s := g.share
	out := map[string][]byte{}
	if !s.exists || s.deleted {
		return out
	}
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, s.epoch)
	b = kbin.AppendInt64(b, s.metadataHash())
	out[string(consumerKey(recShareGroup, g.ID, "", false))] = appendTags(b)
	out[string(consumerKey(recShareTargetHdr, g.ID, "", false))] =
		appendTags(kbin.AppendInt32(kbin.AppendInt16(nil, 0), s.targetEpoch))
	out[string(consumerKey(recShareState, g.ID, "", false))] = s.stateValue()
	for id, m := range s.members {
		mb := kbin.AppendInt16(nil, 0)
		mb = kbin.AppendCompactNullableString(mb, nullable(m.rack))
		mb = kbin.AppendCompactString(mb, m.clientID)
		mb = kbin.AppendCompactString(mb, m.host)
		mb = kbin.AppendCompactArrayLen(mb, len(m.subscribed))
		for _, t := range m.subscribed {
			mb = kbin.AppendCompactString(mb, t)
		}
		out[string(consumerKey(recShareMember, g.ID, id, true))] = appendTags(mb)
		out[string(consumerKey(recShareTarget, g.ID, id, true))] =
			appendTags(s.appendPartitions(kbin.AppendInt16(nil, 0), s.target[id]))
		cb := kbin.AppendInt16(nil, 0)
		cb = kbin.AppendInt32(cb, m.epoch)
		cb = kbin.AppendInt32(cb, m.prevEpoch)
		cb = kbin.AppendInt8(cb, memberStable) // no revocation in a share group
		out[string(consumerKey(recShareCurrent, g.ID, id, true))] = appendTags(s.appendPartitions(cb, m.assigned))
	}
	return out
}

// stateValue is ShareGroupStatePartitionMetadataValue: the initialized
// partitions by topic (id, name, partitions, CreateTimestamp 0).
func (s *shareGroup) stateValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactArrayLen(b, 0) // InitializingTopics
	names, parts := s.initialized.sorted()
	b = kbin.AppendCompactArrayLen(b, len(names))
	for _, t := range names {
		b = kbin.AppendUuid(b, s.topicIDs[t])
		b = kbin.AppendCompactString(b, t)
		b = kbin.AppendCompactArrayLen(b, len(parts[t]))
		for _, p := range parts[t] {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendInt64(b, 0)
		b = appendTags(b)
	}
	b = kbin.AppendCompactArrayLen(b, 0) // DeletingTopics
	return appendTags(b)
}

func (s *shareGroup) appendPartitions(b []byte, set tpSet) []byte {
	c := consumerGroup{topicIDs: s.topicIDs}
	return c.appendPartitions(b, set)
}

// metadataHash hashes the subscribed topics' ids and partition counts, as
// the consumer groups' (consumer_records.go).
func (s *shareGroup) metadataHash() int64 {
	h := fnv.New64a()
	for _, t := range SortedTopics(topicsOf(s.subscribed)) {
		id := s.topicIDs[t]
		_, _ = h.Write([]byte(t))
		_, _ = h.Write(id[:])
		_, _ = h.Write(binary.BigEndian.AppendUint32(nil, uint32(s.subscribed[t])))
	}
	return int64(h.Sum64())
}

// shareRestore collects a share group's records while the group's
// partition is read; loadShare builds the group from it.
type shareRestore struct {
	exists             bool
	epoch, targetEpoch int32
	hash               int64
	members            map[string]*restoredShareMember
	initialized        map[string]initializedTopic // by topic name
	values             map[string][]byte
}

type initializedTopic struct {
	id         [16]byte
	partitions []int32
}

type restoredShareMember struct {
	meta, target, current bool
	m                     shareMember
	targetIDs             idSet
	assignedIDs           idSet
}

// restoreShare applies one share-group record of this group.
func (g *Group) restoreShare(typ int16, member string, key, value []byte) error {
	if g.shareRestore == nil {
		g.shareRestore = &shareRestore{members: map[string]*restoredShareMember{}, initialized: map[string]initializedTopic{}, values: map[string][]byte{}}
	}
	r := g.shareRestore
	if value == nil {
		delete(r.values, string(key))
	} else {
		r.values[string(key)] = bytes.Clone(value)
	}
	rm := r.members[member]
	if rm == nil && shareKeyHasMember(typ) {
		rm = &restoredShareMember{m: shareMember{id: member}}
		r.members[member] = rm
	}
	rd := kbin.Reader{Src: value}
	if value != nil && rd.Int16() != 0 {
		return fmt.Errorf("%w: share group record type %d: value version %d", ErrBadRecord, typ, int16(binary.BigEndian.Uint16(value)))
	}
	switch typ {
	case recShareGroup:
		if value == nil {
			g.shareRestore = nil // the group was deleted
			return nil
		}
		r.exists, r.epoch, r.hash = true, rd.Int32(), rd.Int64()
		skipTags(&rd)
	case recShareTargetHdr:
		if value != nil {
			r.targetEpoch = rd.Int32()
			skipTags(&rd)
		}
	case recShareState:
		r.initialized = map[string]initializedTopic{}
		if value != nil {
			skipTopicInfos(&rd, true) // InitializingTopics
			for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
				var it initializedTopic
				it.id = rd.Uuid()
				name := rd.CompactString()
				for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
					it.partitions = append(it.partitions, rd.Int32())
				}
				rd.Int64() // CreateTimestamp
				skipTags(&rd)
				r.initialized[name] = it
			}
			skipTopicInfos(&rd, false) // DeletingTopics
			skipTags(&rd)
		}
	case recShareMember:
		rm.meta = value != nil
		if value != nil {
			m := &rm.m
			m.rack = deref(rd.CompactNullableString())
			m.clientID, m.host = rd.CompactString(), rd.CompactString()
			m.subscribed = nil
			for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
				m.subscribed = append(m.subscribed, rd.CompactString())
			}
			skipTags(&rd)
		}
	case recShareTarget:
		rm.target = value != nil
		rm.targetIDs = nil
		if value != nil {
			rm.targetIDs = readPartitions(&rd)
			skipTags(&rd)
		}
	case recShareCurrent:
		rm.current = value != nil
		if value != nil {
			rm.m.epoch, rm.m.prevEpoch = rd.Int32(), rd.Int32()
			rd.Int8()
			rm.assignedIDs = readPartitions(&rd)
			skipTags(&rd)
		}
	}
	if err := rd.Complete(); value != nil && err != nil {
		return fmt.Errorf("%w: share group record type %d: %v", ErrBadRecord, typ, err)
	}
	if rm != nil && !rm.meta && !rm.target && !rm.current {
		delete(r.members, member)
	}
	return nil
}

// skipTopicInfos skips a []TopicPartitionsInfo (withPartitions) or a
// []TopicInfo.
func skipTopicInfos(rd *kbin.Reader, withPartitions bool) {
	for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
		rd.Uuid()
		rd.CompactString()
		if withPartitions {
			for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
				rd.Int32()
			}
			rd.Int64()
		}
		skipTags(rd)
	}
}

// loadShare builds the share group from the restored records, topic ids
// resolved against the current metadata (a deleted topic's partitions
// are dropped from the assignments, but stay initialized: their share
// state is the share coordinator's to drop).
func (g *Group) loadShare() {
	r := g.shareRestore
	g.shareRestore = nil
	if r == nil || !r.exists {
		return
	}
	s := newShareGroup()
	s.exists, s.epoch, s.targetEpoch = true, r.epoch, r.targetEpoch
	for name, it := range r.initialized {
		s.topicIDs[name] = it.id
		for _, p := range it.partitions {
			s.initialized[topicPartition{name, p}] = true
		}
	}
	topics := g.topics()
	resolve := func(set idSet) tpSet {
		out := tpSet{}
		for ip := range set {
			name, ok := topics.Name(ip.id)
			if !ok {
				continue
			}
			if _, n, ok := topics.Topic(name); ok && ip.p < n {
				s.topicIDs[name] = ip.id
				out[topicPartition{name, ip.p}] = true
			}
		}
		return out
	}
	for id, rm := range r.members {
		if !rm.meta {
			continue
		}
		m := rm.m
		m.assigned = resolve(rm.assignedIDs)
		s.members[id] = &m
		s.target[id] = resolve(rm.targetIDs)
	}
	s.persisted.values = r.values
	g.share = s
	// The subscribed topics as they are now: a change while the
	// coordinator was away moves the epoch, and the next heartbeat
	// computes the target again.
	g.refreshShareSubscribed()
	if s.metadataHash() != r.hash {
		s.epoch++
	}
	for _, m := range s.members {
		g.touchShare(m)
	}
}
