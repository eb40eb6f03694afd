package txn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is a Txn's fixed configuration.
type Config struct {
	// MaxTimeoutMs bounds the timeout a producer may ask for
	// (transaction.max.timeout.ms, Kafka's default 900000).
	MaxTimeoutMs int32
	// IDExpirationMs is how long an id with no transaction under way
	// keeps its state (transactional.id.expiration.ms, Kafka's default
	// 604800000). NB: 0 never expires (Kafka requires at least 1).
	IDExpirationMs int64
	// RetryBackoffMs is how long after a failed write the coordinator's
	// own writes (the completion after the markers, a timeout abort, a
	// tombstone) are tried again. Skein-only: Kafka retries them on its
	// periodic scans. 0 means 100.
	RetryBackoffMs int64
	// NewProducerID hands out a fresh producer id; an error is answered
	// to the client.
	NewProducerID func() (int64, *kerr.Error)
	// OffsetsPartition returns a group's __consumer_offsets partition.
	OffsetsPartition func(group string) int32
}

// Txn is one transactional id's coordinator state machine: Kafka's
// TransactionMetadata with the transitions TransactionCoordinator drives.
// It is deterministic and does no I/O: each step leaves what to do in
// Ready.
//
// Concurrency: not safe for concurrent use; its actor owns it.
type Txn struct {
	id  string
	cfg Config

	m     Metadata
	known bool // m holds the id's state (false: new, or expired)

	loaded           bool
	coordinatorEpoch int32

	// pending is the write in flight: Kafka's pendingState. Every
	// request that would change the state meanwhile is answered
	// CONCURRENT_TRANSACTIONS.
	pending *write
	// retryAt holds the coordinator's own writes back after a failure.
	retryAt int64
	// timedOut is set when the transaction being aborted timed out.
	timedOut bool

	out Ready
}

// write is a transition waiting for its record to be durable.
type write struct {
	next *Metadata // nil: the tombstone
	own  bool      // the coordinator's own write, retried after a failure
	ok   func()    // after the transition is applied
	fail func(*kerr.Error)
}

// Ready is what the steps since the last call produced.
type Ready struct {
	// Write is the record to append to the id's __transaction_state
	// partition (acks=-1); report its outcome with Written. At most one
	// is in flight.
	Write *Write
	// Markers asks for transaction markers; report each partition with
	// MarkerWritten.
	Markers *Markers
	// Replies deliver answers to the callbacks given with the requests:
	// call each once, in order. A reply waiting on a write is released
	// only when the write is durable (or failed).
	Replies []func()
	// Completed lists the transactions completed (CompleteCommit or
	// CompleteAbort durable), for metrics.
	Completed []Completion
	// Gone is set when the id's tombstone is durable: the id has no
	// state any more.
	Gone bool
	// NextTick is when (ms) Tick is next needed, 0 for never; it
	// replaces any earlier one.
	NextTick int64
}

// Write is a record of __transaction_state; a nil Value is a tombstone.
type Write struct {
	Key, Value []byte
}

// Markers is Kafka's WriteTxnMarkers entry for a transaction. The actor
// writes a marker to each partition's leader, retrying retriable errors
// itself, and calls MarkerWritten once a partition is done. As Kafka's
// TransactionMarkerRequestCompletionHandler, INVALID_PRODUCER_EPOCH or
// TRANSACTION_COORDINATOR_FENCED from a partition mean a newer
// coordinator or epoch has taken over: stop sending, report nothing.
type Markers struct {
	ProducerID int64
	Epoch      int16
	Commit     bool
	// CoordinatorEpoch is the leader epoch of the __transaction_state
	// partition, by which partitions refuse markers of a deposed
	// coordinator.
	CoordinatorEpoch int32
	// TV2 is the marker's transaction version (WriteTxnMarkers v2).
	TV2        bool
	Partitions []TopicPartition
}

// Completion is a completed transaction.
type Completion struct {
	Commit bool
	// TimedOut is set when the coordinator aborted the transaction for
	// its timeout. NB: a restart forgets it for a transaction it finds
	// in PrepareAbort.
	TimedOut bool
}

// New returns the state machine of a transactional id with no state;
// Restore gives it what the log holds.
func New(id string, cfg Config) *Txn {
	return &Txn{id: id, cfg: cfg}
}

// ID returns the transactional id.
func (t *Txn) ID() string { return t.id }

// Metadata returns a copy of the id's state; false when it has none.
func (t *Txn) Metadata() (Metadata, bool) { return t.m.clone(), t.known }

// Ready returns and clears what the steps since the last call produced.
func (t *Txn) Ready() Ready {
	t.out.NextTick = t.nextTick()
	r := t.out
	t.out = Ready{}
	return r
}

// Restore applies one record of this id read back from the log, nil for
// a tombstone; the last one wins. Call it before Loaded only.
func (t *Txn) Restore(m *Metadata) {
	switch {
	case m == nil || m.Status == Dead:
		t.m, t.known = Metadata{}, false
	case m.Status < Empty || m.Status > CompleteAbort:
		// ParseRecord never returns these; Kafka never writes them.
	default:
		t.m, t.known = m.clone(), true
		t.m.Partitions = normalize(m.Partitions)
		if t.m.Status == Empty {
			t.m.Partitions = nil
		}
	}
}

// Loaded ends the replay. coordinatorEpoch, the leader epoch of the
// __transaction_state partition, goes into every marker from now on. A
// transaction found in PrepareCommit or PrepareAbort resumes: its markers
// are asked for again, as Kafka's loadTransactionsForTxnTopicPartition
// does; an Ongoing one keeps its timeout from StartMs.
func (t *Txn) Loaded(coordinatorEpoch int32, now int64) {
	t.coordinatorEpoch, t.loaded = coordinatorEpoch, true
	if t.known && t.m.Status.preparing() {
		t.sendMarkers(now)
	}
}

// Written reports the outcome of the write Ready asked for: durable
// (nil), or failed with err, already mapped to what a client is told
// (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE...). A failed transition is
// undone and its waiting reply gets err.
func (t *Txn) Written(err *kerr.Error, now int64) {
	p := t.pending
	if p == nil {
		return
	}
	t.pending = nil
	if err != nil {
		if p.own {
			t.retryAt = now + t.backoff()
		}
		if p.fail != nil {
			p.fail(err)
		}
		return
	}
	if p.next == nil {
		t.m, t.known = Metadata{}, false
		t.out.Gone = true
	} else {
		t.m, t.known = *p.next, true
	}
	if p.ok != nil {
		p.ok()
	}
	switch t.m.Status {
	case PrepareCommit, PrepareAbort:
		t.sendMarkers(now)
	case CompleteCommit, CompleteAbort:
		t.out.Completed = append(t.out.Completed, Completion{Commit: t.m.Status == CompleteCommit, TimedOut: t.timedOut})
		t.timedOut = false
	}
}

// MarkerWritten reports that tp's marker is written, or that tp's topic is
// gone: either way the partition is done. Once every partition is, the
// completion (CompleteCommit or CompleteAbort) is written.
func (t *Txn) MarkerWritten(tp TopicPartition, now int64) {
	if t.pending != nil || !t.m.Status.preparing() {
		return
	}
	i, ok := slices.BinarySearchFunc(t.m.Partitions, tp, compareTP)
	if !ok {
		return // a duplicate report, or a marker of a transaction before a restart
	}
	t.m.Partitions = slices.Delete(t.m.Partitions, i, i+1)
	if len(t.m.Partitions) == 0 {
		t.complete(now)
	}
}

// Tick does what time asks for: an Ongoing transaction older than its
// timeout is aborted (Kafka's abortTimedOutTransactions), an idle id
// older than IDExpirationMs is expired (Kafka's
// removeExpiredTransactionalIds), and a failed completion is written
// again. Nothing happens while a write is in flight.
func (t *Txn) Tick(now int64) {
	if t.pending != nil || !t.loaded || !t.known || now < t.retryAt {
		return
	}
	switch st := t.m.Status; {
	case st == Ongoing && t.m.StartMs+int64(t.m.TimeoutMs) < now:
		next, err := t.fence(now)
		if err != nil {
			t.retryAt = now + t.backoff()
			return
		}
		t.propose(next, true, func() { t.timedOut = true }, nil)
	case st.preparing() && len(t.m.Partitions) == 0:
		t.complete(now)
	case st.idle() && t.cfg.IDExpirationMs > 0 && t.m.UpdateMs <= now-t.cfg.IDExpirationMs:
		t.propose(nil, true, nil, nil)
	}
}

// Busy reports whether the id is between states: a write in flight, or a
// transaction whose markers are being written. An AddPartitions now would
// be answered CONCURRENT_TRANSACTIONS; its actor may hold it until the
// id is idle instead.
func (t *Txn) Busy() bool {
	return t.pending != nil || t.known && t.m.Status.preparing()
}

// Abort answers the reply waiting on the write in flight, if any, with
// err: the actor is going away (a stop, or a restart after a failure).
func (t *Txn) Abort(err *kerr.Error) {
	if p := t.pending; p != nil {
		t.pending = nil
		if p.fail != nil {
			p.fail(err)
		}
	}
}

func (t *Txn) nextTick() int64 {
	if t.pending != nil || !t.loaded || !t.known {
		return 0
	}
	var at int64
	switch st := t.m.Status; {
	case st == Ongoing:
		at = t.m.StartMs + int64(t.m.TimeoutMs) + 1 // Kafka aborts once strictly older
	case st.preparing() && len(t.m.Partitions) == 0:
		at = t.retryAt // a completion whose write failed
	case st.idle() && t.cfg.IDExpirationMs > 0:
		at = t.m.UpdateMs + t.cfg.IDExpirationMs
	default:
		return 0
	}
	return max(at, t.retryAt, 1)
}

func (t *Txn) backoff() int64 {
	if t.cfg.RetryBackoffMs > 0 {
		return t.cfg.RetryBackoffMs
	}
	return 100
}

// propose starts a transition: next's record is written, then next
// becomes the state and ok runs; on failure fail gets the error.
func (t *Txn) propose(next *Metadata, own bool, ok func(), fail func(*kerr.Error)) {
	t.pending = &write{next: next, own: own, ok: ok, fail: fail}
	key, value := Record(t.id, next)
	t.out.Write = &Write{Key: key, Value: value}
}

func (t *Txn) reply(f func()) { t.out.Replies = append(t.out.Replies, f) }

// sendMarkers asks for the markers of a durable PrepareCommit or
// PrepareAbort; with no partitions the transaction completes at once.
func (t *Txn) sendMarkers(now int64) {
	if len(t.m.Partitions) == 0 {
		t.complete(now)
		return
	}
	t.out.Markers = &Markers{ProducerID: t.m.ProducerID, Epoch: t.m.Epoch, Commit: t.m.Status == PrepareCommit,
		CoordinatorEpoch: t.coordinatorEpoch, TV2: t.m.TV2, Partitions: slices.Clone(t.m.Partitions)}
}

// complete writes CompleteCommit or CompleteAbort: Kafka's
// prepareComplete. A TV2 transaction prepared at an exhausted epoch moves
// to its NextProducerID at epoch 0.
func (t *Txn) complete(now int64) {
	next := t.m.clone()
	next.Status = CompleteCommit
	if t.m.Status == PrepareAbort {
		next.Status = CompleteAbort
	}
	next.Partitions, next.UpdateMs = nil, now
	if t.m.TV2 {
		next.PrevProducerID = t.m.ProducerID
		if t.m.NextProducerID >= 0 {
			next.ProducerID, next.Epoch = t.m.NextProducerID, 0
		}
	}
	next.NextProducerID = -1
	t.propose(&next, true, nil, nil)
}

// fence prepares the abort of the Ongoing transaction under a bumped
// epoch, so that its producer is fenced: Kafka's prepareFenceProducerEpoch
// followed by endTransaction(ABORT). LastEpoch becomes -1, so the old
// producer cannot pass for a KIP-360 retry.
//
// NB: one bump in either transaction version, as later Kafka 4.x does
// (4.0.0 bumped twice under transaction version 2). Kafka picks the
// version from the cluster's transaction.version feature, Skein from the
// client's last EndTxn (TV2): the markers and the next EndTxn's retry
// check follow it. Kafka's TV2 path keeps LastEpoch at the fenced epoch;
// Skein clears it in both, since a fence must not be retried away.
func (t *Txn) fence(now int64) (*Metadata, *kerr.Error) {
	next := t.m.clone()
	next.Epoch, next.LastEpoch = bump(t.m.Epoch), -1
	next.Status, next.UpdateMs = PrepareAbort, now
	if t.m.TV2 && epochExhausted(t.m.Epoch) {
		pid, err := t.cfg.NewProducerID()
		if err != nil {
			return nil, err
		}
		next.NextProducerID = pid
	}
	return &next, nil
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
