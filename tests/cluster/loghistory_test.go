package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// The load and the read-back of the log history checker (package
// history): producers record what they sent and what each send came to,
// readBack reads the partitions back to their ends into the same history,
// and its Check decides what was lost, duplicated, reordered or invented.

// recordOutcome returns a produce promise that records the send's outcome in h.
func recordOutcome(h *history.History) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		if err != nil {
			h.Failed(string(r.Value), err)
			return
		}
		h.Acked(string(r.Value), history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset)
	}
}

// produceLoad runs workers idempotent acks=all producers, each sending
// its records one after another in flight, until stop closes; it returns
// once every send has an outcome.
func produceLoad(t *testing.T, c *cluster, topic string, workers int, h *history.History, stop <-chan struct{}) {
	t.Helper()
	var wg sync.WaitGroup
	done := recordOutcome(h)
	for w := range workers {
		cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(200))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					if err := cl.Flush(ctx); err != nil {
						t.Errorf("worker %d: flushing: %v", w, err)
					}
					cancel()
					return
				default:
				}
				v := h.Send(w, seq)
				// NB: Produce blocks while MaxBufferedRecords are in
				// flight, which paces the worker.
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(seq % 64)), Value: []byte(v)}, done)
			}
		}()
	}
	wg.Wait()
}

// startLoad starts produceLoad's workers on topic and returns the
// history they write and the function that stops them and waits until
// every send has an outcome.
func startLoad(t *testing.T, c *cluster, topic string, workers int) (*history.History, func()) {
	h := history.New()
	stop, loaded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(loaded)
		produceLoad(t, c, topic, workers, h, stop)
	}()
	return h, func() {
		close(stop)
		<-loaded
	}
}

// readBack reads every partition of topic from its start to its high
// watermark through the given nodes into h, and returns the values read;
// a read that had to move back (the log lost records a consumer had read)
// fails the test.
func readBack(t *testing.T, ctx context.Context, c *cluster, nodes []int, topic string, h *history.History) []string {
	t.Helper()
	adm := kadm.NewClient(c.client(nodes))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", topic, o.Partition, o.Err)
		}
		want[o.Partition] = o.Offset
	})
	cl := c.client(nodes, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: %v (at %v of %v)", topic, ctx.Err(), next, want)
		}
		fs.EachError(func(_ string, p int32, err error) {
			// A consumer reads below the high watermark only, which never
			// moves back: records it read and then lost (kgo saw the log
			// end below its position) were acknowledged and are gone.
			var loss *kgo.ErrDataLoss
			if errors.As(err, &loss) {
				t.Errorf("reading %s-%d: records read were lost since: %v", topic, p, err)
				return
			}
			t.Logf("reading %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			h.Read(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
			got = append(got, string(r.Value))
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

// produceN sends n records from worker through cl, each recorded in h
// with its outcome, and returns once every one has one.
func produceN(t *testing.T, cl *kgo.Client, h *history.History, worker, n int) {
	t.Helper()
	var wg sync.WaitGroup
	done := recordOutcome(h)
	for seq := range n {
		v := h.Send(worker, seq)
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(seq % 64)), Value: []byte(v)}, func(r *kgo.Record, err error) {
			done(r, err)
			wg.Done()
		})
	}
	wg.Wait()
}
