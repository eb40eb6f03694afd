package tests

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readKeyed reads a topic from the start to its end and returns how many
// records it holds and the last value seen per key.
func readKeyed(t *testing.T, b *broker, topic string, end int64) (int, map[string]string) {
	t.Helper()
	ctx := ctxFor(t)
	c := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n, last := 0, map[string]string{}
	for {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			n++
			last[string(r.Key)] = string(r.Value)
			done = done || r.Offset == end-1
		})
		if done {
			return n, last
		}
	}
}

// TestCompactedTopic produces many values for few keys to a topic with
// cleanup.policy=compact and small segments: the broker's background
// cleaner removes the superseded records, and a consumer still reads the
// newest value of every key.
func TestCompactedTopic(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	policy, seg := "compact", "2048"
	if _, err := b.admin().CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &policy, "segment.bytes": &seg}, "compacted"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.DefaultProduceTopic("compacted"))
	const keys, rounds = 10, 60
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			rec := &kgo.Record{Key: []byte(fmt.Sprint("k", k)), Value: []byte(fmt.Sprintf("v%d-%d", k, r))}
			if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const end = keys * rounds
	eventually(t, "the cleaner to remove superseded records", func() bool {
		n, _ := readKeyed(t, b, "compacted", end)
		return n < end/2
	})
	_, last := readKeyed(t, b, "compacted", end)
	for k := 0; k < keys; k++ {
		if got, want := last[fmt.Sprint("k", k)], fmt.Sprintf("v%d-%d", k, rounds-1); got != want {
			t.Fatalf("key k%d: newest value %q, want %q", k, got, want)
		}
	}
}
