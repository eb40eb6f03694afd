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
	// The cut joins the partition's leader and a follower, neither the
	// active controller: cut from the controller, a node would be fenced
	// as a whole (its leaderships moved), which is another test's matter.
	active := int(c.agreedController(ctx, []int{1, 2, 3}, func(id int32) bool { return id > 0 }))
	leader := active%numNodes + 1
	follower := leader%numNodes + 1
	createAssigned(t, ctx, c, topic, []int32{int32(leader), int32(follower), int32(active)})
	h := history.New()
	cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceN(t, cl, h, 1, 100)
	c.inSync(t, ctx, topic)

	// The cut follower stops replicating and leaves the ISR; the other
	// goes on.
	out := c.skeinChaos(t, "cut", fmt.Sprint(leader), fmt.Sprint(follower), "--for", "5m")
	if !strings.Contains(out, fmt.Sprintf("node %d -> node %d: cut", leader, follower)) || !strings.Contains(out, fmt.Sprintf("node %d -> node %d: cut", follower, leader)) {
		t.Fatalf("chaos cut printed:\n%s", out)
	}
	produceN(t, cl, h, 2, 100)
	want := []int32{int32(leader), int32(active)}
	slices.Sort(want)
	waitFor(t, time.Minute, fmt.Sprintf("node %d out of the ISR, node %d in it", follower, active), func() string {
		if isr := c.isr(t, ctx, leader, topic); !slices.Equal(isr, want) {
			return fmt.Sprintf("ISR %v", isr)
		}
		return ""
	})
	lag := func(replica int) float64 {
		m, err := c.metrics(leader)
		if err != nil {
			t.Fatal(err)
		}
		return m[fmt.Sprintf(`skein_follower_lag_offsets{partition="0",replica="%d",topic="%s"}`, replica, topic)]
	}
	waitFor(t, time.Minute, "one follower caught up, the cut one behind", func() string {
		if cut, other := lag(follower), lag(active); other != 0 || cut < 100 {
			return fmt.Sprintf("lag of node %d (cut): %v, of node %d: %v", follower, cut, active, other)
		}
		return ""
	})
	if out := c.skeinChaos(t, "list"); strings.Count(out, "link ") != 2 || !strings.Contains(out, fmt.Sprintf("to node %d", follower)) || !strings.Contains(out, fmt.Sprintf("to node %d", leader)) {
		t.Fatalf("chaos list does not show the two cut links:\n%s", out)
	}
	if out := c.skeinChaos(t, "heal"); strings.Count(out, ": 1 faults removed") != 2 {
		t.Fatalf("chaos heal printed:\n%s", out)
	}
	c.inSync(t, ctx, topic)

	// A delay on the partition's appends shows in its leader's Produce
	// latency.
	sum := func() (float64, float64) {
		m, err := c.metrics(leader)
		if err != nil {
			t.Fatal(err)
		}
		return m[`skein_request_duration_seconds_sum{api="Produce"}`], m[`skein_request_duration_seconds_count{api="Produce"}`]
	}
	s0, n0 := sum()
	c.skeinChaos(t, "delay", fmt.Sprintf("node/%d/partitions/%s-0", leader, topic), "--delay", "200ms", "--message", "Append", "--for", "5m")
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

	// A scenario run against this cluster (not one it starts itself).
	var brokers []string
	for i := 1; i <= numNodes; i++ {
		brokers = append(brokers, c.addr(i))
	}
	if out := c.skeinChaos(t, "run", "lossy", "--duration", "5s", "--rate", "200", "--brokers", strings.Join(brokers, ",")); !strings.Contains(out, "verdict: ok") {
		t.Fatalf("chaos run against the cluster:\n%s", out)
	}

	// Pause holds the follower for its time, then it answers again.
	start := time.Now()
	if out := c.skeinChaos(t, "pause", fmt.Sprint(follower), "--for", "2s"); !strings.Contains(out, fmt.Sprintf("node %d resumed", follower)) {
		t.Fatalf("chaos pause printed:\n%s", out)
	}
	if held := time.Since(start); held < 2*time.Second {
		t.Fatalf("pause --for 2s returned after %v", held)
	}
	c.waitReady(follower)

	// Kill ends the follower's process.
	c.nodes[follower].ended = true
	c.skeinChaos(t, "kill", fmt.Sprint(follower))
	select {
	case <-c.nodes[follower].exited:
	case <-time.After(time.Minute):
		t.Fatalf("node %d still runs after chaos kill", follower)
	}

	readBack(t, ctx, c, []int{leader, active}, topic, h)
	if v := h.Check(); !v.OK() || v.Failed > 0 {
		t.Fatalf("history: %v", v)
	}
}
