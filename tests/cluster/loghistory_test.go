package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The log history checker: producers record what they sent and what each
// send came to (acknowledged at an offset, or failed, which may or may not
// have written it); the partitions are read back to their ends; check
// decides from both what was lost, duplicated, reordered or invented. It
// never trusts a count: every acknowledged record must be read back at the
// offset its acknowledgement gave.

// sent is one record a producer sent: value names it uniquely
// (w<worker>-<seq>), and its outcome.
type sent struct {
	value     string
	worker    int
	seq       int
	acked     bool
	partition int32
	offset    int64
	err       error
}

// produceHistory is what every producer of a test sent, safe for concurrent
// use.
type produceHistory struct {
	mu   sync.Mutex
	sent map[string]*sent
}

func newProduceHistory() *produceHistory { return &produceHistory{sent: map[string]*sent{}} }

// send records that a worker is about to send its seq-th record, and
// returns its value.
func (h *produceHistory) send(worker, seq int) string {
	v := fmt.Sprintf("w%d-%07d", worker, seq)
	h.mu.Lock()
	h.sent[v] = &sent{value: v, worker: worker, seq: seq}
	h.mu.Unlock()
	return v
}

// done records a send's outcome, from a produce promise.
func (h *produceHistory) done(r *kgo.Record, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sent[string(r.Value)]
	if err != nil {
		s.err = err
		return
	}
	s.acked, s.partition, s.offset = true, r.Partition, r.Offset
}

func (h *produceHistory) acked() (n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.sent {
		if s.acked {
			n++
		}
	}
	return n
}

// read is one record read back: where, and its value.
type read struct {
	offset int64
	value  string
}

// verdict is what check found; every list empty means the history holds.
type verdict struct {
	acked, failed, read int
	lost                []string       // acknowledged, not read at its offset
	duplicated          []string       // read more than once
	invented            []string       // read, never sent
	reordered           []string       // one worker's records out of send order in a partition
	errors              map[string]int // the failed sends' errors, by message
}

func (v verdict) ok() bool {
	return len(v.lost)+len(v.duplicated)+len(v.invented)+len(v.reordered) == 0
}

func (v verdict) String() string {
	short := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], ", ") + fmt.Sprintf(" and %d more", len(s)-5)
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%d acknowledged, %d failed %v, %d read; lost %d [%s], duplicated %d [%s], invented %d [%s], reordered %d [%s]",
		v.acked, v.failed, v.errors, v.read, len(v.lost), short(v.lost), len(v.duplicated), short(v.duplicated),
		len(v.invented), short(v.invented), len(v.reordered), short(v.reordered))
}

// check compares the history with what the partitions hold (by partition,
// in offset order).
func (h *produceHistory) check(got map[int32][]read) verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := verdict{errors: map[string]int{}}
	at := map[string][]string{} // value: "p@offset" of each read
	for p, rs := range got {
		last := map[int]int{} // worker: last seq read in this partition
		for _, r := range rs {
			v.read++
			at[r.value] = append(at[r.value], fmt.Sprintf("%d@%d", p, r.offset))
			s := h.sent[r.value]
			if s == nil {
				v.invented = append(v.invented, fmt.Sprintf("%s at %d@%d", r.value, p, r.offset))
				continue
			}
			if prev, ok := last[s.worker]; ok && s.seq < prev {
				v.reordered = append(v.reordered, fmt.Sprintf("%s at %d@%d after w%d-%07d", r.value, p, r.offset, s.worker, prev))
			}
			last[s.worker] = max(last[s.worker], s.seq)
		}
	}
	for val, where := range at {
		if len(where) > 1 {
			v.duplicated = append(v.duplicated, fmt.Sprintf("%s at %v", val, where))
		}
	}
	for _, s := range h.sent {
		switch {
		case s.acked:
			v.acked++
			if want := fmt.Sprintf("%d@%d", s.partition, s.offset); !slices.Contains(at[s.value], want) {
				v.lost = append(v.lost, fmt.Sprintf("%s acknowledged at %s, read at %v", s.value, want, at[s.value]))
			}
		case s.err != nil:
			v.failed++
			v.errors[s.err.Error()]++
		}
	}
	for _, l := range [][]string{v.lost, v.duplicated, v.invented, v.reordered} {
		sort.Strings(l)
	}
	return v
}

// produceLoad runs workers idempotent acks=all producers, each sending
// its records one after another in flight, until stop closes; it returns
// once every send has an outcome.
func produceLoad(t *testing.T, c *cluster, topic string, workers int, h *produceHistory, stop <-chan struct{}) {
	t.Helper()
	var wg sync.WaitGroup
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
				v := h.send(w, seq)
				// NB: Produce blocks while MaxBufferedRecords are in
				// flight, which paces the worker.
				cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(seq % 64)), Value: []byte(v)}, h.done)
			}
		}()
	}
	wg.Wait()
}

// startLoad starts produceLoad's workers on topic and returns the
// history they write and the function that stops them and waits until
// every send has an outcome.
func startLoad(t *testing.T, c *cluster, topic string, workers int) (*produceHistory, func()) {
	h := newProduceHistory()
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
// watermark through the given nodes; a read that had to move back (the
// log lost records a consumer had read) fails the test.
func readBack(t *testing.T, ctx context.Context, c *cluster, nodes []int, topic string) map[int32][]read {
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
	got := map[int32][]read{}
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
			got[r.Partition] = append(got[r.Partition], read{r.Offset, string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

// TestHistoryCheckerFindsFaults: the checker itself catches each kind of
// fault it exists for.
func TestHistoryCheckerFindsFaults(t *testing.T) {
	h := newProduceHistory()
	for seq := range 4 {
		v := h.send(1, seq)
		h.done(&kgo.Record{Value: []byte(v), Partition: 0, Offset: int64(seq)}, nil)
	}
	good := map[int32][]read{0: {{0, "w1-0000000"}, {1, "w1-0000001"}, {2, "w1-0000002"}, {3, "w1-0000003"}}}
	if v := h.check(good); !v.ok() || v.acked != 4 || v.read != 4 {
		t.Fatalf("a faithful log: %v", v)
	}
	for name, got := range map[string]map[int32][]read{
		"lost":       {0: {{0, "w1-0000000"}, {1, "w1-0000001"}, {2, "w1-0000002"}}},
		"moved":      {0: {{0, "w1-0000000"}, {1, "w1-0000001"}, {2, "w1-0000003"}, {3, "w1-0000002"}}},
		"duplicated": {0: {{0, "w1-0000000"}, {1, "w1-0000001"}, {2, "w1-0000002"}, {3, "w1-0000003"}, {4, "w1-0000003"}}},
		"invented":   {0: {{0, "w1-0000000"}, {1, "w1-0000001"}, {2, "w1-0000002"}, {3, "w1-0000003"}, {4, "w9-0000000"}}},
	} {
		if v := h.check(got); v.ok() {
			t.Errorf("%s: the checker found nothing wrong: %v", name, v)
		}
	}
}

// produceN sends n records from worker through cl, each recorded in h
// with its outcome, and returns once every one has one.
func produceN(t *testing.T, cl *kgo.Client, h *produceHistory, worker, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for seq := range n {
		v := h.send(worker, seq)
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(seq % 64)), Value: []byte(v)}, func(r *kgo.Record, err error) {
			h.done(r, err)
			wg.Done()
		})
	}
	wg.Wait()
}
