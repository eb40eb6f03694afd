//go:build kafkadiff

package diff

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchTopic is the topic the read cases share: partition 0 holds
// readRecords, partition 1 nothing.
const fetchTopic = "diff-fetch"

// readRecords are partition 0's batches: one record each at timestamps
// 1000, 2000 and 3000 (offsets 0-2), then one batch of two records at 4000
// and 3500 (offsets 3 and 4; the max timestamp is offset 3's).
var readBatches = [][]rec{
	{{key: "a", value: "1", ts: 1000}},
	{{key: "b", value: "2", ts: 2000}},
	{{key: "c", value: "3", ts: 3000}},
	{{key: "d", value: "4", ts: 4000}, {key: "e", value: "5", ts: 3500}},
}

// setupReads creates fetchTopic on both brokers, writes readBatches to
// partition 0 and returns the topic's ids.
func setupReads(t *testing.T) topicIDSet {
	t.Helper()
	c := newCase(t)
	createTopic(c, newTopic(fetchTopic, 2, 1))
	for _, b := range readBatches {
		k, s := c.compareAt(produce(fetchTopic, 0, batch(batchHeader{}, b...)), 12)
		for _, r := range []kmsg.Response{k, s} {
			if r == nil || r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("produce to %s: %+v", fetchTopic, r)
			}
		}
	}
	ids := topicIDSet{}
	ids.add(t, fetchTopic)
	return ids
}

var readsOnce struct {
	done bool
	ids  topicIDSet
}

// reads returns fetchTopic's ids, setting it up on first use.
func reads(t *testing.T) topicIDSet {
	t.Helper()
	if !readsOnce.done {
		readsOnce.done = true // once, even if it fails: the topic exists
		readsOnce.ids = setupReads(t)
	}
	if readsOnce.ids == nil {
		t.Fatal("the read cases' topic could not be set up (see the first read case)")
	}
	return readsOnce.ids
}

// fetchCase is one partition's fetch: from offset, with the leader epoch
// the consumer knows (-1: none), the partition's byte limit, isolation.
type fetchCase struct {
	name         string
	topic        string
	partition    int32
	offset       int64
	leaderEpoch  int32
	maxBytes     int32
	readCommited bool
}

func (fc fetchCase) build(ids topicIDSet, v int16) func(bool) kmsg.Request {
	return func(kafka bool) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		req.SessionID, req.SessionEpoch = 0, -1
		if fc.readCommited {
			req.IsolationLevel = 1
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = fc.topic
		if v >= 13 {
			rt.TopicID, rt.Topic = ids.of(fc.topic, kafka), ""
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch = fc.partition, fc.offset, fc.leaderEpoch
		rp.LogStartOffset, rp.PartitionMaxBytes = -1, fc.maxBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
}

// TestFetch compares Fetch's answers, records included (batch by batch,
// field by field), at v12 (topics by name) and the newest version both
// speak (topics by id).
func TestFetch(t *testing.T) {
	ids := reads(t)
	cases := []fetchCase{
		{"from the start", fetchTopic, 0, 0, -1, 1 << 20, false},
		{"from the middle of the log", fetchTopic, 0, 2, -1, 1 << 20, false},
		{"from inside a batch", fetchTopic, 0, 4, -1, 1 << 20, false},
		{"at the high watermark", fetchTopic, 0, 5, -1, 1 << 20, false},
		{"past the high watermark", fetchTopic, 0, 10, -1, 1 << 20, false},
		{"negative offset", fetchTopic, 0, -1, -1, 1 << 20, false},
		{"one byte at most", fetchTopic, 0, 0, -1, 1, false},
		{"read committed", fetchTopic, 0, 0, -1, 1 << 20, true},
		{"current leader epoch", fetchTopic, 0, 0, 0, 1 << 20, false},
		{"future leader epoch", fetchTopic, 0, 0, 5, 1 << 20, false},
		{"empty partition", fetchTopic, 1, 0, -1, 1 << 20, false},
		{"empty partition, past the end", fetchTopic, 1, 1, -1, 1 << 20, false},
		{"partition out of range", fetchTopic, 7, 0, -1, 1 << 20, false},
		{"negative partition", fetchTopic, -1, 0, -1, 1 << 20, false},
		{"unknown topic", "diff-fetch-unknown", 0, 0, -1, 1 << 20, false},
	}
	for _, v := range []int16{12, commonMax(t, kmsg.NewPtrFetchRequest())} {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			for _, fc := range cases {
				t.Run(fc.name, func(t *testing.T) {
					newCase(t).compareEach(v, fc.build(ids, v))
				})
			}
		})
	}
}

// TestListOffsets compares ListOffsets' answers for the special timestamps
// (-1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5
// earliest pending upload) and for timestamps before, at, between and
// after the records, on a partition with records and on an empty one.
func TestListOffsets(t *testing.T) {
	reads(t)
	type part struct {
		partition   int32
		timestamp   int64
		leaderEpoch int32
	}
	cases := []struct {
		name      string
		topic     string
		isolation int8
		parts     []part
	}{
		{"latest", fetchTopic, 0, []part{{0, -1, -1}, {1, -1, -1}}},
		{"latest committed", fetchTopic, 1, []part{{0, -1, -1}, {1, -1, -1}}},
		{"earliest", fetchTopic, 0, []part{{0, -2, -1}, {1, -2, -1}}},
		{"max timestamp", fetchTopic, 0, []part{{0, -3, -1}, {1, -3, -1}}},
		{"earliest local", fetchTopic, 0, []part{{0, -4, -1}, {1, -4, -1}}},
		{"earliest pending upload", fetchTopic, 0, []part{{0, -5, -1}, {1, -5, -1}}},
		{"unknown special timestamp", fetchTopic, 0, []part{{0, -6, -1}, {1, -6, -1}}},
		{"before every record", fetchTopic, 0, []part{{0, 0, -1}, {1, 0, -1}}},
		{"at the first record", fetchTopic, 0, []part{{0, 1000, -1}}},
		{"between records", fetchTopic, 0, []part{{0, 1500, -1}}},
		{"at a batch's smaller timestamp", fetchTopic, 0, []part{{0, 3500, -1}}},
		{"at the max timestamp", fetchTopic, 0, []part{{0, 4000, -1}}},
		{"after every record", fetchTopic, 0, []part{{0, 5000, -1}, {1, 5000, -1}}},
		{"current leader epoch", fetchTopic, 0, []part{{0, -1, 0}}},
		{"future leader epoch", fetchTopic, 0, []part{{0, -1, 5}}},
		{"partition out of range", fetchTopic, 0, []part{{7, -1, -1}}},
		{"unknown topic", "diff-list-offsets-unknown", 0, []part{{0, -1, -1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID, req.IsolationLevel = -1, tc.isolation
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tc.topic
			for _, p := range tc.parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.partition, p.timestamp, p.leaderEpoch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			newCase(t).compare(req)
		})
	}
}

// TestOffsetForLeaderEpoch compares the end offsets each broker gives for
// the current, an older and a future leader epoch, with and without the
// consumer's current epoch, as a consumer asks (replica id -1).
func TestOffsetForLeaderEpoch(t *testing.T) {
	reads(t)
	cases := []struct {
		name               string
		topic              string
		partition          int32
		currentLeaderEpoch int32
		leaderEpoch        int32
	}{
		{"epoch 0", fetchTopic, 0, -1, 0},
		{"epoch 0, current 0", fetchTopic, 0, 0, 0},
		{"future epoch", fetchTopic, 0, -1, 3},
		{"negative epoch", fetchTopic, 0, -1, -1},
		{"future current epoch", fetchTopic, 0, 4, 0},
		{"empty partition", fetchTopic, 1, -1, 0},
		{"empty partition, future epoch", fetchTopic, 1, -1, 2},
		{"partition out of range", fetchTopic, 7, -1, 0},
		{"unknown topic", "diff-ofle-unknown", 0, -1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.currentLeaderEpoch, tc.leaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			newCase(t).compare(req)
		})
	}
}
