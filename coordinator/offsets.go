package coordinator

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed offset with what the client stored beside it.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64
	// RecordOffset is the offset of its record in the group's
	// __consumer_offsets partition: between a transaction's offsets and
	// another commit of the same partition, the later record wins.
	RecordOffset int64
}

// CheckCommit decides whether a member (or a standalone consumer) may
// commit, as Kafka's ClassicGroup.validateOffsetCommit does: members are
// checked for their id, instance id and generation; a commit with
// generation -1 and no member id is a simple commit, allowed only while
// the group has no members. nil means the commit may go ahead.
func (g *Group) CheckCommit(generation int32, memberID string, instanceID *string) *kerr.Error {
	return g.checkCommit(generation, memberID, instanceID, false)
}

// checkCommit is CheckCommit, and with txn CheckTxnCommit: a transactional
// commit without member id and generation is always allowed, one of a
// member is not refused during a rebalance, and a consumer-protocol
// member's stale epoch is ILLEGAL_GENERATION (TxnOffsetCommit has no
// STALE_MEMBER_EPOCH), as Kafka's validateOffsetCommit with
// isTransactional.
func (g *Group) checkCommit(generation int32, memberID string, instanceID *string, txn bool) *kerr.Error {
	instance := ""
	if instanceID != nil {
		instance = *instanceID
	}
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.IsShare():
		// A share group has no committed offsets: Kafka's ShareGroup
		// refuses the commit (GroupIdNotFoundException).
		return kerr.GroupIDNotFound
	case g.IsStreams():
		err := g.checkStreamsCommit(generation, memberID, txn)
		if txn && err == kerr.StaleMemberEpoch {
			err = kerr.IllegalGeneration
		}
		return err
	case txn && generation < 0 && memberID == "" && instance == "":
		return nil
	case g.state == Empty && (g.IsConsumer() || g.consumer.epoch > 0 && memberID != ""):
		err := g.checkConsumerCommit(generation, memberID)
		if txn && err == kerr.StaleMemberEpoch {
			err = kerr.IllegalGeneration
		}
		return err
	case generation < 0 && memberID == "" && instance == "":
		if g.state != Empty {
			return kerr.UnknownMemberID
		}
		return nil
	case g.checkInstance(memberID, instance) != nil:
		return kerr.FencedInstanceID
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case generation != g.generation:
		return kerr.IllegalGeneration
	case g.state == CompletingRebalance && !txn:
		// The member's assignment of this generation is not known yet.
		return kerr.RebalanceInProgress
	}
	// A commit is as good as a heartbeat.
	g.touch(m)
	return nil
}

// Commit records a committed offset once it is durable. In an empty
// group (standalone consumers) the offsets' retention starts again.
func (g *Group) Commit(topic string, partition int32, o Offset) {
	g.offsets[topicPartition{topic, partition}] = o
	if g.state == Empty {
		g.scheduleExpiry(o.CommitTimestamp)
	}
}

// Offsets returns every committed offset, for expiry.
func (g *Group) Offsets() map[topicPartition]Offset { return maps.Clone(g.offsets) }

// DeleteOffset forgets a committed offset (its tombstone is durable).
func (g *Group) DeleteOffset(topic string, partition int32) {
	delete(g.offsets, topicPartition{topic, partition})
}

// Committed returns a committed offset.
func (g *Group) Committed(topic string, partition int32) (Offset, bool) {
	o, ok := g.offsets[topicPartition{topic, partition}]
	return o, ok
}

// CommittedTopics returns the topics with committed offsets, sorted, and
// each one's partitions, sorted.
func (g *Group) CommittedTopics() map[string][]int32 {
	out := map[string][]int32{}
	for tp := range g.offsets {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// SortedTopics returns the keys of CommittedTopics, sorted.
func SortedTopics(m map[string][]int32) []string {
	ts := make([]string, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// Exists reports whether the group is known: it has members, a
// generation, or committed offsets.
func (g *Group) Exists() bool {
	return g.state != Dead && (len(g.members) > 0 || g.generation > 0 || len(g.offsets) > 0 || g.consumer.epoch > 0 || g.IsShare() || g.IsStreams())
}

// CheckOffsetDelete decides whether a committed offset of topic may be
// deleted (OffsetDelete): always in an Empty group; in a group of the
// consumer protocol type with members (classic or KIP-848) only when no
// member subscribes to the topic.
func (g *Group) CheckOffsetDelete(topic string) *kerr.Error {
	switch {
	case g.state == Dead || !g.Exists() || g.IsShare():
		return kerr.GroupIDNotFound
	case g.IsStreams():
		// As Kafka's StreamsGroup.isSubscribedToTopic: a source topic of
		// the topology, while the group has members.
		if t := g.streams.topology; t != nil && len(g.streams.members) > 0 && slices.ContainsFunc(t.subs, func(s streamsSubtopology) bool { return slices.Contains(s.sourceTopics, topic) }) {
			return kerr.GroupSubscribedToTopic
		}
		return nil
	case g.IsConsumer():
		// A KIP-848 group: as Kafka's isSubscribedToTopic, by the
		// members' subscriptions as resolved (regexes included).
		for _, m := range g.consumer.members {
			if _, ok := slices.BinarySearch(m.topics, topic); ok && topic != "" {
				return kerr.GroupSubscribedToTopic
			}
		}
		return nil
	case g.state == Empty:
		return nil
	case g.protocolType != "consumer":
		return kerr.NonEmptyGroup
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.protocol)); err != nil {
			continue
		}
		if slices.Contains(meta.Topics, topic) {
			return kerr.GroupSubscribedToTopic
		}
	}
	return nil
}
