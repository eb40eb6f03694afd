package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/history"
)

// A leader killed and restarted at once, with the tail of its log torn
// (cut off, as a disk that lost its last writes leaves it), must not lead
// on the metadata it had: its followers would truncate what it lost, and
// records they hold, acknowledged, would be gone. It comes back as a
// follower, catches up, and nothing acknowledged is lost.
func TestRestartedLeaderWithTornLog(t *testing.T) {
	// A long session: the node is back well before the controller fences
	// its old run, so its new run's registration waits for that, and the
	// node runs meanwhile on the metadata it had.
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.20%d", i) },
		flags: []string{"--set", "broker.session.timeout.ms=15000"}})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "torn"
	// Its leader is not the active controller, whose death would start a
	// new controller term and, with it, new sessions for every broker.
	active := int(c.agreedController(ctx, []int{1, 2, 3}, func(id int32) bool { return id > 0 }))
	leader := active%numNodes + 1
	replicas := []int32{int32(leader)}
	for i := 1; i <= numNodes; i++ {
		if i != leader {
			replicas = append(replicas, int32(i))
		}
	}
	createAssigned(t, ctx, c, topic, replicas)
	if l := c.leaderOf(t, ctx, topic, 0); l != leader {
		t.Fatalf("node %d leads %s-0, not node %d, the first of its replicas %v", l, topic, leader, replicas)
	}
	h := history.New()
	cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceN(t, cl, h, 1, 2000)

	c.kill(leader)
	seg := filepath.Join(c.nodes[leader].dataDir, topic+"-0", "00000000000000000000.log")
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	cut := min(fi.Size(), 1000)
	if err := os.Truncate(seg, fi.Size()-cut); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d (the leader) killed, %d bytes cut off the end of its log, restarted", leader, cut)
	c.start(leader)
	c.waitReady(leader)
	produceN(t, cl, h, 2, 100)
	c.inSync(t, ctx, topic)
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	if v := h.Check(); !v.OK() || v.Failed > 0 {
		t.Fatalf("history: %v", v)
	}
	// The torn node's copy is whole again: followers append the leader's
	// batches as they are, so equal logs are equal in size.
	size := fmt.Sprintf(`skein_partition_log_size_bytes{partition="0",topic="%s"}`, topic)
	waitFor(t, time.Minute, "every node's copy of the log the same size", func() string {
		var sizes []float64
		for i := 1; i <= numNodes; i++ {
			m, err := c.metrics(i)
			if err != nil {
				return err.Error()
			}
			sizes = append(sizes, m[size])
		}
		if sizes[0] != sizes[1] || sizes[1] != sizes[2] {
			return fmt.Sprintf("sizes %v", sizes)
		}
		return ""
	})
}

// createAssigned creates topic with one partition on replicas (the first
// leads) and min.insync.replicas 2.
func createAssigned(t *testing.T, ctx context.Context, c *cluster, topic string, replicas []int32) {
	t.Helper()
	createOn(t, ctx, c, topic, replicas, map[string]string{"min.insync.replicas": "2"})
}

// createOn creates topic with one partition on replicas (the first leads),
// with configs.
func createOn(t *testing.T, ctx context.Context, c *cluster, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, &v
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.seeds[1])
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}
