//go:build !race

// NB: not under the race detector: every in-process node starts a
// protoactor remote, and remote.Start writes gRPC's global logger while
// the remotes started before it read it (protoactor-go remote/server.go).
// `make test` runs this package without -race; tests/cluster runs the same
// code race-built, one node per process.

package nodetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
)

// metadata asks node i itself for the controller and the topics it knows.
func metadata(t *testing.T, ctx context.Context, c *Cluster, i int) (controller int32, topics []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatalf("node %d: %v", i+1, err)
	}
	m := resp.(*kmsg.MetadataResponse)
	for _, tp := range m.Topics {
		topics = append(topics, *tp.Topic)
	}
	slices.Sort(topics)
	return m.ControllerID, topics
}

// waitFor polls cond until it returns "", failing with its last answer
// after a minute.
func waitFor(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		last := cond()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s: %s", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Five nodes: clients seeded with any node create topics and produce and
// consume through the leaders; the active controller cut off from the
// other four cannot stop them, and it catches up once the cut heals.
func TestFiveNodesAndAnIsolatedController(t *testing.T) {
	c := Start(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(4)), kgo.DefaultProduceTopic("five"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 10, 1, nil, "five"); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(2)), kgo.ConsumeTopics("five"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 100; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	active, _ := metadata(t, ctx, c, 0)
	iso := int(active) - 1
	c.Isolate(iso)
	other := (iso + 1) % 5
	waitFor(t, "a new active controller among the other four", func() string {
		if id, _ := metadata(t, ctx, c, other); id < 1 || id == active {
			return fmt.Sprintf("node %d names %d", other+1, id)
		}
		return ""
	})
	ocl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(other)))
	if err != nil {
		t.Fatal(err)
	}
	defer ocl.Close()
	for i := range 3 {
		if _, err := kadm.NewClient(ocl).CreateTopic(ctx, 1, 1, nil, fmt.Sprintf("during-%d", i)); err != nil {
			t.Fatalf("create while node %d is isolated: %v", iso+1, err)
		}
	}
	if _, topics := metadata(t, ctx, c, iso); slices.Contains(topics, "during-0") {
		t.Fatalf("the isolated node knows a topic created without it: %v", topics)
	}
	c.Heal()
	want := []string{"during-0", "during-1", "during-2", "five"}
	waitFor(t, "the isolated node catching up", func() string {
		if id, got := metadata(t, ctx, c, iso); !slices.Equal(got, want) {
			return fmt.Sprintf("node %d (controller %d) has %v, want %v", iso+1, id, got, want)
		}
		return ""
	})
}

// Three nodes whose every link drops a third of the messages and delays
// the rest: metadata commands sent to any node still commit (raft
// retransmits, forwards are retried), once each, and every node ends
// with the same topics.
func TestLossyLinks(t *testing.T) {
	c := Start(t, 3)
	for a := range 3 {
		for b := a + 1; b < 3; b++ {
			c.Fault(a, b, actors.LinkFault{DropRate: 0.3, Delay: 5 * time.Millisecond})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var want []string
	for i := range 9 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i % 3)))
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("lossy-%d", i)
		res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, name)
		cl.Close()
		if err != nil {
			t.Fatalf("create %s through node %d: %v", name, i%3+1, err)
		}
		if res.Err != nil {
			t.Fatalf("create %s through node %d: %v", name, i%3+1, res.Err)
		}
		want = append(want, name)
	}
	c.Heal()
	slices.Sort(want)
	for i := range 3 {
		waitFor(t, fmt.Sprintf("node %d knowing every topic", i+1), func() string {
			if _, got := metadata(t, ctx, c, i); !slices.Equal(got, want) {
				return fmt.Sprintf("%v", got)
			}
			return ""
		})
	}
}

// With the majority of the voters unreachable, metadata changes stop,
// answered REQUEST_TIMED_OUT within the request's timeout, while produce
// and fetch to the partitions a node leads carry on; once healed, the
// quorum takes commands again.
func TestMajorityLost(t *testing.T) {
	c := Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	led := map[int]int32{} // node index: a partition it leads
	waitFor(t, "node 1 knowing every leader of kept", func() string {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("kept")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err.Error()
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.Leader < 1 {
				return fmt.Sprintf("kept-%d has no leader", p.Partition)
			}
			led[int(p.Leader)-1] = p.Partition
		}
		return ""
	})

	// Every node on its own: no majority anywhere.
	c.Isolate(0)
	c.Cut(1, 2)
	short := kadm.NewClient(cl)
	short.SetTimeoutMillis(3000)
	res, err := short.CreateTopic(ctx, 1, 1, nil, "refused")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("create without a majority: %v, want REQUEST_TIMED_OUT", err)
	}
	for node, p := range led {
		// NB: not idempotent: a new idempotent producer needs a producer
		// id, whose blocks the quorum hands out (as in Kafka).
		pc, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(node)), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "kept", Partition: p, Value: []byte("still here")}
		err = pc.ProduceSync(ctx, r).FirstErr()
		pc.Close()
		if err != nil {
			t.Fatalf("produce to kept-%d at its leader, node %d, without a majority: %v", p, node+1, err)
		}
	}

	c.Heal()
	waitFor(t, "a create once the quorum is back", func() string {
		res, err := short.CreateTopic(ctx, 1, 1, nil, "after")
		switch {
		case err != nil:
			return err.Error()
		case res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists):
			return res.Err.Error()
		}
		return ""
	})
}

// /v1/cluster on any node lists the quorum's voters as the active
// controller sees them: all three, each caught up once the cluster is
// idle.
func TestClusterListsVoters(t *testing.T) {
	c := Start(t, 3)
	type voter struct {
		ID     int32  `json:"id"`
		LogEnd uint64 `json:"log_end"`
		Lag    uint64 `json:"lag"`
	}
	var got struct {
		Quorum struct {
			Leader int32   `json:"leader"`
			Voters []voter `json:"voters"`
		} `json:"quorum"`
	}
	waitFor(t, "node 2's /v1/cluster listing three caught-up voters", func() string {
		resp, err := http.Get("http://" + c.Nodes[1].AdminAddr().String() + "/v1/cluster")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err.Error()
		}
		v := got.Quorum.Voters
		if len(v) != 3 || v[0].ID != 1 || v[1].ID != 2 || v[2].ID != 3 {
			return fmt.Sprintf("voters %+v", v)
		}
		for _, x := range v {
			if x.Lag != 0 || x.LogEnd == 0 {
				return fmt.Sprintf("voters %+v", v)
			}
		}
		return ""
	})
}
