//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeTopicPartitions(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, t := range topics {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: t})
	}
	return req
}

// TestDescribeTopicPartitions compares DescribeTopicPartitions (75)'s
// answers: two topics whole, pages cut inside a topic and at a topic's
// end, a cursor carried into the next page, a limit of 0, a topic named
// twice, unknown and invalid names, an internal topic, every topic from
// a cursor, and the cursors Kafka refuses (a negative partition, a topic
// outside those named).
func TestDescribeTopicPartitions(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-dtp-a", 3, 1))
	createTopic(c, newTopic("diff-dtp-b", 2, 1))
	waitCoordinator(t, "diff-dtp-group") // __consumer_offsets exists on both
	cursor := func(topic string, partition int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: partition}
	}
	for _, tc := range []struct {
		name   string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		topics []string
	}{
		{"whole", 2000, nil, []string{"diff-dtp-b", "diff-dtp-a"}},
		{"cut inside a topic", 2, nil, []string{"diff-dtp-a", "diff-dtp-b"}},
		{"from the cursor", 2, cursor("diff-dtp-a", 2), []string{"diff-dtp-a", "diff-dtp-b"}},
		{"cut at a topic's end", 3, nil, []string{"diff-dtp-a", "diff-dtp-b"}},
		{"cursor on the second topic", 10, cursor("diff-dtp-b", 0), []string{"diff-dtp-a", "diff-dtp-b"}},
		{"cursor past the partitions", 10, cursor("diff-dtp-b", 5), []string{"diff-dtp-b"}},
		{"limit 0", 0, nil, []string{"diff-dtp-a"}},
		{"named twice", 10, nil, []string{"diff-dtp-a", "diff-dtp-a"}},
		{"unknown and invalid", 10, nil, []string{"diff-dtp-unknown", "..", "diff-dtp-b"}},
		{"internal", 3, nil, []string{"__consumer_offsets"}},
		{"every topic from a cursor", 1, cursor("diff-dtp-b", 0), nil},
		{"negative cursor partition", 10, cursor("diff-dtp-a", -1), []string{"diff-dtp-a"}},
		{"cursor outside the topics", 10, cursor("diff-dtp-b", 0), []string{"diff-dtp-a"}},
		{"cursor on no topic", 10, cursor("diff-dtp-none", 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newCase(t).compare(describeTopicPartitions(tc.limit, tc.cursor, tc.topics...))
		})
	}
}
