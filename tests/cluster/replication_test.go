package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/history"
	"github.com/skeinlog/skein/partition/store"
)

// replicationFlags shorten the times a cluster takes to notice a dead
// node and a lagging follower.
var replicationFlags = []string{
	"--set", "broker.session.timeout.ms=3000", "--set", "broker.heartbeat.interval.ms=500",
	"--set", "replica.lag.time.max.ms=5000",
}

// createReplicated creates topic with partitions of replication factor 3
// and min.insync.replicas 2, and waits until every node leads or follows.
func createReplicated(t *testing.T, ctx context.Context, c *cluster, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	minISR := "2"
	res, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// leaderOf returns the leader of topic's partition p as the running nodes
// see it, once one is live.
func (c *cluster) leaderOf(t testing.TB, ctx context.Context, topic string, p int) int {
	t.Helper()
	var leader int32
	waitFor(t, readyTimeout, fmt.Sprintf("a leader of %s-%d", topic, p), func() string {
		for i := 1; i <= numNodes; i++ {
			if !c.nodes[i].running() {
				continue
			}
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if tv, ok := v.topics[topic]; ok && p < len(tv.leaders) && tv.leaders[p] > 0 && c.nodes[tv.leaders[p]].running() {
				leader = tv.leaders[p]
				return ""
			}
		}
		return "no running node names a running leader"
	})
	return int(leader)
}

// Replication factor 3, min.insync.replicas 2, idempotent acks=all
// producers: the leader of a partition is killed with SIGKILL, the others
// elect a new one, and it is started again, every few seconds for a
// minute. The history checker then reads
// every partition back: every acknowledged record is there, at the offset
// its acknowledgement gave, once; nothing is there that was not sent; each
// producer's records are in the order sent.
func TestLeadersKilledUnderLoad(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.15%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic, partitions = "kills", 6
	createReplicated(t, ctx, c, topic, partitions)
	h, stopLoad := startLoad(t, c, topic, 2)
	end := time.Now().Add(time.Minute)
	for round := 0; time.Now().Before(end); round++ {
		p := round % partitions
		victim := c.leaderOf(t, ctx, topic, p)
		t.Logf("round %d: killing node %d, the leader of %s-%d (%d acknowledged so far)", round, victim, topic, p, h.Acknowledged())
		c.kill(victim)
		// The others fence it and elect a new leader from the ISR.
		if next := c.leaderOf(t, ctx, topic, p); next == victim {
			t.Fatalf("node %d is down but still leads %s-%d", victim, topic, p)
		}
		c.start(victim)
		c.waitReady(victim)
		time.Sleep(3 * time.Second)
	}
	stopLoad()
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() {
		t.Fatalf("history: %v", v)
	}
	if v.Acknowledged == 0 {
		t.Fatal("no record was acknowledged")
	}
}

// inSync waits until every partition of topic has a leader and all three
// replicas in its ISR, as each node itself sees it. Asking one node
// through a client would not do: the client sends its metadata request to
// whichever broker it picks, and a node that has just come back from a
// network cut still answers with the view it had before it.
func (c *cluster) inSync(t testing.TB, ctx context.Context, topic string) {
	t.Helper()
	waitFor(t, 2*time.Minute, fmt.Sprintf("every replica of %s in sync, as every node sees it", topic), func() string {
		var first []int32
		for i := 1; i <= numNodes; i++ {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			tv, ok := v.topics[topic]
			if !ok {
				return fmt.Sprintf("node %d does not know %s", i, topic)
			}
			for p, l := range tv.leaders {
				if l < 0 || len(tv.isrs[p]) != numNodes {
					return fmt.Sprintf("node %d: partition %d: leader %d, ISR %v", i, p, l, tv.isrs[p])
				}
			}
			if first == nil {
				first = tv.leaders
			} else if !slices.Equal(first, tv.leaders) {
				return fmt.Sprintf("node 1 names leaders %v, node %d %v", first, i, tv.leaders)
			}
		}
		return ""
	})
}

// A rolling restart under load: each node in turn is stopped with SIGTERM
// (a controlled shutdown moves its leaderships first), started again, and
// waited for until it is back in every ISR. The producers see only
// retriable errors, which they retry: no send fails, and the history
// holds.
func TestRollingRestart(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.16%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "rolling"
	createReplicated(t, ctx, c, topic, 6)
	h, stopLoad := startLoad(t, c, topic, 2)
	for i := 1; i <= numNodes; i++ {
		c.inSync(t, ctx, topic)
		t.Logf("restarting node %d (%d acknowledged so far)", i, h.Acknowledged())
		c.stop(i)
		c.start(i)
		c.waitReady(i)
	}
	c.inSync(t, ctx, topic)
	stopLoad()
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() || v.Failed > 0 {
		t.Fatalf("history: %v", v)
	}
	if v.Acknowledged == 0 {
		t.Fatal("no record was acknowledged")
	}
}

// The leader of a partition is paused with SIGSTOP past its session
// timeout under load: the others fence it and elect a new leader. Resumed,
// it still believes it leads until it hears otherwise, but nothing it
// takes then is acknowledged (its ISR holds the new leader, which no longer
// fetches from it); it truncates what it took alone, catches up and
// rejoins, and the history holds.
func TestLeaderPaused(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.18%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "paused"
	createReplicated(t, ctx, c, topic, 3)
	c.inSync(t, ctx, topic)
	h, stopLoad := startLoad(t, c, topic, 2)
	waitFor(t, time.Minute, "records acknowledged", func() string {
		if n := h.Acknowledged(); n < 1000 {
			return fmt.Sprintf("%d acknowledged", n)
		}
		return ""
	})
	victim := c.leaderOf(t, ctx, topic, 0)
	var others []int
	for i := 1; i <= numNodes; i++ {
		if i != victim {
			others = append(others, i)
		}
	}
	t.Logf("pausing node %d, the leader of %s-0 (%d acknowledged so far)", victim, topic, h.Acknowledged())
	c.pause(victim)
	waitFor(t, time.Minute, "a new leader of partition 0", func() string {
		v, err := c.view(ctx, others[0])
		if err != nil {
			return err.Error()
		}
		if l := v.topics[topic].leaders[0]; l < 0 || int(l) == victim {
			return fmt.Sprintf("leader %d", l)
		}
		return ""
	})
	acked := h.Acknowledged()
	waitFor(t, time.Minute, "records acknowledged by the new leaders", func() string {
		if n := h.Acknowledged(); n < acked+1000 {
			return fmt.Sprintf("%d acknowledged", n)
		}
		return ""
	})
	t.Logf("resuming node %d (%d acknowledged so far)", victim, h.Acknowledged())
	c.resume(victim)
	c.inSync(t, ctx, topic)
	stopLoad()
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() {
		t.Fatalf("history: %v", v)
	}
}

// Both followers of a partition are paused with SIGSTOP. (Node 1, which
// leads it, is the one voter of the controller quorum here, nodes 2 and 3
// brokers only: pausing two of three voters would stop the quorum, and
// with it every ISR change.) The leader's high watermark stops; once the
// followers have lagged for replica.lag.time.max.ms the ISR shrinks to the
// leader alone, below min.insync.replicas 2, and acks=all produces are
// refused NOT_ENOUGH_REPLICAS (or NOT_ENOUGH_REPLICAS_AFTER_APPEND for
// those that waited), which clients retry; resumed, the followers catch
// up, rejoin the ISR, and the produces go through. The history holds.
func TestFollowersPaused(t *testing.T) {
	c := newClusterIn(t, layout{
		host:   func(i int) string { return fmt.Sprintf("127.0.0.19%d", i) },
		flags:  replicationFlags,
		voters: []int{1},
		nodeFlags: func(i int) []string {
			if i == 1 {
				return nil
			}
			return []string{"--set", "process.roles=broker"}
		},
	})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "followers"
	createAssigned(t, ctx, c, topic, []int32{1, 2, 3})
	c.inSync(t, ctx, topic)

	h := history.New()
	produceN(t, c.client([]int{1}, kgo.DefaultProduceTopic(topic)), h, 1, 500)
	c.pause(2)
	c.pause(3)
	// NB: node 1 asked itself: a client would also try the paused nodes.
	node1 := c.seeds[1].SeedBrokers()[0]
	var topicID [16]byte
	waitFor(t, time.Minute, "the ISR shrunk to the leader", func() string {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		resp, err := mreq.RequestWith(ctx, node1)
		if err != nil {
			return err.Error()
		}
		if isr := resp.Topics[0].Partitions[0].ISR; len(isr) != 1 {
			return fmt.Sprintf("ISR %v", isr)
		}
		topicID = resp.Topics[0].TopicID
		return ""
	})
	// A produce now is refused before the append. (The image may tell of
	// the shrink a moment before the leader's actor hears its answer: a
	// produce in that moment is appended and times out, and is in the
	// history as sent with its outcome unknown; the next is refused.)
	refused := false
	for attempt := 0; attempt < 5 && !refused; attempt++ {
		v := h.Send(9, attempt)
		raw := kmsg.NewPtrProduceRequest()
		raw.Acks, raw.TimeoutMillis = -1, 2000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic, pt.TopicID = topic, topicID // v13 names topics by id
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = oneBatch(t, v)
		pt.Partitions = append(pt.Partitions, pp)
		raw.Topics = append(raw.Topics, pt)
		presp, err := raw.RequestWith(ctx, node1)
		if err != nil {
			t.Fatal(err)
		}
		code := presp.Topics[0].Partitions[0].ErrorCode
		if err := kerr.ErrorForCode(code); err != nil {
			h.Failed(v, err)
		}
		switch code {
		case kerr.NotEnoughReplicas.Code:
			refused = true
		case kerr.RequestTimedOut.Code:
		default:
			t.Fatalf("acks=all produce with the ISR below min.insync.replicas: error %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
		}
	}
	if !refused {
		t.Fatal("acks=all produces with the ISR below min.insync.replicas timed out five times; want NOT_ENOUGH_REPLICAS")
	}
	// Producers retry until the followers are back.
	done := make(chan struct{})
	go func() {
		defer close(done)
		produceN(t, c.client([]int{1}, kgo.DefaultProduceTopic(topic)), h, 2, 500)
	}()
	c.resume(2)
	c.resume(3)
	<-done
	c.inSync(t, ctx, topic)
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	v := h.Check()
	t.Logf("history: %v", v)
	if !v.OK() || v.Acknowledged < 1000 {
		t.Fatalf("history: %v; want the 1000 records of the producers acknowledged", v)
	}
}

// oneBatch returns a record batch of one record with value v.
func oneBatch(t *testing.T, v string) []byte {
	t.Helper()
	now := time.Now().UnixMilli()
	b, err := store.AppendBatch(nil, store.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: now, MaxTimestamp: now},
		[]store.Record{{Value: []byte(v)}}, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
