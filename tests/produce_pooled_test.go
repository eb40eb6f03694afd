package tests

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProducePooledBodies produces from several connections at once, with
// acks=all, acks=1 and acks=0 (whose connection reads its next request
// without waiting for any answer), to a topic that keeps the producer's
// batches and to one that recompresses them, then reads everything back and
// compares every value byte for byte. Produce request bodies are pooled and
// reused by the listener (transport/body.go): a body reused while a
// partition's actor still had to write its records would show here as
// corrupt batches, values of another record, or a race.
func TestProducePooledBodies(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	const partitions = 4
	topics := map[string]map[string]*string{
		"pooled":       nil,
		"recompressed": {"compression.type": new("lz4")},
	}
	for name, cfg := range topics {
		if _, err := adm.CreateTopic(ctx, partitions, 1, cfg, name); err != nil {
			t.Fatal(err)
		}
	}
	// Partition actors that take their time with the first appends give
	// the listener every chance to reuse a body too early.
	b.injectFault(`{"actor": "node/1/partitions/*", "kind": "delay", "message": "Append", "delay": "2ms", "count": 1000}`)
	const (
		perProducer = 3000
		valueSize   = 1 << 10
	)
	producers := []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks-all-a", nil},
		{"acks-all-b", nil},
		{"acks-leader", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"acks-none-a", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}},
		{"acks-none-b", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}},
	}
	var wg sync.WaitGroup
	for pi, pr := range producers {
		cl := b.client(append([]kgo.Opt{kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, pr.opts...)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				for topic := range topics {
					r := &kgo.Record{Topic: topic, Key: pooledKey(pi, i), Value: pooledValue(pi, i, valueSize)}
					cl.Produce(ctx, r, func(r *kgo.Record, err error) {
						if err != nil {
							t.Errorf("%s: produce %s: %v", pr.name, r.Key, err)
						}
					})
				}
			}
			if err := cl.Flush(ctx); err != nil {
				t.Errorf("%s: flush: %v", pr.name, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := len(producers) * perProducer
	for topic := range topics {
		// acks=0 records are appended, not acknowledged: wait for all, but
		// not for ever, as refused ones would never come.
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		c := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		seen := map[string]bool{}
		for len(seen) < want {
			fs := c.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				if ctx.Err() != nil {
					t.Fatalf("%s: %d of %d records read: %v", topic, len(seen), want, err)
				}
				t.Fatalf("%s: %v", topic, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				var pi, i int
				if _, err := fmt.Sscanf(string(r.Key), "p%d-%d", &pi, &i); err != nil {
					t.Fatalf("%s: record at %d/%d has key %q", topic, r.Partition, r.Offset, r.Key)
				}
				if !bytes.Equal(r.Value, pooledValue(pi, i, valueSize)) {
					t.Fatalf("%s: record %s at %d/%d has another value", topic, r.Key, r.Partition, r.Offset)
				}
				if seen[string(r.Key)] {
					t.Fatalf("%s: record %s twice", topic, r.Key)
				}
				seen[string(r.Key)] = true
			})
		}
	}
}

func pooledKey(producer, i int) []byte { return fmt.Appendf(nil, "p%d-%d", producer, i) }

// pooledValue is record i of a producer: size bytes of a stream seeded by
// both, so that any two values differ. (Values of one size make requests of
// similar sizes, which share pooled bodies.)
func pooledValue(producer, i, size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(producer), uint64(i)))
	v := make([]byte, size)
	for j := range v {
		v[j] = byte(rng.Uint32())
	}
	return v
}
