package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/history"
)

// The workload's topics and group.
const (
	plainTopic = "chaos"
	txnTopic   = "chaos-txn"
	groupName  = "chaos-group"
)

// workload is what a run does to the cluster while faults happen:
// idempotent acks=all producers on plainTopic, a consumer group reading
// it, and a transactional producer on txnTopic, each recording into the
// history what it sent, what was acknowledged and what it read.
type workload struct {
	seeds []string
	h     *history.History
	rate  int // records a second, all producers together
	log   func(format string, args ...any)

	stop    chan struct{}
	wg      sync.WaitGroup
	members sync.WaitGroup
	groupMu sync.Mutex
	group   []*kgo.Client // the group's members, the last joined last
}

func (w *workload) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.seeds...), kgo.DialTimeout(2 * time.Second),
		kgo.RetryTimeout(30 * time.Second)}, opts...)...)
}

// createTopics creates the workload's topics, replicated on up to three
// nodes with min.insync.replicas 2 when there are three.
func (w *workload) createTopics(ctx context.Context, partitions int32, nodes int) error {
	cl, err := w.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rf := int16(min(3, nodes))
	minISR := strconv.Itoa(int(max(1, rf-1)))
	for _, topic := range []string{plainTopic, txnTopic} {
		res, err := adm.CreateTopic(ctx, partitions, rf, map[string]*string{"min.insync.replicas": &minISR}, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating %s: %w", topic, err)
		}
		// The group reads a topic it finds new from its start: a group
		// that delivers nothing leaves every record unseen, rather than
		// nothing checked.
		if err == nil && topic == plainTopic {
			for p := range partitions {
				w.h.ExpectConsumedFrom(history.TP{Topic: topic, Partition: p}, 0)
			}
		}
	}
	return nil
}

// start starts producers plain producers, the group's first members and
// the transactional producer.
func (w *workload) start(producers, members int) error {
	w.stop = make(chan struct{})
	for p := range producers {
		cl, err := w.client(kgo.DefaultProduceTopic(plainTopic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1000),
			kgo.RecordDeliveryTimeout(45*time.Second))
		if err != nil {
			return err
		}
		w.wg.Add(1)
		go w.produce(cl, p, max(1, w.rate/producers))
	}
	for range members {
		if err := w.join(); err != nil {
			return err
		}
	}
	w.wg.Add(1)
	go w.transact(0)
	return nil
}

// record is the produce callback: it records a send's outcome.
func (w *workload) record(r *kgo.Record, err error) {
	if err != nil {
		w.h.Failed(string(r.Value), err)
		return
	}
	w.h.Acked(string(r.Value), history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset)
}

// produce sends worker's records at rate a second until stop, then waits
// until each has an outcome.
func (w *workload) produce(cl *kgo.Client, worker, rate int) {
	defer w.wg.Done()
	defer cl.Close()
	// Batches of up to ten records each tick keep the rate without a
	// timer per record.
	per := max(1, rate/100)
	tick := time.NewTicker(time.Second * time.Duration(per) / time.Duration(rate))
	defer tick.Stop()
	for seq := 0; ; {
		select {
		case <-w.stop:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := cl.Flush(ctx); err != nil {
				w.log("producer %d: flushing at the end: %v (its unacknowledged records count as failed)", worker, err)
			}
			cancel()
			return
		case <-tick.C:
		}
		for range per {
			v := w.h.Send(worker, seq)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(seq % 64)), Value: []byte(v)}, w.record)
			seq++
		}
	}
}

// join adds a member to the consumer group.
func (w *workload) join() error {
	cl, err := w.client(kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(plainTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(time.Second),
		kgo.SessionTimeout(10*time.Second), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.AutoCommitCallback(w.committed))
	if err != nil {
		return err
	}
	w.groupMu.Lock()
	w.group = append(w.group, cl)
	w.groupMu.Unlock()
	w.members.Add(1)
	go func() {
		defer w.members.Done()
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				w.h.Consumed(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
			})
		}
	}()
	return nil
}

// committed records the offsets a commit of the group wrote: they must
// never go back.
func (w *workload) committed(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil {
		return
	}
	asked := map[history.TP]int64{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			asked[history.TP{Topic: t.Topic, Partition: p.Partition}] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := history.TP{Topic: t.Topic, Partition: p.Partition}
			if off, ok := asked[tp]; ok && p.ErrorCode == 0 {
				w.h.Committed(tp, off)
			}
		}
	}
}

// leave closes the member that joined last, if there is more than one:
// its partitions go to the others (its offsets committed as it leaves).
func (w *workload) leave() bool {
	w.groupMu.Lock()
	if len(w.group) < 2 {
		w.groupMu.Unlock()
		return false
	}
	cl := w.group[len(w.group)-1]
	w.group = w.group[:len(w.group)-1]
	w.groupMu.Unlock()
	cl.Close()
	return true
}

// transact runs transactions of a few records on txnTopic, committing
// four in five and aborting the rest, until stop. A transaction whose end
// failed has an unknown outcome; the producer is then replaced, which
// fences the old one and settles its transaction.
func (w *workload) transact(worker int) {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(worker), 1))
	newClient := func() *kgo.Client {
		for {
			cl, err := w.client(kgo.TransactionalID(fmt.Sprintf("chaos-txn-%d", worker)), kgo.DefaultProduceTopic(txnTopic),
				kgo.TransactionTimeout(20*time.Second), kgo.RecordDeliveryTimeout(30*time.Second))
			if err == nil {
				return cl
			}
			w.log("transactional producer: %v", err)
			select {
			case <-w.stop:
				return nil
			case <-time.After(time.Second):
			}
		}
	}
	cl := newClient()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		outcome := w.oneTxn(ctx, cl, worker, n, rng.IntN(5) > 0)
		cancel()
		w.h.TxnEnded(worker, n, outcome)
		if outcome == history.TxnUnknown {
			cl.Close()
			if cl = newClient(); cl == nil {
				return
			}
		}
	}
}

// oneTxn runs transaction n: begin, five records, commit (or abort).
func (w *workload) oneTxn(ctx context.Context, cl *kgo.Client, worker, n int, commit bool) history.TxnOutcome {
	if err := cl.BeginTransaction(); err != nil {
		return history.TxnUnknown
	}
	var failed atomic.Bool
	for i := range 5 {
		v := w.h.SendTxn(worker, n, i)
		cl.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				w.h.Failed(string(r.Value), err)
				failed.Store(true)
				return
			}
			w.h.AckedTxnRecord(string(r.Value), history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		failed.Store(true)
	}
	end := kgo.TryCommit
	if !commit || failed.Load() {
		end = kgo.TryAbort
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		return history.TxnUnknown
	}
	if end == kgo.TryCommit {
		return history.TxnCommitted
	}
	return history.TxnAborted
}

// finish stops the producers and waits until every send has an outcome.
func (w *workload) finish() {
	close(w.stop)
	w.wg.Wait()
}

// closeGroup closes every member of the group.
func (w *workload) closeGroup() {
	w.groupMu.Lock()
	members := w.group
	w.group = nil
	w.groupMu.Unlock()
	for _, cl := range members {
		cl.Close()
	}
	w.members.Wait()
}
