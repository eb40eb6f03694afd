package coordinator

// Persistence of consumer-protocol (KIP-848) groups: the records Kafka's
// group coordinator writes to __consumer_offsets for them, in Kafka's
// formats (group-coordinator/src/main/resources/common/message/
// ConsumerGroup*.json), encoded with kbin since kmsg does not carry them:
//
//	key type 3  ConsumerGroupMetadata              group epoch
//	key type 5  ConsumerGroupMemberMetadata        a member's subscription
//	key type 6  ConsumerGroupTargetAssignmentMetadata  the target's epoch
//	key type 7  ConsumerGroupTargetAssignmentMember    a member's target
//	key type 8  ConsumerGroupCurrentMemberAssignment   a member's epochs and
//	                                                   owned partitions
//
// Keys are non-flexible (the type, then the group id and member id as
// int16-length strings); values are flexible version 0 with tagged fields.
// Rather than each step naming the records it changes, persistConsumer
// compares the group with what was last written and writes the
// difference, so that no change can be forgotten; a removed member's
// records get tombstones. Restore replays them, last record per key
// winning, and Loaded turns them back into the group, topic ids resolved
// against the current metadata (a deleted topic's partitions are dropped).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's record types (the key's version) for consumer groups.
const (
	recConsumerGroup     = 3
	recConsumerMember    = 5
	recConsumerTargetHdr = 6
	recConsumerTarget    = 7
	recConsumerCurrent   = 8
)

// Kafka's MemberState values.
const (
	memberStable               int8 = 0
	memberUnrevokedPartitions  int8 = 1
	memberUnreleasedPartitions int8 = 2
)

func consumerKey(typ int16, group, member string, withMember bool) []byte {
	b := kbin.AppendInt16(nil, typ)
	b = kbin.AppendString(b, group)
	if withMember {
		b = kbin.AppendString(b, member)
	}
	return b
}

// persistedConsumer is what was last written (or restored) for a
// consumer group: the encoded values by key.
type persistedConsumer struct {
	values map[string][]byte // by string(key)
}

// persistConsumer returns the records that bring the log in line with
// the consumer group in memory.
func (g *Group) persistConsumer() []Record {
	c := g.consumer
	if c.epoch == 0 && len(c.persisted.values) == 0 {
		return nil // never a consumer group
	}
	now := g.consumerValues()
	var out []Record
	// Tombstones first, members before the group, as Kafka orders them.
	var gone []string
	for k := range c.persisted.values {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, func(a, b string) int { return compareKeys([]byte(a), []byte(b)) })
	for _, k := range gone {
		out = append(out, Record{Key: []byte(k)})
		delete(c.persisted.values, k)
	}
	keys := make([]string, 0, len(now))
	for k, v := range now {
		if old, ok := c.persisted.values[k]; !ok || !bytes.Equal(old, v) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return compareKeys([]byte(a), []byte(b)) })
	for _, k := range keys {
		out = append(out, Record{Key: []byte(k), Value: now[k]})
		c.persisted.values[k] = now[k]
	}
	return out
}

// ConsumerTombstones deletes an empty consumer-protocol group: it returns
// the tombstones of its records, none for a classic group.
func (g *Group) ConsumerTombstones() []Record {
	g.consumer.deleted = true
	return g.persistConsumer()
}

// compareKeys orders records members' before the group's for tombstones
// and the group's after its members' for values: by type descending, then
// key bytes.
func compareKeys(a, b []byte) int {
	ta, tb := binary.BigEndian.Uint16(a), binary.BigEndian.Uint16(b)
	if ta != tb {
		if ta > tb {
			return -1
		}
		return 1
	}
	return bytes.Compare(a, b)
}

// consumerValues encodes the consumer group as it is now, by key. An
// empty group that was deleted has none.
func (g *Group) consumerValues() map[string][]byte {
	c := g.consumer
	out := map[string][]byte{}
	if c.deleted {
		return out
	}
	out[string(consumerKey(recConsumerGroup, g.ID, "", false))] = c.groupValue()
	out[string(consumerKey(recConsumerTargetHdr, g.ID, "", false))] =
		appendTags(kbin.AppendInt32(kbin.AppendInt16(nil, 0), c.targetEpoch))
	for id, m := range c.members {
		out[string(consumerKey(recConsumerMember, g.ID, id, true))] = m.metadataValue()
		out[string(consumerKey(recConsumerTarget, g.ID, id, true))] =
			appendTags(c.appendPartitions(kbin.AppendInt16(nil, 0), c.target[id]))
		out[string(consumerKey(recConsumerCurrent, g.ID, id, true))] = c.currentValue(m)
	}
	return out
}

func (c *consumerGroup) groupValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, c.epoch)
	// Tagged field 0, MetadataHash: the subscribed topics as the target
	// was computed, so that a change while the coordinator was away is
	// seen after a restart.
	return appendTag0(b, kbin.AppendInt64(nil, c.metadataHash()))
}

// metadataHash hashes the subscribed topics' ids and partition counts.
// (Kafka's hash is another function of the same; it is only ever
// compared with one this node computed.)
func (c *consumerGroup) metadataHash() int64 {
	h := fnv.New64a()
	for _, t := range SortedTopics(topicsOf(c.subscribed)) {
		id := c.topicIDs[t]
		_, _ = h.Write([]byte(t))
		_, _ = h.Write(id[:])
		_, _ = h.Write(binary.BigEndian.AppendUint32(nil, uint32(c.subscribed[t])))
	}
	return int64(h.Sum64())
}

func (m *consumerMember) metadataValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, nullable(m.instanceID))
	b = kbin.AppendCompactNullableString(b, nil) // rack
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.host)
	b = kbin.AppendCompactArrayLen(b, len(m.subscribed))
	for _, t := range m.subscribed {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactNullableString(b, nullable(m.regex))
	b = kbin.AppendInt32(b, int32(m.rebalanceTimeout.Milliseconds()))
	b = kbin.AppendCompactNullableString(b, nullable(m.assignor))
	if m.classic == nil {
		return appendTags(b)
	}
	// Tagged field 0, ClassicMemberMetadata.
	cm := kbin.AppendInt32(nil, int32(m.classic.sessionTimeout.Milliseconds()))
	cm = kbin.AppendCompactArrayLen(cm, len(m.classic.protocols))
	for _, p := range m.classic.protocols {
		cm = kbin.AppendCompactString(cm, p.Name)
		cm = kbin.AppendCompactBytes(cm, p.Metadata)
		cm = appendTags(cm)
	}
	return appendTag0(b, appendTags(cm))
}

func (c *consumerGroup) currentValue(m *consumerMember) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt32(b, m.prevEpoch)
	b = kbin.AppendInt8(b, c.memberState(m))
	b = c.appendPartitions(b, m.assigned)
	b = c.appendPartitions(b, m.revoking)
	return appendTags(b)
}

// memberState is Kafka's MemberState of a member.
func (c *consumerGroup) memberState(m *consumerMember) int8 {
	switch {
	case len(m.revoking) > 0:
		return memberUnrevokedPartitions
	case m.epoch == c.targetEpoch && len(m.assigned) < len(c.target[m.id]):
		return memberUnreleasedPartitions
	}
	return memberStable
}

// appendPartitions appends a []TopicPartitions of a set, by topic id,
// sorted.
func (c *consumerGroup) appendPartitions(b []byte, s tpSet) []byte {
	names, parts := s.sorted()
	b = kbin.AppendCompactArrayLen(b, len(names))
	for _, t := range names {
		ps := parts[t]
		b = kbin.AppendUuid(b, c.topicIDs[t])
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = appendTags(b)
	}
	return b
}

// appendTags ends a flexible struct with no tagged field.
func appendTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

// appendTag0 ends a flexible struct with one tagged field, tag 0.
func appendTag0(b, field []byte) []byte {
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, 0)
	b = kbin.AppendUvarint(b, uint32(len(field)))
	return append(b, field...)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// consumerRestore collects a consumer group's records while the group's
// partition is read; Loaded builds the group from it.
type consumerRestore struct {
	epoch, targetEpoch int32
	hash               int64
	exists             bool
	members            map[string]*restoredMember
	values             map[string][]byte
}

type restoredMember struct {
	meta, target, current bool
	m                     consumerMember
	targetIDs             idSet
	assignedIDs           idSet
	revokingIDs           idSet
}

type idPartition struct {
	id [16]byte
	p  int32
}

type idSet map[idPartition]bool

func (g *Group) restoring() *consumerRestore {
	if g.restore == nil {
		g.restore = &consumerRestore{members: map[string]*restoredMember{}, values: map[string][]byte{}}
	}
	return g.restore
}

// restoreConsumer applies one consumer-group record of this group.
func (g *Group) restoreConsumer(typ int16, member string, key, value []byte) error {
	r := g.restoring()
	if value == nil {
		delete(r.values, string(key))
	} else {
		r.values[string(key)] = bytes.Clone(value)
	}
	rm := r.members[member]
	if rm == nil && typ >= recConsumerMember && typ != recConsumerTargetHdr {
		rm = &restoredMember{m: consumerMember{id: member}}
		r.members[member] = rm
	}
	rd := kbin.Reader{Src: value}
	if value != nil && rd.Int16() != 0 {
		return fmt.Errorf("%w: consumer group record type %d: value version %d", ErrBadRecord, typ, int16(binary.BigEndian.Uint16(value)))
	}
	switch typ {
	case recConsumerGroup:
		if value == nil {
			// The group was deleted: everything before is gone.
			g.restore = nil
			return nil
		}
		r.exists, r.epoch = true, rd.Int32()
		r.hash = readHash(&rd)
	case recConsumerTargetHdr:
		if value != nil {
			r.targetEpoch = rd.Int32()
			skipTags(&rd)
		}
	case recConsumerMember:
		rm.meta = value != nil
		if value != nil {
			m := &rm.m
			m.instanceID = deref(rd.CompactNullableString())
			rd.CompactNullableString() // rack
			m.clientID, m.host = rd.CompactString(), rd.CompactString()
			m.subscribed = nil
			for n := rd.CompactArrayLen(); n > 0; n-- {
				m.subscribed = append(m.subscribed, rd.CompactString())
			}
			m.regex = deref(rd.CompactNullableString())
			m.rebalanceTimeout = msDuration(rd.Int32())
			m.assignor = deref(rd.CompactNullableString())
			m.classic = readClassic(&rd)
		}
	case recConsumerTarget:
		rm.target = value != nil
		rm.targetIDs = nil
		if value != nil {
			rm.targetIDs = readPartitions(&rd)
			skipTags(&rd)
		}
	case recConsumerCurrent:
		rm.current = value != nil
		if value != nil {
			rm.m.epoch, rm.m.prevEpoch = rd.Int32(), rd.Int32()
			rd.Int8() // the state follows from the rest
			rm.assignedIDs = readPartitions(&rd)
			rm.revokingIDs = readPartitions(&rd)
			skipTags(&rd)
		}
	}
	if err := rd.Complete(); value != nil && err != nil {
		return fmt.Errorf("%w: consumer group record type %d: %v", ErrBadRecord, typ, err)
	}
	if rm != nil && !rm.meta && !rm.target && !rm.current {
		delete(r.members, member)
	}
	return nil
}

// readClassic reads a member metadata value's tagged fields, returning
// its ClassicMemberMetadata (tag 0) if it has one.
func readClassic(rd *kbin.Reader) *classicProtocol {
	var out *classicProtocol
	readTags(rd, func(tag uint32, field []byte) {
		if tag != 0 {
			return
		}
		span := kbin.Reader{Src: field}
		cp := &classicProtocol{sessionTimeout: msDuration(span.Int32())}
		for k := span.CompactArrayLen(); k > 0 && span.Ok(); k-- {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = span.CompactString(), bytes.Clone(span.CompactBytes())
			skipTags(&span)
			cp.protocols = append(cp.protocols, p)
		}
		skipTags(&span)
		if span.Complete() == nil && len(cp.protocols) > 0 {
			out = cp
		}
	})
	return out
}

// readHash reads a group value's tagged fields, returning its
// MetadataHash (tag 0).
func readHash(rd *kbin.Reader) int64 {
	var h int64
	readTags(rd, func(tag uint32, field []byte) {
		if tag == 0 && len(field) == 8 {
			h = int64(binary.BigEndian.Uint64(field))
		}
	})
	return h
}

// readTags reads a flexible struct's tagged fields, giving each to fn.
func readTags(rd *kbin.Reader, fn func(tag uint32, field []byte)) {
	for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
		tag, size := rd.Uvarint(), rd.Uvarint()
		if field := rd.Span(int(size)); fn != nil && rd.Ok() {
			fn(tag, field)
		}
	}
}

func skipTags(rd *kbin.Reader) { readTags(rd, nil) }

func readPartitions(rd *kbin.Reader) idSet {
	out := idSet{}
	for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
		id := rd.Uuid()
		for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
			out[idPartition{id, rd.Int32()}] = true
		}
		skipTags(rd)
	}
	return out
}

// loadConsumer builds the consumer group from the restored records.
func (g *Group) loadConsumer() {
	r := g.restore
	g.restore = nil
	if r == nil || !r.exists {
		return
	}
	c := newConsumerGroup()
	c.epoch, c.targetEpoch = r.epoch, r.targetEpoch
	topics := g.topics()
	names := map[[16]byte]string{}
	resolve := func(s idSet) tpSet {
		out := tpSet{}
		for ip := range s {
			name, ok := names[ip.id]
			if !ok {
				if name, ok = topics.Name(ip.id); ok {
					names[ip.id] = name
				}
			}
			if !ok {
				continue // the topic was deleted
			}
			if _, n, ok := topics.Topic(name); ok && ip.p < n {
				c.topicIDs[name] = ip.id
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
		m.assigned, m.revoking = resolve(rm.assignedIDs), resolve(rm.revokingIDs)
		c.members[id] = &m
		c.target[id] = resolve(rm.targetIDs)
		for tp := range m.assigned {
			c.owner[tp] = id
		}
		for tp := range m.revoking {
			c.owner[tp] = id
		}
		if m.instanceID != "" {
			c.static[m.instanceID] = id
		}
	}
	c.persisted.values = r.values
	g.consumer = c
	// The subscribed topics as they are now: if they changed since the
	// target was computed, the next heartbeat computes it again.
	g.refreshSubscribed()
	if c.metadataHash() != r.hash {
		c.epoch++
	}
	for _, m := range c.members {
		g.touchConsumer(m)
		if len(m.revoking) > 0 {
			g.startRevocationTimer(m)
		}
	}
}
