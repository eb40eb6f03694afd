package tests

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceAndRead produces n records to topic, then checks that a consumer
// reads the topic back from the start, every record once, n records after
// those of earlier calls (before, their count).
func produceAndRead(t *testing.T, b *broker, topic string, before, n int) {
	t.Helper()
	ctx := ctxFor(t)
	p := b.client(kgo.DefaultProduceTopic(topic))
	for i := before; i < before+n; i++ {
		if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", topic, i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < before+n {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("%s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}

// TestStoppedPartitionComesBack stops a partition actor with a fault (a
// stop is not a failure, so no supervisor strategy restarts it): the
// partitions supervisor starts it again, because the partition is still
// to be hosted, and clients go on producing and consuming.
func TestStoppedPartitionComesBack(t *testing.T) {
	b := startBroker(t)
	if _, err := b.admin().CreateTopic(ctxFor(t), 1, 1, nil, "healing"); err != nil {
		t.Fatal(err)
	}
	produceAndRead(t, b, "healing", 0, 10)
	b.injectFault(`{"actor": "node/1/partitions/healing-0", "kind": "stop"}`)
	// The stop happens on the partition's next message.
	p := b.client(kgo.DefaultProduceTopic("healing"))
	if err := p.ProduceSync(ctxFor(t), kgo.StringRecord("poke")).FirstErr(); err != nil {
		t.Fatalf("the record that met the stopped partition was not retried to success: %v", err)
	}
	eventually(t, "the stopped partition actor to be started again", func() bool {
		a := b.actors()["node/1/partitions/healing-0"]
		return a != nil
	})
	produceAndRead(t, b, "healing", 11, 20) // 10, then the poke
}

// TestPartitionsSupervisorRestart panics the partitions supervisor itself:
// its children go with it, and the restarted supervisor gets every
// partition to host again from the metadata actor.
func TestPartitionsSupervisorRestart(t *testing.T) {
	b := startBroker(t)
	if _, err := b.admin().CreateTopic(ctxFor(t), 2, 1, nil, "survivor"); err != nil {
		t.Fatal(err)
	}
	produceAndRead(t, b, "survivor", 0, 10)
	b.injectFault(`{"actor": "node/1/partitions", "kind": "panic"}`)
	// Any message to the supervisor triggers it: creating a topic sends it
	// Host messages.
	if _, err := b.admin().CreateTopic(ctxFor(t), 1, 1, nil, "trigger"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the partitions supervisor to restart and host its partitions again", func() bool {
		a := b.actors()
		return a["node/1/partitions"] != nil && a["node/1/partitions"].Restarts >= 1 &&
			a["node/1/partitions/survivor-0"] != nil && a["node/1/partitions/survivor-1"] != nil
	})
	produceAndRead(t, b, "survivor", 10, 30)
}
