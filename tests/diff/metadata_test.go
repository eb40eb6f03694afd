//go:build kafkadiff

package diff

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadata(autoCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = autoCreate
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestMetadata compares Metadata's answers for a topic, an unknown one, a
// bad name and an internal topic, at v12 and the newest version both speak,
// and a topic that a Metadata request auto-creates (auto.create.topics.enable
// is true on both, num.partitions 1), once both have created it.
func TestMetadata(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-md", 3, 1))
	waitCoordinator(t, "diff-md-group") // __consumer_offsets exists on both
	for _, v := range []int16{12, commonMax(t, kmsg.NewPtrMetadataRequest())} {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				topics []string
			}{
				{"topic", []string{"diff-md"}},
				{"unknown topic", []string{"diff-md-unknown"}},
				{"bad name", []string{".."}},
				{"internal topic", []string{"__consumer_offsets"}},
				{"no topics", []string{}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					newCase(t).compareAt(metadata(false, tc.topics...), v)
				})
			}
		})
	}

	t.Run("auto-create", func(t *testing.T) {
		c := newCase(t)
		const topic = "diff-md-auto"
		// NB: the first answer is not compared: Kafka creates the topic
		// through its controller and answers before or after that lands.
		c.exchange(metadata(true, topic), -1)
		for _, addr := range []string{kafkaAddr, skeinAddr} {
			waitFor(t, addr+" to auto-create "+topic, func() bool {
				req := metadata(false, topic)
				req.SetVersion(12)
				o := send(addr, req)
				if o.err != nil {
					return false
				}
				mt := o.resp.(*kmsg.MetadataResponse).Topics[0]
				return mt.ErrorCode == 0 && len(mt.Partitions) > 0 && mt.Partitions[0].Leader >= 0
			})
		}
		c.compare(metadata(false, topic))
		c.compare(describeConfigs(kmsg.ConfigResourceTypeTopic, topic))
	})
}
