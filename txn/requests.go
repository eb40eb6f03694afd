package txn

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

// InitProducerID handles an InitProducerId request with a transactional id
// (the actor answers idempotent producers itself): Kafka's
// handleInitProducerId. A new id gets a fresh producer id at epoch 0; an
// idle one a bumped epoch (a fresh producer id at epoch 0 when the epoch
// is exhausted) and the new timeout; an Ongoing transaction is aborted
// under a bumped epoch first, fencing its producer, and the client is told
// CONCURRENT_TRANSACTIONS so that it retries. The answer waits for the
// write.
func (t *Txn) InitProducerID(req *kmsg.InitProducerIDRequest, now int64, reply func(*kmsg.InitProducerIDResponse)) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	answer := func(err *kerr.Error) {
		resp.ErrorCode = errCode(err)
		if err != nil {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		t.reply(func() { reply(resp) })
	}
	next, fence, err := t.prepareInit(req, now)
	switch {
	case err != nil:
		answer(err)
	case fence:
		t.propose(next, false, func() { answer(kerr.ConcurrentTransactions) }, answer)
	default:
		resp.ProducerID, resp.ProducerEpoch = next.ProducerID, next.Epoch
		t.propose(next, false, func() { answer(nil) }, answer)
	}
}

// prepareInit is Kafka's prepareInitProducerIdTransit; fence is set when
// next aborts an Ongoing transaction instead.
func (t *Txn) prepareInit(req *kmsg.InitProducerIDRequest, now int64) (next *Metadata, fence bool, err *kerr.Error) {
	timeout := req.TransactionTimeoutMillis
	// As KafkaApis: a producer id and epoch go together; -1 and -1 is
	// none (KIP-360).
	expected := req.ProducerID != -1 || req.ProducerEpoch != -1
	switch {
	case req.TransactionalID == nil || *req.TransactionalID == "":
		return nil, false, kerr.InvalidRequest
	case expected && (req.ProducerID == -1 || req.ProducerEpoch == -1):
		return nil, false, kerr.InvalidRequest
	case timeout <= 0 || timeout > t.cfg.MaxTimeoutMs:
		return nil, false, kerr.InvalidTransactionTimeout
	case t.pending != nil:
		return nil, false, kerr.ConcurrentTransactions
	case !t.known:
		// NB: Kafka caches the new id (epoch -1) before its write, and
		// keeps it if the write fails; Skein undoes it, so a retry gets
		// another producer id.
		pid, err := t.cfg.NewProducerID()
		if err != nil {
			return nil, false, err
		}
		return &Metadata{ProducerID: pid, PrevProducerID: -1, NextProducerID: -1, LastEpoch: -1,
			TimeoutMs: timeout, Status: Empty, StartMs: -1, UpdateMs: now}, false, nil
	}
	m := &t.m
	// Kafka's isValidProducerId: the current producer id, or the previous
	// one at an exhausted epoch (a retry of the InitProducerId that moved
	// to a new producer id).
	if expected && m.Epoch != -1 && req.ProducerID != m.ProducerID &&
		(req.ProducerID != m.PrevProducerID || !epochExhausted(req.ProducerEpoch)) {
		return nil, false, kerr.ProducerFenced
	}
	switch m.Status {
	case PrepareCommit, PrepareAbort:
		return nil, false, kerr.ConcurrentTransactions
	case Ongoing:
		next, err := t.fence(now)
		return next, err == nil, err
	}
	n := m.clone()
	n.TimeoutMs, n.Status, n.Partitions, n.StartMs, n.UpdateMs, n.NextProducerID = timeout, Empty, nil, -1, now, -1
	switch {
	case expected && m.Epoch != -1 && req.ProducerEpoch != m.Epoch:
		if req.ProducerEpoch != m.LastEpoch {
			return nil, false, kerr.ProducerFenced
		}
		// KIP-360: a retry of a bump whose answer was lost gets the same
		// epoch again. NB: Kafka also sets PrevProducerID to the current
		// id here, which turns away a second retry across a rotation.
	case epochExhausted(m.Epoch):
		pid, err := t.cfg.NewProducerID()
		if err != nil {
			return nil, false, err
		}
		n.PrevProducerID, n.ProducerID, n.Epoch, n.LastEpoch = m.ProducerID, pid, 0, -1
		if expected {
			n.LastEpoch = m.Epoch
		}
	default:
		n.PrevProducerID, n.Epoch, n.LastEpoch = m.ProducerID, m.Epoch+1, -1
		if expected {
			n.LastEpoch = m.Epoch
		}
	}
	return &n, false, nil
}

// AddResult answers AddPartitions. Err, when set, is every partition's
// error; otherwise NotInTxn lists, for a verification, the partitions not
// in the transaction, each answered TRANSACTION_ABORTABLE.
type AddResult struct {
	Err      *kerr.Error
	NotInTxn []TopicPartition
}

// PartitionErr is the error for one partition of the request.
func (r AddResult) PartitionErr(tp TopicPartition) *kerr.Error {
	switch {
	case r.Err != nil:
		return r.Err
	case slices.Contains(r.NotInTxn, tp):
		return kerr.TransactionAbortable
	}
	return nil
}

// AddPartitions handles AddPartitionsToTxn from a client (v0-3) or a
// partition leader (v4+), Kafka's handleAddPartitionsToTransaction: the
// transaction becomes Ongoing (StartMs now if it starts) with the
// partitions added, answered once durable; no write when every partition
// is already in the Ongoing transaction.
//
// verifyOnly is KIP-890 part 1's check by a partition leader before it
// appends a transactional batch (Kafka's
// handleVerifyPartitionsInTransaction): nothing is written, each
// partition not in the transaction is answered TRANSACTION_ABORTABLE.
// NB: Kafka 4.0 answers TRANSACTION_ABORTABLE there (INVALID_TXN_STATE
// before); the partition leader maps it for older produce versions.
//
// PRODUCER_FENCED (a wrong epoch) is for the caller to map to
// INVALID_PRODUCER_EPOCH for request versions that predate it.
func (t *Txn) AddPartitions(producerID int64, epoch int16, parts []TopicPartition, verifyOnly bool, now int64, reply func(AddResult)) {
	answer := func(r AddResult) { t.reply(func() { reply(r) }) }
	fail := func(err *kerr.Error) { answer(AddResult{Err: err}) }
	m := &t.m
	switch {
	case !t.known || m.ProducerID != producerID:
		fail(kerr.InvalidProducerIDMapping)
		return
	case m.Epoch != epoch:
		fail(kerr.ProducerFenced)
		return
	case m.Status.preparing():
		fail(kerr.ConcurrentTransactions)
		return
	case verifyOnly:
		// As Kafka, a write in flight is not waited for: the partitions
		// count once their addition is durable.
		var not []TopicPartition
		for _, tp := range normalize(parts) {
			if !contains(m.Partitions, tp) {
				not = append(not, tp)
			}
		}
		answer(AddResult{NotInTxn: not})
		return
	case t.pending != nil:
		fail(kerr.ConcurrentTransactions)
		return
	}
	parts = normalize(parts)
	if m.Status == Ongoing && !slices.ContainsFunc(parts, func(tp TopicPartition) bool { return !contains(m.Partitions, tp) }) {
		answer(AddResult{})
		return
	}
	next := m.clone()
	if m.Status != Ongoing {
		next.StartMs = now
	}
	next.Status, next.Partitions, next.UpdateMs = Ongoing, union(m.Partitions, parts), now
	t.propose(&next, false, func() { answer(AddResult{}) }, fail)
}

// AddOffsets handles AddOffsetsToTxn: AddPartitions of the group's
// __consumer_offsets partition, as Kafka's handleAddOffsetsToTxnRequest.
func (t *Txn) AddOffsets(producerID int64, epoch int16, group string, now int64, reply func(*kerr.Error)) {
	tp := TopicPartition{partition.OffsetsTopic, t.cfg.OffsetsPartition(group)}
	t.AddPartitions(producerID, epoch, []TopicPartition{tp}, false, now, func(r AddResult) { reply(r.Err) })
}

// EndResult answers EndTxn: an error, or for a TV2 client the producer id
// and epoch to use next (-1 and -1 otherwise).
type EndResult struct {
	Err        *kerr.Error
	ProducerID int64
	Epoch      int16
}

// EndTxn handles EndTxn, Kafka's endTransaction: tv2 is set for EndTxn v5+
// (transaction version 2, KIP-890 part 2), and recorded in the metadata.
// An Ongoing transaction goes to PrepareCommit or PrepareAbort, answered
// once durable, then the markers are asked for.
//
// TV1: the epoch stays; a retry after the transaction completed is
// answered NONE, the other outcome INVALID_TXN_STATE.
//
// TV2: the epoch is bumped at PrepareX, so the markers carry the new one
// and a late batch of the old epoch is refused; the answer carries the new
// epoch (the NextProducerID at epoch 0 when the epoch is exhausted). A
// retry, whose epoch is one below, is recognised; an abort with no
// transaction is allowed (a bump, no markers).
func (t *Txn) EndTxn(producerID int64, epoch int16, commit, tv2 bool, now int64, reply func(EndResult)) {
	answer := func(r EndResult) { t.reply(func() { reply(r) }) }
	fail := func(err *kerr.Error) { answer(EndResult{Err: err, ProducerID: -1, Epoch: -1}) }
	// current answers with the state's producer id and epoch: TV2 only.
	current := func() {
		r := EndResult{ProducerID: -1, Epoch: -1}
		if tv2 {
			r.ProducerID, r.Epoch = t.m.ProducerID, t.m.Epoch
			if t.m.NextProducerID >= 0 {
				r.ProducerID, r.Epoch = t.m.NextProducerID, 0
			}
		}
		answer(r)
	}
	if !t.known {
		fail(kerr.InvalidProducerIDMapping)
		return
	}
	var next *Metadata
	var err *kerr.Error
	if tv2 {
		next, err = t.prepareEndV2(producerID, epoch, commit, now)
	} else {
		next, err = t.prepareEndV1(producerID, epoch, commit, now)
	}
	switch {
	case err != nil:
		fail(err)
	case next == nil:
		current() // a retry of a completed EndTxn
	default:
		t.propose(next, false, current, fail)
	}
}

// prepareEndV1 is Kafka's endTransactionWithTV1 for a client's request.
// A nil next and nil error answer NONE without a write.
func (t *Txn) prepareEndV1(producerID int64, epoch int16, commit bool, now int64) (*Metadata, *kerr.Error) {
	m := &t.m
	switch {
	case m.ProducerID != producerID:
		return nil, kerr.InvalidProducerIDMapping
	case m.Epoch != epoch:
		return nil, kerr.ProducerFenced
	case t.pending != nil:
		return nil, kerr.ConcurrentTransactions
	}
	switch {
	case m.Status == Ongoing:
		next := m.clone()
		next.Status, next.UpdateMs, next.TV2 = prepared(commit), now, false
		return &next, nil
	case m.Status == completed(commit):
		return nil, nil
	case m.Status == prepared(commit):
		return nil, kerr.ConcurrentTransactions
	}
	return nil, kerr.InvalidTxnState
}

// prepareEndV2 is Kafka's endTransaction for transaction version 2. Its
// table for the idle states, where "retry" is the epoch one below the
// state's (the bump of the EndTxn it retries, or the last epoch of a
// producer id that moved on at an exhausted epoch) and "current" the
// state's epoch:
//
//	                abort               commit
//	                retry    current    retry    current
//	Empty           FENCED   bump       FENCED   INVALID_TXN_STATE
//	CompleteAbort   NONE     bump       INVALID_TXN_STATE (both)
//	CompleteCommit  INVALID  bump       NONE     INVALID_TXN_STATE
//
// While PrepareCommit or PrepareAbort is having its markers written, a
// retry of the EndTxn that prepared it is CONCURRENT_TRANSACTIONS (the
// other outcome INVALID_TXN_STATE), and so is an EndTxn at the current
// epoch: the producer's next transaction, which it may end as soon as
// the answer gave it that epoch. NB: Kafka answers the latter
// PRODUCER_FENCED, which fences a producer that did nothing wrong;
// franz-go's GroupTransactSession aborts that way when a rebalance comes
// right after a commit.
func (t *Txn) prepareEndV2(producerID int64, epoch int16, commit bool, now int64) (*Metadata, *kerr.Error) {
	m := &t.m
	retryOnOverflow := m.PrevProducerID == producerID && epoch == math.MaxInt16-1 && m.Epoch == 0
	retryOnBump := int32(m.Epoch) == int32(epoch)+1
	retry := retryOnBump || retryOnOverflow
	var validEpoch bool
	switch {
	case m.Status.preparing():
		// The current epoch is the one this EndTxn's answer handed out:
		// the producer's next transaction, ended before the markers of
		// this one are written, waits below.
		validEpoch = retryOnBump || epoch == m.Epoch
	case m.Status == CompleteCommit || m.Status == CompleteAbort:
		validEpoch = retry || epoch == m.Epoch
	default:
		validEpoch = epoch == m.Epoch
	}
	switch {
	case m.ProducerID != producerID && !retryOnOverflow:
		return nil, kerr.InvalidProducerIDMapping
	case !validEpoch:
		return nil, kerr.ProducerFenced
	case t.pending != nil:
		return nil, kerr.ConcurrentTransactions
	}
	switch m.Status {
	case Ongoing:
		return t.prepareEndTV2(commit, false, now)
	case PrepareCommit, PrepareAbort:
		if !retry || m.Status == prepared(commit) {
			return nil, kerr.ConcurrentTransactions
		}
	case CompleteCommit, CompleteAbort:
		switch {
		case retry && m.Status == completed(commit):
			return nil, nil
		case !retry && !commit:
			return t.prepareEndTV2(false, true, now)
		}
	case Empty:
		if !commit {
			return t.prepareEndTV2(false, true, now)
		}
	}
	return nil, kerr.InvalidTxnState
}

// prepareEndTV2 is Kafka's prepareAbortOrCommit under transaction version
// 2: the epoch is bumped, and a NextProducerID taken when it is exhausted.
// An abort with no transaction (empty) starts now, Kafka's choice for a
// start time it must write.
func (t *Txn) prepareEndTV2(commit, empty bool, now int64) (*Metadata, *kerr.Error) {
	next := t.m.clone()
	next.Status, next.UpdateMs, next.TV2 = prepared(commit), now, true
	next.Epoch, next.LastEpoch = bump(t.m.Epoch), t.m.Epoch
	if empty {
		next.StartMs = now
	}
	if epochExhausted(t.m.Epoch) {
		pid, err := t.cfg.NewProducerID()
		if err != nil {
			return nil, err
		}
		next.NextProducerID = pid
	}
	return &next, nil
}

func prepared(commit bool) Status {
	if commit {
		return PrepareCommit
	}
	return PrepareAbort
}

func completed(commit bool) Status {
	if commit {
		return CompleteCommit
	}
	return CompleteAbort
}
