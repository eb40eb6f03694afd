package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// skeinChaos runs `skein chaos args... --admin <every node>` and returns
// what it printed; it must succeed.
func (c *cluster) skeinChaos(t *testing.T, args ...string) string {
	t.Helper()
	var admins []string
	for i := 1; i <= numNodes; i++ {
		admins = append(admins, fmt.Sprintf("%s:%d", c.host(i), adminPort))
	}
	args = append(append([]string{"chaos"}, args...), "--admin", strings.Join(admins, ","))
	out, err := exec.Command(skeinBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skein %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// isr returns the ISR of topic's partition 0, as node i answers.
func (c *cluster) isr(t *testing.T, ctx context.Context, i int, topic string) []int32 {
	t.Helper()
	td, err := kadm.NewClient(c.seeds[i]).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	isr := slices.Clone(td[topic].Partitions[0].ISR)
	slices.Sort(isr)
	return isr
}

// skein chaos against a running cluster, the effect of each command
// checked: a cut link stops replication between those two nodes only, and
// heal restores it; an actor delay shows in the request latency metrics;
// pause holds a node for its time and resumes it; kill kills it.
func TestChaosCommandsAcrossNodes(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.21%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "cut"
	createAssigned(t, ctx, c, topic, []int32{1, 2, 3})
	h := history.New()
	cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceN(t, cl, h, 1, 100)
	c.inSync(t, ctx, 1, topic)

	// Cut 1 <-> 2: node 2, a follower of node 1, stops replicating and
	// leaves the ISR; node 3 goes on.
	out := c.skeinChaos(t, "cut", "1", "2", "--for", "5m")
	if !strings.Contains(out, "node 1 -> node 2: cut") || !strings.Contains(out, "node 2 -> node 1: cut") {
		t.Fatalf("chaos cut printed:\n%s", out)
	}
	produceN(t, cl, h, 2, 100)
	waitFor(t, time.Minute, "node 2 out of the ISR, node 3 in it", func() string {
		if isr := c.isr(t, ctx, 1, topic); !slices.Equal(isr, []int32{1, 3}) {
			return fmt.Sprintf("ISR %v", isr)
		}
		return ""
	})
	lag := func(replica int) float64 {
		m, err := c.metrics(1)
		if err != nil {
			t.Fatal(err)
		}
		return m[fmt.Sprintf(`skein_follower_lag_offsets{partition="0",replica="%d",topic="%s"}`, replica, topic)]
	}
	waitFor(t, time.Minute, "node 3 caught up, node 2 behind", func() string {
		if l2, l3 := lag(2), lag(3); l3 != 0 || l2 < 100 {
			return fmt.Sprintf("lag of node 2: %v, of node 3: %v", l2, l3)
		}
		return ""
	})
	if out := c.skeinChaos(t, "list"); strings.Count(out, "link ") != 2 || !strings.Contains(out, "to node 2") || !strings.Contains(out, "to node 1") {
		t.Fatalf("chaos list does not show the two cut links:\n%s", out)
	}
	if out := c.skeinChaos(t, "heal"); strings.Count(out, ": 1 faults removed") != 2 {
		t.Fatalf("chaos heal printed:\n%s", out)
	}
	c.inSync(t, ctx, 1, topic)

	// A delay on the partition's appends shows in node 1's Produce latency.
	sum := func() (float64, float64) {
		m, err := c.metrics(1)
		if err != nil {
			t.Fatal(err)
		}
		return m[`skein_request_duration_seconds_sum{api="Produce"}`], m[`skein_request_duration_seconds_count{api="Produce"}`]
	}
	s0, n0 := sum()
	c.skeinChaos(t, "delay", "node/1/partitions/"+topic+"-0", "--delay", "200ms", "--message", "Append", "--for", "5m")
	for seq := range 5 {
		v := h.Send(3, seq)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
		if err != nil {
			t.Fatal(err)
		}
		h.Acked(v, history.TP{Topic: topic, Partition: 0}, r.Offset)
	}
	s1, n1 := sum()
	// Each produce waited for a delayed Append: at least 200 ms each.
	if n1 <= n0 || (s1-s0)/(n1-n0) < 0.2 {
		t.Fatalf("Produce latency while delayed: %v s over %v requests, want at least 0.2 s each", s1-s0, n1-n0)
	}
	c.skeinChaos(t, "heal")

	// Pause holds node 3 for its time, then it answers again.
	start := time.Now()
	if out := c.skeinChaos(t, "pause", "3", "--for", "2s"); !strings.Contains(out, "node 3 resumed") {
		t.Fatalf("chaos pause printed:\n%s", out)
	}
	if held := time.Since(start); held < 2*time.Second {
		t.Fatalf("pause --for 2s returned after %v", held)
	}
	c.waitReady(3)

	// Kill ends node 3's process.
	c.nodes[3].ended = true
	c.skeinChaos(t, "kill", "3")
	select {
	case <-c.nodes[3].exited:
	case <-time.After(time.Minute):
		t.Fatal("node 3 still runs after chaos kill")
	}

	readBack(t, ctx, c, []int{1, 2}, topic, h)
	if v := h.Check(); !v.OK() || v.Failed > 0 {
		t.Fatalf("history: %v", v)
	}
}
