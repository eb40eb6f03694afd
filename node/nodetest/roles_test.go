//go:build !race

package nodetest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// splitRoles makes nodes 1-3 controller-only voters and nodes 4-6
// broker-only observers of them.
func splitRoles(cfg *configs.Node) {
	fastReplication(cfg)
	voters := strings.Split(cfg.ControllerQuorumVoters, ",")
	cfg.ControllerQuorumVoters = strings.Join(voters[:3], ",")
	if cfg.NodeID <= 3 {
		cfg.ProcessRoles = configs.RoleController
	} else {
		cfg.ProcessRoles = configs.RoleBroker
	}
}

// brokerIDs returns the brokers a client seeded with seed is told of.
func brokerIDs(t *testing.T, ctx context.Context, seed string) []int32 {
	t.Helper()
	cl := mustClient(t, seed)
	defer cl.Close()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(slices.Values(m.Brokers.NodeIDs()))
}

// groupConsume consumes n records of topic in group, committing as it
// goes, and returns their keys.
func groupConsume(t *testing.T, ctx context.Context, seeds []string, group, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var keys []string
	for len(keys) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s consumed %d of %d records: %v", group, len(keys), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Logf("commit: %v (retried with the next poll)", err)
		}
	}
	return keys
}

// Three controller-only nodes and three broker-only nodes: clients see
// only the brokers, partitions and coordinators live on them, a
// controller's Kafka port answers only ApiVersions and DescribeQuorum,
// and a broker and a controller stopped leave the cluster producing
// (acks=all) and consuming in a group.
func TestControllerOnlyAndBrokerOnlyNodes(t *testing.T) {
	c := Start(t, 6, splitRoles)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := []string{c.Addr(3), c.Addr(4), c.Addr(5)}

	for i := 3; i < 6; i++ {
		if got := brokerIDs(t, ctx, c.Addr(i)); !slices.Equal(got, []int32{4, 5, 6}) {
			t.Fatalf("node %d lists brokers %v, want [4 5 6]", i+1, got)
		}
	}
	// A controller's Kafka listener: ApiVersions lists the quorum's keys
	// only, and DescribeQuorum answers with the voters and the brokers
	// as observers.
	for i := 0; i < 3; i++ {
		cl := mustClient(t, c.Addr(i))
		r, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest())
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.ApiVersionsResponse)
		var keys []int16
		for _, k := range resp.ApiKeys {
			keys = append(keys, k.ApiKey)
		}
		if slices.Sort(keys); !slices.Equal(keys, []int16{17, 18, 36, 55}) {
			t.Fatalf("controller %d's ApiVersions lists %v, want [17 18 36 55]", i+1, keys)
		}
		waitFor(t, "the quorum described by a controller", func() string {
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
			req.Topics = append(req.Topics, rt)
			// Straight to the seed: a client's routing would ask the node
			// for Metadata first, which a controller does not serve.
			r, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				return err.Error()
			}
			dq := r.(*kmsg.DescribeQuorumResponse)
			if err != nil {
				return err.Error()
			}
			if len(dq.Topics) != 1 || len(dq.Topics[0].Partitions) != 1 {
				return "no partition in the answer"
			}
			p := dq.Topics[0].Partitions[0]
			var voters, observers []int32
			for _, v := range p.CurrentVoters {
				voters = append(voters, v.ReplicaID)
			}
			for _, o := range p.Observers {
				observers = append(observers, o.ReplicaID)
			}
			slices.Sort(voters)
			slices.Sort(observers)
			if !slices.Equal(voters, []int32{1, 2, 3}) || !slices.Equal(observers, []int32{4, 5, 6}) {
				return fmt.Sprintf("voters %v, observers %v", voters, observers)
			}
			return ""
		})
		cl.Close()
		// /readyz: a controller is ready once it knows the active
		// controller.
		res, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("controller %d /readyz: %d %s", i+1, res.StatusCode, body)
		}
		// The rest of the admin API answers too: the actor tree is the
		// controller alone.
		for _, path := range []string{"/healthz", "/metrics", "/v1/cluster", "/v1/actors"} {
			res, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("controller %d %s: %d %s", i+1, path, res.StatusCode, body)
			}
			if path == "/v1/actors" && (!strings.Contains(string(body), fmt.Sprintf("node/%d/controller", i+1)) || strings.Contains(string(body), "/partitions")) {
				t.Fatalf("controller %d /v1/actors: %s", i+1, body)
			}
		}
	}

	cl := mustClient(t, brokers[0])
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "split"); err != nil || r.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, r.Err)
	}
	for _, p := range describe(t, ctx, c, 3, "split") {
		if slices.ContainsFunc(p.Replicas, func(r int32) bool { return r <= 3 }) {
			t.Fatalf("partition %d is placed on %v, which names a controller-only node", p.Partition, p.Replicas)
		}
	}
	produce(t, ctx, brokers, "split", 0, 300)
	first := groupConsume(t, ctx, brokers, "g", "split", 300)
	// The group's coordinator is a broker.
	coords := adm.FindGroupCoordinators(ctx, "g")
	if co := coords["g"]; co.Err != nil || co.NodeID < 4 {
		t.Fatalf("the group's coordinator: node %d, %v", co.NodeID, co.Err)
	}

	// Stop a broker and a controller; the others go on.
	stop := func(i int) {
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		defer scancel()
		if err := c.Nodes[i].Stop(sctx); err != nil {
			t.Fatal(err)
		}
	}
	stop(3)
	stop(0)
	alive := brokers[1:]
	produce(t, ctx, alive, "split", 300, 300)
	rest := groupConsume(t, ctx, alive, "g", "split", 300)
	got := append(first, rest...)
	seen := map[string]bool{}
	for _, k := range got {
		seen[k] = true
	}
	for i := range 600 {
		if !seen[fmt.Sprintf("k%d", i)] {
			t.Fatalf("record k%d was acknowledged and never consumed", i)
		}
	}
	if ids := brokerIDs(t, ctx, alive[0]); slices.Contains(ids, 1) || slices.Contains(ids, 2) || slices.Contains(ids, 3) {
		t.Fatalf("brokers listed: %v", ids)
	}
}
