package extension

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

// With output.transactions, a runner writes its output, its state and its
// position in Kafka transactions: its own transactional id (TxnID), one
// transaction per commit, the output batches transactional, the position
// committed with TxnOffsetCommit (a remote source's as a record in the
// state topic, in the transaction too), and EndTxn. A restart's
// InitProducerId fences the previous run and aborts what it left open, so
// the output and the position move together, whatever the kind does: a
// kind that depends on the clock or on chance is written exactly once too.
// The output is visible to read_committed readers once its transaction
// commits, at most a commit interval after it was written.
type txnOutput struct {
	cl    *kgo.Client
	id    string
	pid   int64
	epoch int16
	// added are the partitions of the transaction in progress.
	added map[partition.Key]bool
}

// TxnID is the transactional id of an instance's actor for a source
// partition.
func TxnID(instance, topic string, partition int32) string {
	return fmt.Sprintf("skein-extension-%s/%s/%d", instance, topic, partition)
}

// txnTimeout is the transactions' timeout; the commit interval is kept
// well below it.
const txnTimeout = 60 * time.Second

// maxTxnCommitInterval bounds the commit interval with transactions.
const maxTxnCommitInterval = 10 * time.Second

// initTxn starts the runner's transactional producer: InitProducerId,
// which fences an earlier run and aborts its open transaction. Called on
// load's goroutine.
func (r *runner) initTxn(ctx context.Context) (*txnOutput, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.cfg.Cluster.Bootstrap()...), kgo.ClientID("skein-extension-"+r.key.instance))
	if err != nil {
		return nil, err
	}
	t := &txnOutput{cl: cl, id: TxnID(r.key.instance, r.key.topic, r.key.partition), added: map[partition.Key]bool{}}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &t.id
	req.TransactionTimeoutMillis = int32(txnTimeout / time.Millisecond)
	req.ProducerID, req.ProducerEpoch = -1, -1
	err = retryTxn(ctx, func() error {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			t.pid, t.epoch = resp.ProducerID, resp.ProducerEpoch
		}
		return err
	})
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("InitProducerId for %s: %w", t.id, err)
	}
	return t, nil
}

// addPartitions adds partitions to the transaction in progress. Called on
// a goroutine.
func (t *txnOutput) addPartitions(ctx context.Context, keys []partition.Key) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = t.id, t.pid, t.epoch
	byTopic := map[string][]int32{}
	for _, k := range keys {
		byTopic[k.Topic] = append(byTopic[k.Topic], k.Partition)
	}
	for topic, parts := range byTopic {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
	}
	return retryTxn(ctx, func() error {
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("adding %s-%d to the transaction: %w", rt.Topic, rp.Partition, err)
				}
			}
		}
		return nil
	})
}

// commit commits the transaction in progress with the position: with
// offsets, group's offset for the source partition (a remote source's
// position is a record the caller wrote in the transaction). It returns the
// producer id and epoch the next transaction goes on with: EndTxn v5+
// (transaction version 2, KIP-890) bumps the epoch at every transaction's
// end. Called on a goroutine.
func (t *txnOutput) commit(ctx context.Context, group, topic string, part int32, offset int64, metadata string, offsets bool) (int64, int16, error) {
	pid, epoch := t.pid, t.epoch
	if offsets {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = t.id, t.pid, t.epoch, group
		if err := retryTxn(ctx, func() error {
			resp, err := add.RequestWith(ctx, t.cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			return err
		}); err != nil {
			return pid, epoch, fmt.Errorf("AddOffsetsToTxn: %w", err)
		}
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = t.id, group, t.pid, t.epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = part, offset, -1, &metadata
		rt.Partitions = append(rt.Partitions, rp)
		tc.Topics = append(tc.Topics, rt)
		if err := retryTxn(ctx, func() error {
			resp, err := tc.RequestWith(ctx, t.cl)
			if err != nil {
				return err
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return pid, epoch, fmt.Errorf("TxnOffsetCommit: %w", err)
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = t.id, t.pid, t.epoch, true
	if err := retryTxn(ctx, func() error {
		resp, err := end.RequestWith(ctx, t.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil && resp.Version >= 5 && resp.ProducerID >= 0 {
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
		}
		return err
	}); err != nil {
		return pid, epoch, fmt.Errorf("EndTxn: %w", err)
	}
	return pid, epoch, nil
}

// retryTxn calls f until it succeeds, fails for good, or ctx ends.
func retryTxn(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !kerr.IsRetriable(err) && err != kerr.ConcurrentTransactions {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (t *txnOutput) close() { t.cl.Close() }

// addTxnPartitions adds the chunk's new target partitions to the
// transaction on a goroutine; txnAdded then sends its batches.
func (r *runner) addTxnPartitions(c actor.Context, keys []partition.Key) {
	r.adding = true
	self, root, ctx, tx := r.self, c.ActorSystem().Root, r.ctx, r.txn
	go func() {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		err := tx.addPartitions(ctx, keys)
		root.Send(self, &txnAdded{r: r, keys: keys, err: err})
	}()
}

// txnAdded is addTxnPartitions' answer.
type txnAdded struct {
	r    *runner
	keys []partition.Key
	err  error
}

func (r *runner) txnAdded(c actor.Context, m *txnAdded) {
	r.adding = false
	if m.err != nil {
		r.fail(m.err)
		return
	}
	for _, k := range m.keys {
		r.txn.added[k] = true
	}
	r.step(c)
}

// producer is who the runner writes its output as.
func (r *runner) producer() producer {
	if r.txn != nil {
		return producer{pid: r.txn.pid, epoch: r.txn.epoch, txn: true}
	}
	return producer{pid: r.pid}
}

// sendTxnChunk is sendChunk with transactions: the chunk's targets join the
// transaction first; nothing goes while a commit ends the transaction.
func (r *runner) sendTxnChunk(c actor.Context) {
	ch := r.chunk
	if r.committing || r.adding || ch.pending > 0 {
		return
	}
	var add []partition.Key
	for k, b := range ch.batches {
		if len(b.records) > 0 && !r.txn.added[k] {
			add = append(add, k)
		}
	}
	if len(add) > 0 {
		r.addTxnPartitions(c, add)
		return
	}
	r.sendBatches(c)
}

// commitTxn commits the transaction with the position: the group's offset
// (TxnOffsetCommit), or for a remote source a position record in the state
// topic, written in the transaction.
func (r *runner) commitTxn(c actor.Context, offset int64, p position) {
	self, sys, ctx, tx, key := r.self, c.ActorSystem(), r.ctx, r.txn, r.key
	var posBatch []byte
	if r.remote {
		rec := Record{Key: []byte(r.statePrefix + posKey), Value: encodePosRecord(offset, p.encode()), Timestamp: time.Now()}
		seq := r.next[r.stateTP]
		r.next[r.stateTP] = seq + 1
		var err error
		if posBatch, err = encodeBatch(r.stateTP, seq, []Record{rec}, r.producer()); err != nil {
			r.fail(err)
			return
		}
	}
	stateTP, added := r.stateTP, r.txn.added[r.stateTP]
	pid, epoch := tx.pid, tx.epoch
	go func() {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		err := func() error {
			if posBatch != nil {
				if !added {
					if err := tx.addPartitions(ctx, []partition.Key{stateTP}); err != nil {
						return err
					}
				}
				done := make(chan error, 1)
				r.appendTo(sys, stateTP, posBatch, func(res *partition.RemoteAppendResult, err error) {
					if err == nil && res.Err != nil {
						err = res.Err
					}
					done <- err
				})
				select {
				case err := <-done:
					if err != nil {
						return fmt.Errorf("writing the position: %w", err)
					}
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			var err error
			pid, epoch, err = tx.commit(ctx, GroupFor(key.instance), key.topic, key.partition, offset, p.encode(), posBatch == nil)
			return err
		}()
		sys.Root.Send(self, &commitRes{r: r, offset: offset, p: p, err: err, pid: pid, epoch: epoch})
	}()
}
