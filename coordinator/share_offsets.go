package coordinator

// The share group admin APIs, as Kafka 4.2's GroupCoordinatorService
// answers them: DescribeShareGroupOffsets (v0-1), AlterShareGroupOffsets
// (v0) and DeleteShareGroupOffsets (v0), and the share state DeleteGroups
// removes. A share-partition's start offset (SPSO) is not the group
// coordinator's: it is the share coordinator's durable state (package
// share), which the group actor reaches through SupervisorConfig.ShareStates
// and whose answers come back to it as messages. The group keeps which
// partitions have share state (ShareGroupStatePartitionMetadata).
//
//   - Describe: each partition asked for (Topics null: every partition
//     with share state) gets its StartOffset and LeaderEpoch from the
//     state's summary (-1 and 0 when it has none, as for an unknown topic
//     or group, or a group of another type: Kafka does not look the group
//     up), and (v1) its Lag: the high watermark less the start offset
//     less the records after it already delivered (acknowledged or
//     archived), -1 when any is unknown.
//   - Alter: the group must be empty (NON_EMPTY_GROUP); an unknown group
//     id becomes a share group. Each partition's state is initialized
//     anew at the given start offset (a new state epoch: what was in
//     flight is forgotten) and recorded as having state.
//   - Delete: the group must be empty; each named topic's partitions lose
//     their state and are no longer recorded.
//   - For Alter and Delete, a group id held by a classic or consumer
//     group is GROUP_ID_NOT_FOUND ("Group X is not a share group."), an
//     unknown one for Delete "Group X not found."; an unknown topic or
//     partition UNKNOWN_TOPIC_OR_PARTITION. Without ShareStates (a node whose share
//     coordinator is not wired) what passes those checks is
//     COORDINATOR_NOT_AVAILABLE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareStates reaches share-partitions' durable state: the share
// coordinator (package share), which node wires. Each method calls reply
// exactly once, on any goroutine; the group actor routes the answer back
// into its mailbox. Codes are Kafka error codes (0 for none).
type ShareStates interface {
	// Initialize (re)creates a share-partition's state with the given
	// start offset and a new state epoch (Kafka's
	// InitializeShareGroupState).
	Initialize(group string, topicID [16]byte, partition int32, startOffset int64, reply func(code int16))
	// Summary returns a share-partition's start offset and leader epoch,
	// found false when it has no state, and how many records after the
	// start offset are delivered (acknowledged or archived), -1 if
	// unknown (Kafka's ReadShareGroupStateSummary, KIP-1226).
	Summary(group string, topicID [16]byte, partition int32, reply func(code int16, found bool, startOffset int64, leaderEpoch int32, deliveryCompleteCount int32))
	// Delete removes a share-partition's state (Kafka's
	// DeleteShareGroupState).
	Delete(group string, topicID [16]byte, partition int32, reply func(code int16))
}

// shareStateReplied is an answer of ShareStates, sent to the group actor
// by whichever goroutine got it; then runs on the actor.
type shareStateReplied struct {
	inc  uint64
	then func()
}

// onActor returns fn wrapped to run on the group actor's goroutine.
func (a *groupActor) onActor(fn func()) func() {
	self, inc, sys := a.self, a.inc, a.sys
	return func() { sys.Root.Send(self, &shareStateReplied{inc: inc, then: fn}) }
}

// gather counts outstanding ShareStates answers and runs done, on the
// actor, once the last is in (at once if none was asked).
type gather struct {
	left int
	done func()
}

func (w *gather) add()    { w.left++ }
func (w *gather) finish() { w.left--; w.check() }
func (w *gather) check() {
	if w.left == 0 && w.done != nil {
		done := w.done
		w.done = nil
		done()
	}
}

// shareGroupError is the group-level error of a share admin request, with
// its message, or nil when the group may be worked on. create lets an
// unknown group id through (Alter creates the group).
func (g *Group) shareGroupError(create bool) (*kerr.Error, string) {
	switch g.typeOwner() {
	case "share":
		if len(g.share.members) > 0 {
			return kerr.NonEmptyGroup, "The group has active members."
		}
		return nil, ""
	case "":
		if create {
			return nil, ""
		}
		return kerr.GroupIDNotFound, "Group " + g.ID + " not found."
	}
	return kerr.GroupIDNotFound, "Group " + g.ID + " is not a share group."
}

// describeShareOffsets handles DescribeShareGroupOffsets for one group
// (Groups[0]; transport splits the request by group).
func (a *groupActor) describeShareOffsets(req *kmsg.DescribeShareGroupOffsetsRequest, m *Request) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	rq := req.Groups[0]
	rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	rg.GroupID = rq.GroupID
	answer := func() {
		resp.Groups = append(resp.Groups, rg)
		m.Reply(resp)
	}
	if a.cfg.ShareStates == nil {
		rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		answer()
		return
	}
	// NB: Kafka does not look the group up: an unknown group, or one of
	// another type, has no share state, and its partitions are described
	// as uninitialized (tests/diff TestShareGroupOffsets).
	s := a.g.share
	if !a.g.IsShare() {
		s = &shareGroup{}
	}
	topics := a.g.topics()
	asked := rq.Topics
	if asked == nil {
		names, parts := s.initialized.sorted()
		for _, t := range names {
			asked = append(asked, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t, Partitions: parts[t]})
		}
	}
	w := &gather{}
	rg.Topics = make([]kmsg.DescribeShareGroupOffsetsResponseGroupTopic, len(asked))
	for i, t := range asked {
		rt := &rg.Topics[i]
		rt.Default()
		rt.Topic = t.Topic
		id, n, known := topics.Topic(t.Topic)
		if known {
			rt.TopicID = id
		}
		rt.Partitions = make([]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			// No state: start offset and lag -1, leader epoch 0 (Kafka's
			// PartitionFactory.DEFAULT_LEADER_EPOCH), no error, for an
			// unknown topic too ("treated as absence of data").
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, 0, -1
			if !known || p < 0 || p >= n || !s.initialized[topicPartition{t.Topic, p}] {
				continue
			}
			w.add()
			topic := t.Topic
			a.cfg.ShareStates.Summary(a.id, id, p, func(code int16, found bool, start int64, epoch int32, delivered int32) {
				a.onActor(func() {
					defer w.finish()
					switch {
					case code != 0:
						rp.ErrorCode = code
					case found:
						rp.StartOffset, rp.LeaderEpoch = start, epoch
						rp.Lag = a.shareLag(topic, p, start, delivered)
					}
				})()
			})
		}
	}
	w.done = answer
	w.check()
}

// shareLag is Kafka's share-partition lag (KIP-1226): the records from
// the start offset to the high watermark not yet delivered, -1 when the
// high watermark or the delivered count is unknown.
func (a *groupActor) shareLag(topic string, p int32, start int64, delivered int32) int64 {
	if a.cfg.HighWatermark == nil || delivered < 0 || start < 0 {
		return -1
	}
	hw, ok := a.cfg.HighWatermark(topic, p)
	if !ok {
		return -1
	}
	return max(hw-start-int64(delivered), 0)
}

// alterShareOffsets handles AlterShareGroupOffsets.
func (a *groupActor) alterShareOffsets(req *kmsg.AlterShareGroupOffsetsRequest, m *Request) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err, msg := a.g.shareGroupError(true); err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, nullable(msg)
		m.Reply(resp)
		return
	}
	if a.cfg.ShareStates == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		m.Reply(resp)
		return
	}
	topics := a.g.topics()
	w := &gather{}
	var set []topicPartition
	ids := map[string][16]byte{}
	resp.Topics = make([]kmsg.AlterShareGroupOffsetsResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.Topic = t.Topic
		id, n, known := topics.Topic(t.Topic)
		if known {
			rt.TopicID, ids[t.Topic] = id, id
		}
		rt.Partitions = make([]kmsg.AlterShareGroupOffsetsResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Default()
			rp.Partition = p.Partition
			if !known || p.Partition < 0 || p.Partition >= n {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			w.add()
			tp := topicPartition{t.Topic, p.Partition}
			a.cfg.ShareStates.Initialize(a.id, id, p.Partition, p.StartOffset, func(code int16) {
				a.onActor(func() {
					defer w.finish()
					rp.ErrorCode = code
					if code == 0 {
						set = append(set, tp)
					}
				})()
			})
		}
	}
	w.done = func() {
		if len(set) > 0 {
			// The group exists from now, with its partitions' state
			// recorded; answered once the records are durable (flush).
			a.g.createShare()
			for _, tp := range set {
				a.g.share.topicIDs[tp.Topic] = ids[tp.Topic]
				a.g.share.initialized[tp] = true
			}
		}
		a.g.reply(m.Reply, resp)
	}
	w.check()
}

// deleteShareOffsets handles DeleteShareGroupOffsets.
func (a *groupActor) deleteShareOffsets(req *kmsg.DeleteShareGroupOffsetsRequest, m *Request) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if err, msg := a.g.shareGroupError(false); err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.Code, nullable(msg)
		m.Reply(resp)
		return
	}
	if a.cfg.ShareStates == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		m.Reply(resp)
		return
	}
	s := a.g.share
	topics := a.g.topics()
	w := &gather{}
	var gone []topicPartition
	resp.Topics = make([]kmsg.DeleteShareGroupOffsetsResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Default()
		rt.Topic = t.Topic
		id, _, known := topics.Topic(t.Topic)
		if !known {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		rt.TopicID = id
		for tp := range s.initialized {
			if tp.Topic != t.Topic {
				continue
			}
			w.add()
			a.cfg.ShareStates.Delete(a.id, id, tp.Partition, func(code int16) {
				a.onActor(func() {
					defer w.finish()
					if code != 0 && rt.ErrorCode == 0 {
						rt.ErrorCode = code
					}
					if code == 0 {
						gone = append(gone, tp)
					}
				})()
			})
		}
	}
	w.done = func() {
		for _, tp := range gone {
			delete(a.g.share.initialized, tp)
		}
		a.g.reply(m.Reply, resp)
	}
	w.check()
}

// deleteShareStates removes the share state of every partition of the
// (empty) share group before DeleteGroups writes its tombstones, and
// calls then with the first error, if any. Without ShareStates there is
// no state to reach: the group goes without it.
func (a *groupActor) deleteShareStates(then func(err *kerr.Error)) {
	s := a.g.share
	if a.cfg.ShareStates == nil || len(s.initialized) == 0 {
		then(nil)
		return
	}
	var first *kerr.Error
	w := &gather{done: func() { then(first) }}
	for tp := range s.initialized {
		w.add()
		a.cfg.ShareStates.Delete(a.id, s.topicIDs[tp.Topic], tp.Partition, func(code int16) {
			a.onActor(func() {
				defer w.finish()
				if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && first == nil {
					first = e
				}
			})()
		})
	}
}
