package share

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// testLog is a log of batches of the given sizes, all below the high
// watermark.
func testLog(t testing.TB, sizes ...int) *store.View {
	t.Helper()
	l, err := store.Open(store.Config{FS: vfs.NewCrashableMem(), Dir: "/data/t-0", Options: store.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, n := range sizes {
		recs := make([]store.Record, n)
		for i := range recs {
			recs[i].OffsetDelta, recs[i].Value = int32(i), []byte("v")
		}
		b, err := store.AppendBatch(nil, store.Header{LastOffsetDelta: int32(n - 1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, store.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	return l.View()
}

var now = time.Unix(1_700_000_000, 0)

func lim(member string, n int) limits {
	return limits{member: member, maxRecords: n, maxBytes: 1 << 30, lock: 30 * time.Second, countLimit: 3, maxLocks: 2000}
}

func TestAcquireSpreadsRecordsAndHonoursMaxRecords(t *testing.T) {
	v := testLog(t, 4, 4)
	var w window
	a, err := w.acquire(v, v.HighWatermark, lim("m1", 3), now, nil)
	if err != nil || a.n != 3 || len(a.spans) != 1 || a.spans[0] != (span{0, 2, 1}) {
		t.Fatalf("first: %+v %v", a, err)
	}
	b, _ := w.acquire(v, v.HighWatermark, lim("m2", 10), now, nil)
	if b.n != 5 || b.spans[0] != (span{3, 7, 1}) {
		t.Fatalf("second: %+v", b)
	}
	c, _ := w.acquire(v, v.HighWatermark, lim("m3", 10), now, nil)
	if c.n != 0 {
		t.Fatalf("nothing left, got %+v", c)
	}
}

func TestAcknowledgeMovesStartAndReleasesRedeliver(t *testing.T) {
	v := testLog(t, 5)
	var w window
	w.acquire(v, v.HighWatermark, lim("m1", 5), now, nil)
	// Another member may not acknowledge m1's records.
	if _, err := w.acknowledge("m2", []AckBatch{{0, 0, []int8{ackAccept}}}, false, lim("m2", 0), now); err != kerr.InvalidRecordState {
		t.Fatalf("other member: %v", err)
	}
	// Accept 0-1, release 2, reject 3; 4 stays acquired.
	_, err := w.acknowledge("m1", []AckBatch{{0, 3, []int8{ackAccept, ackAccept, ackRelease, ackReject}}}, false, lim("m1", 0), now)
	if err != nil || w.start != 2 {
		t.Fatalf("ack: %v, start %d", err, w.start)
	}
	a, _ := w.acquire(v, v.HighWatermark, lim("m2", 10), now, nil)
	if a.n != 1 || a.spans[0] != (span{2, 2, 2}) || a.redelivered != 1 {
		t.Fatalf("redelivery: %+v", a)
	}
	// Acknowledging what is already done is refused, atomically.
	if _, err := w.acknowledge("m2", []AckBatch{{2, 3, []int8{ackAccept}}}, false, lim("m2", 0), now); err != kerr.InvalidRecordState {
		t.Fatalf("rejected record: %v", err)
	}
	if s := w.at(2); s.state != acquired {
		t.Fatalf("a refused acknowledgement changed state: %+v", s)
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	v := testLog(t, 1)
	var w window
	for i := 1; i <= 3; i++ {
		a, _ := w.acquire(v, v.HighWatermark, lim("m", 1), now, nil)
		if a.n != 1 || a.spans[0].count != int16(i) {
			t.Fatalf("delivery %d: %+v", i, a)
		}
		w.acknowledge("m", []AckBatch{{0, 0, []int8{ackRelease}}}, false, lim("m", 0), now)
	}
	if w.start != 1 {
		t.Fatalf("a record released at the delivery limit is archived: start %d", w.start)
	}
	if a, _ := w.acquire(v, v.HighWatermark, lim("m", 1), now, nil); a.n != 0 {
		t.Fatalf("archived record delivered again: %+v", a)
	}
	start, batches := w.changes()
	if start != 1 || len(batches) != 0 {
		t.Fatalf("changes: start %d batches %+v", start, batches)
	}
}

func TestLocksExpireAndReleaseMember(t *testing.T) {
	v := testLog(t, 4)
	var w window
	w.acquire(v, v.HighWatermark, lim("m1", 2), now, nil)
	w.acquire(v, v.HighWatermark, lim("m2", 2), now.Add(10*time.Second), nil)
	expired, _, next := w.expire(now.Add(31*time.Second), 3)
	if expired != 2 || !next.Equal(now.Add(40*time.Second)) {
		t.Fatalf("expire: %d, next %v", expired, next)
	}
	if released, _ := w.releaseMember("m2", 3); released != 2 {
		t.Fatalf("release m2: %d", released)
	}
	a, _ := w.acquire(v, v.HighWatermark, lim("m3", 10), now, nil)
	if a.n != 4 || len(a.spans) != 1 || a.spans[0] != (span{0, 3, 2}) {
		t.Fatalf("reacquire: %+v", a)
	}
}

func TestRestoredStateApplies(t *testing.T) {
	v := testLog(t, 6)
	var w window
	w.reset(1, []StateBatch{{First: 2, Last: 3, State: Acknowledged, Count: 1}, {First: 4, Last: 4, State: Available, Count: 2}})
	a, _ := w.acquire(v, v.HighWatermark, lim("m", 10), now, nil)
	if a.n != 3 || len(a.spans) != 3 || a.spans[0] != (span{1, 1, 1}) || a.spans[1] != (span{4, 4, 3}) || a.spans[2] != (span{5, 5, 1}) {
		t.Fatalf("restored: %+v", a)
	}
}

func TestMaxRecordLocksBoundsTheWindow(t *testing.T) {
	v := testLog(t, 10)
	var w window
	l := lim("m", 100)
	l.maxLocks = 4
	a, _ := w.acquire(v, v.HighWatermark, l, now, nil)
	if a.n != 4 {
		t.Fatalf("in flight beyond the limit: %+v", a)
	}
	w.acknowledge("m", []AckBatch{{0, 1, []int8{ackAccept}}}, false, l, now)
	if a, _ = w.acquire(v, v.HighWatermark, l, now, nil); a.n != 2 || a.spans[0] != (span{4, 5, 1}) {
		t.Fatalf("after the start moved: %+v", a)
	}
}

func TestMalformedAcknowledgements(t *testing.T) {
	v := testLog(t, 4)
	var w window
	w.acquire(v, v.HighWatermark, lim("m", 4), now, nil)
	for _, bs := range [][]AckBatch{
		{{2, 1, []int8{ackAccept}}},
		{{0, 2, []int8{ackAccept}}, {1, 2, []int8{ackAccept}}},
		{{0, 1, []int8{ackAccept, ackAccept, ackAccept}}},
		{{0, 0, []int8{9}}},
		{{0, 0, []int8{ackRenew}}},
		{{0, 0, nil}},
		{{3, 7, []int8{ackAccept}}},
	} {
		if _, err := w.acknowledge("m", bs, false, lim("m", 0), now); err != kerr.InvalidRequest {
			t.Errorf("%+v: %v, want INVALID_REQUEST", bs, err)
		}
	}
	// Kafka's order (KafkaApis validateAcknowledgementBatches, then
	// SharePartition.acknowledge batch by batch): a batch may start at the
	// last offset of the one before, which acknowledges that offset twice,
	// INVALID_RECORD_STATE; the request's form is checked before any
	// offset's state.
	for _, c := range []struct {
		bs   []AckBatch
		want *kerr.Error
	}{
		{[]AckBatch{{0, 1, []int8{ackAccept}}, {1, 2, []int8{ackAccept}}}, kerr.InvalidRecordState},
		{[]AckBatch{{0, 0, []int8{ackAccept}}, {0, 0, []int8{ackAccept}}}, kerr.InvalidRecordState},
		{[]AckBatch{{0, 1, []int8{ackAccept}}, {1, 2, []int8{9}}}, kerr.InvalidRequest},
		{[]AckBatch{{0, 0, []int8{ackAccept}}, {2, 3, []int8{ackAccept}}, {3, 2, []int8{ackAccept}}}, kerr.InvalidRequest},
		{[]AckBatch{{0, 9, []int8{ackAccept}}}, kerr.InvalidRequest},
	} {
		if _, err := w.acknowledge("m", c.bs, false, lim("m", 0), now); err != c.want {
			t.Errorf("%+v: %v, want %v", c.bs, err, c.want)
		}
	}
	if _, err := w.acknowledge("m", []AckBatch{{0, 0, []int8{ackRenew}}}, true, lim("m", 0), now.Add(time.Second)); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if s := w.at(0); s.state != acquired || !s.deadline.Equal(now.Add(31*time.Second)) {
		t.Fatalf("renewed lock: %+v", s)
	}
}

// FuzzAcknowledge applies arbitrary acknowledgements, acquisitions,
// releases and expiries to a window over a real log: nothing panics, the
// SPSO never moves back, a refused acknowledgement changes nothing, and
// no record is both finished and held.
func FuzzAcknowledge(f *testing.F) {
	f.Add([]byte{0, 1, 5, 1, 0, 2, 2, 1, 3, 3, 4})
	f.Add([]byte{1, 0, 0, 200, 2, 9, 3})
	v := testLog(f, 3, 5, 2)
	f.Fuzz(func(t *testing.T, ops []byte) {
		var w window
		members := []string{"a", "b"}
		at := now
		for i := 0; i+2 < len(ops); i += 3 {
			op, x, y := ops[i]%5, int64(ops[i+1]%12), ops[i+2]
			member := members[y%2]
			before := w.start
			switch op {
			case 0:
				w.acquire(v, v.HighWatermark, lim(member, int(y%6)+1), at, nil)
			case 1:
				types := []int8{int8(y % 6)}
				if y%3 == 0 {
					types = make([]int8, x%3+1)
					for j := range types {
						types[j] = int8((int(y) + j) % 4)
					}
				}
				snapshot := slices.Clone(w.slots)
				if _, err := w.acknowledge(member, []AckBatch{{First: x, Last: x + x%3, Types: types}}, y%2 == 0, lim(member, 0), at); err != nil {
					if w.start != before || !slices.Equal(w.slots, snapshot) {
						t.Fatalf("a refused acknowledgement changed the window")
					}
				}
			case 2:
				w.releaseMember(member, 3)
			case 3:
				at = at.Add(time.Duration(y) * time.Second)
				w.expire(at, 3)
			case 4:
				w.changes()
			}
			if w.start < before {
				t.Fatalf("SPSO moved back from %d to %d", before, w.start)
			}
			for j, s := range w.slots {
				if (s.state == Acknowledged || s.state == Archived) && s.member != "" {
					t.Fatalf("offset %d finished but held by %q", w.start+int64(j), s.member)
				}
				if s.state == acquired && s.member == "" {
					t.Fatalf("offset %d acquired by nobody", w.start+int64(j))
				}
				if s.count > 3 {
					t.Fatalf("offset %d delivered %d times, limit 3", w.start+int64(j), s.count)
				}
			}
		}
	})
}

// TestWindowCountsAndDeliveryComplete: what Describe reports of a window
// and the DeliveryCompleteCount written with its state (KIP-1226): the
// finished records after the SPSO, restored ones past the window's end
// included.
func TestWindowCountsAndDeliveryComplete(t *testing.T) {
	v := testLog(t, 6)
	var w window
	w.reset(0, []StateBatch{{First: 8, Last: 9, State: Acknowledged, Count: 1}, {First: 10, Last: 10, State: Available, Count: 1}})
	if _, err := w.acquire(v, v.HighWatermark, lim("m1", 4), now, nil); err != nil {
		t.Fatal(err)
	}
	// 0 held, 1 accepted, 2 rejected, 3 released: the SPSO stays at 0.
	if _, err := w.acknowledge("m1", []AckBatch{{1, 3, []int8{ackAccept, ackReject, ackRelease}}}, false, lim("m1", 0), now); err != nil {
		t.Fatal(err)
	}
	acq, avail, acked, archived := w.counts()
	if w.start != 0 || w.end() != 4 || acq != 1 || avail != 1 || acked != 1 || archived != 1 {
		t.Errorf("window [%d,%d): acquired %d available %d acknowledged %d archived %d, want [0,4) 1 1 1 1", w.start, w.end(), acq, avail, acked, archived)
	}
	if n := w.deliveryComplete(); n != 4 { // 1, 2, and the restored 8 and 9
		t.Errorf("deliveryComplete %d, want 4", n)
	}
}

// TestWaitersOfFinishedFetchesAreForgotten: a consumer long-polling an
// idle partition leaves one wake channel per fetch; those whose fetch
// stopped waiting are dropped at the next registration.
func TestWaitersOfFinishedFetchesAreForgotten(t *testing.T) {
	var a partitionActor
	for range 100 {
		a.await(&Acquire{Wake: make(chan struct{}, 1), Until: time.Now().Add(-time.Millisecond)})
	}
	live := make(chan struct{}, 1)
	a.await(&Acquire{Wake: live, Until: time.Now().Add(time.Minute)})
	if len(a.waiters) != 1 {
		t.Fatalf("%d waiters kept, want the one still waiting", len(a.waiters))
	}
	a.wake()
	select {
	case <-live:
	default:
		t.Fatal("the waiting fetch was not woken")
	}
}

// A record on its last delivery attempt is delivered alone (Kafka 4.2's
// SharePartition.acquireSubsetBatchRecords): with share.delivery.count.limit
// 5, records released four times come back one a fetch, so that a
// consumer failing whole fetches gets only the bad record archived.
func TestLastDeliveryAttemptAlone(t *testing.T) {
	v := testLog(t, 2, 2)
	var w window
	l := lim("m", 10)
	l.countLimit = 5
	release := []AckBatch{{0, 3, []int8{ackRelease}}}
	for delivery := int16(1); delivery <= 4; delivery++ {
		a, _ := w.acquire(v, v.HighWatermark, l, now, nil)
		if a.n != 4 || len(a.spans) != 1 || a.spans[0] != (span{0, 3, delivery}) {
			t.Fatalf("delivery %d: %+v", delivery, a)
		}
		if _, err := w.acknowledge("m", release, false, l, now); err != nil {
			t.Fatal(err)
		}
	}
	for o := int64(0); o < 4; o++ {
		a, _ := w.acquire(v, v.HighWatermark, l, now, nil)
		if a.n != 1 || a.spans[0] != (span{o, o, 5}) {
			t.Fatalf("last attempt of %d: %+v", o, a)
		}
	}
	if _, err := w.acknowledge("m", release, false, l, now); err != nil || w.start != 4 {
		t.Fatalf("released at the limit: %v, start %d", err, w.start)
	}
	// A limit of 2 or less isolates nothing, as Kafka.
	var w2 window
	l.countLimit = 2
	w2.acquire(v, v.HighWatermark, l, now, nil)
	w2.acknowledge("m", release, false, l, now)
	if a, _ := w2.acquire(v, v.HighWatermark, l, now, nil); a.n != 4 {
		t.Fatalf("limit 2: %+v", a)
	}
}

// TestWholeBatches: in batch-optimized mode the log batch that reaches
// MaxRecords is acquired whole; in record-limit mode never more than
// MaxRecords.
func TestWholeBatches(t *testing.T) {
	v := testLog(t, 4, 4)
	var w window
	l := lim("m", 3)
	l.wholeBatches = true
	if a, _ := w.acquire(v, v.HighWatermark, l, now, nil); a.n != 4 || a.spans[0] != (span{0, 3, 1}) {
		t.Fatalf("batch-optimized: %+v, want the first batch whole", a)
	}
	if a, _ := w.acquire(v, v.HighWatermark, lim("m", 3), now, nil); a.n != 3 || a.spans[0] != (span{4, 6, 1}) {
		t.Fatalf("record-limit: %+v, want three records", a)
	}
}
