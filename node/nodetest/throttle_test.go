//go:build !race

package nodetest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// metric returns one series of node i's metrics, by its name and labels as
// the text format writes them (skein_x{a="b"}), 0 when absent.
func metric(t *testing.T, c *Cluster, i int, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), " "); ok && name == series {
			v, _ := strconv.ParseFloat(value, 64)
			return v
		}
	}
	return 0
}

// createOn creates topic with one partition on replicas.
func createOn(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, replicas ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %v", topic, err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
}

// produceBytes writes n bytes of values to topic in 16 KiB records and
// batches of at most 64 KiB, so that a replica fetch moves at most
// replica.fetch.max.bytes.
func produceBytes(t *testing.T, ctx context.Context, seeds []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := []byte(strings.Repeat("x", 16<<10))
	var rs []*kgo.Record
	for range n / len(value) {
		rs = append(rs, &kgo.Record{Value: value})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s: %v", topic, err)
	}
}

func alterBroker(t *testing.T, ctx context.Context, adm *kadm.Client, broker int32, key string, value *string) {
	t.Helper()
	op := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: value}
	if value == nil {
		op.Op = kadm.DeleteConfig
	}
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{op}, broker)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("setting %s on broker %d: %v", key, broker, err)
	}
}

// TestReplicationThrottleKIP73 checks KIP-73's replication quotas on a
// reassignment that adds node 2 to partitions led by node 1. The rate is
// 1 byte/s, so that the bucket's one second of burst lets at most one fetch
// (replica.fetch.max.bytes, 256 KiB here, batches being 64 KiB) through
// before the quota stays exceeded for days: the pass conditions are bytes
// and counts, never times.
//
//  1. Leader side: the partition's leader.replication.throttled.replicas
//     names 0:1 and node 1's leader.replication.throttled.rate is 1. While
//     node 1 holds the partition back again and again, node 2's copy stays
//     within two fetches of its 8 MiB, and the reassignment in progress;
//     an unthrottled partition moving to node 2 alongside completes.
//  2. Follower side: the leader rate deleted, node 2's
//     follower.replication.throttled.rate of 1 (follower list 0:2) holds it
//     instead: node 2 leaves it out of fetch after fetch, and its copy
//     grows by at most two fetches more.
//  3. The rate deleted (changes apply at once, without restarts), the
//     reassignment completes with every byte.
//
// A throttle that did nothing fails steps 1 and 2: 8 MiB cross loopback
// long before the held counts grow by 20.
func TestReplicationThrottleKIP73(t *testing.T) {
	c := Start(t, 3, fastReplication, func(cfg *configs.Node) {
		cfg.ReplicaFetchMaxBytes = 256 << 10
		cfg.ReplicaFetchWaitMaxMs = 50
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := []string{c.Addr(0), c.Addr(1), c.Addr(2)}
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	createOn(t, ctx, cl, "throttled", 1)
	createOn(t, ctx, cl, "free", 1)
	const total = 8 << 20
	produceBytes(t, ctx, seeds, "throttled", total)
	produceBytes(t, ctx, seeds, "free", 2<<20)

	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr("0:1")},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr("0:2")},
	}, "throttled")
	if err != nil || res[0].Err != nil {
		t.Fatalf("setting the throttled replicas: %v %+v", err, res)
	}
	alterBroker(t, ctx, adm, 1, "leader.replication.throttled.rate", kadm.StringPtr("1"))
	// Every node's image has the configs before the reassignment, which
	// the controller commits after them.
	for i := range 3 {
		waitFor(t, fmt.Sprintf("node %d's image having the throttle", i+1), func() string {
			rc, err := kadm.NewClient(mustClient(t, c.Addr(i))).DescribeBrokerConfigs(ctx, 1)
			if err != nil {
				return err.Error()
			}
			v, err := rc.On("1", nil)
			if err == nil {
				for _, e := range v.Configs {
					if e.Key == "leader.replication.throttled.rate" && e.MaybeValue() == "1" {
						return ""
					}
				}
			}
			return fmt.Sprintf("%v", err)
		})
	}

	size := func(i int, topic string) float64 {
		return metric(t, c, i, fmt.Sprintf(`skein_partition_log_size_bytes{partition="0",topic="%s"}`, topic))
	}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("throttled", 0, []int32{1, 2})
	move.Assign("free", 0, []int32{1, 2})
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res["throttled"][0].Err != nil || res["free"][0].Err != nil {
		t.Fatalf("reassign: %v %+v", err, res)
	}

	// 1. The leader holds the partition back.
	waitFor(t, "the unthrottled partition joining node 2", func() string {
		if p := describe(t, ctx, c, 0, "free")[0]; len(p.ISR) != 2 || size(1, "free") != size(0, "free") {
			return fmt.Sprintf("ISR %v, %v of %v bytes", p.ISR, size(1, "free"), size(0, "free"))
		}
		return ""
	})
	held := func(i int, side string) float64 {
		return metric(t, c, i, `skein_replication_throttled_partitions_total{side="`+side+`"}`)
	}
	stuck := func(i int, side string, atMost float64) {
		t.Helper()
		from := held(i, side)
		waitFor(t, "node "+strconv.Itoa(i+1)+" holding the partition back 20 times", func() string {
			if got := size(1, "throttled"); got > atMost {
				t.Fatalf("node 2 has %v bytes of the throttled partition, more than %v", got, atMost)
			}
			if n := held(i, side) - from; n < 20 {
				return fmt.Sprintf("held %v times", n)
			}
			return ""
		})
		if got := size(1, "throttled"); got > atMost || got >= total {
			t.Fatalf("node 2 has %v bytes of the throttled partition, more than %v", got, atMost)
		}
		if l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"throttled": {0: {}}}); err != nil || len(l["throttled"]) != 1 {
			t.Fatalf("the throttled reassignment is not in progress: %v %+v", err, l)
		}
	}
	const fetch = 256 << 10
	stuck(0, "leader", 2*fetch)
	if got := metric(t, c, 0, `skein_replication_throttled_bytes_total{side="leader"}`); got <= 0 || got > 2*fetch {
		t.Errorf("node 1 counted %v throttled bytes, want some, and at most two fetches'", got)
	}

	// 2. The follower holds it back.
	before := size(1, "throttled")
	alterBroker(t, ctx, adm, 2, "follower.replication.throttled.rate", kadm.StringPtr("1"))
	alterBroker(t, ctx, adm, 1, "leader.replication.throttled.rate", nil)
	stuck(1, "follower", before+2*fetch)
	if got := metric(t, c, 1, `skein_replication_throttled_bytes_total{side="follower"}`); got <= 0 {
		t.Errorf("node 2 counted %v throttled bytes, want some", got)
	}

	// 3. Unthrottled, it completes.
	alterBroker(t, ctx, adm, 2, "follower.replication.throttled.rate", nil)
	waitFor(t, "the throttled partition joining node 2 once unthrottled", func() string {
		p := describe(t, ctx, c, 0, "throttled")[0]
		if !slices.Equal(p.Replicas, []int32{1, 2}) || len(p.ISR) != 2 || size(1, "throttled") != size(0, "throttled") {
			return fmt.Sprintf("replicas %v, ISR %v, %v of %v bytes", p.Replicas, p.ISR, size(1, "throttled"), size(0, "throttled"))
		}
		return ""
	})
}

// mustClient returns a client of the one node at addr, closed at the end
// of the test.
func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
