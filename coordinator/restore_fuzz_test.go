package coordinator

import "testing"

// FuzzRestore feeds a group records of __consumer_offsets as a broker
// reads them back at start: whatever their bytes (a damaged log, another
// version's formats), Restore returns an error or applies them, and
// Loaded builds a group, never a panic. The seeds are the records a
// consumer group with a classic member writes through a rebalance, with
// offsets and a classic group's metadata, and those of a streams group.
func FuzzRestore(f *testing.F) {
	h := newHarness(&testing.T{})
	h.cgh("a0", "a", 0, []int32{})
	k := h.classicJoin("k0", "", nil).MemberID
	h.classicJoin("k1", k, nil)
	h.cgh("a1", "a", 1, []int32{0, 1, 2, 3})
	h.cgh("a2", "a", 1, []int32{0, 1})
	recs := append(h.records, OffsetRecord("g", "t", 0, Offset{Offset: 7, LeaderEpoch: -1, Metadata: "m"}), OffsetTombstone("g", "t", 1))
	classic := newHarness(&testing.T{})
	classic.stableOne("x")
	recs = append(recs, classic.g.MetadataRecord())
	// A streams group's records (KIP-1071) through a rebalance with a
	// member giving tasks up and one expiring.
	streams := newHarness(&testing.T{})
	streams.topics.set("app-store-changelog", [16]byte{2}, 4)
	streams.sth("a0", "a", "p1", 0, nil, true)
	streams.fire(TimerStreamsInitialDelay, "")
	streams.sth("a1", "a", "p1", 1, []int32{}, false)
	streams.sth("b0", "b", "p2", 0, nil, true)
	streams.sth("a2", "a", "p1", 2, []int32{0, 1, 2, 3}, false)
	streams.sth("c0", "c", "p3", 0, nil, true)
	streams.fire(TimerStreamsSession, "c")
	recs = append(recs, streams.records...)
	for _, r := range recs {
		f.Add(r.Key, r.Value, r.Value == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		h := newHarness(t)
		g := NewGroup("g", h.config())
		// Every seed record first, then the fuzzed one, so that it lands
		// on a group with members, targets and offsets.
		for _, r := range recs {
			if err := g.Restore(r); err != nil {
				t.Fatalf("a seed record: %v", err)
			}
		}
		_ = g.Restore(Record{Key: key, Value: value})
		g.Loaded()
		g.Ready()
	})
}
