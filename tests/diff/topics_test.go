//go:build kafkadiff

package diff

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTopic is a CreateTopics entry: partitions and replication factor as
// given (-1: the broker's default), configs as name=value pairs.
func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for _, kv := range configs {
		k, v, _ := strings.Cut(kv, "=")
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	return t
}

func createTopics(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	req.Topics = topics
	return req
}

// createTopic creates topic on both brokers and fails the case unless both
// did; the answers are compared too. It returns once both brokers lead
// every partition (ListOffsets answers for each): Kafka answers
// CreateTopics when its controller has the topic, a moment before its
// broker leads the partitions.
func createTopic(c *dcase, topic kmsg.CreateTopicsRequestTopic) {
	c.t.Helper()
	k, s := c.compare(createTopics(false, topic))
	partitions := int32(1)
	for _, r := range []kmsg.Response{k, s} {
		if r == nil || r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
			c.t.Fatalf("create %s: %+v", topic.Topic, r)
		}
		partitions = r.(*kmsg.CreateTopicsResponse).Topics[0].NumPartitions
	}
	for _, addr := range []string{kafkaAddr, skeinAddr} {
		waitFor(c.t, fmt.Sprintf("%s to lead %s's partitions", addr, topic.Topic), func() bool {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(7)
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic.Topic
			for p := range partitions {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			o := send(addr, req)
			if o.err != nil {
				return false
			}
			for _, t := range o.resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						return false
					}
				}
			}
			return true
		})
	}
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCreateTopics compares CreateTopics' answers for names, partition
// counts, replication factors, assignments and configs, good and bad, each
// created for real and with ValidateOnly.
func TestCreateTopics(t *testing.T) {
	assigned := func(name string, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
		t := newTopic(name, -1, -1)
		for p, r := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), r
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		return t
	}
	cases := []struct {
		name   string
		topics []kmsg.CreateTopicsRequestTopic
	}{
		{"defaults", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-defaults", -1, -1)}},
		{"three partitions", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-three", 3, 1)}},
		{"with configs", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-configs", 2, 1,
			"cleanup.policy=compact", "retention.ms=3600000", "min.insync.replicas=1",
			"segment.bytes=1048576", "max.message.bytes=2000000", "message.timestamp.type=LogAppendTime",
			"compression.type=zstd")}},
		{"empty name", []kmsg.CreateTopicsRequestTopic{newTopic("", 1, 1)}},
		{"dot", []kmsg.CreateTopicsRequestTopic{newTopic(".", 1, 1)}},
		{"dot dot", []kmsg.CreateTopicsRequestTopic{newTopic("..", 1, 1)}},
		{"249 chars", []kmsg.CreateTopicsRequestTopic{newTopic(strings.Repeat("a", 249), 1, 1)}},
		{"250 chars", []kmsg.CreateTopicsRequestTopic{newTopic(strings.Repeat("b", 250), 1, 1)}},
		{"slash", []kmsg.CreateTopicsRequestTopic{newTopic("diff/ct", 1, 1)}},
		{"space", []kmsg.CreateTopicsRequestTopic{newTopic("diff ct", 1, 1)}},
		{"non-ascii", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-ü", 1, 1)}},
		{"consumer offsets", []kmsg.CreateTopicsRequestTopic{newTopic("__consumer_offsets", 1, 1)}},
		{"transaction state", []kmsg.CreateTopicsRequestTopic{newTopic("__transaction_state", 1, 1)}},
		{"cluster metadata", []kmsg.CreateTopicsRequestTopic{newTopic("__cluster_metadata", 1, 1)}},
		{"double underscore", []kmsg.CreateTopicsRequestTopic{newTopic("__diff_ct", 1, 1)}},
		{"zero partitions", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-p0", 0, 1)}},
		{"negative partitions", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-pneg", -2, 1)}},
		{"zero replication factor", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-rf0", 1, 0)}},
		{"replication factor above brokers", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-rf2", 1, 2)}},
		{"negative replication factor", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-rfneg", 1, -2)}},
		{"assignment", []kmsg.CreateTopicsRequestTopic{assigned("diff-ct-assigned", []int32{1}, []int32{1})}},
		{"assignment to an unknown broker", []kmsg.CreateTopicsRequestTopic{assigned("diff-ct-assigned-unknown", []int32{7})}},
		{"assignment with a replica twice", []kmsg.CreateTopicsRequestTopic{assigned("diff-ct-assigned-twice", []int32{1, 1})}},
		{"assignment with no replica", []kmsg.CreateTopicsRequestTopic{assigned("diff-ct-assigned-none", []int32{})}},
		{"assignment and a partition count", []kmsg.CreateTopicsRequestTopic{func() kmsg.CreateTopicsRequestTopic {
			t := assigned("diff-ct-assigned-count", []int32{1})
			t.NumPartitions = 1
			return t
		}()}},
		{"unknown config", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-unknown-config", 1, 1, "no.such.config=1")}},
		{"broker config", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-broker-config", 1, 1, "num.partitions=3")}},
		{"bad cleanup policy", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-policy", 1, 1, "cleanup.policy=sometimes")}},
		{"retention not a number", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-retention", 1, 1, "retention.ms=soon")}},
		{"segment too small", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-segment", 1, 1, "segment.bytes=1")}},
		{"segment below 1 MiB", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-small-segment", 1, 1, "segment.bytes=100000")}},
		{"min insync zero", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-isr", 1, 1, "min.insync.replicas=0")}},
		{"bad compression", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-compression", 1, 1, "compression.type=brotli")}},
		{"bad timestamp type", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-bad-tstype", 1, 1, "message.timestamp.type=Now")}},
		{"same topic twice", []kmsg.CreateTopicsRequestTopic{newTopic("diff-ct-twice", 1, 1), newTopic("diff-ct-twice", 1, 1)}},
	}
	internal := map[string]bool{"__consumer_offsets": true, "__transaction_state": true}
	bothModes(t, "create", func(t *testing.T, validateOnly bool) {
		for _, tc := range cases {
			if internal[tc.topics[0].Topic] && !validateOnly {
				// Created by a client, an internal topic would
				// change how the brokers run the later cases.
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				newCase(t).compare(createTopics(validateOnly, tc.topics...))
			})
		}
	})

	t.Run("existing", func(t *testing.T) {
		c := newCase(t)
		c.compare(createTopics(false, newTopic("diff-ct-defaults", -1, -1)))
		c.compare(createTopics(true, newTopic("diff-ct-defaults", -1, -1)))
	})
	t.Run("colliding", func(t *testing.T) {
		// '.' and '_' collide in metric names: Kafka refuses a topic
		// whose name differs from an existing one only by them.
		c := newCase(t)
		createTopic(c, newTopic("diff-ct.collide", 1, 1))
		c.compare(createTopics(false, newTopic("diff-ct_collide", 1, 1)))
	})
}

// TestDeleteTopics compares DeleteTopics' answers for a topic that exists,
// one that does not, an internal topic and a bad name.
func TestDeleteTopics(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-dt", 2, 1))
	for _, name := range []string{"diff-dt", "diff-dt", "diff-dt-unknown", "__consumer_offsets", "..", ""} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		req.TopicNames = append(req.TopicNames, name)
		c.compare(req)
	}
}
