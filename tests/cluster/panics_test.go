package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// injectPanic makes node i's actor panic at its next message, through the
// admin API.
func (c *cluster) injectPanic(t *testing.T, i int, actor string) {
	t.Helper()
	body := fmt.Sprintf(`{"actor": %q, "kind": "panic", "count": 1}`, actor)
	resp, err := httpClient.Post(c.adminURL(i)+"/v1/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("node %d: POST /v1/faults: %v", i, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("node %d: POST /v1/faults %s: %s", i, body, resp.Status)
	}
}

// Actor kinds, as skein_actor_restarts_total labels them (the Go types of
// the actors, or what they name themselves).
const (
	kindPartition      = "*partition.partition"
	kindFetcher        = "*partition.fetcher"
	kindGroup          = "*coordinator.groupActor"
	kindSharePartition = "share-partition"
	kindShareState     = "*share.stateActor"
)

// restarts returns how many times node i's supervisors restarted actors
// of each kind, from /metrics.
func (c *cluster) restarts(t *testing.T, i int) map[string]float64 {
	t.Helper()
	m, err := c.metrics(i)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for k, v := range m {
		if labels, ok := strings.CutPrefix(k, "skein_actor_restarts_total{"); ok {
			kind, _ := strings.CutPrefix(strings.TrimSuffix(labels, "}"), "kind=")
			out[strings.Trim(kind, `"`)] = v
		}
	}
	return out
}

// Panics injected under load, for twenty seconds, into the actors
// replication rests on: partition leaders and followers, fetchers, and the
// group's coordinator. Each restarts in its role from disk; producers (idempotent,
// acks=all) and a consumer group see retriable errors only. The history
// holds, and the group reads every acknowledged record, at the offset the
// log has it.
func TestPanicsUnderLoad(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.10%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, group, partitions = "panics", "panicking", 3
	createReplicated(t, ctx, c, topic, partitions)
	c.inSync(t, ctx, topic)
	h, stopLoad := startLoad(t, c, topic, 2)
	// The group starts at every partition's start: this says so to the
	// history, which holds it to read every acknowledged record even if
	// it reads none.
	for p := range int32(partitions) {
		h.ExpectConsumedFrom(history.TP{Topic: topic, Partition: p}, 0)
	}
	cons := c.client([]int{1, 2, 3}, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond))
	consDone, consStop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(consDone)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cons.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) {
				h.Consumed(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
			})
			select {
			case <-consStop:
				return
			default:
			}
		}
	}()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	targets := map[string]int{} // actor: node
	end := time.Now().Add(20 * time.Second)
	for round := 0; time.Now().Before(end); round++ {
		p := round % 3
		leader := c.leaderOf(t, ctx, topic, p)
		follower := leader%numNodes + 1
		var node int
		var actor string
		switch round % 4 {
		case 0:
			node, actor = leader, fmt.Sprintf("node/%d/partitions/%s-%d", leader, topic, p)
		case 1:
			node, actor = follower, fmt.Sprintf("node/%d/partitions/%s-%d", follower, topic, p)
		case 2:
			node, actor = follower, fmt.Sprintf("node/%d/fetchers/%d", follower, leader)
		case 3:
			coord := adm.FindGroupCoordinators(ctx, group)[group]
			if coord.Err != nil {
				continue
			}
			node = int(coord.NodeID)
			actor = fmt.Sprintf("node/%d/groups/%s", node, group)
		}
		c.injectPanic(t, node, actor)
		targets[actor] = node
		time.Sleep(300 * time.Millisecond) // the load runs on between faults
	}
	stopLoad()
	c.inSync(t, ctx, topic)
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	// The group may still be reading: wait for it to have read every
	// acknowledged record (no use waiting for a lost one), then check
	// the whole history, the group's reads with the log's.
	waitFor(t, 2*time.Minute, "the group reading every acknowledged record", func() string {
		if v := h.Check(); len(v.Unseen) > 0 && len(v.Lost) == 0 {
			return fmt.Sprintf("%d acknowledged records not read", len(v.Unseen))
		}
		return ""
	})
	close(consStop)
	<-consDone
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() {
		t.Fatalf("history: %v", v)
	}
	// Every kind of actor took panics, and was restarted.
	kinds := map[string]float64{}
	for i := 1; i <= numNodes; i++ {
		for k, n := range c.restarts(t, i) {
			kinds[k] += n
		}
	}
	for _, k := range []string{kindPartition, kindFetcher, kindGroup} {
		if kinds[k] == 0 {
			t.Errorf("no %s actor was restarted after an injected panic (%v)", k, kinds)
		}
	}
	t.Logf("restarts by kind of actor: %v", kinds)
}
