package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/extension"
)

// createExtension creates an extension instance through the admin API.
func (b *broker) createExtension(body string) {
	b.t.Helper()
	if code, out := b.adminDo("POST", "/v1/extensions", body); code != http.StatusCreated {
		b.t.Fatalf("POST /v1/extensions %s: %d %s", body, code, out)
	}
}

// extensionStatus is an instance in GET /v1/extensions/{name}.
type extensionStatus struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Partitions []struct {
		Partition int32  `json:"partition"`
		State     string `json:"state"`
		Reason    string `json:"reason"`
		Position  int64  `json:"position"`
		End       int64  `json:"end"`
		Lag       int64  `json:"lag"`
		Skipped   int64  `json:"skipped"`
		Restarts  int64  `json:"restarts"`
	} `json:"partitions"`
}

// extension returns an instance as the admin API describes it.
func (b *broker) extension(name string) extensionStatus {
	b.t.Helper()
	code, body := b.adminDo("GET", "/v1/extensions/"+name, "")
	var st extensionStatus
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
		b.t.Fatalf("GET /v1/extensions/%s: %d %s (%v)", name, code, body, err)
	}
	return st
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
	// Positions are committed only when an actor catches up (and before
	// it first writes to a partition): a restart after an output was
	// acknowledged starts from a position before it.
	b := startBroker(t, func(c *configs.Node) { c.ExtensionCommitIntervalMs = 3_600_000 })
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
	var st extensionStatus
	eventually(t, "the instance's status", func() bool {
		st = b.extension("r1")
		return len(st.Partitions) == 3
	})
	var skipped, restarts int64
	for _, p := range st.Partitions {
		if p.State != "running" || p.Lag != 0 || p.Position != p.End {
			t.Fatalf("partition %d: %+v, want running and caught up", p.Partition, p)
		}
		skipped += p.Skipped
		restarts += p.Restarts
	}
	if restarts != 3 || skipped == 0 {
		t.Fatalf("%d restarts, %d output records skipped; want 3 restarts, and the output they had written skipped when processed again", restarts, skipped)
	}
	if v, _ := metricValue(b.metrics(), "skein_extension_records_skipped_total", map[string]string{"instance": "r1"}); v != float64(skipped) {
		t.Fatalf("skein_extension_records_skipped_total %v, want %d", v, skipped)
	}

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

// The kinds of the API's own tests, registered in this test binary (a
// binary built with extra kinds registers them as these are).
func init() {
	extension.Register(extension.Kind{Name: "test-failing", Doc: "fails on every record",
		New: func(extension.Instance) (extension.Extension, error) { return failing{}, nil }})
	extension.Register(extension.Kind{Name: "test-random", Doc: "copies each record to <topic>.out once or twice, tagged, as drawn at each start",
		New: func(in extension.Instance) (extension.Extension, error) {
			return &random{target: in.Topic + ".out", tag: strconv.FormatUint(rand.Uint64(), 36), copies: 1 + rand.IntN(2)}, nil
		}})
	extension.Register(extension.Kind{Name: "test-stuck", Doc: "blocks in Process until the test releases it",
		New: func(extension.Instance) (extension.Extension, error) { return stuck{}, nil }})
	extension.Register(extension.Kind{Name: "test-credit", Doc: "copies to <topic>.out, taking at most 7 records at a time",
		New: func(in extension.Instance) (extension.Extension, error) {
			return &credited{target: in.Topic + ".out"}, nil
		}})
}

type failing struct{}

func (failing) Process([]extension.Record, extension.Output) error {
	return errors.New("this extension fails")
}

// random is an extension whose output depends on chance: how many copies
// of a record it writes, and what, differs from one start to the next.
type random struct {
	target, tag string
	copies      int
}

func (x *random) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		r.Value = fmt.Appendf(r.Value, "#%s#%d", x.tag, x.copies)
		for range x.copies {
			out.Emit(x.target, r.Partition, r)
		}
	}
	return nil
}

// release ends the wait of a test-stuck extension.
var release = make(chan struct{})

type stuck struct{}

func (stuck) Process([]extension.Record, extension.Output) error {
	<-release
	return nil
}

type credited struct{ target string }

func (c *credited) Credit() (int, int) { return 7, 1 << 20 }

func (c *credited) Process(records []extension.Record, out extension.Output) error {
	if len(records) > 7 {
		return fmt.Errorf("handed %d records, more than the 7 it asked for", len(records))
	}
	for _, r := range records {
		out.Emit(c.target, r.Partition, r)
	}
	return nil
}

// TestExtensionParked: an extension that fails on every record is
// restarted with backoff and, after its fifth restart in a row, parked:
// its status says so and why, and the partition it reads, and the node,
// serve clients as before.
func TestExtensionParked(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	b.createExtension(`{"name": "f1", "kind": "test-failing", "settings": {"source.topics": "doomed"}}`)
	p := b.client(kgo.DefaultProduceTopic("doomed"))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var st extensionStatus
	eventually(t, "the extension parked", func() bool {
		st = b.extension("f1")
		return len(st.Partitions) == 1 && st.Partitions[0].State == "parked"
	})
	if p := st.Partitions[0]; p.Restarts != 5 || !strings.Contains(p.Reason, "this extension fails") || p.Position != 0 {
		t.Fatalf("parked: %+v, want 5 restarts, the failure as its reason, nothing processed", p)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatalf("producing to the parked extension's source: %v", err)
	}
	if got := readIsolated(t, b, "doomed", false); len(got) != 2 {
		t.Fatalf("read %v from the source, want both records", got)
	}
	if code, body := b.adminDo("GET", "/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
}

// TestExtensionCredit: an extension that asks for at most 7 records at a
// time is never handed more, and gets every record, in order.
func TestExtensionCredit(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	for _, topic := range []string{"credit", "credit.out"} {
		if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	p := b.client(kgo.DefaultProduceTopic("credit"))
	var recs []*kgo.Record
	for i := range 500 {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.createExtension(`{"name": "c1", "kind": "test-credit", "settings": {"source.topics": "credit"}}`)
	var got []string
	eventually(t, "500 records copied", func() bool {
		got = readIsolated(t, b, "credit.out", false)
		return len(got) >= 500
	})
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("record %d of the copy is %s", i, v)
		}
	}
	if st := b.extension("c1"); len(st.Partitions) != 1 || st.Partitions[0].Restarts != 0 {
		t.Fatalf("status %+v: the extension failed (handed more than its credit?)", st)
	}
}

// TestExtensionDedupe: a dedupe instance copies a record unless its key was
// seen less than window.ms of record time before it; the keys it saw are
// its state, which survives a restart of its actor after an output was
// written (it processes the records after its position again, from the
// state as of that position) and a restart of the node.
func TestExtensionDedupe(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) { c.ExtensionCommitIntervalMs = 3_600_000 })
	ctx := ctxFor(t)
	for _, topic := range []string{"in", "out"} {
		if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	b.createExtension(`{"name": "d1", "kind": "dedupe", "settings": {"source.topics": "in", "target.topic": "out", "window.ms": "60000", "partitioning": "source"}}`)
	base := time.UnixMilli(1_700_000_000_000)
	p := b.client(kgo.DefaultProduceTopic("in"))
	n := 0
	send := func(key string, at time.Duration) string {
		t.Helper()
		v := fmt.Sprintf("%s@%v#%d", key, at, n)
		n++
		if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(v), Timestamp: base.Add(at)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var want []string
	for round := range 3 {
		for k := range 10 {
			v := send("k"+strconv.Itoa(k), time.Duration(round*10+k)*time.Second)
			if round == 0 {
				want = append(want, v)
			}
		}
	}
	want = append(want, send("k0", 120*time.Second)) // the window has passed
	expect := func() {
		t.Helper()
		var got []string
		eventually(t, fmt.Sprintf("%d records in out", len(want)), func() bool {
			got = readIsolated(t, b, "out", false)
			return len(got) >= len(want)
		})
		waitCaughtUp(t, b, "skein-extension-d1", "in")
		if got = readIsolated(t, b, "out", false); !slices.Equal(got, want) {
			t.Fatalf("out holds %v, want %v", got, want)
		}
	}
	expect()

	b.injectFault(`{"actor": "node/1/extensions/d1/in-0", "kind": "panic", "message": "appendRes", "after": true, "count": 1}`)
	want = append(want, send("k1", 130*time.Second)) // k1 was last seen at 1s
	send("k0", 125*time.Second)                      // seen at 120s
	expect()

	b.restart()
	p = b.client(kgo.DefaultProduceTopic("in"))
	send("k0", 126*time.Second)
	send("k1", 140*time.Second)
	want = append(want, send("k2", 200*time.Second))
	expect()
}

// TestExtensionAudit: an audit instance copies the headers and sizes of
// every record of its topic to the audit topic, with the record's topic,
// partition, offset, producer id, timestamp, and the client id and address
// of the client that produced it.
func TestExtensionAudit(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	b.createExtension(`{"name": "a1", "kind": "audit", "settings": {"source.topics": "orders", "target.topic": "audit-log", "content": "headers"}}`)
	p := b.client(kgo.DefaultProduceTopic("orders"), kgo.ClientID("audited-producer"))
	for i := range 20 {
		r := &kgo.Record{Key: []byte("key" + strconv.Itoa(i)), Value: []byte(strings.Repeat("v", i)), Headers: []kgo.RecordHeader{{Key: "who", Value: []byte("me")}}}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	src := readRecords(t, b, "orders", false)
	var audited []*kgo.Record
	eventually(t, "20 records audited", func() bool {
		audited = readRecords(t, b, "audit-log", false)
		return len(audited) >= 20
	})
	if len(audited) != 20 {
		t.Fatalf("%d records audited, want 20", len(audited))
	}
	byPlace := map[string]*kgo.Record{}
	for _, r := range src {
		byPlace[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)] = r
	}
	for _, a := range audited {
		h := map[string]string{}
		for _, x := range a.Headers {
			h[x.Key] = string(x.Value)
		}
		s := byPlace[h["audit.topic"]+"/"+h["audit.partition"]+"/"+h["audit.offset"]]
		if s == nil || a.Key != nil || len(a.Value) != 0 || h["who"] != "me" || h["audit.producer.id"] != strconv.FormatInt(s.ProducerID, 10) ||
			h["audit.client.id"] != "audited-producer" || !strings.HasPrefix(h["audit.client.address"], "127.0.0.1:") ||
			h["audit.key.size"] != strconv.Itoa(len(s.Key)) || h["audit.value.size"] != strconv.Itoa(len(s.Value)) || !a.Timestamp.Equal(s.Timestamp) {
			t.Fatalf("audit record %v (headers %v) does not describe its source %+v", a, h, s)
		}
		delete(byPlace, h["audit.topic"]+"/"+h["audit.partition"]+"/"+h["audit.offset"])
	}
}

// TestExtensionDelay: a delay instance delivers each record at the time
// its skein-deliver-at header names (or at once, delay.ms being 0), never
// before, and a record after an earlier one of its key; a node restart
// while records are held, and a restart of the actor right after a
// delivery was written, deliver each exactly once.
func TestExtensionDelay(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) { c.ExtensionCommitIntervalMs = 3_600_000 })
	ctx := ctxFor(t)
	for _, topic := range []string{"in", "out"} {
		if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	b.createExtension(`{"name": "d1", "kind": "delay", "settings": {"source.topics": "in", "target.topic": "out", "partitioning": "source"}}`)
	p := b.client(kgo.DefaultProduceTopic("in"))
	due := map[string]time.Time{}
	send := func(key, value string, after time.Duration) {
		t.Helper()
		r := &kgo.Record{Key: []byte(key), Value: []byte(value)}
		at := time.Now()
		if after > 0 {
			at = at.Add(after)
			r.Headers = []kgo.RecordHeader{{Key: "skein-deliver-at", Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))}}
		}
		due[value] = at.Truncate(time.Millisecond)
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// deliveries reads out until it holds n records and returns their
	// values in order, checking that none came before its time.
	seen := map[string]time.Time{}
	deliveries := func(n int) []string {
		t.Helper()
		var got []string
		eventually(t, fmt.Sprintf("%d records delivered", n), func() bool {
			got = readIsolated(t, b, "out", false)
			now := time.Now()
			for _, v := range got {
				if _, ok := seen[v]; !ok {
					seen[v] = now
				}
			}
			return len(got) >= n
		})
		for _, v := range got {
			if seen[v].Before(due[v]) {
				t.Fatalf("%s delivered by %v, before its time %v", v, seen[v], due[v])
			}
		}
		return got
	}
	send("a", "a1", 1500*time.Millisecond)
	send("a", "a2", 0) // after a1, its key's
	due["a2"] = due["a1"]
	send("b", "b1", 500*time.Millisecond)
	send("c", "c1", 0)
	if got := deliveries(4); !slices.Equal(got, []string{"c1", "b1", "a1", "a2"}) {
		t.Fatalf("delivered %v, want c1 b1 a1 a2", got)
	}

	// Held across a node restart.
	send("d", "d1", 2*time.Second)
	b.restart()
	p = b.client(kgo.DefaultProduceTopic("in"))
	// The actor fails right after the record is held, and again right
	// after it writes the delivery: the record is held again and the tick
	// replayed from the state topic, where it was noted, and neither is
	// written twice.
	b.injectFault(`{"actor": "node/1/extensions/d1/in-0", "kind": "panic", "message": "appendRes", "after": true, "count": 2}`)
	send("e", "e1", 300*time.Millisecond)
	got := deliveries(6)
	if !slices.Equal(got[4:], []string{"e1", "d1"}) {
		t.Fatalf("delivered %v, want e1 and d1 after the first four", got)
	}
	waitCaughtUp(t, b, "skein-extension-d1", "in")
	if got := readIsolated(t, b, "out", false); len(got) != 6 {
		t.Fatalf("out holds %v, want each record once", got)
	}
	if st := b.extension("d1"); len(st.Partitions) != 1 || st.Partitions[0].Restarts != 2 || st.Partitions[0].Skipped < 2 {
		t.Fatalf("status %+v, want 2 restarts and the writes made before them skipped", st)
	}
}

// TestExtensionMirrorRemote: a mirror instance on one cluster copies a
// topic of another (source.bootstrap.servers) into a prefixed topic it
// creates with the source's partition count, each partition in order;
// made to fail right after an output is acknowledged, its actors start
// again from the position they keep in the instance's state topic without
// writing anything twice, and so does the node's restart; and the offsets
// a consumer group commits on the source are committed, translated, to
// the same group here.
func TestExtensionMirrorRemote(t *testing.T) {
	src := startBroker(t)
	b := startBroker(t, func(c *configs.Node) { c.ExtensionCommitIntervalMs = 3_600_000 })
	ctx := ctxFor(t)
	if _, err := src.admin().CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	p := src.client(kgo.DefaultProduceTopic("orders"))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			p.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 17)), Value: []byte("v" + strconv.Itoa(i)),
				Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}}}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("producing: %v", err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// same waits until the copy's partitions hold exactly the source's.
	same := func() {
		t.Helper()
		want := map[int32][]string{}
		for _, r := range readRecords(t, src, "orders", false) {
			want[r.Partition] = append(want[r.Partition], string(r.Value)+"/"+string(r.Key))
		}
		var got map[int32][]string
		eventually(t, "the copy to catch up", func() bool {
			if td, err := b.admin().ListTopics(ctx, "a.orders"); err != nil || td["a.orders"].Err != nil {
				return false // the mirror has not made it yet
			}
			got = map[int32][]string{}
			for _, r := range readRecords(t, b, "a.orders", false) {
				got[r.Partition] = append(got[r.Partition], string(r.Value)+"/"+string(r.Key))
			}
			for p, w := range want {
				if len(got[p]) < len(w) {
					return false
				}
			}
			return true
		})
		for p, w := range want {
			if !slices.Equal(got[p], w) {
				t.Fatalf("a.orders-%d holds %d records, the source %d: %v..., want %v...", p, len(got[p]), len(w), got[p][:min(5, len(got[p]))], w[:min(5, len(w))])
			}
		}
	}
	produce(0, 300)
	b.createExtension(fmt.Sprintf(`{"name": "m2", "kind": "mirror", "settings": {"source.topics": "orders", "source.bootstrap.servers": %q, "target.topic.prefix": "a."}}`, src.addr()))
	same()
	if td, err := b.admin().ListTopics(ctx, "a.orders"); err != nil || len(td["a.orders"].Partitions) != 3 {
		t.Fatalf("a.orders: %+v, %v; want 3 partitions", td, err)
	}

	b.injectFault(`{"actor": "node/1/extensions/m2/*", "kind": "panic", "message": "appendRes", "after": true, "count": 3}`)
	produce(300, 600)
	same()
	eventually(t, "m2's actors restarted after the 3 injected panics", func() bool {
		restarts := int64(0)
		for _, p := range b.extension("m2").Partitions {
			restarts += p.Restarts
		}
		return restarts == 3
	})
	same()

	b.restart()
	produce(600, 700)
	same()

	// A consumer group of the source cluster commits: the mirror commits
	// its offsets, translated, to the same group here, never past a
	// record the group has not read (the copy's offsets are the source's
	// in this test, each partition copied from its start).
	committed := map[int32]int64{0: 50, 1: 120, 2: 7}
	var offs kadm.Offsets
	for p, at := range committed {
		offs.Add(kadm.Offset{Topic: "orders", Partition: p, At: at, LeaderEpoch: -1})
	}
	if _, err := src.admin().CommitOffsets(ctx, "readers", offs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the group's offsets translated to the copy", func() bool {
		got, err := b.admin().FetchOffsets(ctx, "readers")
		if err != nil {
			return false
		}
		for p, at := range committed {
			o, ok := got.Lookup("a.orders", p)
			if !ok || o.At < 0 {
				return false
			}
			if o.At > at {
				t.Fatalf("readers' offset on a.orders-%d is %d, past the %d it committed on orders-%d", p, o.At, at, p)
			}
		}
		return true
	})
	var st extensionStatus
	eventually(t, "the instance's status after the restart", func() bool {
		st = b.extension("m2")
		return len(st.Partitions) == 3
	})
	for _, p := range st.Partitions {
		if p.State != "running" {
			t.Fatalf("partition %d: %+v", p.Partition, p)
		}
	}
}

// TestExtensionStuck: an extension stuck in Process holds up nothing but
// itself: producers and consumers of the partition it reads are served,
// and the instance shows the records it has not processed as lag, until it
// goes on.
func TestExtensionStuck(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, "busy"); err != nil {
		t.Fatal(err)
	}
	b.createExtension(`{"name": "s1", "kind": "test-stuck", "settings": {"source.topics": "busy"}}`)
	p := b.client(kgo.DefaultProduceTopic("busy"))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the extension stuck on the first record", func() bool {
		st := b.extension("s1")
		return len(st.Partitions) == 1 && st.Partitions[0].End == 1 && st.Partitions[0].Position == 0
	})
	var recs []*kgo.Record
	for i := range 500 {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing while the extension is stuck: %v", err)
	}
	if got := readIsolated(t, b, "busy", false); len(got) != 501 {
		t.Fatalf("read %d records while the extension is stuck, want 501", len(got))
	}
	eventually(t, "the lag of the stuck extension", func() bool {
		st := b.extension("s1")
		return len(st.Partitions) == 1 && st.Partitions[0].Lag == 501
	})
	close(release)
	eventually(t, "the extension caught up", func() bool {
		st := b.extension("s1")
		return len(st.Partitions) == 1 && st.Partitions[0].Lag == 0 && st.Partitions[0].Position == 501
	})
}

// TestExtensionTransactions: with output.transactions, an instance's
// output and position move together in transactions, so that even an
// extension whose output depends on chance is written exactly once: its
// actors made to fail when an output was acknowledged, in the middle of a
// transaction, and the node restarted, a read_committed reader sees each
// record's output once (from one run or another), and the group's
// position at the source's end.
func TestExtensionTransactions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	for _, topic := range []string{"in", "in.out"} {
		if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	b.createExtension(`{"name": "x1", "kind": "test-random", "settings": {"source.topics": "in", "output.transactions": "true"}}`)
	n := 0
	produce := func(k int) {
		t.Helper()
		p := b.client(kgo.DefaultProduceTopic("in"))
		defer p.Close()
		var recs []*kgo.Record
		for range k {
			recs = append(recs, &kgo.Record{Value: []byte("v" + strconv.Itoa(n))})
			n++
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tags := map[string]bool{}
	once := func() {
		t.Helper()
		var got []string
		eventually(t, fmt.Sprintf("%d records' output committed", n), func() bool {
			got = readIsolated(t, b, "in.out", true)
			outputs := map[string]bool{}
			for _, v := range got {
				in, _, _ := strings.Cut(v, "#")
				outputs[in] = true
			}
			return len(outputs) >= n
		})
		// Each record's output is one run's: its copies, all of that
		// run's tag.
		byInput := map[string][]string{}
		for _, v := range got {
			in, rest, _ := strings.Cut(v, "#")
			byInput[in] = append(byInput[in], rest)
		}
		for i := range n {
			outs := byInput["v"+strconv.Itoa(i)]
			if len(outs) == 0 {
				t.Fatalf("v%d has no output read_committed", i)
			}
			tag, copies, _ := strings.Cut(outs[0], "#")
			tags[tag] = true
			if strconv.Itoa(len(outs)) != copies || slices.ContainsFunc(outs, func(o string) bool { return o != outs[0] }) {
				t.Fatalf("v%d's output, read_committed, is %v: not one run's %s copies", i, outs, copies)
			}
		}
	}
	produce(200)
	once()
	// The actors fail when a target acknowledges an output, before they
	// take the answer: the output is written, in a transaction left
	// open, which the next run aborts before it writes the records'
	// output again.
	b.injectFault(`{"actor": "node/1/extensions/x1/*", "kind": "panic", "message": "appendRes", "count": 2}`)
	produce(200)
	once()
	eventually(t, "x1's actors restarted after the 2 injected panics", func() bool {
		restarts := int64(0)
		for _, p := range b.extension("x1").Partitions {
			restarts += p.Restarts
		}
		return restarts == 2
	})
	b.restart()
	produce(100)
	once()
	waitCaughtUp(t, b, "skein-extension-x1", "in")
	if len(tags) < 2 {
		t.Fatalf("the output came from %d runs; the restarts should have made more", len(tags))
	}
}
