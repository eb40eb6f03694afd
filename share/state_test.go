package share

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition"
)

var (
	topicA = [16]byte{0: 0x12, 15: 0x01}
	keyA   = Key{Group: "g", TopicID: topicA, Partition: 3}
)

// be appends big-endian integers, for records written out by hand.
func be(b []byte, vals ...any) []byte {
	for _, v := range vals {
		switch v := v.(type) {
		case int8:
			b = append(b, byte(v))
		case int16:
			b = append(b, byte(v>>8), byte(v))
		case int32:
			b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		case int64:
			for i := 7; i >= 0; i-- {
				b = append(b, byte(v>>(8*i)))
			}
		case []byte:
			b = append(b, v...)
		default:
			panic(v)
		}
	}
	return b
}

// The bytes of ShareSnapshotKey/ShareSnapshotValue and ShareUpdateKey/
// ShareUpdateValue as Kafka 4.2's JSON specs lay them out, written by
// hand: the key's type and fields (not flexible: int16-length string),
// the value's version 0, its fields in order with the tagged
// DeliveryCompleteCount in the trailing tag section (tag 0, 4 bytes) and
// only when it is not -1, compact arrays (length+1), each batch ending
// with its empty tag section.
func TestRecordsAsKafkaLaysThemOut(t *testing.T) {
	key := be(nil, int16(0), int16(1), []byte("g"), topicA[:], int32(3))
	snapValue := be(nil, int16(0),
		int32(4) /*SnapshotEpoch*/, int32(2) /*StateEpoch*/, int32(7) /*LeaderEpoch*/, int64(100), /*StartOffset*/
		int64(1000) /*CreateTimestamp*/, int64(2000), /*WriteTimestamp*/
		[]byte{3}, // two batches
		int64(100), int64(109), int8(2), int16(1), []byte{0},
		int64(110), int64(119), int8(0), int16(3), []byte{0},
		[]byte{1, 0, 4}, int32(11), // tag 0: DeliveryCompleteCount 11
	)
	snap := Record{Key: keyA, Snapshot: true, Value: &Value{SnapshotEpoch: 4, StateEpoch: 2, LeaderEpoch: 7, StartOffset: 100,
		DeliveryCompleteCount: 11, CreateTimestamp: 1000, WriteTimestamp: 2000,
		Batches: []StateBatch{{First: 100, Last: 109, State: Acknowledged, Count: 1}, {First: 110, Last: 119, State: Available, Count: 3}}}}

	updKey := be(nil, int16(1), int16(1), []byte("g"), topicA[:], int32(3))
	updValue := be(nil, int16(0), int32(4) /*SnapshotEpoch*/, int32(7) /*LeaderEpoch*/, int64(-1), /*StartOffset*/
		[]byte{2}, int64(120), int64(120), int8(4), int16(5), []byte{0},
		[]byte{0}, // DeliveryCompleteCount -1: no tag
	)
	upd := Record{Key: keyA, Value: &Value{SnapshotEpoch: 4, LeaderEpoch: 7, StartOffset: -1, DeliveryCompleteCount: -1,
		Batches: []StateBatch{{First: 120, Last: 120, State: Archived, Count: 5}}}}

	for _, c := range []struct {
		name       string
		rec        Record
		key, value []byte
	}{
		{"snapshot", snap, key, snapValue},
		{"update", upd, updKey, updValue},
		{"tombstone", Record{Key: keyA, Snapshot: true}, key, nil},
	} {
		k, v := EncodeRecord(c.rec)
		if !bytes.Equal(k, c.key) || !bytes.Equal(v, c.value) {
			t.Errorf("%s: encoded\n key %x\n val %x\nwant\n key %x\n val %x", c.name, k, v, c.key, c.value)
		}
		got, err := ParseRecord(c.key, c.value)
		if err != nil || !reflect.DeepEqual(got, c.rec) {
			t.Errorf("%s: parsed %+v (%v), want %+v", c.name, got, err, c.rec)
		}
	}
}

func TestParseRecordRefusals(t *testing.T) {
	k, v := EncodeRecord(Record{Key: keyA, Snapshot: true, Value: &Value{DeliveryCompleteCount: -1}})
	if _, err := ParseRecord(be(nil, int16(3), k[2:]), v); !errors.Is(err, ErrNotStateKey) {
		t.Errorf("type 3: %v, want ErrNotStateKey", err)
	}
	for name, c := range map[string][2][]byte{
		"short key":        {k[:5], v},
		"long key":         {append(bytes.Clone(k), 0), v},
		"truncated value":  {k, v[:len(v)-1]},
		"trailing bytes":   {k, append(bytes.Clone(v), 0)},
		"value version 1":  {k, be(nil, int16(1), v[2:])},
		"huge batch count": {k, be(v[:len(v)-2], []byte{0xff, 0xff, 0xff, 0x0f}, []byte{0})},
	} {
		if _, err := ParseRecord(c[0], c[1]); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v, want ErrCorruptRecord", name, err)
		}
	}
}

// Kafka's SharePartitionKey.asCoordinatorKey: "group:topicId:partition"
// with the topic id as Uuid.toString, which picks the partition as a
// String's hashCode does.
func TestKeyString(t *testing.T) {
	k := Key{Group: "g1", TopicID: [16]byte{15: 1}, Partition: 7}
	if got, want := k.String(), "g1:AAAAAAAAAAAAAAAAAAAAAQ:7"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, ok := ParseKey(" g1 :AAAAAAAAAAAAAAAAAAAAAQ:7"); !ok || got != k {
		t.Errorf("ParseKey = %+v %v, want %+v", got, ok, k)
	}
	for _, bad := range []string{"", "g:AAAAAAAAAAAAAAAAAAAAAQ", " :AAAAAAAAAAAAAAAAAAAAAQ:1", "g:nope:1", "g:AAAAAAAAAAAAAAAAAAAAAQ:x", "a:b:AAAAAAAAAAAAAAAAAAAAAQ:1"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	if got, want := PartitionFor(k, 50), partition.ForKey("g1:AAAAAAAAAAAAAAAAAAAAAQ:7", 50); got != want {
		t.Errorf("PartitionFor = %d, want %d", got, want)
	}
}

// Kafka's testNonSequentialBatchUpdates: batches acknowledged out of
// order and a start offset moved past the first must not lose the one in
// between; same-state neighbours join (testSubsequentWriteState...).
func TestCombine(t *testing.T) {
	b := func(f, l int64, s int8, c int16) StateBatch { return StateBatch{First: f, Last: l, State: s, Count: c} }
	state := combine(nil, []StateBatch{b(100, 109, 1, 1), b(110, 119, 1, 2), b(120, 129, 1, 0)}, 100)
	state = combine(state, []StateBatch{b(100, 109, 2, 1)}, 100)
	state = combine(state, []StateBatch{b(120, 129, 2, 1)}, 110)
	if want := []StateBatch{b(110, 119, 1, 2), b(120, 129, 2, 1)}; !reflect.DeepEqual(state, want) {
		t.Errorf("got %v, want %v", state, want)
	}
	if got, want := combine([]StateBatch{b(0, 10, 0, 1)}, []StateBatch{b(11, 20, 0, 1)}, 0), []StateBatch{b(0, 20, 0, 1)}; !reflect.DeepEqual(got, want) {
		t.Errorf("neighbours: got %v, want %v", got, want)
	}
	// A batch in the middle of another splits it; First > Last is
	// ignored; -1 drops nothing.
	got := combine([]StateBatch{b(0, 20, 0, 1)}, []StateBatch{b(5, 6, 4, 2), b(9, 8, 2, 2)}, -1)
	if want := []StateBatch{b(0, 4, 0, 1), b(5, 6, 4, 2), b(7, 20, 0, 1)}; !reflect.DeepEqual(got, want) {
		t.Errorf("split: got %v, want %v", got, want)
	}
}

// h drives a shard as its actor does, keeping the records it writes.
type h struct {
	t   *testing.T
	s   *shard
	log []Record
	now int64
}

func newH(t *testing.T, every int) *h {
	return &h{t: t, s: newShard(every, func(id [16]byte, p int32) bool { return id == topicA && p < 8 }), now: 1000}
}

func (h *h) do(msg any) *StateResult {
	h.t.Helper()
	h.now++
	var r *StateResult
	var recs []Record
	switch m := msg.(type) {
	case *InitializeState:
		r, recs = h.s.initialize(m, h.now)
	case *ReadState:
		r, recs = h.s.read(m, h.now)
	case *WriteState:
		r, recs = h.s.write(m, h.now)
	case *DeleteState:
		r, recs = h.s.remove(m)
	case *ReadSummary:
		r = h.s.summary(m)
	}
	h.s.placed(recs, int64(len(h.log)))
	h.log = append(h.log, recs...)
	return r
}

func (h *h) code(msg any, want *kerr.Error) {
	h.t.Helper()
	r := h.do(msg)
	if wantCode := int16(0); want != nil {
		wantCode = want.Code
		if r.Code != wantCode {
			h.t.Fatalf("%T %+v: code %d (%s), want %s", msg, msg, r.Code, r.Message, want.Message)
		}
		return
	}
	if r.Code != 0 {
		h.t.Fatalf("%T %+v: code %d (%s), want none", msg, msg, r.Code, r.Message)
	}
}

// reloaded is the shard a new coordinator builds from the log: every
// record encoded and decoded, replayed at its offset.
func (h *h) reloaded() *shard {
	h.t.Helper()
	s := newShard(h.s.snapshotEvery, h.s.known)
	for i, r := range h.log {
		k, v := EncodeRecord(r)
		d, err := ParseRecord(k, v)
		if err != nil {
			h.t.Fatal(err)
		}
		s.replay(int64(i), d, 0)
	}
	return s
}

// The rules of Kafka's ShareCoordinatorShard (ShareCoordinatorShardTest):
// a write or read needs initialized state; a leader epoch is recorded by
// a read and fences older ones (FENCED_LEADER_EPOCH); a state epoch is
// set by an initialization and fences older writes and initializations
// (FENCED_STATE_EPOCH); -1 checks neither; a topic partition the image
// does not have is UNKNOWN_TOPIC_OR_PARTITION; a negative partition is
// INVALID_REQUEST.
func TestFencing(t *testing.T) {
	h := newH(t, 500)
	h.code(&WriteState{Key: keyA, StateEpoch: 0, LeaderEpoch: 0, StartOffset: 0}, kerr.InvalidRequest)
	if r := h.do(&ReadState{Key: keyA, LeaderEpoch: 1}); r.Code != 0 || r.Found || r.StartOffset != Uninitialized {
		t.Fatalf("read before any state: %+v", r)
	}
	h.code(&InitializeState{Key: keyA, StateEpoch: 1, StartOffset: 10}, nil)
	if r := h.do(&ReadState{Key: keyA, LeaderEpoch: 5}); !r.Found || r.StartOffset != 10 || r.StateEpoch != 1 || r.LeaderEpoch != 5 {
		t.Fatalf("read: %+v", r)
	}
	h.code(&WriteState{Key: keyA, StateEpoch: 1, LeaderEpoch: 4, StartOffset: -1}, kerr.FencedLeaderEpoch)
	h.code(&ReadState{Key: keyA, LeaderEpoch: 4}, kerr.FencedLeaderEpoch)
	h.code(&WriteState{Key: keyA, StateEpoch: 0, LeaderEpoch: 5, StartOffset: -1}, kerr.FencedStateEpoch)
	h.code(&WriteState{Key: keyA, StateEpoch: -1, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}, nil)
	h.code(&InitializeState{Key: keyA, StateEpoch: 0, StartOffset: 0}, kerr.FencedStateEpoch)
	h.code(&WriteState{Key: Key{Group: "g", TopicID: [16]byte{9}, Partition: 0}, StateEpoch: 1, LeaderEpoch: 5}, kerr.InvalidRequest)
	h.code(&InitializeState{Key: Key{Group: "g", TopicID: [16]byte{9}, Partition: 0}, StateEpoch: 1}, kerr.UnknownTopicOrPartition)
	h.code(&InitializeState{Key: Key{Group: "g", TopicID: topicA, Partition: -1}, StateEpoch: 1}, kerr.InvalidRequest)

	// The new leader's epoch survives a reload: the old leader stays
	// fenced on the next coordinator.
	s := h.reloaded()
	if r, _ := s.write(&WriteState{Key: keyA, StateEpoch: 1, LeaderEpoch: 4, StartOffset: -1}, 0); r.Code != kerr.FencedLeaderEpoch.Code {
		t.Errorf("after a reload, an older leader's write: %+v", r)
	}
	// Re-initialization in a newer state epoch starts over.
	h.code(&InitializeState{Key: keyA, StateEpoch: 2, StartOffset: 50}, nil)
	if r := h.do(&ReadSummary{Key: keyA}); r.StartOffset != 50 || r.StateEpoch != 2 || r.Batches != nil {
		t.Errorf("summary after re-initialization: %+v", r)
	}
}

// Writes are updates, a snapshot every snapshotEvery updates; the state a
// reload replays (the last snapshot, the updates after it) is the state
// served, and every record before the last snapshot of each key is
// redundant.
func TestWritesUpdatesAndSnapshots(t *testing.T) {
	h := newH(t, 2)
	h.code(&InitializeState{Key: keyA, StateEpoch: 0, StartOffset: 0}, nil)
	h.code(&ReadState{Key: keyA, LeaderEpoch: 1}, nil)
	for i := range int64(5) {
		h.code(&WriteState{Key: keyA, StateEpoch: 0, LeaderEpoch: 1, StartOffset: i * 10, DeliveryCompleteCount: int32(i),
			Batches: []StateBatch{{First: i * 10, Last: i*10 + 9, State: Acknowledged, Count: 1}}}, nil)
	}
	var kinds []bool
	for _, r := range h.log {
		kinds = append(kinds, r.Snapshot)
	}
	// initialize, read's new leader epoch, then update, update, snapshot,
	// update, update.
	if want := []bool{true, true, false, false, true, false, false}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("record kinds (snapshot?) = %v, want %v", kinds, want)
	}
	want := h.do(&ReadState{Key: keyA, LeaderEpoch: -1})
	if want.StartOffset != 40 || want.DeliveryCompleteCount != 4 || !reflect.DeepEqual(want.Batches, []StateBatch{{First: 40, Last: 49, State: Acknowledged, Count: 1}}) {
		t.Fatalf("state: %+v", want)
	}
	s := h.reloaded()
	if got, _ := s.read(&ReadState{Key: keyA, LeaderEpoch: -1}, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("reloaded state %+v, want %+v", got, want)
	}
	if got := h.s.redundant(); got != 4 {
		t.Errorf("redundant below %d, want 4 (the last snapshot)", got)
	}
	// A second key without a snapshot of its own yet holds nothing back
	// below its first record... it has one: its initialization.
	k2 := Key{Group: "h", TopicID: topicA, Partition: 0}
	h.code(&InitializeState{Key: k2, StateEpoch: 0, StartOffset: 0}, nil)
	if got := h.s.redundant(); got != 4 {
		t.Errorf("with a newer key, redundant below %d, want 4", got)
	}
	// Deleting forgets the key; a cold snapshot moves the other's.
	h.code(&DeleteState{Key: keyA}, nil)
	if r := h.do(&ReadState{Key: keyA, LeaderEpoch: -1}); r.Found {
		t.Errorf("read after delete: %+v", r)
	}
	if got := h.s.redundant(); got != 7 {
		t.Errorf("after the delete, redundant below %d, want 7 (k2's snapshot)", got)
	}
	recs := h.s.coldSnapshots(h.now+10_000, 5_000)
	if len(recs) != 1 || recs[0].Key != k2 || !recs[0].Snapshot {
		t.Fatalf("cold snapshots: %+v", recs)
	}
	h.s.placed(recs, int64(len(h.log)))
	h.log = append(h.log, recs...)
	if again := h.s.coldSnapshots(h.now+20_000, 5_000); len(again) != 0 {
		t.Errorf("an idle key snapshotted again: %+v", again)
	}
	if got, want := h.s.redundant(), int64(len(h.log)-1); got != want {
		t.Errorf("redundant below %d, want %d", got, want)
	}
	if r, _ := h.reloaded().read(&ReadState{Key: keyA, LeaderEpoch: -1}, 0); r.Found {
		t.Errorf("reloaded after delete: %+v", r)
	}
	// Topics gone from the image: tombstones.
	if recs := h.s.gone(func([16]byte) bool { return false }); len(recs) != 1 || recs[0].Value != nil || recs[0].Key != k2 {
		t.Errorf("gone: %+v", recs)
	}
}

// InitializeState writes what Kafka's ShareGroupOffset.fromRequest does:
// leader epoch 0 (UNINITIALIZED_EPOCH, until a leader's read records its
// own), and a delivery-complete count of 0 for a start offset (the lag is
// known from it) or -1 for an uninitialized one (-1).
func TestInitializeEpochAndDeliveryCount(t *testing.T) {
	h := newH(t, 500)
	h.code(&InitializeState{Key: keyA, StateEpoch: 1, StartOffset: 10}, nil)
	if r := h.do(&ReadSummary{Key: keyA}); r.LeaderEpoch != 0 || r.DeliveryCompleteCount != 0 || r.StartOffset != 10 {
		t.Errorf("summary after initializing at 10: %+v", r)
	}
	h.code(&InitializeState{Key: keyA, StateEpoch: 2, StartOffset: Uninitialized}, nil)
	if r := h.do(&ReadSummary{Key: keyA}); r.LeaderEpoch != 0 || r.DeliveryCompleteCount != -1 || r.StartOffset != Uninitialized {
		t.Errorf("summary after initializing at -1: %+v", r)
	}
	if r, _ := h.reloaded().read(&ReadState{Key: keyA, LeaderEpoch: -1}, 0); r.LeaderEpoch != 0 || r.DeliveryCompleteCount != -1 {
		t.Errorf("after a reload: %+v", r)
	}
}
