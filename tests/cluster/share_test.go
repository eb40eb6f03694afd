package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/history"
)

// Share groups (KIP-932, issue 29) under process and actor faults.
//
// Addresses: TestShareGroupUnderFaults runs on 127.0.8.11-13.

// shareFlags are replicationFlags with fewer partitions of the internal
// topics than Kafka's 50 each: a kill moves every leadership of the node,
// and the two-core CI machine runs the nodes under -race.
var shareFlags = append(slices.Clone(replicationFlags),
	"--set", "offsets.topic.num.partitions=6", "--set", "share.coordinator.state.topic.num.partitions=6")

const (
	// shareConsumers is how many share consumers the group has.
	shareConsumers = 4
	// shareLimit is share.delivery.count.limit, Kafka's default.
	shareLimit = 5
	// shareRate is how many records a second the producer sends.
	shareRate = 150
	// shareProgress is how many more accepts the broker must confirm
	// after each fault before the next.
	shareProgress = 150
)

// TestShareGroupUnderFaults: a share group of four franz-go share
// consumers reads a topic of three partitions (replication factor 3,
// min.insync.replicas 2) that an idempotent acks=all producer writes
// uniquely keyed records to throughout, the group's
// share.auto.offset.reset earliest and its record locks as short as
// allowed (15 s). The consumers accept most records, release some on
// their first delivery and reject a few, by key. Meanwhile share-partition
// actors (node/*/shares/*) and share coordinators (node/*/sharestate/*)
// panic, before and after handling a message, and the leader of a
// partition is killed with SIGKILL and restarted. Then the group drains
// everything: the share-partition start offsets reach the logs' ends.
//
// The history of produces, deliveries (with the broker's delivery counts)
// and acknowledgements (with the broker's verdicts, from
// kgo.ShareAckCallback) must then hold (history.CheckShare): every
// acknowledged record delivered and settled, accepted exactly once (as
// the broker confirmed) or rejected; nothing delivered after a confirmed
// accept or reject; no delivery count above the limit.
func TestShareGroupUnderFaults(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.8.1%d", i) }, flags: shareFlags})
	begin := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs: %s", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic, group, partitions = "shared", "sharers", 3
	createReplicated(t, ctx, c, topic, partitions)
	c.inSync(t, ctx, topic)
	c.setGroupConfigs(t, ctx, group, map[string]string{
		"share.auto.offset.reset":       "earliest",
		"share.record.lock.duration.ms": "15000",
	})
	logf("topic %s in sync; group %s configured on every node", topic, group)

	h := history.NewShare(shareLimit)
	stopProduce := startShareProducer(t, c, topic, h)
	defer stopProduce() // on a failure; stopping twice is harmless
	var confirmed atomic.Int64
	tally := &shareTally{m: map[string]int{}}
	consumers := make([]*shareReader, shareConsumers)
	for i := range consumers {
		// The last reader holds its first records past their locks.
		consumers[i] = startShareReader(t, c, fmt.Sprintf("c%d", i), topic, group, h, tally, i == shareConsumers-1, &confirmed)
	}
	defer func() {
		for _, r := range consumers {
			r.stop()
		}
	}()
	progress := func(what string) {
		t.Helper()
		want := confirmed.Load() + shareProgress
		waitFor(t, 90*time.Second, fmt.Sprintf("%d accepts confirmed (%s)", want, what), func() string {
			if n := confirmed.Load(); n < want {
				return fmt.Sprintf("%d confirmed", n)
			}
			return ""
		})
		logf("%s: %d accepts confirmed", what, confirmed.Load())
	}
	progress("before the faults")
	// One reader holds records past their locks, without a fault: they
	// go to the others, and its late acknowledgements must not count.
	<-consumers[shareConsumers-1].stalled
	progress("a reader's locks expired")

	panicAll := func(pattern string, after bool) {
		t.Helper()
		for i := 1; i <= numNodes; i++ {
			if c.nodes[i].running() {
				c.injectFault(t, i, fmt.Sprintf(`{"actor": %q, "kind": "panic", "count": 2, "after": %v, "for": "20s"}`,
					fmt.Sprintf(pattern, i), after))
			}
		}
	}
	panicAll("node/%d/shares/*", false)
	progress("share-partition actors panicked")
	panicAll("node/%d/sharestate/*", false)
	progress("share coordinators panicked")

	victim := c.leaderOf(t, ctx, topic, 0)
	logf("killing node %d, the leader of %s-0", victim, topic)
	c.kill(victim)
	if next := c.leaderOf(t, ctx, topic, 0); next == victim {
		t.Fatalf("node %d is down but still leads %s-0", victim, topic)
	}
	progress(fmt.Sprintf("node %d down", victim))
	c.start(victim)
	c.waitReady(victim)
	logf("node %d is back", victim)
	progress(fmt.Sprintf("node %d back", victim))

	panicAll("node/%d/shares/*", true)
	progress("share-partition actors panicked after a message")
	panicAll("node/%d/sharestate/*", true)
	progress("share coordinators panicked after a message")

	stopProduce()
	logf("producer stopped")

	// Drained: every share-partition's start offset at its log's end, as
	// the share coordinator holds it, so nothing is in flight or left.
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	waitFor(t, 2*time.Minute, "the group draining every partition", func() string {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err.Error()
		}
		described, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return err.Error()
		}
		d := described[group]
		if d.Err != nil {
			return d.Err.Error()
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			so, ok := d.Offsets.Lookup(topic, o.Partition)
			switch {
			case o.Err != nil:
				behind = append(behind, fmt.Sprintf("%d: end: %v", o.Partition, o.Err))
			case !ok || so.Err != nil:
				behind = append(behind, fmt.Sprintf("%d: start offset: %v", o.Partition, so.Err))
			case so.StartOffset != o.Offset:
				behind = append(behind, fmt.Sprintf("%d: start %d, end %d", o.Partition, so.StartOffset, o.Offset))
			}
		})
		return strings.Join(behind, "; ")
	})
	logf("drained")
	for _, r := range consumers {
		r.stop()
	}

	v := h.CheckShare()
	logf("history: %v", v)
	for _, u := range v.Unsettled {
		t.Logf("unsettled: %s", u)
	}
	restarted := map[string]float64{}
	for i := 1; i <= numNodes; i++ {
		for k, n := range c.restarts(t, i) {
			if k == kindSharePartition || k == kindShareState {
				restarted[k] += n
			}
		}
	}
	logf("restarts after injected panics: %v (the killed node's before its kill are not counted)", restarted)
	if !v.OK() {
		t.Fatalf("history: %v", v)
	}
	if v.Accepted == 0 || v.Rejected == 0 || v.Confirmed[history.Release] == 0 || v.ArchivedAtLimit == 0 || v.MaxDeliveryCount != shareLimit {
		t.Errorf("the workload did not accept, reject, release, and release to the delivery count limit: %v", v)
	}
	for _, k := range []string{kindSharePartition, kindShareState} {
		if restarted[k] == 0 {
			t.Errorf("no %s actor was restarted after an injected panic", k)
		}
	}
}

// injectFault sets a fault on node i through the admin API; body is
// the fault as JSON.
func (c *cluster) injectFault(t *testing.T, i int, body string) {
	t.Helper()
	resp, err := httpClient.Post(c.adminURL(i)+"/v1/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("node %d: POST /v1/faults: %v", i, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("node %d: POST /v1/faults %s: %s", i, body, resp.Status)
	}
}

// setGroupConfigs sets a group's configs with IncrementalAlterConfigs on
// the GROUP resource, then waits until every node describes them: each
// node applies them from its own metadata image, and a share-partition
// first used on a node that has not yet would start where the defaults
// say.
func (c *cluster) setGroupConfigs(t *testing.T, ctx context.Context, group string, kvs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range kvs {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, cfg)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, c.client([]int{1, 2, 3}))
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("IncrementalAlterConfigs %s: %v (%v)", group, err, strOr(r.ErrorMessage))
		}
	}
	for i := 1; i <= numNodes; i++ {
		waitFor(t, readyTimeout, fmt.Sprintf("node %d describing group %s's configs %v", i, group, kvs), func() string {
			dreq := kmsg.NewPtrDescribeConfigsRequest()
			dres := kmsg.NewDescribeConfigsRequestResource()
			dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
			dreq.Resources = append(dreq.Resources, dres)
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			kresp, err := c.seeds[i].SeedBrokers()[0].Request(rctx, dreq)
			if err != nil {
				return err.Error()
			}
			got := map[string]string{}
			for _, r := range kresp.(*kmsg.DescribeConfigsResponse).Resources {
				if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
					return err.Error()
				}
				for _, cv := range r.Configs {
					got[cv.Name] = strOr(cv.Value)
				}
			}
			for k, v := range kvs {
				if got[k] != v {
					return fmt.Sprintf("%s=%q", k, got[k])
				}
			}
			return ""
		})
	}
}

func strOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// startShareProducer starts an idempotent acks=all producer sending
// uniquely keyed records (k<n>, the value the key) to topic at shareRate
// a second, each recorded in h with its outcome, and returns the function
// that stops it and waits until every send has one.
func startShareProducer(t *testing.T, c *cluster, topic string, h *history.Share) func() {
	cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(500), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / shareRate)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				if err := cl.Flush(ctx); err != nil {
					t.Errorf("producer: flushing: %v", err)
				}
				cancel()
				return
			case <-tick.C:
			}
			key := fmt.Sprintf("k%07d", n)
			h.Sent(key)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(key)}, func(r *kgo.Record, err error) {
				if err != nil {
					h.ProduceFailed(key, err)
					return
				}
				h.Produced(key, history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset)
			})
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
		})
	}
}

// shareAckOf is what a share consumer does with a delivery of key: it
// releases one key in ten on its first delivery, and one in a hundred on
// every delivery (archived at the delivery count limit), rejects one in
// fifty, and accepts the rest.
func shareAckOf(key string, count int32) history.Ack {
	n, _ := strconv.Atoi(strings.TrimPrefix(key, "k"))
	switch {
	case n%50 == 7:
		return history.Reject
	case n%10 == 3 && count == 1, n%100 == 11:
		return history.Release
	}
	return history.Accept
}

// shareReader is one share consumer of the group, polling, recording
// each delivery, acknowledging it as shareAckOf says and recording the
// broker's verdict on each acknowledgement.
type shareReader struct {
	name  string
	cl    *kgo.Client
	h     *history.Share
	tally *shareTally
	// stall, if set, makes the reader hold its first records without
	// acknowledging them until their locks have expired and each has
	// been delivered again, then acknowledge them; stalled is closed
	// then.
	stall   bool
	stalled chan struct{}

	mu      sync.Mutex
	results []kgo.ShareAckResult // the ShareAckCallback's since the last take

	quit, done chan struct{}
	once       sync.Once
}

func startShareReader(t *testing.T, c *cluster, name, topic, group string, h *history.Share, tally *shareTally, stall bool, confirmed *atomic.Int64) *shareReader {
	r := &shareReader{name: name, h: h, tally: tally, stall: stall, stalled: make(chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{})}
	if !stall {
		close(r.stalled)
	}
	r.cl = c.client([]int{1, 2, 3}, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(name),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			r.mu.Lock()
			r.results = append(r.results, rs...)
			r.mu.Unlock()
		}))
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.quit:
				return
			default:
			}
			r.round(t, confirmed)
		}
	}()
	return r
}

// pendingAck is an acknowledgement sent and its verdict awaited.
type pendingAck struct {
	key       string
	partition int32
	count     int
	ack       history.Ack
}

// round polls once, acknowledges what it got, flushes the
// acknowledgements and records their verdicts.
func (r *shareReader) round(t *testing.T, confirmed *atomic.Int64) {
	if r.stall && confirmed.Load() < 100 {
		// A staller polls once the group is busy, so that it holds
		// records of every partition.
		time.Sleep(50 * time.Millisecond)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	fs := r.cl.PollRecords(ctx, 200)
	cancel()
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("%s: fetching %s-%d: %v", r.name, topic, p, err)
		}
	})
	r.take() // NB: acknowledgements of earlier rounds are all flushed
	var pend []pendingAck
	fs.EachRecord(func(rec *kgo.Record) {
		key, count := string(rec.Key), rec.DeliveryCount()
		r.h.Delivered(key, r.name, history.TP{Topic: rec.Topic, Partition: rec.Partition}, rec.Offset, int(count))
		r.tally.delivered(key, int(count))
		pend = append(pend, pendingAck{key, rec.Partition, int(count), shareAckOf(key, count)})
	})
	if len(pend) == 0 {
		return
	}
	if r.stall {
		r.stall = false
		r.holdPastLocks(t, pend)
	}
	// NB: every record is acknowledged after all were recorded, so
	// that a stalled reader's are acknowledged only after the wait.
	for _, rec := range fs.Records() {
		rec.Ack(kgo.AckStatus(shareAckOf(string(rec.Key), rec.DeliveryCount())))
	}
	// NB: bounded past a lock's duration: acknowledgements not answered
	// by then are of unknown outcome, and the test's time stays modest.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	flushErr := r.cl.FlushAcks(ctx)
	cancel()
	// A partition's acknowledgements may go in more than one request:
	// they count as confirmed only if every answer for the partition
	// since they were marked is.
	verdict := map[int32]error{}
	for _, res := range r.take() {
		if prev, ok := verdict[res.Partition]; !ok || prev == nil {
			verdict[res.Partition] = res.Err
		}
	}
	for _, p := range pend {
		err, ok := verdict[p.partition]
		switch {
		case flushErr != nil:
			err = fmt.Errorf("flush: %w", flushErr)
		case !ok:
			err = errors.New("no verdict")
		}
		r.h.Acked(p.key, r.name, p.count, p.ack, shortErr(err))
		if err == nil && p.ack == history.Accept {
			confirmed.Add(1)
		}
	}
}

// shortErr names a Kafka error by its code's name only, for a readable
// tally.
func shortErr(err error) error {
	var ke *kerr.Error
	if err != nil && errors.As(err, &ke) {
		return errors.New(ke.Message)
	}
	return err
}

// holdPastLocks waits, its records unacknowledged, until each has been
// delivered again (to any reader) with a greater count: its lock expired
// and the broker gave it to another. The acknowledgements the reader
// sends after must not be confirmed for a record another has since
// settled.
func (r *shareReader) holdPastLocks(t *testing.T, pend []pendingAck) {
	defer close(r.stalled)
	start := time.Now()
	// NB: on the reader's goroutine, which may not end the test.
	last := poll(2*time.Minute, func() string {
		left := 0
		for _, p := range pend {
			if r.tally.maxCount(p.key) <= p.count {
				left++
			}
		}
		if left > 0 {
			return fmt.Sprintf("%d not yet", left)
		}
		return ""
	})
	if last != "" {
		t.Errorf("%s's %d records delivered again after their locks expired: not within 2m; last: %s", r.name, len(pend), last)
		return
	}
	t.Logf("%s held %d records %v: every one was delivered again", r.name, len(pend), time.Since(start).Round(time.Millisecond))
}

// shareTally is the greatest delivery count of each key any reader was
// given so far.
type shareTally struct {
	mu sync.Mutex
	m  map[string]int
}

func (y *shareTally) delivered(key string, count int) {
	y.mu.Lock()
	y.m[key] = max(y.m[key], count)
	y.mu.Unlock()
}

func (y *shareTally) maxCount(key string) int {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.m[key]
}

// take returns the callback's results since the last take.
func (r *shareReader) take() []kgo.ShareAckResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.results
	r.results = nil
	return rs
}

// stop ends the reader's rounds, its last acknowledgements flushed and
// recorded (the test's cleanup closes its client); stopping twice is
// harmless.
func (r *shareReader) stop() {
	r.once.Do(func() {
		close(r.quit)
		<-r.done
	})
}
