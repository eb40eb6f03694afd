package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestPlanThrottle: as kafka-reassign-partitions, a moving partition's
// current replicas are leader-throttled, its added ones follower-throttled,
// and the rate goes on every broker of either; a partition that does not
// move is left alone.
func TestPlanThrottle(t *testing.T) {
	plan := reassignmentPlan{Version: 1, Partitions: []plannedAssignment{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 4}},
		{Topic: "b", Partition: 0, Replicas: []int32{5}},
	}}
	current := map[string]map[int32][]int32{"a": {0: {1, 2}, 1: {2, 1}}, "b": {0: {5}}}
	th := planThrottle(plan, current, 100)
	want := reassignmentThrottle{
		Leader:   map[string]string{"a": "0:1,0:2,1:2,1:1"},
		Follower: map[string]string{"a": "0:3,1:4"},
		Brokers:  []int32{1, 2, 3, 4},
		Rate:     100,
	}
	if fmt.Sprint(th) != fmt.Sprint(want) {
		t.Fatalf("planThrottle = %+v, want %+v", th, want)
	}
	for _, l := range []string{th.Leader["a"], th.Follower["a"]} {
		if err := configs.ValidThrottledReplicas(l); err != nil {
			t.Errorf("%q: %v", l, err)
		}
	}
}

// TestTopicReassignThrottle: on two nodes, --plan with --throttle sets
// KIP-73's configs (each moving partition's current replicas as
// leader.replication.throttled.replicas, its new one as
// follower.replication.throttled.replicas, both rates on both brokers)
// before reassigning; --verify, once the partition is on both, says it is
// complete and removes them all.
func TestTopicReassignThrottle(t *testing.T) {
	cluster := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	c1, c2 := cluster(), cluster()
	voters := "controller.quorum.voters=1@" + c1
	// Two processes: two nodes in this one would race on gRPC's global
	// logger (each starts a protoactor remote) under -race.
	bin := filepath.Join(t.TempDir(), "skein")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/skeinlog/skein/cmd/skein").CombinedOutput(); err != nil {
		t.Fatalf("building skein: %v\n%s", err, out)
	}
	addr, _ := startNodeBinary(t, bin, "--set", voters, "--set", "cluster.listen="+c1, "--set", "cluster.advertise="+c1,
		"--set", "group.initial.rebalance.delay.ms=0")
	startNodeBinary(t, bin, "--node-id", "2", "--set", "process.roles=broker", "--set", voters,
		"--set", "cluster.listen="+c2, "--set", "cluster.advertise="+c2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A new client for each look: a client's own metadata, once it has
	// some, answers BrokerMetadata from its cache.
	brokers := func() int {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err != nil {
			return 0
		}
		return len(m.Brokers)
	}
	for brokers() != 2 {
		if ctx.Err() != nil {
			t.Fatal("node 2 never registered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ok(t, addr, "", "topic", "create", "moving", "-p", "1", "-r", "1")
	ok(t, addr, "a\nb\nc\n", "produce", "moving")
	topics, err := adm.ListTopics(ctx, "moving")
	if err != nil {
		t.Fatal(err)
	}
	from := topics["moving"].Partitions[0].Replicas[0]
	to := 3 - from
	file := filepath.Join(t.TempDir(), "plan.json")
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[%d,%d]}]}`, from, to)
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := ok(t, addr, "", "topic", "reassign", "--plan", file, "--throttle", "10000000")
	if !strings.Contains(out, "throttle limit was set to 10000000 B/s on brokers [1,2]") || !strings.Contains(out, "moving-0: reassigning to") {
		t.Fatalf("reassign --plan --throttle:\n%s", out)
	}
	topicConfig := func(key string) string {
		rc, err := adm.DescribeTopicConfigs(ctx, "moving")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rc[0].Configs {
			if e.Key == key && e.Source == kmsg.ConfigSourceDynamicTopicConfig {
				return e.MaybeValue()
			}
		}
		return ""
	}
	brokerConfig := func(b int32, key string) string {
		rc, err := adm.DescribeBrokerConfigs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rc[0].Configs {
			if e.Key == key {
				return e.MaybeValue()
			}
		}
		return ""
	}
	// Each describe is answered by a broker from its own image, which
	// may be a moment behind the controller's: wait for a change to show.
	eventually := func(what string, holds func() string) {
		t.Helper()
		for {
			wrong := holds()
			if wrong == "" {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %s", what, wrong)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	throttledReplicas := func(leader, follower string) func() string {
		return func() string {
			if l, f := topicConfig("leader.replication.throttled.replicas"), topicConfig("follower.replication.throttled.replicas"); l != leader || f != follower {
				return fmt.Sprintf("leader %q, follower %q", l, f)
			}
			return ""
		}
	}
	eventually("throttled replicas", throttledReplicas(fmt.Sprintf("0:%d", from), fmt.Sprintf("0:%d", to)))
	for _, b := range []int32{1, 2} {
		for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			eventually(fmt.Sprintf("broker %d's %s", b, k), func() string {
				if v := brokerConfig(b, k); v != "10000000" {
					return fmt.Sprintf("%q", v)
				}
				return ""
			})
		}
	}
	// --verify keeps the throttle while in progress and removes it once
	// complete.
	var v verification
	for {
		decodeJSON(t, ok(t, addr, "", "topic", "reassign", "--verify", "--plan", file, "-o", "json"), &v)
		if v.ThrottlesCleared {
			break
		}
		if v.Partitions[0].State != reassignmentInProgress || topicConfig("leader.replication.throttled.replicas") == "" {
			t.Fatalf("verify before completion: %+v", v)
		}
		if ctx.Err() != nil {
			t.Fatalf("the reassignment never completed: %+v", v)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := v.Partitions[0]; p.State != reassignmentComplete || !slices.Equal(p.Replicas, []int32{from, to}) {
		t.Fatalf("verify: %+v", v)
	}
	eventually("throttled replicas after --verify", throttledReplicas("", ""))
	for _, b := range []int32{1, 2} {
		eventually(fmt.Sprintf("broker %d's rate after --verify", b), func() string {
			if v := brokerConfig(b, "leader.replication.throttled.rate"); v != "9223372036854775807" {
				return fmt.Sprintf("%q", v)
			}
			return ""
		})
	}
	out = ok(t, addr, "", "topic", "reassign", "--verify", "--plan", file)
	if !strings.Contains(out, "Reassignment of partition moving-0 is completed.") || !strings.Contains(out, "Throttles removed") {
		t.Fatalf("verify:\n%s", out)
	}
	fails(t, addr, 2, "--throttle and --verify go with --plan FILE", "", "topic", "reassign", "--verify")
	fails(t, addr, 2, "not both", "", "topic", "reassign", "--verify", "--plan", file, "--throttle", "1")
}
