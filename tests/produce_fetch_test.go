package tests

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceConsumeRoundTrip produces keyed records with headers and
// timestamps through franz-go (idempotent, acks=all by default) and reads
// them back with a consumer from the start.
func TestProduceConsumeRoundTrip(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.DefaultProduceTopic("orders"))
	const n = 300
	for i := 0; i < n; i++ {
		r := &kgo.Record{
			Key:     []byte(fmt.Sprintf("key-%d", i%17)),
			Value:   []byte(fmt.Sprintf("value-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}},
		}
		p.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := b.client(kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	perPartition := map[int32]int64{}
	for len(seen) < n {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want, ok := perPartition[r.Partition]; ok && r.Offset != want {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, want-1)
			}
			perPartition[r.Partition] = r.Offset + 1
			if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
				t.Fatalf("headers lost: %+v", r.Headers)
			}
			if seen[string(r.Value)] {
				t.Fatalf("duplicate %s", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}
