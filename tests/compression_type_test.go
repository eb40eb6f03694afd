package tests

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storedCodecs fetches a partition's raw batches and returns each batch's
// codec (the low three attribute bits), as stored by the broker.
func storedCodecs(t *testing.T, b *broker, topic string) []int16 {
	t.Helper()
	cl := b.client()
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.SessionEpoch, req.Version = 1<<20, -1, 12
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	raw := resp.Topics[0].Partitions[0].RecordBatches
	var codecs []int16
	for len(raw) > 0 {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		codecs = append(codecs, batch.Attributes&7)
		raw = raw[12+batch.Length:]
	}
	return codecs
}

// TestTopicCompressionType checks Kafka's compression.type: batches are
// stored in the topic's codec whatever the producer sent, and read back
// intact; "producer" keeps the producer's codec.
func TestTopicCompressionType(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	for _, tc := range []struct {
		topicType string
		produce   kgo.CompressionCodec
		want      int16
	}{
		{"zstd", kgo.NoCompression(), 4},
		{"uncompressed", kgo.GzipCompression(), 0},
		{"lz4", kgo.SnappyCompression(), 3},
		{"producer", kgo.GzipCompression(), 1},
	} {
		t.Run(tc.topicType, func(t *testing.T) {
			topic := "ct-" + tc.topicType
			v := tc.topicType
			if _, err := b.admin().CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &v}, topic); err != nil {
				t.Fatal(err)
			}
			p := b.client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(tc.produce))
			for i := 0; i < 20; i++ {
				p.Produce(ctx, kgo.StringRecord(fmt.Sprint("value-", i)), nil)
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for _, c := range storedCodecs(t, b, topic) {
				if c != tc.want {
					t.Fatalf("stored codec %d, want %d", c, tc.want)
				}
			}
			c := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			for n := 0; n < 20; {
				fs := c.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if want := fmt.Sprint("value-", n); string(r.Value) != want {
						t.Fatalf("record %d: %q, want %q", n, r.Value, want)
					}
					n++
				})
			}
		})
	}
}
