package coordinator

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition"
)

// TopicsDeleted tells the groups supervisor that topics were deleted:
// every group this node coordinates deletes its committed offsets on them,
// with tombstones, as Kafka's GroupCoordinatorService.onPartitionsDeleted
// does (OffsetMetadataManager.onPartitionsDeleted, on every coordinator
// shard). Otherwise a topic created again under the same name would start
// at the old topic's offsets. Sent by node's metadata actor when an image
// no longer has a topic; no reply.
type TopicsDeleted struct {
	// Topics are the names of the deleted topics.
	Topics []string
	// Partitions are the __consumer_offsets partitions this node leads,
	// hosted and loaded: their groups that have no actor yet are found in
	// their indexes.
	Partitions []*partition.Handle
}

// forgetTopics tells a group's actor to delete its committed offsets on
// deleted topics: tombstones first (acks=-1), then its memory. Sent by the
// groups supervisor on TopicsDeleted; no reply.
type forgetTopics struct {
	topics map[string]bool
}

// topicsDeleted gives an actor to every group of m.Partitions with an
// offset on a deleted topic, then tells every group actor to forget those
// topics.
//
// NB: the partitions' indexes are asked here, on the supervisor, although
// that holds up Open while one is built (a partition's first use since
// this node leads it): a group spawned later by an Open could take a commit
// on a topic created again under the same name before its forgetTopics
// came, and lose it. Done here, forgetTopics is in every group actor's
// mailbox before any request sent after this message was handled.
func (s *supervisor) topicsDeleted(c actor.Context, m *TopicsDeleted) {
	topics := make(map[string]bool, len(m.Topics))
	for _, t := range m.Topics {
		topics[t] = true
	}
	for _, h := range m.Partitions {
		groups, err := s.cfg.Directory.index(h).groupsWithOffsetsOn(topics)
		if err != nil {
			// Kafka logs and goes on too: the groups that have an actor
			// are still told below.
			s.cfg.Logger.Error().Err(err).Int32("partition", h.Partition).Strs("topics", m.Topics).
				Msg("reading __consumer_offsets for the offsets of deleted topics")
		}
		for _, g := range groups {
			if s.groups[g] == nil {
				s.open(c, &Open{Group: g, Partition: h})
			}
		}
	}
	forget := &forgetTopics{topics: topics}
	for _, pid := range s.groups {
		c.Send(pid, forget)
	}
}

// forgetTopics writes tombstones for the group's committed offsets on the
// given topics and, once they are durable, forgets those offsets.
func (a *groupActor) forgetTopics(topics map[string]bool) {
	if a.g == nil {
		a.load()
	}
	if a.g == nil {
		// As Kafka, which logs COORDINATOR_LOAD_IN_PROGRESS and goes on.
		a.cfg.Logger.Warn().Str("group", a.id).Str("err", a.err.Message).
			Msg("could not load the group to delete its offsets on deleted topics")
		return
	}
	var recs []Record
	var gone []topicPartition
	all := a.g.CommittedTopics()
	for _, t := range SortedTopics(all) {
		if !topics[t] {
			continue
		}
		for _, p := range all[t] {
			recs = append(recs, OffsetTombstone(a.id, t, p))
			gone = append(gone, topicPartition{t, p})
		}
	}
	if len(recs) == 0 {
		return
	}
	a.writes++
	a.append(recs, func(err *kerr.Error) {
		a.writes--
		defer a.maybeExpire()
		if err != nil {
			a.cfg.Logger.Warn().Str("group", a.id).Str("err", err.Message).Msg("deleting the offsets of deleted topics")
			return
		}
		// Unconditionally: the partition answers appends in log order, so
		// a commit that changed one of these offsets since was appended
		// before the tombstones, which win, as they will after a restart.
		for _, tp := range gone {
			a.g.DeleteOffset(tp.Topic, tp.Partition)
		}
		a.cfg.Logger.Info().Str("group", a.id).Int("offsets", len(gone)).Msg("deleted the offsets of deleted topics")
	})
}
