package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A follower paused with SIGSTOP for a minute under load does not grow
// the other nodes' memory with time: what they queue for it is bounded
// (actors.PeerQueueBytes, the rest dropped for the protocols to retry).
// Each running node's resident memory and Go heap are sampled from its
// /metrics over the minute. (Under this load little crosses remoting to
// the paused node: replication is the followers' Kafka Fetches, which a
// paused node does not send, and a build without the bound passes too; a
// flood to a paused peer is actors' TestPausedPeerQueueBounded.)
func TestFollowerPausedMemoryBounded(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.5.1%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "paused-follower"
	createReplicated(t, ctx, c, topic, 6)
	c.inSync(t, ctx, topic)
	h, stopLoad := startLoad(t, c, topic, 4)
	waitFor(t, time.Minute, "records acknowledged", func() string {
		if n := h.Acknowledged(); n < 2000 {
			return fmt.Sprintf("%d acknowledged", n)
		}
		return ""
	})
	const paused = 3
	c.pause(paused)
	peer := fmt.Sprintf(`skein_remote_queued_bytes{peer="%s:%d"}`, c.host(paused), clusterPort)
	type sample struct{ rss, heap, queued float64 }
	samples := map[int][]sample{}
	start := time.Now()
	for time.Since(start) < time.Minute {
		for _, i := range []int{1, 2} {
			m, err := c.metrics(i)
			if err != nil {
				t.Fatal(err)
			}
			samples[i] = append(samples[i], sample{m["process_resident_memory_bytes"], m["go_memstats_heap_inuse_bytes"], m[peer]})
		}
		time.Sleep(2 * time.Second)
	}
	acked := h.Acknowledged()
	c.resume(paused)
	stopLoad()
	for _, i := range []int{1, 2} {
		var lines []string
		first, top := samples[i][0], samples[i][0]
		for _, s := range samples[i] {
			lines = append(lines, fmt.Sprintf("%.0f/%.0f/%.1f", s.rss/(1<<20), s.heap/(1<<20), s.queued/(1<<20)))
			top.rss, top.heap, top.queued = max(top.rss, s.rss), max(top.heap, s.heap), max(top.queued, s.queued)
		}
		t.Logf("node %d, RSS/heap/queued for node %d in MiB every 2 s of the pause: %s", i, paused, strings.Join(lines, " "))
		t.Logf("node %d: RSS grew %.0f MiB, heap in use %.0f MiB at most (%.0f MiB at first); at most %.1f MiB queued for node %d",
			i, (top.rss-first.rss)/(1<<20), top.heap/(1<<20), first.heap/(1<<20), top.queued/(1<<20), paused)
		// Measured: RSS grew 10-11 MiB (40-46 MiB with the nodes built
		// with -race), the heap in use at most 8 MiB over its first
		// sample, nothing left queued.
		if grew := (top.rss - first.rss) / (1 << 20); grew > 128 {
			t.Errorf("node %d: RSS grew %.0f MiB while node %d was paused, over 128 MiB", i, grew, paused)
		}
		if grew := (top.heap - first.heap) / (1 << 20); grew > 64 {
			t.Errorf("node %d: the Go heap in use grew %.0f MiB while node %d was paused, over 64 MiB", i, grew, paused)
		}
		if top.queued > 32<<20 {
			t.Errorf("node %d: %.0f MiB queued for the paused node, over actors.PeerQueueBytes", i, top.queued/(1<<20))
		}
	}
	t.Logf("%d records acknowledged by the end of the pause", acked)
}
