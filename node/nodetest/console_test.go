//go:build !race

package nodetest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsoleCountersFromEveryNode: the console on one node sums each
// topic's produce counters over every node, which answer over remoting
// (DescribeTopicCounters), and names the one cut off as missing.
func TestConsoleCountersFromEveryNode(t *testing.T) {
	c := Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Three partitions of one replica: each node leads one (placement
	// spreads them), so every node counts a third of the records.
	produceSpread(t, ctx, c, "spread")
	type answer struct {
		Topics []struct {
			Name      string  `json:"name"`
			RecordsIn float64 `json:"records_in_total"`
			BytesIn   float64 `json:"bytes_in_total"`
		} `json:"topics"`
		Brokers struct {
			Nodes        []int32 `json:"nodes"`
			MissingNodes []int32 `json:"missing_nodes"`
		} `json:"brokers"`
	}
	get := func() answer {
		resp, err := http.Get("http://" + c.Nodes[0].AdminAddr().String() + "/ui/api/topics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a answer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/ui/api/topics: %d %v", resp.StatusCode, err)
		}
		return a
	}
	a := get()
	if len(a.Brokers.Nodes) != 3 || len(a.Brokers.MissingNodes) != 0 {
		t.Fatalf("counters from %v, missing %v", a.Brokers.Nodes, a.Brokers.MissingNodes)
	}
	for _, tp := range a.Topics {
		if tp.Name == "spread" && (tp.RecordsIn != 30 || tp.BytesIn <= 0) {
			t.Fatalf("spread: %v records in, %v bytes in; want 30 over the three nodes", tp.RecordsIn, tp.BytesIn)
		}
	}
	c.Cut(0, 2)
	a = get()
	if len(a.Brokers.Nodes) != 2 || len(a.Brokers.MissingNodes) != 1 || a.Brokers.MissingNodes[0] != 3 {
		t.Fatalf("with node 3 cut off: counters from %v, missing %v", a.Brokers.Nodes, a.Brokers.MissingNodes)
	}
}

// produceSpread creates topic with three partitions of one replica on c
// and produces ten 10-byte records to each, retrying each until the
// partition takes it; it returns an admin client of the cluster.
func produceSpread(t *testing.T, ctx context.Context, c *Cluster, topic string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		for {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 3), Value: []byte("0123456789")}).FirstErr(); err == nil {
				break
			} else if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return adm
}
