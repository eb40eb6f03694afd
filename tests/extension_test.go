package tests

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createExtension creates an extension instance through the admin API.
func (b *broker) createExtension(body string) {
	b.t.Helper()
	if code, out := b.adminDo("POST", "/v1/extensions", body); code != http.StatusCreated {
		b.t.Fatalf("POST /v1/extensions %s: %d %s", body, code, out)
	}
}

// routed is a record as a reader of the route's output topics saw it.
type routed struct {
	topic     string
	partition int32
	key       string
	headers   map[string]string
	timestamp time.Time
}

// readRouted reads topics from their start until want records were read,
// and returns them by value.
func readRouted(t *testing.T, b *broker, want int, topics ...string) map[string][]routed {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxFor(t), time.Minute)
	defer cancel()
	cl := b.client(kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	got := map[string][]routed{}
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of the %d records routed to %v", n, want, topics)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("reading %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			got[string(r.Value)] = append(got[string(r.Value)], routed{r.Topic, r.Partition, string(r.Key), hs, r.Timestamp})
			n++
		})
	}
	return got
}

// TestExtensionRoute: a route instance on a 3-partition topic sends each
// record to the topic of the first rule its header matches (or the default
// topic), keeping its key, headers and timestamp, to the partition its key
// hashes to; the instance's position is a consumer group's committed
// offsets, at the source's end once it caught up; its actors, made to fail
// right after an output was acknowledged, start again from the committed
// position without writing anything twice; and so does the node's restart.
func TestExtensionRoute(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	for topic, parts := range map[string]int32{"orders": 3, "eu": 2, "us": 2, "other": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	b.createExtension(`{"name": "r1", "kind": "route", "settings": {"source.topics": "orders",
		"routes": "header:region~^eu$=>eu; header:region~^us$=>us", "default.topic": "other"}}`)

	regions := []string{"eu", "us", "apac"}
	base := time.UnixMilli(1_700_000_000_000)
	p := b.client(kgo.DefaultProduceTopic("orders"))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i%10)), Value: []byte("v" + strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second),
				Headers: []kgo.RecordHeader{{Key: "region", Value: []byte(regions[i%3])}, {Key: "n", Value: []byte(strconv.Itoa(i))}}}
			p.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("producing: %v", err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(n int) {
		t.Helper()
		got := readRouted(t, b, n, "eu", "us", "other")
		if len(got) != n {
			t.Fatalf("%d distinct values routed, want %d", len(got), n)
		}
		for i := range n {
			v := "v" + strconv.Itoa(i)
			rs := got[v]
			if len(rs) != 1 {
				t.Fatalf("%s routed %d times: %+v", v, len(rs), rs)
			}
			r, want := rs[0], map[string]string{"eu": "eu", "us": "us", "apac": "other"}[regions[i%3]]
			key := "k" + strconv.Itoa(i%10)
			if r.topic != want || r.key != key || r.headers["region"] != regions[i%3] || r.headers["n"] != strconv.Itoa(i) ||
				!r.timestamp.Equal(base.Add(time.Duration(i)*time.Second)) {
				t.Fatalf("%s: %+v, want topic %s, key %s, its headers and timestamp", v, r, want, key)
			}
			if parts := map[string]int{"eu": 2, "us": 2, "other": 1}[r.topic]; r.partition != keyPartition(key, parts) {
				t.Fatalf("%s in %s-%d, want partition %d (its key's hash)", v, r.topic, r.partition, keyPartition(key, parts))
			}
		}
	}
	produce(0, 300)
	check(300)
	waitCaughtUp(t, b, "skein-extension-r1", "orders")

	// The runners fail right after an output is acknowledged, before
	// their position is committed: they start again from the committed
	// position, and the targets drop what they have.
	b.injectFault(`{"actor": "node/1/extensions/r1/*", "kind": "panic", "message": "appendRes", "after": true, "count": 3}`)
	produce(300, 600)
	check(600)
	waitCaughtUp(t, b, "skein-extension-r1", "orders")

	b.restart()
	produce(600, 700)
	check(700)
}

// keyPartition is the partition Kafka's default partitioner gives key.
func keyPartition(key string, partitions int) int32 {
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic("").Partition(&kgo.Record{Key: []byte(key)}, partitions))
}

// waitCaughtUp waits until group's committed offsets on topic are the
// topic's end offsets.
func waitCaughtUp(t *testing.T, b *broker, group, topic string) {
	t.Helper()
	adm := b.admin()
	ctx := ctxFor(t)
	eventually(t, group+" caught up on "+topic, func() bool {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		caught := true
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
				caught = false
			}
		})
		return caught
	})
}

// TestExtensionMirror: a mirror instance on a topic pattern copies each
// matching topic into a prefixed topic it creates with the source's
// partition count, record by record at the same partition, keys, headers
// and timestamps kept; a topic created later that matches is copied too,
// and the copies are never copied again.
func TestExtensionMirror(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders.a"); err != nil {
		t.Fatal(err)
	}
	b.createExtension(`{"name": "m1", "kind": "mirror", "settings": {"source.topics": "orders\\..*", "target.topic.prefix": "orders.copy-"}}`)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders.b"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_600_000_000_000)
	type sent struct {
		topic     string
		partition int32
	}
	want := map[string]sent{}
	for i := range 200 {
		topic, parts := "orders.a", int32(3)
		if i%2 == 1 {
			topic, parts = "orders.b", 2
		}
		v := fmt.Sprintf("%s/%d", topic, i)
		r := &kgo.Record{Topic: topic, Partition: int32(i) % parts, Key: []byte(strconv.Itoa(i)), Value: []byte(v),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond), Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}}}
		want[v] = sent{"orders.copy-" + topic, r.Partition}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := readRouted(t, b, 200, "orders.copy-orders.a", "orders.copy-orders.b")
	for v, w := range want {
		rs := got[v]
		if len(rs) != 1 || rs[0].topic != w.topic || rs[0].partition != w.partition || rs[0].headers["i"] != rs[0].key {
			t.Fatalf("%s copied as %+v, want once to %s-%d with its key and headers", v, rs, w.topic, w.partition)
		}
	}
	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders.copy-orders.a", "orders.copy-orders.b"} {
		if src := name[len("orders.copy-"):]; len(details[name].Partitions) != len(details[src].Partitions) {
			t.Fatalf("%s has %d partitions, %s %d", name, len(details[name].Partitions), src, len(details[src].Partitions))
		}
	}
	if _, ok := details["orders.copy-orders.copy-orders.a"]; ok {
		t.Fatal("the mirror copied its own copy")
	}
}
