package coordinator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group restored from its records in an index gives what a restore from
// the whole log gives, with many groups on the partition: offsets,
// tombstones, deleted groups, transactional offsets committed, aborted and
// still open, classic membership, consumer- and streams-group records.
// Random logs, many seeds.
func TestIndexRestoresAsTheWholeLog(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		log := randomLog(rng, 8, 300)
		x := &offsetsIndex{groups: map[string]*indexedGroup{}, open: map[int64]map[string]bool{}}
		for _, e := range log {
			if e.marker {
				x.marker(e.producerID, e.commit, e.r.Offset)
			} else {
				x.apply(e.r)
			}
		}
		for gi := range 8 {
			id := fmt.Sprintf("g%d", gi)
			want := NewGroup(id, Config{Now: time.Now})
			for _, e := range log {
				if e.marker {
					want.CompleteTxn(e.producerID, e.commit)
				} else {
					_ = want.Restore(e.r)
				}
			}
			want.Loaded()
			got := NewGroup(id, Config{Now: time.Now})
			for _, r := range x.recordsOf(x.groups[id]) {
				_ = got.Restore(r)
			}
			got.Loaded()
			if w, g := summarize(want), summarize(got); !reflect.DeepEqual(w, g) {
				t.Fatalf("seed %d, group %s:\nfrom the log:   %+v\nfrom the index: %+v", seed, id, w, g)
			}
			if _, ok := x.groups[id]; ok != want.Exists() && !ok {
				t.Fatalf("seed %d, group %s: exists %v from the log, not in the index", seed, id, want.Exists())
			}
		}
	}
}

// The committed offsets an index reports (Directory.CommittedOffsets, for
// /metrics' consumer lag) are those the groups restored from the whole log
// have: tombstones, aborted and open transactions' offsets left out.
// Random logs, many seeds.
func TestIndexCommittedOffsetsAsTheWholeLog(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		log := randomLog(rng, 8, 300)
		x := &offsetsIndex{groups: map[string]*indexedGroup{}, open: map[int64]map[string]bool{}}
		for _, e := range log {
			if e.marker {
				x.marker(e.producerID, e.commit, e.r.Offset)
			} else {
				x.apply(e.r)
			}
		}
		got := map[string]int64{}
		for _, c := range decodeCommitted(x.offsetRecords()) {
			got[fmt.Sprintf("%s/%s/%d", c.Group, c.Topic, c.Partition)] = c.Offset
		}
		want := map[string]int64{}
		for gi := range 8 {
			id := fmt.Sprintf("g%d", gi)
			g := NewGroup(id, Config{Now: time.Now})
			for _, e := range log {
				if e.marker {
					g.CompleteTxn(e.producerID, e.commit)
				} else {
					_ = g.Restore(e.r)
				}
			}
			g.Loaded()
			for p := range int32(3) {
				if o, ok := g.Committed("t", p); ok {
					want[fmt.Sprintf("%s/t/%d", id, p)] = o.Offset
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d:\nfrom the index: %v\nfrom the log:   %v", seed, got, want)
		}
	}
}

// A marker applies only to the transaction's records before it: one of
// the producer's next transaction, appended before the marker's news came,
// stays pending.
func TestIndexMarkerSparesLaterTransaction(t *testing.T) {
	x := &offsetsIndex{groups: map[string]*indexedGroup{}, open: map[int64]map[string]bool{}}
	r := OffsetRecord("g", "t", 0, Offset{Offset: 1})
	r.Offset, r.Transactional, r.ProducerID = 10, true, 7
	x.apply(r)
	r2 := OffsetRecord("g", "t", 1, Offset{Offset: 2})
	r2.Offset, r2.Transactional, r2.ProducerID = 12, true, 7
	x.apply(r2)
	x.marker(7, true, 11)
	g := NewGroup("g", Config{Now: time.Now})
	for _, r := range x.recordsOf(x.groups["g"]) {
		_ = g.Restore(r)
	}
	if o, ok := g.Committed("t", 0); !ok || o.Offset != 1 {
		t.Fatalf("committed = %+v %v, want offset 1 (the first transaction's)", o, ok)
	}
	if _, ok := g.Committed("t", 1); ok || !g.Unstable("t", 1) {
		t.Fatal("the second transaction's offset is not pending")
	}
}

type logEntry struct {
	r          Record
	marker     bool
	producerID int64
	commit     bool
}

// randomLog returns n entries of a __consumer_offsets partition's log for
// groups g0..g<groups-1>, at offsets 0, 1, ...
func randomLog(rng *rand.Rand, groups, n int) []logEntry {
	var out []logEntry
	group := func() string { return fmt.Sprintf("g%d", rng.IntN(groups)) }
	for off := int64(0); off < int64(n); off++ {
		var e logEntry
		g := group()
		switch k := rng.IntN(14); k {
		case 0, 1, 2:
			e.r = OffsetRecord(g, "t", int32(rng.IntN(3)), Offset{Offset: rng.Int64N(1000), LeaderEpoch: -1, CommitTimestamp: 1})
		case 3:
			e.r = OffsetTombstone(g, "t", int32(rng.IntN(3)))
		case 4, 5:
			e.r = OffsetRecord(g, "t", int32(rng.IntN(3)), Offset{Offset: rng.Int64N(1000), LeaderEpoch: -1, CommitTimestamp: 1})
			e.r.Transactional, e.r.ProducerID = true, int64(rng.IntN(3))
		case 6:
			e.marker, e.producerID, e.commit = true, int64(rng.IntN(3)), rng.IntN(2) == 0
		case 7:
			cfg := Config{Now: func() time.Time { return time.UnixMilli(5) }}
			cg := NewGroup(g, cfg)
			cg.protocolType, cg.protocol, cg.generation, cg.state = "consumer", "range", int32(rng.IntN(5)+1), Stable
			for i := range rng.IntN(3) {
				id := fmt.Sprintf("m%d", i)
				cg.members[id] = &member{id: id, sessionTimeout: time.Second, protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range"}}}
				cg.joinOrder = append(cg.joinOrder, id)
			}
			if len(cg.members) > 0 {
				cg.leader = cg.joinOrder[0]
			}
			e.r = cg.MetadataRecord()
		case 8:
			k := kmsg.NewGroupMetadataKey()
			k.Version, k.Group = 2, g
			e.r = Record{Key: k.AppendTo(nil)}
		case 9:
			v := kbin.AppendInt16(nil, 0)
			v = kbin.AppendInt32(v, int32(rng.IntN(9)+1))
			v = kbin.AppendUvarint(v, 0)
			if rng.IntN(3) == 0 {
				v = nil
			}
			e.r = Record{Key: consumerKey(recConsumerGroup, g, "", false), Value: v}
		case 10:
			v := kbin.AppendInt16(nil, 0)
			v = kbin.AppendInt32(v, int32(rng.IntN(9)+1))
			v = kbin.AppendUvarint(v, 0)
			e.r = Record{Key: consumerKey(recConsumerTargetHdr, g, "", false), Value: v}
		case 11:
			v := kbin.AppendInt16(nil, 0)
			v = kbin.AppendCompactArrayLen(v, 0)
			v = kbin.AppendUvarint(v, 0)
			if rng.IntN(2) == 0 {
				v = nil
			}
			e.r = Record{Key: consumerKey(recConsumerTarget, g, fmt.Sprintf("m%d", rng.IntN(2)), true), Value: v}
		case 12:
			// A streams group's record, or its tombstone (the whole
			// streams group goes).
			sg := newStreamsGroup()
			sg.epoch, sg.validatedEpoch = int32(rng.IntN(9)+1), -1
			e.r = Record{Key: consumerKey(recStreamsGroup, g, "", false), Value: sg.groupValue()}
			if rng.IntN(3) == 0 {
				e.r.Value = nil
			}
		case 13:
			// A streams member's metadata or current assignment.
			m := &streamsMember{clientID: "c", epoch: int32(rng.IntN(5)), assigned: newStreamsTasks(), revoking: newStreamsTasks()}
			typ, v := int16(recStreamsMember), m.metadataValue()
			if rng.IntN(2) == 0 {
				typ, v = recStreamsCurrent, m.currentValue()
			}
			if rng.IntN(3) == 0 {
				v = nil
			}
			e.r = Record{Key: consumerKey(typ, g, fmt.Sprintf("m%d", rng.IntN(2)), true), Value: v}
		}
		e.r.Offset = off
		out = append(out, e)
	}
	return out
}

// groupSummary is what a restore leaves of a group, but for emptySince,
// which compaction may take too (a classic group's tombstone keeps the
// time of the record before it only in an uncompacted log).
type groupSummary struct {
	State                          State
	ProtocolType, Protocol, Leader string
	Generation                     int32
	Members                        []string
	Offsets                        map[topicPartition]Offset
	Pending                        map[int64]map[topicPartition]Offset
	ConsumerEpoch, TargetEpoch     int32
	ConsumerRecords                map[string][]byte
	StreamsRecords                 map[string][]byte
}

func summarize(g *Group) groupSummary {
	s := groupSummary{State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader,
		Generation: g.generation, Members: slices.Clone(g.joinOrder), Offsets: maps.Clone(g.offsets), Pending: map[int64]map[topicPartition]Offset{}}
	for p, o := range g.pendingTxn {
		if len(o) > 0 {
			s.Pending[p] = maps.Clone(o)
		}
	}
	if len(s.Offsets) == 0 {
		s.Offsets = nil
	}
	if c := g.consumer; c != nil {
		s.ConsumerEpoch, s.TargetEpoch = c.epoch, c.targetEpoch
		if len(c.persisted.values) > 0 {
			s.ConsumerRecords = c.persisted.values
		}
	}
	if len(g.streams.persisted.values) > 0 {
		s.StreamsRecords = g.streams.persisted.values
	}
	return s
}

// The index follows the log: records below the end its build read are not
// taken twice, an append answered with an error that may have written is
// read from the log at the next use, one refused before writing changes
// nothing.
func TestIndexFollowsTheLog(t *testing.T) {
	sys, h := hostOffsets(t)
	o := func(n int64) Offset { return Offset{Offset: n, LeaderEpoch: -1, CommitTimestamp: 1} }
	appendRecords(t, sys, h, OffsetRecord("a", "t", 0, o(1)))
	x := &offsetsIndex{h: h}
	offsetOf := func(group string) int64 {
		t.Helper()
		recs, err := x.load(group)
		if err != nil {
			t.Fatal(err)
		}
		g := NewGroup(group, Config{Now: time.Now})
		for _, r := range recs {
			_ = g.Restore(r)
		}
		if c, ok := g.Committed("t", 0); ok {
			return c.Offset
		}
		return -1
	}
	if got := offsetOf("a"); got != 1 {
		t.Fatalf("built: a at %d, want 1", got)
	}
	// An answer for a record the build read (offset 0): not applied again.
	x.appended([]Record{OffsetTombstone("a", "t", 0)}, 0, false, -1, nil)
	if got := offsetOf("a"); got != 1 {
		t.Fatalf("a record below the build's end taken again: a at %d, want 1", got)
	}
	// A record in the log whose append was answered with an indefinite
	// error: the next use reads the log again.
	appendRecords(t, sys, h, OffsetRecord("b", "t", 0, o(2)))
	x.appended([]Record{OffsetRecord("b", "t", 0, o(2))}, 1, false, -1, kerr.RequestTimedOut)
	if got := offsetOf("b"); got != 2 {
		t.Fatalf("after an indefinite error: b at %d, want 2 (from the log)", got)
	}
	// Refused before anything was written: nothing changes.
	x.appended([]Record{OffsetRecord("c", "t", 0, o(3))}, -1, false, -1, kerr.NotEnoughReplicas)
	if got := offsetOf("c"); got != -1 {
		t.Fatalf("after a refused append: c at %d, want none", got)
	}
	// An answered append past the end is taken.
	x.appended([]Record{OffsetRecord("c", "t", 0, o(4))}, 2, false, -1, nil)
	if got := offsetOf("c"); got != 4 {
		t.Fatalf("after an append: c at %d, want 4", got)
	}
}
