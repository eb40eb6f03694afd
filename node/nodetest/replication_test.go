//go:build !race

package nodetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
)

// fastReplication shortens the timeouts that decide how fast a cluster
// notices a dead node or a lagging follower.
func fastReplication(cfg *configs.Node) {
	cfg.BrokerHeartbeatIntervalMs, cfg.BrokerSessionTimeoutMs = 200, 1500
	cfg.ReplicaLagTimeMaxMs = 3000
}

// client returns a client seeded with every node, closed at the end of the
// test.
func client(t *testing.T, c *Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0), c.Addr(1), c.Addr(2)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// describe returns each partition of topic as node i's metadata has it.
func describe(t *testing.T, ctx context.Context, c *Cluster, i int, topic string) []kadm.PartitionDetail {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []kadm.PartitionDetail
	for _, p := range td[topic].Partitions.Sorted() {
		out = append(out, p)
	}
	return out
}

// produce sends n records keyed k<from>..k<from+n-1> to topic with acks=all
// from an idempotent producer, and fails the test on any error.
func produce(t *testing.T, ctx context.Context, seeds []string, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value %d", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("producing %d records: %v", n, err)
	}
}

// consumeAll reads topic from the start until it has n records, and
// returns their keys by partition, in offset order.
func consumeAll(t *testing.T, ctx context.Context, seeds []string, topic string, n int) map[int32][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int32][]string{}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Key))
			got++
		})
	}
	return out
}

// Three nodes, a topic of replication factor 3 and min.insync.replicas 2:
// a node cut off from the others leaves every ISR and its leaderships,
// the other two take acks=all produces, and it truncates, catches up and
// rejoins once healed, and a preferred election (ElectLeaders) gives it
// back the partitions it is the first replica of; acknowledged records are on every ISR member, so
// that the leader's node stopping loses none of them, and the new leader,
// elected from the ISR, takes produces.
//
// Both durability modes: fsync (a replica counts an offset once it is on
// disk) and replicated (once it is in memory, Kafka's model).
func TestReplicationFailover(t *testing.T) {
	for _, d := range []configs.Durability{configs.DurabilityFsync, configs.DurabilityReplicated} {
		t.Run(string(d), func(t *testing.T) { replicationFailover(t, d) })
	}
}

func replicationFailover(t *testing.T, durability configs.Durability) {
	c := Start(t, 3, fastReplication, func(cfg *configs.Node) { cfg.Durability = durability })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := []string{c.Addr(0), c.Addr(1), c.Addr(2)}
	minISR := "2"
	if res, err := kadm.NewClient(client(t, c)).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "r"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	produce(t, ctx, seeds, "r", 0, 300)
	allInSync := func() {
		for i := range 3 {
			waitFor(t, fmt.Sprintf("node %d seeing every replica in sync", i+1), func() string {
				for _, p := range describe(t, ctx, c, i, "r") {
					if len(p.ISR) != 3 || p.Leader < 0 {
						return fmt.Sprintf("partition %d: leader %d ISR %v", p.Partition, p.Leader, p.ISR)
					}
				}
				return ""
			})
		}
	}
	allInSync()

	// Cut node 3 off: it leaves every ISR, the partitions it led get new
	// leaders, and the other two take acks=all produces.
	c.Isolate(2)
	waitFor(t, "node 3 out of every ISR", func() string {
		for _, p := range describe(t, ctx, c, 0, "r") {
			if slices.Contains(p.ISR, 3) || p.Leader == 3 || p.Leader < 0 {
				return fmt.Sprintf("partition %d: leader %d ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return ""
	})
	produce(t, ctx, seeds[:2], "r", 300, 300)
	c.Heal()
	allInSync()

	// The leaders counted the ISR shrinks and expansions, and the bytes
	// went from leaders to followers.
	var sums = map[string]float64{}
	for i := range 3 {
		for name, v := range scrape(t, c, i) {
			sums[name] += v
		}
	}
	for _, name := range []string{"skein_isr_shrinks_total", "skein_isr_expands_total", "skein_replication_bytes_in_total", "skein_replication_bytes_out_total"} {
		if sums[name] == 0 {
			t.Errorf("%s is 0 over the three nodes", name)
		}
	}

	// A preferred election gives each partition back to the first of its
	// replicas, node 3 included, now that all are in sync.
	elected, err := kadm.NewClient(client(t, c)).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"r": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range elected["r"] {
		if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("preferred election of r-%d: %v %s", p, r.Err, r.ErrMessage)
		}
	}
	for i := range 3 {
		waitFor(t, fmt.Sprintf("node %d seeing preferred leaders", i+1), func() string {
			for _, p := range describe(t, ctx, c, i, "r") {
				if p.Leader != p.Replicas[0] {
					return fmt.Sprintf("partition %d: leader %d, replicas %v", p.Partition, p.Leader, p.Replicas)
				}
			}
			return ""
		})
	}

	// Stop the leader of partition 0; the other two elect a new one.
	old := describe(t, ctx, c, 0, "r")[0]
	gone := int(old.Leader) - 1
	stopCtx, stopCancel := context.WithTimeout(ctx, 20*time.Second)
	if err := c.Nodes[gone].Stop(stopCtx); err != nil {
		t.Fatalf("stopping node %d: %v", gone+1, err)
	}
	stopCancel()
	var live []string
	other := -1
	for i := range 3 {
		if i != gone {
			live = append(live, c.Addr(i))
			other = i
		}
	}
	waitFor(t, "a new leader of partition 0", func() string {
		p := describe(t, ctx, c, other, "r")[0]
		if p.Leader == old.Leader || p.Leader < 0 || p.LeaderEpoch <= old.LeaderEpoch {
			return fmt.Sprintf("leader %d epoch %d", p.Leader, p.LeaderEpoch)
		}
		return ""
	})
	produce(t, ctx, live, "r", 600, 300)
	got := consumeAll(t, ctx, live, "r", 900)
	var keys []string
	for p, ks := range got {
		seen := map[string]bool{}
		for _, k := range ks {
			if seen[k] {
				t.Fatalf("partition %d: %s read twice", p, k)
			}
			seen[k] = true
		}
		keys = append(keys, ks...)
	}
	slices.Sort(keys)
	var want []string
	for i := range 900 {
		want = append(want, "k"+strconv.Itoa(i))
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("read %d records, want the 900 produced", len(keys))
	}
}

// scrape returns node i's metrics without labels, by name.
func scrape(t *testing.T, c *Cluster, i int) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// A partition reassigned from nodes [1 2] to [3 2], its leader node 1
// leaving: node 3 copies it from the leader and joins the ISR, then node 1
// leaves (handing the leadership to node 3, the first target replica) and
// deletes its copy; every record is still there, and the reassignment
// disappears from ListPartitionReassignments. Cancelling when nothing is
// in progress says so.
func TestReassignment(t *testing.T) {
	c := Start(t, 3, fastReplication)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{c.Addr(0), c.Addr(1), c.Addr(2)}
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "moving", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %v", err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	produce(t, ctx, seeds, "moving", 0, 500)

	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("moving", 0, []int32{3, 2})
	res, err := adm.AlterPartitionAssignments(ctx, move)
	if err != nil || res["moving"][0].Err != nil {
		t.Fatalf("reassign: %v %+v", err, res)
	}
	for i := range 3 {
		waitFor(t, fmt.Sprintf("node %d seeing the partition on [3 2], led by 3", i+1), func() string {
			p := describe(t, ctx, c, i, "moving")[0]
			if !slices.Equal(p.Replicas, []int32{3, 2}) || p.Leader != 3 || len(p.ISR) != 2 {
				return fmt.Sprintf("replicas %v, ISR %v, leader %d", p.Replicas, p.ISR, p.Leader)
			}
			return ""
		})
	}
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}})
	if err != nil || len(listed["moving"]) != 0 {
		t.Fatalf("reassignments in progress after it completed: %v %+v", err, listed)
	}
	dir := filepath.Join(c.dataDirs[0], "moving-0")
	waitFor(t, "node 1 deleting its copy", func() string {
		if _, err := os.Stat(dir); err == nil {
			return dir + " is still there"
		}
		return ""
	})
	got := consumeAll(t, ctx, seeds, "moving", 500)
	if len(got[0]) != 500 {
		t.Fatalf("read %d records after the move, want 500", len(got[0]))
	}
	var undo kadm.AlterPartitionAssignmentsReq
	undo.CancelAssign("moving", 0)
	res, err = adm.AlterPartitionAssignments(ctx, undo)
	if err != nil || !errors.Is(res["moving"][0].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancelling with nothing in progress: %v %+v", err, res)
	}
}

// Replication over faulty links, through the per-pair fault hook in the
// remoting path: with a fifth of the messages between every pair of nodes
// dropped and the rest delayed, acks=all produces still all complete (a
// lost fetch or answer delays, never corrupts); a one-way cut from the
// leader of a partition to one follower (its fetches arrive, no answer
// returns) takes that follower out of the ISR, and acks=all waits for that
// rather than acknowledge what it lacks, while the others go on, and
// once healed it catches up and rejoins. Every record is read back once.
func TestReplicationOverFaultyLinks(t *testing.T) {
	c := Start(t, 3, fastReplication)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := []string{c.Addr(0), c.Addr(1), c.Addr(2)}
	minISR := "2"
	if res, err := kadm.NewClient(client(t, c)).CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "lossy"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	for a := range 3 {
		for b := a + 1; b < 3; b++ {
			c.Fault(a, b, actors.LinkFault{DropRate: 0.2, Delay: 2 * time.Millisecond})
		}
	}
	produce(t, ctx, seeds, "lossy", 0, 300)
	c.Heal()

	// Leader, follower and active controller are three different nodes,
	// so that the cut carries no controller traffic (a cut broker would be
	// fenced, which is another test).
	ctrl, _ := metadata(t, ctx, c, 0)
	var p kadm.PartitionDetail
	for _, q := range describe(t, ctx, c, 0, "lossy") {
		if q.Leader != ctrl {
			p = q
		}
	}
	if p.Leader == 0 {
		t.Fatalf("every partition is led by the active controller, node %d", ctrl)
	}
	leader := int(p.Leader) - 1
	follower := 3 - leader - int(ctrl-1) // the third node
	c.FaultOneWay(leader, follower, actors.LinkFault{Cut: true})
	// The produce completes once the follower that gets no answers has
	// lagged past replica.lag.time.max.ms and left the ISR.
	produce(t, ctx, seeds, "lossy", 300, 300)
	if q := describe(t, ctx, c, leader, "lossy")[p.Partition]; slices.Contains(q.ISR, int32(follower+1)) {
		t.Fatalf("node %d still in the ISR %v after a one-way cut from its leader", follower+1, q.ISR)
	}
	c.Heal()
	waitFor(t, fmt.Sprintf("node %d back in the ISR", follower+1), func() string {
		if q := describe(t, ctx, c, leader, "lossy")[p.Partition]; len(q.ISR) != 3 {
			return fmt.Sprintf("ISR %v", q.ISR)
		}
		return ""
	})
	seen := map[string]bool{}
	for _, ks := range consumeAll(t, ctx, seeds, "lossy", 600) {
		for _, k := range ks {
			if seen[k] {
				t.Fatalf("%s read twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 600 {
		t.Fatalf("read %d distinct records, want 600", len(seen))
	}
}
