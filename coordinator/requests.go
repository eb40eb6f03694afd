package coordinator

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorResponse answers a request of one group with err everywhere.
func errorResponse(req kmsg.Request, err *kerr.Error) kmsg.Response {
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation = err.Code, -1
		r.MemberID = req.(*kmsg.JoinGroupRequest).MemberID
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = err.Code
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = err.Code
	case *kmsg.ConsumerGroupHeartbeatResponse:
		r.ErrorCode, r.MemberEpoch = err.Code, -1
	case *kmsg.ShareGroupHeartbeatResponse:
		r.ErrorCode = err.Code
	case *kmsg.StreamsGroupHeartbeatResponse:
		r.ErrorCode = err.Code
	case *kmsg.StreamsGroupDescribeResponse:
		rg := kmsg.NewStreamsGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = req.(*kmsg.StreamsGroupDescribeRequest).Groups[0], err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.ShareGroupDescribeResponse:
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = req.(*kmsg.ShareGroupDescribeRequest).GroupIDs[0], err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.DescribeShareGroupOffsetsResponse:
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID, rg.ErrorCode = req.(*kmsg.DescribeShareGroupOffsetsRequest).Groups[0].GroupID, err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.AlterShareGroupOffsetsResponse:
		r.ErrorCode = err.Code
	case *kmsg.DeleteShareGroupOffsetsResponse:
		r.ErrorCode = err.Code
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = err.Code
	case *kmsg.OffsetCommitResponse:
		for _, t := range req.(*kmsg.OffsetCommitRequest).Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range req.(*kmsg.TxnOffsetCommitRequest).Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.OffsetFetchResponse:
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = req.(*kmsg.OffsetFetchRequest).Groups[0].Group, err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.OffsetDeleteResponse:
		r.ErrorCode = err.Code
	case *kmsg.DescribeGroupsResponse:
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = req.(*kmsg.DescribeGroupsRequest).Groups[0], err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.ConsumerGroupDescribeResponse:
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = req.(*kmsg.ConsumerGroupDescribeRequest).Groups[0], err.Code
		r.Groups = append(r.Groups, rg)
	case *kmsg.DeleteGroupsResponse:
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = req.(*kmsg.DeleteGroupsRequest).Groups[0], err.Code
		r.Groups = append(r.Groups, rg)
	}
	return resp
}

// commit handles OffsetCommit: checks the member, then appends one record
// per partition and answers once they are durable.
func (a *groupActor) commit(req *kmsg.OffsetCommitRequest, m *Request) {
	if err := a.g.CheckCommit(req.Generation, req.MemberID, req.InstanceID); err != nil {
		m.Reply(errorResponse(req, err))
		return
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var c commitBatch
	now := time.Now().UnixMilli()
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		for i, p := range t.Partitions {
			rp := &resp.Topics[len(resp.Topics)-1].Partitions[i]
			rp.Default()
			rp.Partition = p.Partition
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			a.addCommit(&c, m, t.Topic, p.Partition, Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata), CommitTimestamp: now}, &rp.ErrorCode)
		}
	}
	if len(c.recs) == 0 {
		m.Reply(resp)
		return
	}
	a.writes++
	a.appendBatch(c.recs, nil, func(base int64, err *kerr.Error) {
		a.writes--
		defer a.maybeExpire()
		c.done(base, err, a.g.Commit)
		m.Reply(resp)
	})
}

// commitBatch is the offsets of one commit request, to be written as one
// batch: their records, and where each partition's answer goes.
type commitBatch struct {
	recs    []Record
	entries []commitEntry
}

type commitEntry struct {
	topic     string
	partition int32
	o         Offset
	code      *int16 // the partition's error code in the answer
}

// addCommit checks one partition of a commit (its topic exists, its
// metadata fits offset.metadata.max.bytes) and adds its record to c, or
// sets its answer's error code.
func (a *groupActor) addCommit(c *commitBatch, m *Request, topic string, p int32, o Offset, code *int16) {
	switch {
	case m.TopicError != nil && m.TopicError(topic, p) != nil:
		*code = m.TopicError(topic, p).Code
		return
	case len(o.Metadata) > a.cfg.OffsetMetadataMaxBytes:
		*code = kerr.OffsetMetadataTooLarge.Code
		return
	}
	c.recs = append(c.recs, OffsetRecord(a.id, topic, p, o))
	c.entries = append(c.entries, commitEntry{topic, p, o, code})
}

// done takes the batch's outcome: on success apply is called for each
// offset, with the offset of its record (base is the first's); on failure
// each partition answers err.
func (c *commitBatch) done(base int64, err *kerr.Error, apply func(topic string, partition int32, o Offset)) {
	for i, e := range c.entries {
		if err != nil {
			*e.code = err.Code
			continue
		}
		e.o.RecordOffset = base + int64(i)
		apply(e.topic, e.partition, e.o)
	}
}

// txnCommit handles TxnOffsetCommit: the member is checked (KIP-447), the
// offsets written as a transactional batch of the producer, and kept
// pending until the transaction's marker (txn_offsets.go).
func (a *groupActor) txnCommit(req *kmsg.TxnOffsetCommitRequest, m *Request) {
	if err := a.g.CheckTxnCommit(req.Generation, req.MemberID, req.InstanceID); err != nil {
		m.Reply(errorResponse(req, err))
		return
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var c commitBatch
	now := time.Now().UnixMilli()
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		for i, p := range t.Partitions {
			rp := &resp.Topics[len(resp.Topics)-1].Partitions[i]
			rp.Default()
			rp.Partition = p.Partition
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			a.addCommit(&c, m, t.Topic, p.Partition, Offset{Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata), CommitTimestamp: now}, &rp.ErrorCode)
		}
	}
	if len(c.recs) == 0 {
		m.Reply(resp)
		return
	}
	txn := &txnWriter{id: req.TransactionalID, producerID: req.ProducerID, epoch: req.ProducerEpoch, add: req.Version >= 5}
	for _, e := range c.entries {
		a.g.WritingTxn(e.topic, e.partition)
	}
	a.appendBatch(c.recs, txn, func(base int64, err *kerr.Error) {
		for _, e := range c.entries {
			a.g.TxnWritten(e.topic, e.partition)
		}
		c.done(base, err, func(topic string, p int32, o Offset) { a.g.AddPendingTxn(req.ProducerID, topic, p, o) })
		m.Reply(resp)
	})
}

// fetch handles OffsetFetch for one group, in the v8+ shape (Groups[0]);
// transport converts for older versions. Topics nil means every
// committed offset.
func (a *groupActor) fetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	rq := req.Groups[0]
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = rq.Group
	if err := a.g.CheckFetch(rq.MemberID, rq.MemberEpoch); err != nil {
		rg.ErrorCode = err.Code
		resp.Groups = append(resp.Groups, rg)
		return resp
	}
	partition := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, kmsg.StringPtr("")
		if req.RequireStable && a.g.Unstable(topic, p) {
			// KIP-447: the offset may still move with a transaction.
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if o, ok := a.g.Committed(topic, p); ok {
			rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
		}
		return rp
	}
	if rq.Topics == nil {
		all := a.g.CommittedTopics()
		for _, t := range SortedTopics(all) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			for _, p := range all[t] {
				rt.Partitions = append(rt.Partitions, partition(t, p))
			}
			rg.Topics = append(rg.Topics, rt)
		}
	}
	for _, t := range rq.Topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, partition(t.Topic, p))
		}
		rg.Topics = append(rg.Topics, rt)
	}
	resp.Groups = append(resp.Groups, rg)
	return resp
}

// deleteOffsets handles OffsetDelete: tombstones for the partitions whose
// topic no member subscribes to.
func (a *groupActor) deleteOffsets(req *kmsg.OffsetDeleteRequest, m *Request) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !a.g.Exists() {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		m.Reply(resp)
		return
	}
	if err := a.g.CheckOffsetDelete(""); err == kerr.NonEmptyGroup || err == kerr.GroupIDNotFound {
		resp.ErrorCode = err.Code
		m.Reply(resp)
		return
	}
	var recs []Record
	type del struct {
		topic string
		p     int32
	}
	var dels []del
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		err := a.g.CheckOffsetDelete(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case err != nil:
				rp.ErrorCode = err.Code
			case m.TopicError != nil && m.TopicError(t.Topic, p.Partition) != nil:
				rp.ErrorCode = m.TopicError(t.Topic, p.Partition).Code
			default:
				if _, ok := a.g.Committed(t.Topic, p.Partition); ok {
					recs = append(recs, OffsetTombstone(a.id, t.Topic, p.Partition))
					dels = append(dels, del{t.Topic, p.Partition})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		m.Reply(resp)
		return
	}
	a.writes++
	a.append(recs, func(err *kerr.Error) {
		a.writes--
		defer a.maybeExpire()
		if err != nil {
			m.Reply(errorResponse(req, err))
			return
		}
		for _, d := range dels {
			a.g.DeleteOffset(d.topic, d.p)
		}
		m.Reply(resp)
	})
}

// describe answers DescribeGroups for this group.
func (a *groupActor) describe(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = append(resp.Groups, a.g.Describe(req.Version))
	return resp
}

// Describe returns the group as DescribeGroups shows it; a group that does
// not exist, or is a consumer group (KIP-848: ConsumerGroupDescribe shows
// those), is Dead (v6+: GROUP_ID_NOT_FOUND).
func (g *Group) Describe(version int16) kmsg.DescribeGroupsResponseGroup {
	if g.isConsumerGroup() || g.IsShare() || g.IsStreams() {
		return g.describeNotClassic(version)
	}
	rg := kmsg.NewDescribeGroupsResponseGroup()
	rg.Group = g.ID
	if !g.Exists() {
		rg.State = Dead.String()
		if version >= 6 {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("Group " + g.ID + " not found.")
		}
		return rg
	}
	rg.State, rg.ProtocolType = g.state.String(), g.protocolType
	if g.state == Stable {
		rg.Protocol = g.protocol
	}
	for _, id := range g.joinOrder {
		m := g.members[id]
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.host
		if m.instanceID != "" {
			rm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		// A member's assignment is described in every state, the one of
		// the last generation while a rebalance runs; its metadata only
		// once Stable (the protocol is chosen then), as Kafka describes
		// them (tests/diff compares them).
		rm.MemberAssignment = m.assignment
		if g.state == Stable {
			rm.ProtocolMetadata = m.metadata(g.protocol)
		}
		rg.Members = append(rg.Members, rm)
	}
	return rg
}

// deleteGroup handles DeleteGroups for this group: only an Empty group is
// deleted; its offsets and metadata get tombstones, and the group starts
// afresh.
func (a *groupActor) deleteGroup(req *kmsg.DeleteGroupsRequest, m *Request) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	rg := kmsg.NewDeleteGroupsResponseGroup()
	rg.Group = a.id
	switch {
	case !a.g.Exists():
		rg.ErrorCode = kerr.GroupIDNotFound.Code
	case a.g.state != Empty || a.g.IsConsumer() || len(a.g.share.members) > 0 || len(a.g.streams.members) > 0:
		rg.ErrorCode = kerr.NonEmptyGroup.Code
	}
	if rg.ErrorCode != 0 {
		resp.Groups = append(resp.Groups, rg)
		m.Reply(resp)
		return
	}
	if a.g.IsShare() {
		// As Kafka: the share-partitions' state goes first, then the
		// group's records.
		a.deleteShareStates(func(err *kerr.Error) {
			if err != nil {
				rg.ErrorCode = err.Code
				resp.Groups = append(resp.Groups, rg)
				m.Reply(resp)
				return
			}
			a.deleteGroupRecords(resp, rg, m)
		})
		return
	}
	a.deleteGroupRecords(resp, rg, m)
}

// deleteGroupRecords writes the tombstones of an empty group's offsets
// and records, then answers DeleteGroups.
func (a *groupActor) deleteGroupRecords(resp *kmsg.DeleteGroupsResponse, rg kmsg.DeleteGroupsResponseGroup, m *Request) {
	var recs []Record
	all := a.g.CommittedTopics()
	for _, t := range SortedTopics(all) {
		for _, p := range all[t] {
			recs = append(recs, OffsetTombstone(a.id, t, p))
		}
	}
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, a.id
	recs = append(recs, Record{Key: k.AppendTo(nil)})
	recs = append(recs, a.g.ConsumerTombstones()...)
	recs = append(recs, a.g.ShareTombstones()...)
	recs = append(recs, a.g.StreamsTombstones()...)
	a.append(recs, func(err *kerr.Error) {
		if err != nil {
			rg.ErrorCode = err.Code
			a.reload() // the consumer group's records may be half gone
		} else {
			fresh := NewGroup(a.id, a.g.cfg)
			fresh.seq = a.g.seq // the old group's timers stay stale
			a.g = fresh
		}
		resp.Groups = append(resp.Groups, rg)
		m.Reply(resp)
	})
}

// list answers ListGroups for this group: one entry if it exists and
// passes the request's state (v4+) and type (v5+) filters.
func (a *groupActor) list(req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Groups = listGroup(a.g, req, resp.Groups)
	return resp
}

// listGroup appends g's ListGroups entry to out if it exists and passes
// the request's filters.
func listGroup(g *Group, req *kmsg.ListGroupsRequest, out []kmsg.ListGroupsResponseGroup) []kmsg.ListGroupsResponseGroup {
	if !g.Exists() {
		return out
	}
	state, typ, protocolType := g.state.String(), "classic", g.protocolType
	switch {
	case g.IsShare():
		// A share group (KIP-932): its protocol type is "share".
		typ, protocolType, state = "share", "share", g.shareState()
	case g.IsStreams():
		// A streams group (KIP-1071): its protocol type is "streams".
		typ, protocolType, state = "streams", "streams", g.streamsState()
	case len(g.members) == 0 && g.consumer.epoch > 0:
		// A consumer-protocol group (KIP-848), in its own states.
		typ, protocolType = "consumer", "consumer"
		state = g.consumerState()
	}
	if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, state) }) {
		return out
	}
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, typ) }) {
		return out
	}
	rg := kmsg.NewListGroupsResponseGroup()
	rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.ID, protocolType, state, typ
	return append(out, rg)
}
