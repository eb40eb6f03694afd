package coordinator

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

// offsetsIndex is what the groups of one __consumer_offsets partition
// need to load, kept while this node leads the partition, so that loading
// a group costs its own records rather than a read of the partition (as
// Kafka's GroupMetadataManager loads a partition's groups once when it
// becomes their coordinator).
//
// Per group it holds the records compaction would leave with the
// transaction markers applied: the last record of each key (a tombstone
// removes its key, and a consumer, share or streams group's tombstone
// removes the group's other records of its kind too, as Restore forgets
// them), and each open transaction's offset records, by producer.
// Replayed in log order through Restore they give the group Restore gives
// from the whole log: Restore's outcome depends only on the last record of
// each key, but for the resets of a tombstone, which the index has
// already applied.
//
// It is built by reading the partition once, up to the log end of the
// view it reads, when a group of the partition first loads (or ListGroups
// or a topic deletion first asks); it then follows the records this
// node's group actors append (appendBatch: their offsets are at or past
// that end) and the markers written (TxnCompleted). It is built again
// when the partition's leader epoch changed (this node lost leadership
// and got it back: its log may have been truncated meanwhile), after an
// append whose failure leaves it unknown whether its records are in the
// log, and it is dropped when this node no longer leads the partition.
//
// Concurrency: every method is safe for concurrent use; the group actors,
// the partition actor's append replies, the groups supervisor and
// transport call them.
type offsetsIndex struct {
	h *partition.Handle

	mu    sync.Mutex
	built bool
	epoch int32 // the partition's leader epoch when built
	end   int64 // the records below end were read by the build
	// groups holds what each group of the partition has in the log.
	groups map[string]*indexedGroup
	// open holds the groups with offsets of each open transaction.
	open map[int64]map[string]bool
}

// indexedGroup is one group's part of an offsetsIndex.
type indexedGroup struct {
	live    map[string]Record           // record key → its last record, not a tombstone
	pending map[int64]map[string]Record // producer id → key → a record of its open transaction
}

// errIndexLoading is the error of an index whose partition has no log
// yet: loading, or its storage failed before it loaded.
var errIndexLoading = errors.New("coordinator: __consumer_offsets partition loading")

// ensure builds the index if it is not built for the partition's current
// leader epoch. Called with x.mu held.
func (x *offsetsIndex) ensure() error {
	v := x.h.View()
	if v == nil || v.Log == nil {
		return errIndexLoading
	}
	if x.built && x.epoch == v.LeaderEpoch {
		return nil
	}
	x.built, x.groups, x.open = false, map[string]*indexedGroup{}, map[int64]map[string]bool{}
	err := readPartition(v.Log, x.apply, func(producerID int64, commit bool) {
		// In log order: every record of the transaction is before it.
		x.marker(producerID, commit, math.MaxInt64)
	})
	if err != nil {
		return err
	}
	x.built, x.epoch, x.end = true, v.LeaderEpoch, v.Log.LogEndOffset
	return nil
}

// apply adds a record read or appended, in log order. Called with x.mu
// held.
func (x *offsetsIndex) apply(r Record) {
	group := recordGroup(r.Key)
	if group == "" {
		return
	}
	ig := x.groups[group]
	if ig == nil {
		if r.Value == nil {
			return // nothing to delete
		}
		ig = &indexedGroup{live: map[string]Record{}}
		x.groups[group] = ig
	}
	key := string(r.Key)
	typ := int16(binary.BigEndian.Uint16(r.Key))
	switch {
	case r.Value == nil:
		// As Restore: a tombstone deletes whether or not it is
		// transactional.
		delete(ig.live, key)
		if typ == recConsumerGroup {
			for k := range ig.live {
				if isConsumerRecord(k) {
					delete(ig.live, k)
				}
			}
		}
		if typ == recShareGroup {
			// As restoreShare: the share group is gone, all of it.
			for k := range ig.live {
				if len(k) >= 2 && isShareType(int16(binary.BigEndian.Uint16([]byte(k[:2])))) {
					delete(ig.live, k)
				}
			}
		}
		if typ == recStreamsGroup {
			// As restoreStreams: the streams group is gone, all of it.
			for k := range ig.live {
				if len(k) >= 2 && isStreamsType(int16(binary.BigEndian.Uint16([]byte(k[:2])))) {
					delete(ig.live, k)
				}
			}
		}
	case r.Transactional && typ <= 1:
		if ig.pending == nil {
			ig.pending = map[int64]map[string]Record{}
		}
		if ig.pending[r.ProducerID] == nil {
			ig.pending[r.ProducerID] = map[string]Record{}
		}
		ig.pending[r.ProducerID][key] = r
		if x.open[r.ProducerID] == nil {
			x.open[r.ProducerID] = map[string]bool{}
		}
		x.open[r.ProducerID][group] = true
	default:
		r.Transactional, r.ProducerID = false, 0
		ig.live[key] = r
	}
	x.tidy(group, ig)
}

// marker applies a transaction's marker at offset: its offsets written
// before it become the groups' (unless a later record of the same key is
// there already, as CompleteTxn decides) or go. Called with x.mu held.
func (x *offsetsIndex) marker(producerID int64, commit bool, offset int64) {
	for group := range x.open[producerID] {
		ig := x.groups[group]
		if ig == nil {
			continue
		}
		p := ig.pending[producerID]
		for k, r := range p {
			if r.Offset >= offset {
				continue // of a later transaction of the producer
			}
			delete(p, k)
			if cur, ok := ig.live[k]; commit && (!ok || cur.Offset <= r.Offset) {
				r.Transactional, r.ProducerID = false, 0
				ig.live[k] = r
			}
		}
		if len(p) == 0 {
			delete(ig.pending, producerID)
			delete(x.open[producerID], group)
		}
		x.tidy(group, ig)
	}
	if len(x.open[producerID]) == 0 {
		delete(x.open, producerID)
	}
}

// tidy forgets a group with nothing left: a group restored from
// tombstones only is a group never seen.
func (x *offsetsIndex) tidy(group string, ig *indexedGroup) {
	if len(ig.live) == 0 && len(ig.pending) == 0 {
		delete(x.groups, group)
	}
}

// isConsumerRecord reports whether a record key is a consumer group's
// (KIP-848) record.
func isConsumerRecord(key string) bool {
	if len(key) < 2 {
		return false
	}
	switch int16(binary.BigEndian.Uint16([]byte(key[:2]))) {
	case recConsumerGroup, recConsumerMember, recConsumerTargetHdr, recConsumerTarget, recConsumerCurrent:
		return true
	}
	return false
}

// load returns a group's records in log order, for Restore: the open
// transactions' offset records with Transactional set.
func (x *offsetsIndex) load(group string) ([]Record, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.ensure(); err != nil {
		return nil, err
	}
	return x.recordsOf(x.groups[group]), nil
}

// recordsOf returns ig's records in log order. Called with x.mu held.
func (x *offsetsIndex) recordsOf(ig *indexedGroup) []Record {
	if ig == nil {
		return nil
	}
	out := slices.Collect(maps.Values(ig.live))
	for _, p := range ig.pending {
		for _, r := range p {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Offset, b.Offset) })
	return out
}

// appended follows an append of this node's to the partition: recs
// written from offset base on, of producerID's transaction when
// transactional. With err set it either was not written, or may have
// been: then the index is built again at its next use.
func (x *offsetsIndex) appended(recs []Record, base int64, transactional bool, producerID int64, err *kerr.Error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.built {
		return // the build reads them
	}
	if err != nil {
		if !notWritten(err) {
			x.built = false
		}
		return
	}
	if v := x.h.View(); base < x.end || v == nil || v.LeaderEpoch != x.epoch {
		// Read by the build already, or the partition changed hands:
		// ensure builds the index again.
		return
	}
	for i, r := range recs {
		r.Offset, r.Transactional, r.ProducerID = base+int64(i), transactional, producerID
		x.apply(r)
	}
}

// notWritten reports whether an append's error says that nothing was
// written: refused before its records were staged.
func notWritten(err *kerr.Error) bool {
	switch err {
	case kerr.NotEnoughReplicas, kerr.InvalidProducerEpoch, kerr.ProducerFenced, kerr.InvalidTxnState,
		kerr.InvalidProducerIDMapping, kerr.TransactionCoordinatorFenced, kerr.ConcurrentTransactions,
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.CorruptMessage, kerr.InvalidRecord,
		kerr.OutOfOrderSequenceNumber, kerr.NotLeaderForPartition:
		// NB: a leadership lost after the staging changes the leader
		// epoch, which the next use checks.
		return true
	}
	return false
}

// markerWritten follows a transaction marker written at offset.
func (x *offsetsIndex) markerWritten(producerID int64, commit bool, offset int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built && offset >= x.end {
		x.marker(producerID, commit, offset)
	}
}

// groupsWithOffsetsOn returns, sorted, the groups with a committed offset
// on one of topics.
func (x *offsetsIndex) groupsWithOffsetsOn(topics map[string]bool) ([]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.ensure(); err != nil {
		return nil, err
	}
	var out []string
	for g, ig := range x.groups {
		for k := range ig.live {
			var key kmsg.OffsetCommitKey
			if binary.BigEndian.Uint16([]byte(k[:2])) <= 1 && key.ReadFrom([]byte(k)) == nil && topics[key.Topic] {
				out = append(out, g)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ListIdle answers ListGroups for the groups of a __consumer_offsets
// partition but those in asked (the groups with an actor, which their
// actors answer), each restored from its records in the partition's index
// (read once, at its first use since this node leads the partition).
func (d *Directory) ListIdle(h *partition.Handle, req *kmsg.ListGroupsRequest, asked map[string]bool) ([]kmsg.ListGroupsResponseGroup, error) {
	newGroup := d.newGroup.Load()
	if newGroup == nil {
		return nil, nil // no supervisor: no groups
	}
	x := d.index(h)
	x.mu.Lock()
	if err := x.ensure(); err != nil {
		x.mu.Unlock()
		return nil, err
	}
	idle := map[string][]Record{}
	for id, ig := range x.groups {
		if !asked[id] {
			idle[id] = x.recordsOf(ig)
		}
	}
	x.mu.Unlock()
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range slices.Sorted(maps.Keys(idle)) {
		g := (*newGroup)(id)
		for _, r := range idle[id] {
			_ = g.Restore(r) // a record that does not decode is logged when the group loads
		}
		g.Loaded()
		out = listGroup(g, req, out)
	}
	return out, nil
}

// CommittedOffset is a group's committed offset of a partition, as
// CommittedOffsets reports it.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// CommittedOffsets returns the offsets committed by the groups of a
// __consumer_offsets partition this node leads (classic and consumer
// groups: share groups commit none here), from the partition's index:
// durable commits, transactional ones once their transaction committed.
// The index is built first if this is its first use since this node leads
// the partition (a read of the partition, as ListGroups does). For
// /metrics' consumer lag; the order is unspecified.
func (d *Directory) CommittedOffsets(h *partition.Handle) ([]CommittedOffset, error) {
	x := d.index(h)
	x.mu.Lock()
	if err := x.ensure(); err != nil {
		x.mu.Unlock()
		return nil, err
	}
	recs := x.offsetRecords()
	x.mu.Unlock()
	// NB: decoded outside the lock, which the group actors' commits
	// take; the index never changes a record's bytes.
	return decodeCommitted(recs), nil
}

// offsetRecords returns the groups' committed offset records, not
// tombstones, not pending. Called with x.mu held.
func (x *offsetsIndex) offsetRecords() []Record {
	var out []Record
	for _, ig := range x.groups {
		for k, r := range ig.live {
			if binary.BigEndian.Uint16([]byte(k[:2])) <= 1 {
				out = append(out, r)
			}
		}
	}
	return out
}

// decodeCommitted decodes offset records; one that does not decode is
// left out (and logged when its group loads).
func decodeCommitted(recs []Record) []CommittedOffset {
	out := make([]CommittedOffset, 0, len(recs))
	for _, r := range recs {
		var key kmsg.OffsetCommitKey
		var value kmsg.OffsetCommitValue
		if key.ReadFrom(r.Key) != nil || value.ReadFrom(r.Value) != nil {
			continue
		}
		out = append(out, CommittedOffset{Group: key.Group, Topic: key.Topic, Partition: key.Partition, Offset: value.Offset})
	}
	return out
}
