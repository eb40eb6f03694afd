package tests

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeTopicPartitions pages through topics with
// DescribeTopicPartitions (75) as Kafka 4's admin client does: a cursor
// carried from each answer's NextCursor to the next request, topics in
// name order, a topic cut in the middle resumed at its next partition,
// and a limit that ends exactly at a topic's end naming the next topic at
// partition 0. Every partition is seen once, with its leader, epoch,
// replicas and ISR as Metadata shows them. A named topic that does not
// exist is UNKNOWN_TOPIC_OR_PARTITION, and a cursor outside the topics
// named makes the request INVALID_REQUEST.
func TestDescribeTopicPartitions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	defer adm.Close()
	cl := b.client()
	defer cl.Close()
	sizes := map[string]int32{"dtp-a": 3, "dtp-b": 2, "dtp-c": 4}
	for topic, n := range sizes {
		mustCreate(t, ctx, adm, topic, n, nil)
	}
	names := []string{"dtp-c", "dtp-a", "dtp-b", "dtp-a"} // out of order, one twice

	page := func(limit int32, cursor *kmsg.DescribeTopicPartitionsResponseNextCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		for _, topic := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: topic})
		}
		if cursor != nil {
			req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor.Topic, Partition: cursor.Partition}
		}
		return rawReq[*kmsg.DescribeTopicPartitionsResponse](t, cl, req)
	}

	md, err := adm.Metadata(ctx, "dtp-a", "dtp-b", "dtp-c")
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int32{1, 2, 3, 5, 9, 2000} {
		var seen []string
		var cursors []string
		var cursor *kmsg.DescribeTopicPartitionsResponseNextCursor
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("limit %d: no end after 20 pages", limit)
			}
			resp := page(limit, cursor, names...)
			var n int32
			for _, rt := range resp.Topics {
				if rt.ErrorCode != 0 {
					t.Fatalf("limit %d: %s: %v", limit, *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
				}
				mt := md.Topics[*rt.Topic]
				if rt.TopicID != mt.ID {
					t.Errorf("limit %d: %s has id %x, Metadata says %x", limit, *rt.Topic, rt.TopicID, mt.ID)
				}
				for _, p := range rt.Partitions {
					n++
					seen = append(seen, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
					mp := mt.Partitions[p.Partition]
					if p.ErrorCode != 0 || p.LeaderID != mp.Leader || p.LeaderEpoch != mp.LeaderEpoch ||
						!slices.Equal(p.Replicas, mp.Replicas) || !slices.Equal(p.ISR, mp.ISR) ||
						len(p.EligibleLeaderReplicas) != 0 || len(p.OfflineReplicas) != 0 {
						t.Errorf("limit %d: %s/%d: %+v, Metadata says %+v", limit, *rt.Topic, p.Partition, p, mp)
					}
				}
			}
			if n > limit {
				t.Errorf("limit %d: a page of %d partitions", limit, n)
			}
			cursor = resp.NextCursor
			if cursor == nil {
				break
			}
			cursors = append(cursors, fmt.Sprintf("%s/%d", cursor.Topic, cursor.Partition))
		}
		var want []string
		for _, topic := range []string{"dtp-a", "dtp-b", "dtp-c"} {
			for p := range sizes[topic] {
				want = append(want, fmt.Sprintf("%s/%d", topic, p))
			}
		}
		if !slices.Equal(seen, want) {
			t.Errorf("limit %d: pages showed %v, want %v", limit, seen, want)
		}
		// 3+2+4 partitions: a limit of 5 cuts dtp-a...dtp-b exactly at
		// dtp-b's end, so the next page starts at dtp-c/0; 1 and 2 and 3
		// walk partition by partition or topic by topic.
		if limit == 5 && !slices.Equal(cursors, []string{"dtp-c/0"}) {
			t.Errorf("limit 5: cursors %v, want [dtp-c/0]", cursors)
		}
		if limit == 2 && !slices.Equal(cursors, []string{"dtp-a/2", "dtp-b/1", "dtp-c/1", "dtp-c/3"}) {
			t.Errorf("limit 2: cursors %v", cursors)
		}
	}

	// Every topic: the cursor starts within them, and ours are all there.
	all := page(2000, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "dtp-b", Partition: 1})
	var got []string
	for _, rt := range all.Topics {
		got = append(got, *rt.Topic)
	}
	if len(got) < 2 || got[0] != "dtp-b" || len(all.Topics[0].Partitions) != 1 || got[1] != "dtp-c" {
		t.Errorf("every topic from dtp-b/1: %v", got)
	}

	// Errors: a missing topic, a bad name, and a cursor outside the list.
	resp := page(10, nil, "dtp-missing", "..")
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[*rt.Topic] = rt.ErrorCode
	}
	if codes["dtp-missing"] != kerr.UnknownTopicOrPartition.Code || codes[".."] != kerr.InvalidTopicException.Code {
		t.Errorf("missing and bad topics: %v", codes)
	}
	resp = page(10, &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: "dtp-c"}, "dtp-a")
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || len(resp.Topics[0].Partitions) != 0 {
		t.Errorf("cursor outside the topics named: %+v", resp.Topics)
	}
}
