package coordinator

// Persistence of streams groups (KIP-1071): the records Kafka 4.2's group
// coordinator writes to __consumer_offsets for them, in Kafka's formats
// (group-coordinator/src/main/resources/common/message/StreamsGroup*.json),
// encoded with kbin as the consumer and share groups' (consumer_records.go,
// share_records.go):
//
//	key type 17  StreamsGroupMetadata              group epoch, metadata hash; tags
//	                                               0 ValidatedTopologyEpoch (default -1),
//	                                               1 LastAssignmentConfigs (default null)
//	key type 19  StreamsGroupMemberMetadata        a member's client, process, endpoint, tags
//	key type 20  StreamsGroupTargetAssignmentMetadata  the target's epoch
//	key type 21  StreamsGroupTargetAssignmentMember    a member's target tasks
//	key type 22  StreamsGroupCurrentMemberAssignment   a member's epochs, state, tasks and
//	                                                   tasks pending revocation; active
//	                                                   tasks carry tag 0 AssignmentEpochs
//	key type 23  StreamsGroupTopology              the topology the group was initialized with
//
// (Type 18, StreamsGroupPartitionMetadata of Kafka 4.0's early access, is
// gone from 4.1 on: Restore skips it as any unknown type.)
//
// Keys are the type, the group id and (19, 21, 22) the member id, as
// int16-length strings; values are version 0, flexible. persistStreams
// writes the difference between the group in memory and what was last
// written: tombstones first, in Kafka's order (a member's current
// assignment, target, then metadata; for the whole group then the target
// epoch, the group's record and last the topology, as Kafka's
// StreamsGroup.createGroupTombstoneRecords), then values in the order of
// Kafka's heartbeat (topology, member, group epoch, targets, target
// epoch, current assignments). A tombstone of the group record (type 17)
// deletes the whole streams group when replayed, and so does the index.
//
// What is not written is derived again after a restore, as Kafka derives
// it: the topology's configuration against the topics (at load, and at
// the next heartbeat whose topics changed), the endpoint information
// epoch (0: every member is sent the endpoints again), the initial
// rebalance delay (over) and a pending shutdown request.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's record types (the key's version) for streams groups.
const (
	recStreamsGroup     = 17
	recStreamsMember    = 19
	recStreamsTargetHdr = 20
	recStreamsTarget    = 21
	recStreamsCurrent   = 22
	recStreamsTopology  = 23
)

// isStreamsType reports whether a key type is a streams group's.
func isStreamsType(typ int16) bool {
	switch typ {
	case recStreamsGroup, recStreamsMember, recStreamsTargetHdr, recStreamsTarget, recStreamsCurrent, recStreamsTopology:
		return true
	}
	return false
}

// streamsKeyHasMember reports whether a streams record's key names a
// member.
func streamsKeyHasMember(typ int16) bool {
	return typ == recStreamsMember || typ == recStreamsTarget || typ == recStreamsCurrent
}

// streamsKeyFields decodes a streams group record's key: the group id
// and, for member records, the member id.
func streamsKeyFields(key []byte) (group, member string, err error) {
	rd := kbin.Reader{Src: key}
	typ := rd.Int16()
	group = rd.String()
	if streamsKeyHasMember(typ) {
		member = rd.String()
	}
	if err := rd.Complete(); err != nil {
		return "", "", fmt.Errorf("%w: streams group key type %d: %v", ErrBadRecord, typ, err)
	}
	return group, member, nil
}

// streamsTombstoneOrder and streamsValueOrder rank the record types as
// Kafka writes them (see the file comment).
var (
	streamsTombstoneOrder = map[int16]int{recStreamsCurrent: 0, recStreamsTarget: 1, recStreamsTargetHdr: 2, recStreamsMember: 3, recStreamsGroup: 4, recStreamsTopology: 5}
	streamsValueOrder     = map[int16]int{recStreamsTopology: 0, recStreamsMember: 1, recStreamsGroup: 2, recStreamsTarget: 3, recStreamsTargetHdr: 4, recStreamsCurrent: 5}
)

func compareStreamsKeys(order map[int16]int) func(a, b string) int {
	return func(a, b string) int {
		ta, tb := order[int16(binary.BigEndian.Uint16([]byte(a)))], order[int16(binary.BigEndian.Uint16([]byte(b)))]
		if ta != tb {
			return ta - tb
		}
		return strings.Compare(a, b)
	}
}

// persistStreams returns the records that bring the log in line with the
// streams group in memory.
func (g *Group) persistStreams() []Record {
	s := g.streams
	if !s.exists && len(s.persisted.values) == 0 {
		return nil // never a streams group
	}
	now := g.streamsValues()
	var out []Record
	var gone []string
	for k := range s.persisted.values {
		if _, ok := now[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, compareStreamsKeys(streamsTombstoneOrder))
	for _, k := range gone {
		out = append(out, Record{Key: []byte(k)})
		delete(s.persisted.values, k)
	}
	var keys []string
	for k, v := range now {
		if old, ok := s.persisted.values[k]; !ok || !bytes.Equal(old, v) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareStreamsKeys(streamsValueOrder))
	for _, k := range keys {
		out = append(out, Record{Key: []byte(k), Value: now[k]})
		s.persisted.values[k] = now[k]
	}
	return out
}

// StreamsTombstones deletes an empty streams group: it returns the
// tombstones of its records, none for a group that is not a streams
// group.
func (g *Group) StreamsTombstones() []Record {
	g.streams.deleted = true
	return g.persistStreams()
}

// streamsValues encodes the streams group as it is now, by key. A deleted
// group has none.
func (g *Group) streamsValues() map[string][]byte {
	s := g.streams
	out := map[string][]byte{}
	if !s.exists || s.deleted {
		return out
	}
	out[string(consumerKey(recStreamsGroup, g.ID, "", false))] = s.groupValue()
	out[string(consumerKey(recStreamsTargetHdr, g.ID, "", false))] =
		appendTags(kbin.AppendInt32(kbin.AppendInt16(nil, 0), s.targetEpoch))
	if s.topology != nil {
		// NB: a topology never changes once set (updates are refused),
		// so it is encoded once.
		if s.topologyValue == nil {
			s.topologyValue = s.topology.value()
		}
		out[string(consumerKey(recStreamsTopology, g.ID, "", false))] = s.topologyValue
	}
	for id, m := range s.members {
		out[string(consumerKey(recStreamsMember, g.ID, id, true))] = m.metadataValue()
		target, ok := s.target[id]
		if !ok {
			target = newStreamsTasks()
		}
		tb := kbin.AppendInt16(nil, 0)
		for _, ts := range []taskSet{target.active, target.standby, target.warmup} {
			tb = appendStreamsTasks(tb, ts, false)
		}
		out[string(consumerKey(recStreamsTarget, g.ID, id, true))] = appendTags(tb)
		out[string(consumerKey(recStreamsCurrent, g.ID, id, true))] = m.currentValue()
	}
	return out
}

// groupValue is StreamsGroupMetadataValue.
func (s *streamsGroup) groupValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, s.epoch)
	b = kbin.AppendInt64(b, s.hash)
	// Tagged fields: 0 ValidatedTopologyEpoch when not its default -1,
	// 1 LastAssignmentConfigs (Kafka always sets it), by key.
	var tags [][2][]byte
	if s.validatedEpoch != -1 {
		tags = append(tags, [2][]byte{{0}, kbin.AppendInt32(nil, s.validatedEpoch)})
	}
	cb := kbin.AppendCompactArrayLen(nil, len(s.lastConfigs))
	for _, k := range slices.Sorted(maps.Keys(s.lastConfigs)) {
		cb = kbin.AppendCompactString(cb, k)
		cb = kbin.AppendCompactString(cb, s.lastConfigs[k])
		cb = appendTags(cb)
	}
	tags = append(tags, [2][]byte{{1}, cb})
	b = kbin.AppendUvarint(b, uint32(len(tags)))
	for _, t := range tags {
		b = kbin.AppendUvarint(b, uint32(t[0][0]))
		b = kbin.AppendUvarint(b, uint32(len(t[1])))
		b = append(b, t[1]...)
	}
	return b
}

// metadataValue is StreamsGroupMemberMetadataValue (InstanceId null:
// static membership is refused, as in Kafka 4.2).
func (m *streamsMember) metadataValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, nil)
	b = kbin.AppendCompactNullableString(b, nullable(m.rack))
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.host)
	b = kbin.AppendInt32(b, m.rebalanceTimeout)
	b = kbin.AppendInt32(b, m.topologyEpoch)
	b = kbin.AppendCompactString(b, m.processID)
	if m.endpoint == nil {
		b = kbin.AppendInt8(b, -1)
	} else {
		b = kbin.AppendInt8(b, 1)
		b = kbin.AppendCompactString(b, m.endpoint.Host)
		b = kbin.AppendUint16(b, m.endpoint.Port)
		b = appendTags(b)
	}
	tags := slices.Clone(m.tags)
	slices.SortStableFunc(tags, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	b = kbin.AppendCompactArrayLen(b, len(tags))
	for _, kv := range tags {
		b = kbin.AppendCompactString(b, kv[0])
		b = kbin.AppendCompactString(b, kv[1])
		b = appendTags(b)
	}
	return appendTags(b)
}

// currentValue is StreamsGroupCurrentMemberAssignmentValue.
func (m *streamsMember) currentValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt32(b, m.prevEpoch)
	b = kbin.AppendInt8(b, m.state)
	b = appendStreamsTasks(b, m.assigned.active, true)
	b = appendStreamsTasks(b, m.assigned.standby, false)
	b = appendStreamsTasks(b, m.assigned.warmup, false)
	b = appendStreamsTasks(b, m.revoking.active, true)
	b = appendStreamsTasks(b, m.revoking.standby, false)
	b = appendStreamsTasks(b, m.revoking.warmup, false)
	return appendTags(b)
}

// appendStreamsTasks appends a []TaskIds of a set, by subtopology and
// partition; withEpochs adds each task's epoch as the tagged field 0,
// AssignmentEpochs (active tasks of a current assignment).
func appendStreamsTasks(b []byte, ts taskSet, withEpochs bool) []byte {
	ids := taskIDs(ts)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, ti := range ids {
		b = kbin.AppendCompactString(b, ti.SubtopologyID)
		b = kbin.AppendCompactArrayLen(b, len(ti.Partitions))
		for _, p := range ti.Partitions {
			b = kbin.AppendInt32(b, p)
		}
		if !withEpochs {
			b = appendTags(b)
			continue
		}
		eb := kbin.AppendCompactArrayLen(nil, len(ti.Partitions))
		for _, p := range ti.Partitions {
			eb = kbin.AppendInt32(eb, ts[streamsTask{ti.SubtopologyID, p}])
		}
		b = appendTag0(b, eb)
	}
	return b
}

// value is StreamsGroupTopologyValue.
func (t *streamsTopology) value() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, t.epoch)
	b = kbin.AppendCompactArrayLen(b, len(t.subs))
	strs := func(b []byte, ss []string) []byte {
		b = kbin.AppendCompactArrayLen(b, len(ss))
		for _, s := range ss {
			b = kbin.AppendCompactString(b, s)
		}
		return b
	}
	infos := func(b []byte, ts []streamsTopicInfo) []byte {
		b = kbin.AppendCompactArrayLen(b, len(ts))
		for _, ti := range ts {
			b = kbin.AppendCompactString(b, ti.name)
			b = kbin.AppendInt32(b, ti.partitions)
			b = kbin.AppendInt16(b, ti.replication)
			b = kbin.AppendCompactArrayLen(b, len(ti.configs))
			for _, kv := range ti.configs {
				b = kbin.AppendCompactString(b, kv[0])
				b = kbin.AppendCompactString(b, kv[1])
				b = appendTags(b)
			}
			b = appendTags(b)
		}
		return b
	}
	int16s := func(b []byte, is []int16) []byte {
		b = kbin.AppendCompactArrayLen(b, len(is))
		for _, i := range is {
			b = kbin.AppendInt16(b, i)
		}
		return b
	}
	for _, s := range t.subs {
		b = kbin.AppendCompactString(b, s.id)
		b = strs(b, s.sourceTopics)
		b = strs(b, s.sourceRegex)
		b = infos(b, s.changelogs)
		b = strs(b, s.sinks)
		b = infos(b, s.repartitionSources)
		b = kbin.AppendCompactArrayLen(b, len(s.copartition))
		for _, c := range s.copartition {
			b = int16s(b, c.sourceTopics)
			b = int16s(b, c.sourceRegex)
			b = int16s(b, c.repartitionSources)
			b = appendTags(b)
		}
		b = appendTags(b)
	}
	return appendTags(b)
}

// streamsRestore collects a streams group's records while the group's
// partition is read; loadStreams builds the group from it.
type streamsRestore struct {
	exists             bool
	epoch, targetEpoch int32
	hash               int64
	validatedEpoch     int32
	lastConfigs        map[string]string
	topology           *streamsTopology
	members            map[string]*restoredStreamsMember
	values             map[string][]byte
}

type restoredStreamsMember struct {
	meta, target, current bool
	m                     streamsMember
	targetTasks           streamsTasks
}

// restoreStreams applies one streams-group record of this group.
func (g *Group) restoreStreams(typ int16, member string, key, value []byte) error {
	if g.streams.restore == nil {
		g.streams.restore = &streamsRestore{validatedEpoch: -1, members: map[string]*restoredStreamsMember{}, values: map[string][]byte{}}
	}
	r := g.streams.restore
	if value == nil {
		delete(r.values, string(key))
	} else {
		r.values[string(key)] = bytes.Clone(value)
	}
	rm := r.members[member]
	if rm == nil && streamsKeyHasMember(typ) {
		rm = &restoredStreamsMember{m: streamsMember{id: member, assigned: newStreamsTasks(), revoking: newStreamsTasks()}, targetTasks: newStreamsTasks()}
		r.members[member] = rm
	}
	rd := kbin.Reader{Src: value}
	if value != nil && rd.Int16() != 0 {
		return fmt.Errorf("%w: streams group record type %d: value version %d", ErrBadRecord, typ, int16(binary.BigEndian.Uint16(value)))
	}
	switch typ {
	case recStreamsGroup:
		if value == nil {
			// The group was deleted: everything before is gone.
			g.streams.restore = nil
			return nil
		}
		r.exists, r.epoch, r.hash = true, rd.Int32(), rd.Int64()
		r.validatedEpoch, r.lastConfigs = -1, map[string]string{}
		readTags(&rd, func(tag uint32, field []byte) {
			span := kbin.Reader{Src: field}
			switch tag {
			case 0:
				if v := span.Int32(); span.Ok() {
					r.validatedEpoch = v
				}
			case 1:
				for n := span.CompactArrayLen(); n > 0 && span.Ok(); n-- {
					k, v := span.CompactString(), span.CompactString()
					skipTags(&span)
					if span.Ok() {
						r.lastConfigs[k] = v
					}
				}
			}
		})
	case recStreamsTargetHdr:
		r.targetEpoch = 0
		if value != nil {
			r.targetEpoch = rd.Int32()
			skipTags(&rd)
		}
	case recStreamsTopology:
		r.topology = nil
		if value != nil {
			r.topology = readStreamsTopology(&rd)
		}
	case recStreamsMember:
		rm.meta = value != nil
		if value != nil {
			m := &rm.m
			rd.CompactNullableString() // InstanceId
			m.rack = deref(rd.CompactNullableString())
			m.clientID, m.host = rd.CompactString(), rd.CompactString()
			m.rebalanceTimeout, m.topologyEpoch = rd.Int32(), rd.Int32()
			m.processID = rd.CompactString()
			m.endpoint = nil
			if rd.Int8() >= 0 {
				e := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
				e.Host, e.Port = rd.CompactString(), rd.Uint16()
				skipTags(&rd)
				m.endpoint = &e
			}
			m.tags = nil
			for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
				m.tags = append(m.tags, [2]string{rd.CompactString(), rd.CompactString()})
				skipTags(&rd)
			}
			skipTags(&rd)
		}
	case recStreamsTarget:
		rm.target = value != nil
		rm.targetTasks = newStreamsTasks()
		if value != nil {
			for _, ts := range []taskSet{rm.targetTasks.active, rm.targetTasks.standby, rm.targetTasks.warmup} {
				readStreamsTasks(&rd, ts)
			}
			skipTags(&rd)
		}
	case recStreamsCurrent:
		rm.current = value != nil
		m := &rm.m
		m.assigned, m.revoking = newStreamsTasks(), newStreamsTasks()
		m.epoch, m.prevEpoch, m.state = -1, -1, streamsStable
		if value != nil {
			m.epoch, m.prevEpoch, m.state = rd.Int32(), rd.Int32(), rd.Int8()
			for _, ts := range []taskSet{m.assigned.active, m.assigned.standby, m.assigned.warmup, m.revoking.active, m.revoking.standby, m.revoking.warmup} {
				readStreamsTasks(&rd, ts)
			}
			skipTags(&rd)
		}
	}
	if err := rd.Complete(); value != nil && err != nil {
		return fmt.Errorf("%w: streams group record type %d: %v", ErrBadRecord, typ, err)
	}
	if rm != nil && !rm.meta && !rm.target && !rm.current {
		delete(r.members, member)
	}
	return nil
}

// readStreamsTasks reads a []TaskIds into ts, with the tasks' assignment
// epochs (tag 0) when the record has them.
func readStreamsTasks(rd *kbin.Reader, ts taskSet) {
	for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
		sub := rd.CompactString()
		var ps []int32
		for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
			ps = append(ps, rd.Int32())
		}
		var epochs []int32
		readTags(rd, func(tag uint32, field []byte) {
			if tag != 0 {
				return
			}
			span := kbin.Reader{Src: field}
			for k := span.CompactArrayLen(); k > 0 && span.Ok(); k-- {
				epochs = append(epochs, span.Int32())
			}
		})
		for i, p := range ps {
			var e int32
			if len(epochs) == len(ps) {
				e = epochs[i]
			}
			ts[streamsTask{sub, p}] = e
		}
	}
}

// readStreamsTopology reads a StreamsGroupTopologyValue after its version.
func readStreamsTopology(rd *kbin.Reader) *streamsTopology {
	t := &streamsTopology{epoch: rd.Int32()}
	strs := func() []string {
		var out []string
		for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
			out = append(out, rd.CompactString())
		}
		return out
	}
	infos := func() []streamsTopicInfo {
		var out []streamsTopicInfo
		for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
			ti := streamsTopicInfo{name: rd.CompactString(), partitions: rd.Int32(), replication: rd.Int16()}
			for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
				ti.configs = append(ti.configs, [2]string{rd.CompactString(), rd.CompactString()})
				skipTags(rd)
			}
			skipTags(rd)
			out = append(out, ti)
		}
		return out
	}
	int16s := func() []int16 {
		var out []int16
		for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
			out = append(out, rd.Int16())
		}
		return out
	}
	for n := rd.CompactArrayLen(); n > 0 && rd.Ok(); n-- {
		s := streamsSubtopology{id: rd.CompactString()}
		s.sourceTopics, s.sourceRegex = strs(), strs()
		s.changelogs = infos()
		s.sinks = strs()
		s.repartitionSources = infos()
		for k := rd.CompactArrayLen(); k > 0 && rd.Ok(); k-- {
			s.copartition = append(s.copartition, streamsCopartitionGroup{int16s(), int16s(), int16s()})
			skipTags(rd)
		}
		skipTags(rd)
		t.subs = append(t.subs, s)
	}
	skipTags(rd)
	slices.SortFunc(t.subs, func(a, b streamsSubtopology) int { return strings.Compare(a.id, b.id) })
	return t
}

// loadStreams builds the streams group from the restored records. Its
// members' sessions start now, and a member still giving tasks up gets a
// new revocation timeout; the topology is configured against the topics
// as they are now (its hash compared at the next heartbeat, which moves
// the group epoch if they changed while the coordinator was away).
func (g *Group) loadStreams() {
	r := g.streams.restore
	g.streams.restore = nil
	if r == nil || !r.exists {
		return
	}
	s := newStreamsGroup()
	s.exists, s.epoch, s.targetEpoch, s.hash = true, r.epoch, r.targetEpoch, r.hash
	s.validatedEpoch, s.lastConfigs, s.topology = r.validatedEpoch, r.lastConfigs, r.topology
	for id, rm := range r.members {
		if !rm.meta || s.topology == nil {
			// A member's records without its metadata (half deleted),
			// or members of a group without its topology (a damaged
			// log: Kafka writes the topology with the first member):
			// dropped, and their records get tombstones at the next
			// write; the member is told UNKNOWN_MEMBER_ID and joins
			// again.
			continue
		}
		m := rm.m
		if !rm.current {
			// Kafka's uninitialized member: no epoch yet.
			m.epoch, m.prevEpoch = 0, 0
		}
		s.members[id] = &m
		if rm.target {
			s.target[id] = rm.targetTasks
		}
	}
	s.persisted.values = r.values
	if s.topology != nil {
		topics := g.topics()
		s.configured = configureTopology(s.topology, topics, streamsMetadataHash(s.topology, topics))
	}
	g.streams = s
	for _, m := range s.members {
		g.touchStreams(m)
		if m.state == streamsUnrevokedTasks {
			m.revokeSeq = 0
			g.startStreamsRevocation(m)
		}
	}
}
