package cluster

import (
	"context"
	"fmt"
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

// readPartitions reads topic from its start to its end offsets through the
// given nodes and returns each partition's values in offset order.
func readPartitions(t *testing.T, ctx context.Context, c *cluster, nodes []int, topic string) map[int32][]string {
	t.Helper()
	ends, err := kadm.NewClient(c.client(nodes)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	cl := c.client(nodes, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	out := map[int32][]string{}
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
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}

// TestExtensionMirrorFailover: a mirror instance copies a replicated topic
// under load while the node that leads one of its partitions (and runs
// that partition's mirror actor) is killed with SIGKILL and started again.
// The actor resumes on the new leader from its committed position: each
// partition's copy holds exactly the source partition's records, in its
// order, nothing lost and nothing twice.
func TestExtensionMirrorFailover(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.25%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, copyTopic = "events", "mirror.events"
	createReplicated(t, ctx, c, topic, 3)
	createReplicated(t, ctx, c, copyTopic, 3)
	c.createExtension(t, 1, `{"name": "m1", "kind": "mirror", "settings": {"source.topics": "events"}}`)
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
	for i := 1; i <= numNodes; i++ {
		c.inSync(t, ctx, i, topic)
	}
	if v := h.Check(); v.Acknowledged == 0 || v.Failed > 0 {
		t.Fatalf("the load: %v", v)
	}
	var src, dst map[int32][]string
	waitFor(t, 2*time.Minute, "the copy to catch up", func() string {
		src = readPartitions(t, ctx, c, []int{1, 2, 3}, topic)
		dst = readPartitions(t, ctx, c, []int{1, 2, 3}, copyTopic)
		for p := range int32(3) {
			if len(dst[p]) < len(src[p]) {
				return fmt.Sprintf("partition %d: %d of %d copied", p, len(dst[p]), len(src[p]))
			}
		}
		return ""
	})
	for p := range int32(3) {
		if !slices.Equal(src[p], dst[p]) {
			i := firstDiff(src[p], dst[p])
			t.Fatalf("partition %d: the copy has %d records, the source %d; from their record %d on, the source has %v and the copy %v",
				p, len(dst[p]), len(src[p]), i, src[p][i:min(i+8, len(src[p]))], dst[p][i:min(i+8, len(dst[p]))])
		}
	}
	t.Logf("%d records copied, partition by partition, in order", len(src[0])+len(src[1])+len(src[2]))
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
