//go:build !race

package nodetest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// rackCluster starts three nodes in racks a, b and c (node 1 in a, 2 in
// b, 3 in c) whose leaders send consumers to a replica in their rack
// (replica.selector.class), and creates topic with one partition on
// replicas 1, 2, 3: node 1 leads it.
func rackCluster(t testing.TB, ctx context.Context, topic string) *Cluster {
	t.Helper()
	c := Start(t, 3, fastReplication, func(cfg *configs.Node) {
		cfg.BrokerRack = string(rune('a' + cfg.NodeID - 1))
		cfg.ReplicaSelectorClass = configs.RackAwareReplicaSelector
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0), c.Addr(1), c.Addr(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %v", topic, err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	// Every node's metadata has node 1 leading it with every replica in
	// sync.
	for i := range 3 {
		for {
			mreq := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(topic)
			mreq.Topics = append(mreq.Topics, mt)
			mresp, err := mreq.RequestWith(ctx, cl.Broker(i+1))
			if err == nil && len(mresp.Topics) == 1 && len(mresp.Topics[0].Partitions) == 1 {
				if p := mresp.Topics[0].Partitions[0]; p.Leader == 1 && len(p.ISR) == 3 {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("node %d never saw node 1 leading %s with three replicas in sync", i+1, topic)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// series returns one series of node i's metrics, by its name and labels as
// the text format writes them (skein_x{a="b"}), 0 when absent.
func series(t testing.TB, c *Cluster, i int, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if n, value, ok := strings.Cut(sc.Text(), " "); ok && n == name {
			v, _ := strconv.ParseFloat(value, 64)
			return v
		}
	}
	return 0
}

// rackConsumer is a consumer in rack (client.rack) reading topic from the
// start, seeded with nodes 1 and 3.
func rackConsumer(t *testing.T, c *Cluster, topic, rack string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0), c.Addr(2)), kgo.Rack(rack),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readOnce polls cl until it has read up to key k<n-1>, and fails the test
// on a record read twice or out of order (keys k<from>.. in offset order).
func readOnce(t *testing.T, ctx context.Context, cl *kgo.Client, from, n int) {
	t.Helper()
	next := from
	for next < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to k%d of k%d: %v", next-1, n-1, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := "k" + strconv.Itoa(next); string(r.Key) != want {
				t.Fatalf("read %s at offset %d, want %s: a record read twice, lost or out of order", r.Key, r.Offset, want)
			}
			next++
		})
	}
}

// KIP-392 with franz-go: a consumer in rack b reads every record of a
// partition led in rack a from the replica in rack b. Node 1, the leader,
// sends it there (a preferred read replica) and serves none of the
// records; node 2 serves them all, from its own log; node 3 none.
func TestFetchFromFollowerInTheClientsRack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := rackCluster(t, ctx, "ff")
	seeds := []string{c.Addr(0), c.Addr(2)}
	produce(t, ctx, seeds, "ff", 0, 500)

	cl := rackConsumer(t, c, "ff", "b")
	readOnce(t, ctx, cl, 0, 500)
	// The records produced while the consumer reads come from node 2 too.
	produce(t, ctx, seeds, "ff", 500, 200)
	readOnce(t, ctx, cl, 500, 700)

	if n := series(t, c, 0, `skein_fetch_preferred_read_replica_total{by="leader"}`); n < 1 {
		t.Errorf("node 1 named a preferred read replica %v times, want at least once", n)
	}
	// In sync all along (its fetcher hears from the leader every
	// replica.fetch.wait.max.ms, records or not), node 2 never sent the
	// consumer back.
	if n := series(t, c, 1, `skein_fetch_preferred_read_replica_total{by="follower"}`); n != 0 {
		t.Errorf("node 2 sent the consumer back to its leader %v times, want never", n)
	}
	if n := scrape(t, c, 1)["skein_fetch_follower_records_total"]; n < 700 {
		t.Errorf("node 2 served %v records as a follower, want all 700", n)
	}
	for i, node := range []int{0, 2} {
		if n := series(t, c, node, `skein_topic_records_out_total{topic="ff"}`); n != 0 {
			t.Errorf("node %d served %v records of ff, want none: node 2 serves rack b", []int{1, 3}[i], n)
		}
	}
}

// The fallback: the follower in the consumer's rack, cut off from the
// other nodes, leaves the ISR and stops hearing from its leader; after
// replica.lag.time.max.ms it sends the consumer back to the leader
// (a preferred read replica naming the leader), and the leader, which no
// longer has a replica in sync in rack b, serves it: every record
// produced meanwhile is read, once. Healed, node 2 catches up, rejoins
// the ISR, and the leader sends the consumer back to it.
func TestFetchFromFollowerFallsBackToTheLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := rackCluster(t, ctx, "fb")
	seeds := []string{c.Addr(0), c.Addr(2)}
	produce(t, ctx, seeds, "fb", 0, 100)
	cl := rackConsumer(t, c, "fb", "b")
	readOnce(t, ctx, cl, 0, 100)
	if n := scrape(t, c, 1)["skein_fetch_follower_records_total"]; n < 100 {
		t.Fatalf("node 2 served %v records as a follower before the cut, want 100", n)
	}

	c.Isolate(1)
	// acks=all waits for the leader to drop node 2 from the ISR.
	produce(t, ctx, seeds, "fb", 100, 300)
	readOnce(t, ctx, cl, 100, 400)
	if n := series(t, c, 1, `skein_fetch_preferred_read_replica_total{by="follower"}`); n < 1 {
		t.Errorf("node 2 sent the consumer back to its leader %v times, want at least once", n)
	}
	if n := series(t, c, 0, `skein_topic_records_out_total{topic="fb"}`); n < 300 {
		t.Errorf("node 1 served %v records of fb, want the 300 produced while node 2 was cut off", n)
	}

	c.Heal()
	waitFor(t, "node 2 back in the ISR", func() string {
		if p := describe(t, ctx, c, 0, "fb")[0]; len(p.ISR) != 3 {
			return fmt.Sprintf("ISR %v", p.ISR)
		}
		return ""
	})
	before := scrape(t, c, 1)["skein_fetch_follower_records_total"]
	produce(t, ctx, seeds, "fb", 400, 100)
	readOnce(t, ctx, cl, 400, 500)
	if n := scrape(t, c, 1)["skein_fetch_follower_records_total"] - before; n < 100 {
		t.Errorf("node 2 served %v records as a follower once healed, want the 100 produced since", n)
	}
}
