package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	ordersTopic      = "orders"
	ordersPartitions = 30
	ordersRecords    = 3000
)

// produced is one record as its producer was told it was written.
type produced struct {
	key, value string
	offset     int64
}

// TestClusterServesClientsFromAnyNode: a client may bootstrap from any
// node. Each node describes the same cluster (brokers, active controller,
// partition leaders); a topic of replication factor 3 created through one
// node is written through a second and read back, complete and in order,
// through the third, by three different client implementations.
func TestClusterServesClientsFromAnyNode(t *testing.T) {
	c := newCluster(t)
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Node 2 forwards the CreateTopics to the active controller, whichever
	// node that is.
	adm := kadm.NewClient(c.client([]int{2}))
	created, err := adm.CreateTopics(ctx, ordersPartitions, 3, nil, ordersTopic)
	if err != nil {
		t.Fatalf("create %s through node 2: %v", ordersTopic, err)
	}
	if r := created[ordersTopic]; r.Err != nil {
		t.Fatalf("create %s through node 2: %v (%s)", ordersTopic, r.Err, r.ErrMessage)
	}

	// The create is answered once the topic is committed; the other nodes
	// learn of it as they apply the quorum's log, so each is polled until
	// it knows the topic, and only then compared.
	views := make(map[int]view)
	for i := 1; i <= numNodes; i++ {
		waitFor(t, readyTimeout, fmt.Sprintf("node %d knowing %s", i, ordersTopic), func() string {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if tv, ok := v.topics[ordersTopic]; !ok || len(tv.leaders) != ordersPartitions {
				return fmt.Sprintf("node %d's metadata: %s has %d partitions", i, ordersTopic, len(tv.leaders))
			}
			views[i] = v
			return ""
		})
	}
	want := views[1]
	if want.controller <= 0 {
		t.Errorf("node 1 names controller %d, want a node id", want.controller)
	}
	for i := 1; i <= numNodes; i++ {
		v := views[i]
		wantBrokers := map[int32]string{}
		for j := 1; j <= numNodes; j++ {
			wantBrokers[int32(j)] = c.addr(j)
		}
		if fmt.Sprint(v.brokers) != fmt.Sprint(wantBrokers) {
			t.Errorf("node %d lists brokers %v, want %v", i, v.brokers, wantBrokers)
		}
		if v.controller != want.controller {
			t.Errorf("node %d names controller %d, node 1 names %d", i, v.controller, want.controller)
		}
		tv := v.topics[ordersTopic]
		if tv.err != 0 {
			t.Errorf("node %d: %s has error code %d", i, ordersTopic, tv.err)
		}
		if tv.id != want.topics[ordersTopic].id {
			t.Errorf("node %d: %s has id %x, node 1 says %x", i, ordersTopic, tv.id, want.topics[ordersTopic].id)
		}
		if !slices.Equal(tv.leaders, want.topics[ordersTopic].leaders) {
			t.Errorf("node %d: %s's leaders by partition are %v, node 1 says %v", i, ordersTopic, tv.leaders, want.topics[ordersTopic].leaders)
		}
	}
	led := map[int32]int{}
	for _, l := range want.topics[ordersTopic].leaders {
		led[l]++
	}
	for i := 1; i <= numNodes; i++ {
		if led[int32(i)] == 0 {
			t.Errorf("node %d leads none of %s's partitions (leaders: %v)", i, ordersTopic, want.topics[ordersTopic].leaders)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	history := produceOrders(t, ctx, c)

	t.Run("sarama", func(t *testing.T) {
		checkConsumed(t, "sarama through node 3", history, consumeSarama(t, ctx, c.addr(3)))
	})
	t.Run("kcat", func(t *testing.T) {
		path, err := exec.LookPath("kcat")
		if err != nil {
			// CI installs kcat; a developer's machine may not have it.
			if os.Getenv("CI") != "" {
				t.Fatalf("kcat is required on CI: %v", err)
			}
			t.Skipf("kcat not found (%v); the kcat consumer is not checked", err)
		}
		checkConsumed(t, "kcat through node 2", history, consumeKcat(t, ctx, path, c.addr(2), history))
	})
}

// produceOrders writes ordersRecords records, keys k<i> and values v<i>,
// with an idempotent franz-go producer (acks=all, the default key-hashing
// partitioner) that knows only node 1, and returns each partition's
// records in offset order, as acknowledged.
func produceOrders(t *testing.T, ctx context.Context, c *cluster) map[int32][]produced {
	t.Helper()
	// NB: idempotence is kgo's default; it requires acks=all, also the
	// default, set here to say so.
	cl := c.client([]int{1}, kgo.DefaultProduceTopic(ordersTopic), kgo.RequiredAcks(kgo.AllISRAcks()))
	recs := make([]*kgo.Record, ordersRecords)
	for i := range recs {
		recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}
	}
	results := cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		t.Fatalf("produce through node 1: %v", err)
	}
	history := map[int32][]produced{}
	for _, r := range results {
		// NB: ProduceSync answers in the order of recs, so each partition's
		// slice is in produce order.
		history[r.Record.Partition] = append(history[r.Record.Partition], produced{string(r.Record.Key), string(r.Record.Value), r.Record.Offset})
	}
	// Records of one partition, sent in order by one idempotent producer
	// to a new topic, get the offsets 0, 1, 2, ... in the order sent.
	for p, recs := range history {
		for i, r := range recs {
			if r.offset != int64(i) {
				t.Fatalf("partition %d: the %d. record produced (%s) was acknowledged at offset %d, want %d", p, i, r.key, r.offset, i)
			}
		}
	}
	if len(history) < 2 {
		t.Fatalf("the partitioner put all %d records in %d partition(s)", ordersRecords, len(history))
	}
	return history
}

// checkConsumed compares what a consumer read, by partition in the order
// read, with what was produced: every record once, in offset order.
func checkConsumed(t *testing.T, who string, history, got map[int32][]produced) {
	t.Helper()
	for p := int32(0); p < ordersPartitions; p++ {
		want := history[p]
		g := got[p]
		if slices.Equal(g, want) {
			continue
		}
		i := 0
		for i < len(g) && i < len(want) && g[i] == want[i] {
			i++
		}
		switch {
		case i < len(g) && i < len(want):
			t.Errorf("%s: partition %d: record %d is %+v, want %+v (%d read, %d produced)", who, p, i, g[i], want[i], len(g), len(want))
		case i < len(g):
			t.Errorf("%s: partition %d: %d records read, %d produced; the first extra one: %+v", who, p, len(g), len(want), g[i])
		default:
			t.Errorf("%s: partition %d: %d records read, %d produced; the first missing one: %+v", who, p, len(g), len(want), want[i])
		}
	}
	for p := range got {
		if p < 0 || p >= ordersPartitions {
			t.Errorf("%s: %d records from partition %d, which does not exist", who, len(got[p]), p)
		}
	}
}

// consumeSarama reads every partition of orders from its oldest offset to
// its high watermark with a sarama consumer that knows only addr.
func consumeSarama(t *testing.T, ctx context.Context, addr string) map[int32][]produced {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.ClientID = "skein-cluster-tests"
	// The newest Kafka sarama knows: our ApiVersions answer brings each
	// request down to a version Skein serves.
	cfg.Version = sarama.MaxVersion
	cfg.Consumer.Return.Errors = true
	// Closing a partition consumer waits for its fetch in flight, which the
	// broker holds this long once the consumer is caught up.
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama: client of %s: %v", addr, err)
	}
	defer client.Close()
	parts, err := client.Partitions(ordersTopic)
	if err != nil {
		t.Fatalf("sarama: partitions of %s: %v", ordersTopic, err)
	}
	if len(parts) != ordersPartitions {
		t.Fatalf("sarama: %s has %d partitions, want %d", ordersTopic, len(parts), ordersPartitions)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("sarama: consumer: %v", err)
	}
	defer consumer.Close()
	// Every partition is consumed at once, each read to its high watermark
	// as it was before the first fetch.
	ends := map[int32]int64{}
	pcs := map[int32]sarama.PartitionConsumer{}
	// NB: sarama's consumer must outlive its partition consumers.
	defer func() {
		for p, pc := range pcs {
			if err := pc.Close(); err != nil {
				t.Errorf("sarama: close %s/%d: %v", ordersTopic, p, err)
			}
		}
	}()
	for _, p := range parts {
		if ends[p], err = client.GetOffset(ordersTopic, p, sarama.OffsetNewest); err != nil {
			t.Fatalf("sarama: high watermark of %s/%d: %v", ordersTopic, p, err)
		}
		pc, err := consumer.ConsumePartition(ordersTopic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama: consume %s/%d: %v", ordersTopic, p, err)
		}
		pcs[p] = pc
	}
	got := map[int32][]produced{}
	for _, p := range parts {
		pc := pcs[p]
		for next := int64(0); next < ends[p]; {
			select {
			case m := <-pc.Messages():
				got[p] = append(got[p], produced{string(m.Key), string(m.Value), m.Offset})
				next = m.Offset + 1
			case err := <-pc.Errors():
				t.Fatalf("sarama: consume %s/%d: %v", ordersTopic, p, err)
			case <-ctx.Done():
				t.Fatalf("sarama: %s/%d: %d records read of offsets [0, %d): %v", ordersTopic, p, len(got[p]), ends[p], ctx.Err())
			}
		}
	}
	return got
}

// consumeKcat reads all of orders with kcat (librdkafka) bootstrapped at
// addr, each record printed as key=value. kcat does not print partitions,
// so each record is put back in the partition it was produced to: a record
// read from another would be one of the partition's records missing, and
// an extra one in the other.
func consumeKcat(t *testing.T, ctx context.Context, kcat, addr string, history map[int32][]produced) map[int32][]produced {
	t.Helper()
	partitionOf := map[string]int32{}
	for p, recs := range history {
		for _, r := range recs {
			partitionOf[r.key] = p
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-C", "-t", ordersTopic, "-e", "-q", "-f", `%k=%s\n`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	got := map[int32][]produced{}
	next := map[int32]int64{} // offsets are not printed: the position read
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSuffix(line, "\n")
		key, value, ok := strings.Cut(line, "=")
		p, known := partitionOf[key]
		if !ok || !known {
			t.Errorf("kcat printed %q, which is no record produced", line)
			continue
		}
		got[p] = append(got[p], produced{key, value, next[p]})
		next[p]++
	}
	return got
}
