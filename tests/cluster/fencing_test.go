package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker killed with SIGKILL misses its heartbeats and is fenced: the
// other nodes stop listing it, and its partitions have no leader. Started
// again, it registers its new incarnation, is unfenced, and leads its
// partitions again, in a new leader epoch, with every record they held.
func TestKilledBrokerFencedAndBack(t *testing.T) {
	// Addresses of its own (127.0.0.31-33), and a short session.
	c := newClusterIn(t, layout{
		host:  func(i int) string { return fmt.Sprintf("127.0.0.3%d", i) },
		flags: []string{"--set", "broker.session.timeout.ms=4000", "--set", "broker.heartbeat.interval.ms=1000"},
	})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "fence"); err != nil {
		t.Fatal(err)
	}
	controller := c.agreedController(ctx, []int{1, 2, 3}, func(id int32) bool { return id > 0 })
	victim := int(controller)%numNodes + 1 // a broker, not the active controller
	witness := victim%numNodes + 1
	if witness == int(controller) {
		witness = witness%numNodes + 1
	}

	// A record in each of the victim's partitions, acknowledged by all.
	before := epochs(t, ctx, c, witness, "fence")
	var mine []int32
	for p, e := range before {
		if e.leader == int32(victim) {
			mine = append(mine, int32(p))
		}
	}
	if len(mine) == 0 {
		t.Fatalf("node %d leads no partition of fence: %+v", victim, before)
	}
	prod := c.client([]int{1, 2, 3}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range mine {
		r := &kgo.Record{Topic: "fence", Partition: p, Value: fmt.Appendf(nil, "before-%d", p)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to fence-%d: %v", p, err)
		}
	}

	firstRun := incarnation(t, c, witness, victim)
	c.kill(victim)
	waitFor(t, readyTimeout, fmt.Sprintf("node %d fenced, as node %d sees it", victim, witness), func() string {
		fenced, err := describeFenced(ctx, c, witness)
		if err != nil {
			return err.Error()
		}
		if !fenced[int32(victim)] {
			return fmt.Sprintf("fenced: %v", fenced)
		}
		return ""
	})
	v, err := c.view(ctx, witness)
	if err != nil {
		t.Fatal(err)
	}
	if _, listed := v.brokers[int32(victim)]; listed {
		t.Fatalf("Metadata from node %d lists fenced node %d: %v", witness, victim, v.brokers)
	}
	offline := epochs(t, ctx, c, witness, "fence")
	for _, p := range mine {
		if e := offline[p]; e.leader != -1 || e.epoch <= before[p].epoch || e.err != kerr.LeaderNotAvailable.Code {
			t.Fatalf("fence-%d while its broker is fenced: %+v, before %+v", p, e, before[p])
		}
	}

	offlineMetric := func() float64 {
		t.Helper()
		m, err := c.metrics(witness)
		if err != nil {
			t.Fatal(err)
		}
		return m["skein_cluster_offline_partitions"]
	}
	if n := offlineMetric(); n != float64(len(mine)) {
		t.Errorf("node %d's skein_cluster_offline_partitions %v, want %d", witness, n, len(mine))
	}

	c.start(victim)
	c.waitReady(victim)
	waitFor(t, readyTimeout, fmt.Sprintf("node %d leading its partitions again", victim), func() string {
		fenced, err := describeFenced(ctx, c, witness)
		if err != nil {
			return err.Error()
		}
		if fenced[int32(victim)] {
			return "still fenced"
		}
		now := epochs(t, ctx, c, witness, "fence")
		for _, p := range mine {
			if now[p].leader != int32(victim) {
				return fmt.Sprintf("fence-%d: %+v", p, now[p])
			}
		}
		return ""
	})
	after := epochs(t, ctx, c, witness, "fence")
	if n := offlineMetric(); n != 0 {
		t.Errorf("node %d's skein_cluster_offline_partitions %v once the broker is back", witness, n)
	}
	cons := c.client([]int{witness}, kgo.ConsumeTopics("fence"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32]string{}
	for len(got) < len(mine) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = string(r.Value) })
	}
	for _, p := range mine {
		if after[p].epoch <= offline[p].epoch {
			t.Errorf("fence-%d led again in epoch %d, not after %d", p, after[p].epoch, offline[p].epoch)
		}
		if want := fmt.Sprintf("before-%d", p); got[p] != want {
			t.Errorf("fence-%d holds %q, want %q", p, got[p], want)
		}
	}
	// The restart registered a new incarnation, which the admin API and
	// `skein cluster info --admin` show.
	secondRun := incarnation(t, c, witness, victim)
	if secondRun == firstRun || secondRun == 0 {
		t.Errorf("node %d's incarnation %d after its restart, %d before", victim, secondRun, firstRun)
	}
	out, err := exec.Command(skeinBin, "cluster", "info", "--brokers", c.addr(witness),
		"--admin", fmt.Sprintf("%s:%d", c.host(witness), adminPort)).CombinedOutput()
	if err != nil {
		t.Fatalf("skein cluster info: %v\n%s", err, out)
	}
	want := fmt.Sprintf("%s:%d  %d", c.host(victim), clusterPort, secondRun)
	if !strings.Contains(string(out), want) {
		t.Errorf("skein cluster info does not show %q:\n%s", want, out)
	}

	r := &kgo.Record{Topic: "fence", Partition: mine[0], Value: []byte("after")}
	if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce to fence-%d after the broker came back: %v", mine[0], err)
	}
}

type partitionEpoch struct {
	leader, epoch int32
	err           int16
}

// epochs returns each partition's leader and leader epoch as node i's
// Metadata tells them.
func epochs(t *testing.T, ctx context.Context, c *cluster, i int, topic string) []partitionEpoch {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := c.seeds[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("node %d: metadata: %v", i, err)
	}
	m := resp.(*kmsg.MetadataResponse)
	if len(m.Topics) != 1 {
		t.Fatalf("node %d: metadata of %s: %d topics", i, topic, len(m.Topics))
	}
	out := make([]partitionEpoch, len(m.Topics[0].Partitions))
	for _, p := range m.Topics[0].Partitions {
		out[p.Partition] = partitionEpoch{leader: p.Leader, epoch: p.LeaderEpoch, err: p.ErrorCode}
	}
	return out
}

// describeFenced asks node i which brokers are fenced (DescribeCluster
// v2, fenced brokers included).
func describeFenced(ctx context.Context, c *cluster, i int) (map[int32]bool, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.IncludeFencedBrokers = 2, true
	resp, err := c.seeds[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: DescribeCluster: %w", i, err)
	}
	fenced := map[int32]bool{}
	var ids []int32
	for _, b := range resp.(*kmsg.DescribeClusterResponse).Brokers {
		fenced[b.NodeID] = b.IsFenced
		ids = append(ids, b.NodeID)
	}
	if slices.Sort(ids); len(ids) != numNodes {
		return nil, fmt.Errorf("node %d: DescribeCluster lists brokers %v", i, ids)
	}
	return fenced, nil
}

// incarnation returns broker's incarnation as node i's /v1/cluster says.
func incarnation(t *testing.T, c *cluster, i, broker int) uint64 {
	t.Helper()
	resp, err := httpClient.Get(c.adminURL(i) + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cl struct {
		Brokers []struct {
			ID          int    `json:"id"`
			Incarnation uint64 `json:"incarnation"`
		} `json:"brokers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cl); err != nil {
		t.Fatal(err)
	}
	for _, b := range cl.Brokers {
		if b.ID == broker {
			return b.Incarnation
		}
	}
	t.Fatalf("node %d's /v1/cluster has no broker %d", i, broker)
	return 0
}
