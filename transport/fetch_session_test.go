package transport

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition/store"
)

// fetchReq builds a Fetch request for partitions of topic "t" (by name, or
// by id from v13).
func fetchReq(version int16, id, epoch int32, parts ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = version, id, epoch
	if len(parts) == 0 {
		return req
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", [16]byte{1}
	for _, p := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// results answers every want with high watermark hw, and records for the
// partitions in withRecords.
func results(fc *fetchContext, hw int64, withRecords ...int32) []fetchResult {
	res := make([]fetchResult, len(fc.wants))
	for i, w := range fc.wants {
		res[i].part = kmsg.NewFetchResponseTopicPartition()
		res[i].part.Partition = w.key.partition
		res[i].part.HighWatermark, res[i].part.LastStableOffset, res[i].part.LogStartOffset = hw, hw, 0
		if slices.Contains(withRecords, w.key.partition) {
			res[i].slice = store.Slice{Size: 10}
		}
	}
	return res
}

func partitionsOf(fc *fetchContext, idx []int) []int32 {
	var ps []int32
	for _, i := range idx {
		ps = append(ps, fc.wants[i].key.partition)
	}
	return ps
}

// openSession runs a full fetch that opens a session over parts.
func openSession(t *testing.T, c *fetchSessionCache, version int16, parts ...int32) int32 {
	t.Helper()
	fc := c.begin(fetchReq(version, 0, 0, parts...))
	if fc.err != nil || !fc.openSession {
		t.Fatalf("full fetch: err %v, open %v", fc.err, fc.openSession)
	}
	return c.open(fc, results(fc, 0))
}

// TestFetchSessionIncremental walks a session through KIP-227's rules: an
// incremental fetch answers only partitions with news, adds and forgets
// partitions, must carry the next epoch, and partitions that returned
// records move to the back of the session's order.
func TestFetchSessionIncremental(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute)
	id := openSession(t, c, 12, 0, 1, 2)
	if id <= 0 {
		t.Fatalf("no session: id %d", id)
	}

	// Epoch 1: nothing changed but partition 1's records.
	fc := c.begin(fetchReq(12, id, 1))
	if fc.err != nil {
		t.Fatal(fc.err)
	}
	keep, err := c.answer(fc, results(fc, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := partitionsOf(fc, keep); !slices.Equal(got, []int32{1}) {
		t.Fatalf("answered %v, want [1]", got)
	}

	// Epoch 2 adds partition 3 and forgets 0; 1 moved to the back; the
	// high watermark moved everywhere.
	req := fetchReq(12, id, 2, 3)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{0}}}
	fc = c.begin(req)
	if fc.err != nil {
		t.Fatal(fc.err)
	}
	var order []int32
	for _, w := range fc.wants {
		order = append(order, w.key.partition)
	}
	if !slices.Equal(order, []int32{2, 1, 3}) {
		t.Fatalf("session order %v, want [2 1 3]", order)
	}
	keep, err = c.answer(fc, results(fc, 5))
	if err != nil {
		t.Fatal(err)
	}
	if got := partitionsOf(fc, keep); !slices.Equal(got, []int32{2, 1, 3}) {
		t.Fatalf("answered %v, want all three (high watermark moved)", got)
	}

	// An error is always answered, and the partition again once it clears.
	fc = c.begin(fetchReq(12, id, 3))
	res := results(fc, 5)
	res[0].part.ErrorCode = kerr.NotLeaderForPartition.Code
	keep, _ = c.answer(fc, res)
	if got := partitionsOf(fc, keep); !slices.Equal(got, []int32{2}) {
		t.Fatalf("answered %v, want [2]", got)
	}
	fc = c.begin(fetchReq(12, id, 4))
	keep, _ = c.answer(fc, results(fc, 5))
	if got := partitionsOf(fc, keep); !slices.Equal(got, []int32{2}) {
		t.Fatalf("answered %v after the error cleared, want [2]", got)
	}

	// Wrong epochs, unknown ids, and topic ids switched mid-session.
	for _, tc := range []struct {
		req  *kmsg.FetchRequest
		want *kerr.Error
	}{
		{fetchReq(12, id, 4), kerr.InvalidFetchSessionEpoch},
		{fetchReq(12, id, 7), kerr.InvalidFetchSessionEpoch},
		{fetchReq(12, id+1, 5), kerr.FetchSessionIDNotFound},
		{fetchReq(12, 0, 1), kerr.FetchSessionIDNotFound},
		{fetchReq(13, id, 5), kerr.FetchSessionTopicIDError},
	} {
		if fc := c.begin(tc.req); fc.err != tc.want {
			t.Errorf("id %d epoch %d v%d: %v, want %v", tc.req.SessionID, tc.req.SessionEpoch, tc.req.Version, fc.err, tc.want)
		}
	}
	// The errors did not use up the epoch.
	if fc := c.begin(fetchReq(12, id, 5)); fc.err != nil {
		t.Fatal(fc.err)
	}

	// Epoch -1 closes the session: a sessionless full fetch.
	fc = c.begin(fetchReq(12, id, -1, 0))
	if fc.err != nil || fc.openSession || fc.session != nil {
		t.Fatalf("closing fetch: %+v", fc)
	}
	if fc := c.begin(fetchReq(12, id, 6)); fc.err != kerr.FetchSessionIDNotFound {
		t.Fatalf("closed session answered %v", fc.err)
	}
}

// TestFetchSessionForgettingAllCloses checks Kafka's rule that an
// incremental fetch leaving no partitions closes the session.
func TestFetchSessionForgettingAllCloses(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute)
	id := openSession(t, c, 13, 0)
	req := fetchReq(13, id, 1)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{TopicID: [16]byte{1}, Partitions: []int32{0}}}
	fc := c.begin(req)
	if fc.err != nil || fc.session != nil || len(fc.wants) != 0 {
		t.Fatalf("got %+v, want a sessionless fetch of nothing", fc)
	}
	if c.len() != 0 {
		t.Fatal("session not closed")
	}
}

// TestFetchSessionEpochWraps checks that epochs wrap from the largest int32
// to 1, as Kafka's and franz-go's do.
func TestFetchSessionEpochWraps(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute)
	id := openSession(t, c, 12, 0)
	c.sessions[id].nextEpoch = 1<<31 - 1
	if fc := c.begin(fetchReq(12, id, 1<<31-1)); fc.err != nil {
		t.Fatal(fc.err)
	}
	if fc := c.begin(fetchReq(12, id, 1)); fc.err != nil {
		t.Fatal(fc.err)
	}
}

// TestFetchSessionEpochZeroReplaces checks that epoch 0 with a session id
// closes that session and opens a new one.
func TestFetchSessionEpochZeroReplaces(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute)
	id := openSession(t, c, 12, 0)
	fc := c.begin(fetchReq(12, id, 0, 1))
	if fc.err != nil || !fc.openSession {
		t.Fatalf("%+v", fc)
	}
	id2 := c.open(fc, results(fc, 0))
	if id2 == id || id2 <= 0 || c.len() != 1 {
		t.Fatalf("new id %d (old %d), %d sessions", id2, id, c.len())
	}
}

// TestFetchSessionEviction checks the cache bound and Kafka's eviction
// preference (FetchSessionCache.tryEvict): a session idle for longer than
// the eviction age goes first; else the smallest of the sessions that had
// existed that long at their last use goes, but only for a new session
// with more partitions; else there is no session for the newcomer.
func TestFetchSessionEviction(t *testing.T) {
	const age = 120 * time.Second
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(2, age)
	c.now = func() time.Time { return now }
	a := openSession(t, c, 12, 0, 1, 2)
	b := openSession(t, c, 12, 0, 1, 2, 3, 4)

	now = now.Add(time.Second)
	if id := openSession(t, c, 12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9); id != 0 {
		t.Fatalf("full cache of young sessions gave session %d", id)
	}

	// A and B are used after they are older than the eviction age.
	now = now.Add(age)
	use := func(id int32) {
		t.Helper()
		s := c.sessions[id]
		if fc := c.begin(fetchReq(12, id, s.nextEpoch)); fc.err != nil {
			t.Fatal(fc.err)
		}
	}
	use(a)
	use(b)
	cID := openSession(t, c, 12, 0, 1, 2, 3)
	if cID == 0 || c.sessions[a] != nil || c.sessions[b] == nil {
		t.Fatalf("4 partitions should evict A (3 partitions): got %d, A %v, B %v", cID, c.sessions[a] != nil, c.sessions[b] != nil)
	}
	now = now.Add(time.Second) // C is the least recently used from here
	if id := openSession(t, c, 12, 0, 1, 2, 3, 4); id != 0 {
		t.Fatal("5 partitions evicted B, which has as many")
	}
	if id := openSession(t, c, 12, 0, 1, 2, 3, 4, 5); id == 0 || c.sessions[b] != nil {
		t.Fatal("6 partitions should evict B (5 partitions)")
	}

	// Idle for longer than the eviction age: evicted even by a session of
	// one partition.
	now = now.Add(age + time.Second)
	if id := openSession(t, c, 12, 0); id == 0 || c.sessions[cID] != nil {
		t.Fatal("a stale session was not evicted")
	}
	if c.len() != 2 {
		t.Fatalf("%d sessions in a cache of 2", c.len())
	}
}

// TestFetchSessionCacheConcurrent runs sessions from many goroutines at
// once, as connections do, for the race detector.
func TestFetchSessionCacheConcurrent(t *testing.T) {
	c := newFetchSessionCache(8, time.Minute)
	done := make(chan struct{})
	for g := range 16 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				fc := c.begin(fetchReq(12, 0, 0, int32(g), int32(g+1)))
				id := c.open(fc, results(fc, 1))
				for epoch := int32(1); id != 0 && epoch <= 5; epoch++ {
					fc := c.begin(fetchReq(12, id, epoch))
					if fc.err == kerr.FetchSessionIDNotFound {
						break // evicted by another goroutine's session
					}
					if fc.err != nil {
						t.Errorf("session %d epoch %d: %v", id, epoch, fc.err)
						return
					}
					if _, err := c.answer(fc, results(fc, int64(epoch), int32(g))); err != nil {
						t.Errorf("session %d epoch %d: %v", id, epoch, err)
						return
					}
				}
			}
		}()
	}
	for range 16 {
		<-done
	}
	if c.len() > 8 {
		t.Fatalf("%d sessions in a cache of 8", c.len())
	}
}
