package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// TestLeaderCutOff: network namespaces as hosts (see
// TestNetworkPartitionOfTheActiveController). The leader of a partition
// of replication factor 3 is cut off from the other two nodes while a
// producer still reaches it: its high watermark stops, so nothing sent to
// it is acknowledged (min.insync.replicas 2, acks=all); the other two
// fence it, elect a new leader and take records. Once the cut heals, the
// old leader truncates the tail it took alone, catches up, rejoins the
// ISR, and the history holds: every acknowledged record read back once, at
// its offset.
func TestLeaderCutOff(t *testing.T) {
	hosts := newNetnsHosts(t) // before the cluster: its cleanup runs after the nodes are killed
	c := newClusterIn(t, hosts.layout(replicationFlags...))
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "cut"
	createReplicated(t, ctx, c, topic, 1)
	h := history.New()
	produceN(t, c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic)), h, 1, 200)
	c.inSync(t, ctx, topic)

	old := c.leaderOf(t, ctx, topic, 0)
	var majority []int
	for i := 1; i <= numNodes; i++ {
		if i != old {
			majority = append(majority, i)
		}
	}
	hosts.cut(old, majority)
	t.Logf("node %d, the leader, is cut off from nodes %v", old, majority)
	// A producer that knows only the old leader: each send gives up after
	// a while, its outcome unknown.
	alone := make(chan struct{})
	go func() {
		defer close(alone)
		produceN(t, c.client([]int{old}, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(15*time.Second)), h, 2, 100)
	}()
	waitFor(t, time.Minute, "a new leader on the majority's side", func() string {
		v, err := c.view(ctx, majority[0])
		if err != nil {
			return err.Error()
		}
		if l := v.topics[topic].leaders[0]; l < 0 || int(l) == old {
			return fmt.Sprintf("leader %d", l)
		}
		return ""
	})
	produceN(t, c.client(majority, kgo.DefaultProduceTopic(topic)), h, 3, 200)
	<-alone
	hosts.heal()
	c.inSync(t, ctx, topic)
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() {
		t.Fatalf("history: %v", v)
	}
	if v.Acknowledged < 400 {
		t.Fatalf("%d records acknowledged; the 400 sent to reachable leaders should all be", v.Acknowledged)
	}
}
