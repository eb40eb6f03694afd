package tests

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// acked is a record the broker acknowledged.
type acked struct {
	partition int32
	offset    int64
	seq       int
}

// TestPartitionPanicsWhileProducing injects panics into partition actors
// through the admin API while a franz-go producer (acks=all, idempotent:
// its defaults) produces without pause. Each panic loses the message the
// actor was handling; the partitions supervisor restarts the actor with
// backoff, and it recovers its log from disk. At the end every
// acknowledged record is in the log exactly once, at its acknowledged
// offset, and each partition holds the producer's records in the order it
// sent them; /v1/actors and /metrics count the restarts.
func TestPartitionPanicsWhileProducing(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const partitions = 3
	if _, err := b.admin().CreateTopic(ctx, partitions, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	// NB: a panic loses the Append in hand, whose request then waits for
	// its timeout before franz-go retries it: keep that short.
	p := b.client(kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(2*time.Second), kgo.ProducerLinger(time.Millisecond))

	var (
		mu     sync.Mutex
		acks   []acked
		failed []error
	)
	ackCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	stop := make(chan struct{})
	produced := make(chan int)
	go func() {
		i := 0
		defer func() { produced <- i }()
		for ; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := &kgo.Record{Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))}
			seq := i
			p.Produce(ctx, r, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, fmt.Errorf("record %d: %w", seq, err))
					return
				}
				acks = append(acks, acked{r.Partition, r.Offset, seq})
			})
		}
	}()
	// Wait until records flow, then break two of the partitions.
	eventually(t, "records acknowledged before the faults", func() bool { return ackCount() >= 300 })
	b.injectFault(`{"actor": "node/1/partitions/orders-0", "kind": "panic", "count": 3}`)
	b.injectFault(`{"actor": "node/1/partitions/orders-1", "kind": "panic", "count": 2}`)
	eventually(t, "the partition actors restarted", func() bool {
		as := b.actors()
		p0, p1 := as["node/1/partitions/orders-0"], as["node/1/partitions/orders-1"]
		return p0 != nil && p0.Restarts >= 3 && p1 != nil && p1.Restarts >= 2
	})
	// Records still flow after the restarts.
	after := ackCount()
	eventually(t, "records acknowledged after the restarts", func() bool { return ackCount() >= after+300 })
	close(stop)
	n := <-produced
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	as := b.actors()
	for _, want := range []struct {
		name     string
		restarts int64
	}{{"node/1/partitions/orders-0", 3}, {"node/1/partitions/orders-1", 2}, {"node/1/partitions/orders-2", 0}} {
		if a := as[want.name]; a == nil || a.Restarts != want.restarts {
			t.Errorf("/v1/actors: %s = %+v, want %d restarts", want.name, a, want.restarts)
		}
	}
	// /metrics counts restarts by kind of actor: the five of the partitions.
	mfs := b.metrics()
	if v, _ := metricValue(mfs, "skein_actor_restarts_total", map[string]string{"kind": "*partition.partition"}); v != 5 {
		t.Errorf("skein_actor_restarts_total{kind=*partition.partition} = %v, want 5", v)
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d records produced, %d acknowledged, %d failed", n, len(acks), len(failed))
	for _, err := range failed {
		// An idempotent producer fails records only on fatal errors, and
		// no fault here is one.
		t.Errorf("produce failed: %v", err)
	}
	logs := readAll(t, b, "orders", partitions)
	seen := map[int]bool{}
	for part, log := range logs {
		last := -1
		for off, seq := range log {
			if seen[seq] {
				t.Errorf("record %d is in the log twice (partition %d, offset %d)", seq, part, off)
			}
			seen[seq] = true
			if seq <= last {
				t.Errorf("partition %d: record %d at offset %d after record %d", part, seq, off, last)
			}
			last = seq
		}
	}
	for _, a := range acks {
		log := logs[a.partition]
		if a.offset >= int64(len(log)) || log[a.offset] != a.seq {
			t.Errorf("acknowledged record %d (partition %d, offset %d) is not in the log there", a.seq, a.partition, a.offset)
		}
	}
}

// readAll consumes topic from the start up to each partition's high
// watermark and returns each partition's record values (sequence numbers)
// by offset.
func readAll(t *testing.T, b *broker, topic string, partitions int32) map[int32][]int {
	t.Helper()
	return readSequences(t, ctxFor(t), b.addr(), topic, partitions)
}

// readSequences is readAll for a broker at addr (in this process or not):
// every record's value must be its sequence number, and offsets must run
// from 0 without a gap.
func readSequences(t *testing.T, ctx context.Context, addr, topic string, partitions int32) map[int32][]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	if len(want) != int(partitions) {
		t.Fatalf("end offsets of %d partitions, want %d: %v", len(want), partitions, ends)
	}
	logs := map[int32][]int{}
	done := func() bool {
		for p, end := range want {
			if int64(len(logs[p])) < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(logs[r.Partition])) {
				t.Fatalf("partition %d: offset %d after %d records", r.Partition, r.Offset, len(logs[r.Partition]))
			}
			seq, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatalf("partition %d offset %d: value %q", r.Partition, r.Offset, r.Value)
			}
			logs[r.Partition] = append(logs[r.Partition], seq)
		})
	}
	return logs
}

// TestControllerPanicKeepsTopics: the controller fails while creating
// topics, once just after it has answered a CreateTopics (so the topic was
// written to the metadata log and acknowledged: that happens when it
// handles the flush it sends itself behind the commands it took, which
// commits them together) and once on receiving one
// (so nothing was written and the request is answered REQUEST_TIMED_OUT
// at once, not after a timeout). After its restarts, and after a restart
// of the whole broker, every topic whose creation was acknowledged exists
// and takes records.
func TestControllerPanicKeepsTopics(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	create := func(name string) error {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, 2, 1, nil, name)
		if err != nil {
			return err
		}
		return resp.Err
	}
	for i := 0; i < 3; i++ {
		if err := create(fmt.Sprint("before-", i)); err != nil {
			t.Fatal(err)
		}
	}
	controllerRestarts := func() int64 {
		if c := b.actors()["node/1/controller"]; c != nil {
			return c.Restarts
		}
		return -1
	}

	b.injectFault(`{"actor": "node/1/controller", "kind": "panic", "message": "flush", "after": true}`)
	if err := create("during"); err != nil {
		t.Fatalf("create during: %v (the panic comes after the answer)", err)
	}
	eventually(t, "the controller restarted", func() bool { return controllerRestarts() == 1 })

	b.injectFault(`{"actor": "node/1/controller", "kind": "panic", "message": "CreateTopics"}`)
	start := time.Now()
	err := create("lost")
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("create lost: %v, want REQUEST_TIMED_OUT", err)
	}
	// Answered by the supervisor, not by the 30 s timeout. (A guard on a
	// bug, not a timing assertion: the bound is far above any latency.)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the abandoned CreateTopics took %v", d)
	}
	eventually(t, "the controller restarted again", func() bool { return controllerRestarts() == 2 })
	if err := create("lost"); err != nil {
		t.Fatalf("create lost again: %v", err)
	}

	wantTopics := []string{"before-0", "before-1", "before-2", "during", "lost"}
	check := func(when string) {
		t.Helper()
		topics, err := b.admin().ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range wantTopics {
			td, ok := topics[name]
			if !ok || td.Err != nil || len(td.Partitions) != 2 {
				t.Fatalf("%s: topic %s: %+v", when, name, td)
			}
		}
		p := b.client(kgo.DefaultProduceTopic("during"))
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(when)}).FirstErr(); err != nil {
			t.Fatalf("%s: producing to during: %v", when, err)
		}
	}
	check("after the controller's restarts")
	b.restart()
	adm = b.admin()
	check("after the broker's restart")
}
