package share

import (
	"reflect"
	"testing"
)

// FuzzParseRecord feeds the decoder records of __share_group_state as a
// coordinator reads them back when it loads a partition: whatever their
// bytes (a damaged log, another version's formats), ParseRecord returns an
// error or a record, never a panic; a record it returns encodes to bytes
// that decode to the same record; and a shard replays it, over the seeds'
// state, without a panic. The seeds are the records a share-partition's
// life writes: initialization, a leader's read, updates, a snapshot, a
// tombstone.
func FuzzParseRecord(f *testing.F) {
	seed := newH(&testing.T{}, 1)
	seed.do(&InitializeState{Key: keyA, StateEpoch: 0, StartOffset: 5})
	seed.do(&ReadState{Key: keyA, LeaderEpoch: 2})
	for i := range int64(3) {
		seed.do(&WriteState{Key: keyA, StateEpoch: 0, LeaderEpoch: 2, StartOffset: 5 + i, DeliveryCompleteCount: int32(i),
			Batches: []StateBatch{{First: 5 + i, Last: 9 + i, State: Archived, Count: 2}}})
	}
	seed.do(&DeleteState{Key: keyA})
	for _, r := range seed.log {
		k, v := EncodeRecord(r)
		f.Add(k, v, v == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		r, err := ParseRecord(key, value)
		if err != nil {
			return
		}
		k2, v2 := EncodeRecord(r)
		again, err := ParseRecord(k2, v2)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-parse of %+v: %+v, %v", r, again, err)
		}
		s := newShard(1, nil)
		for i, sr := range seed.log[:len(seed.log)-1] {
			s.replay(int64(i), sr, 0)
		}
		s.replay(int64(len(seed.log)), r, 0)
		s.read(&ReadState{Key: r.Key, LeaderEpoch: 3}, 0)
		s.write(&WriteState{Key: r.Key, StateEpoch: -1, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1,
			Batches: []StateBatch{{First: 0, Last: 1 << 62}}}, 0)
		s.coldSnapshots(1<<40, 1)
		s.redundant()
	})
}
