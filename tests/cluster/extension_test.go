package cluster

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createExtension creates an extension instance through node i's admin
// API.
func (c *cluster) createExtension(t *testing.T, i int, body string) {
	t.Helper()
	resp, err := httpClient.Post(c.adminURL(i)+"/v1/extensions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("node %d: POST /v1/extensions: %v", i, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("node %d: POST /v1/extensions %s: %s", i, body, resp.Status)
	}
}

// readRecords reads topic from its start to its end offsets through the
// given nodes and returns each partition's records in offset order.
func readRecords(t *testing.T, ctx context.Context, c *cluster, nodes []int, topic string) map[int32][]*kgo.Record {
	t.Helper()
	// The output of transactions (txn.*) is read as read_committed
	// readers see it, to the last stable offsets.
	list, opts := kadm.NewClient(c.client(nodes)).ListEndOffsets, []kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if strings.HasPrefix(topic, "txn.") {
		list = kadm.NewClient(c.client(nodes)).ListCommittedOffsets
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	ends, err := list(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	cl := c.client(nodes, opts...)
	defer cl.Close()
	out := map[int32][]*kgo.Record{}
	next := map[int32]int64{}
	done := func() bool {
		ok := true
		ends.Each(func(e kadm.ListedOffset) { ok = ok && next[e.Partition] >= e.Offset })
		return ok
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (at %v of %v)", topic, ctx.Err(), next, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}

// TestExtensionsFailover: six instances of the library's kinds process a
// replicated topic under load while the node that leads one of its
// partitions (and runs that partition's actors) is killed with SIGKILL and
// started again. Each resumes on the new leader from its committed
// position, and each output partition holds exactly what its kind makes
// of the source partition, in order, nothing lost and nothing twice:
// mirror a copy (and, with output.transactions, a copy read_committed
// readers see whole); route the records whose key starts with 1 in one topic
// and the rest in another; audit an entry per record naming its place;
// dedupe each record whose key was not copied in the second of record
// time before it (the kind's rule, out-of-order timestamps included); delay
// every record, each key's in their order.
func TestExtensionsFailover(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.25%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "events"
	for _, t1 := range []string{topic, "mirror.events", "txn.events", "ones", "rest", "audit-events", "deduped", "delayed"} {
		createReplicated(t, ctx, c, t1, 3)
	}
	for _, body := range []string{
		`{"name": "m1", "kind": "mirror", "settings": {"source.topics": "events"}}`,
		`{"name": "m2", "kind": "mirror", "settings": {"source.topics": "events", "target.topic.prefix": "txn.", "output.transactions": "true"}}`,
		`{"name": "r1", "kind": "route", "settings": {"source.topics": "events", "routes": "key~^1=>ones", "default.topic": "rest", "partitioning": "source"}}`,
		`{"name": "a1", "kind": "audit", "settings": {"source.topics": "events", "target.topic": "audit-events"}}`,
		`{"name": "d1", "kind": "dedupe", "settings": {"source.topics": "events", "target.topic": "deduped", "window.ms": "1000", "partitioning": "source"}}`,
		`{"name": "l1", "kind": "delay", "settings": {"source.topics": "events", "target.topic": "delayed", "delay.ms": "200", "partitioning": "source"}}`,
	} {
		c.createExtension(t, 1+len(body)%numNodes, body)
	}
	h, stopLoad := startLoad(t, c, topic, 2)
	waitFor(t, time.Minute, "records acknowledged", func() string {
		if n := h.Acknowledged(); n < 2000 {
			return fmt.Sprintf("%d acknowledged", n)
		}
		return ""
	})
	victim := c.leaderOf(t, ctx, topic, 0)
	t.Logf("killing node %d, the leader of %s-0 (%d acknowledged so far)", victim, topic, h.Acknowledged())
	c.kill(victim)
	acked := h.Acknowledged()
	waitFor(t, time.Minute, "records acknowledged by the new leaders", func() string {
		if n := h.Acknowledged(); n < acked+2000 {
			return fmt.Sprintf("%d acknowledged", n)
		}
		return ""
	})
	c.start(victim)
	c.waitReady(victim)
	stopLoad()
	c.inSync(t, ctx, topic)
	if v := h.Check(); v.Acknowledged == 0 || v.Failed > 0 {
		t.Fatalf("the load: %v", v)
	}
	all := []int{1, 2, 3}
	src := readRecords(t, ctx, c, all, topic)
	values := func(rs []*kgo.Record) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, string(r.Value))
		}
		return out
	}
	// What each output partition must hold, made from the source's.
	want := map[string]func(p int32) []string{
		"mirror.events": func(p int32) []string { return values(src[p]) },
		"txn.events":    func(p int32) []string { return values(src[p]) },
		"ones": func(p int32) []string {
			return values(slices.DeleteFunc(slices.Clone(src[p]), func(r *kgo.Record) bool { return !strings.HasPrefix(string(r.Key), "1") }))
		},
		"rest": func(p int32) []string {
			return values(slices.DeleteFunc(slices.Clone(src[p]), func(r *kgo.Record) bool { return strings.HasPrefix(string(r.Key), "1") }))
		},
		"audit-events": func(p int32) []string {
			out := []string{}
			for _, r := range src[p] {
				out = append(out, fmt.Sprintf("%s/%d/%d %s", r.Topic, r.Partition, r.Offset, r.Value))
			}
			return out
		},
		// Delivered by due time, which ties and skews between the two
		// producers reorder; each key's records in their source order.
		"delayed": func(p int32) []string { return byKey(src[p]) },
		"deduped": func(p int32) []string {
			seen := map[string]int64{}
			out := []string{}
			for _, r := range src[p] {
				ts := r.Timestamp.UnixMilli()
				maps.DeleteFunc(seen, func(_ string, last int64) bool { return ts-last >= 1000 })
				if last, ok := seen[string(r.Key)]; ok && ts-last < 1000 {
					continue
				}
				seen[string(r.Key)] = ts
				out = append(out, string(r.Value))
			}
			return out
		},
	}
	got := func(topic string, rs []*kgo.Record) []string {
		switch topic {
		case "delayed":
			return byKey(rs)
		case "audit-events":
		default:
			return values(rs)
		}
		out := []string{}
		for _, r := range rs {
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			out = append(out, fmt.Sprintf("%s/%s/%s %s", hs["audit.topic"], hs["audit.partition"], hs["audit.offset"], r.Value))
		}
		return out
	}
	for _, out := range slices.Sorted(maps.Keys(want)) {
		var dst map[int32][]*kgo.Record
		waitFor(t, 2*time.Minute, out+" to catch up", func() string {
			dst = readRecords(t, ctx, c, all, out)
			for p := range int32(3) {
				if w := want[out](p); len(dst[p]) < len(w) {
					// Where the output falls behind says whether it lags at
					// its end or lost something before it.
					g := got(out, dst[p])
					i := firstDiff(w, g)
					if i == len(g) {
						return fmt.Sprintf("partition %d: %d of %d, its end", p, len(g), len(w))
					}
					return fmt.Sprintf("partition %d: %d of %d; from its record %d on, it has %v where it should have %v",
						p, len(g), len(w), i, g[i:min(i+3, len(g))], w[i:min(i+3, len(w))])
				}
			}
			return ""
		})
		for p := range int32(3) {
			w, g := want[out](p), got(out, dst[p])
			if !slices.Equal(w, g) {
				i := firstDiff(w, g)
				t.Fatalf("%s-%d holds %d records, want %d; from their record %d on, it has %v where it should have %v",
					out, p, len(g), len(w), i, g[i:min(i+5, len(g))], w[i:min(i+5, len(w))])
			}
		}
		t.Logf("%s: %d records, as its kind makes them from the source's %d", out, len(dst[0])+len(dst[1])+len(dst[2]), len(src[0])+len(src[1])+len(src[2]))
	}
}

// byKey returns the values of rs grouped by key, the keys sorted, each
// key's values in the order of rs.
func byKey(rs []*kgo.Record) []string {
	groups := map[string][]string{}
	for _, r := range rs {
		groups[string(r.Key)] = append(groups[string(r.Key)], string(r.Value))
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		out = append(out, groups[k]...)
	}
	return out
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
