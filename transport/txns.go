package transport

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/txn"
)

// What the transaction APIs share: finding a transactional id's
// coordinator actor (txns/<escaped id>, on the node leading the id's
// __transaction_state partition) and waiting for its answer.

// txnActor returns the actor of a transactional id this node coordinates:
// NOT_COORDINATOR when another node leads its partition (or the topic does
// not exist yet), COORDINATOR_LOAD_IN_PROGRESS while it loads here.
func (a *API) txnActor(id string) (*actor.PID, *kerr.Error) {
	if id == "" {
		return nil, kerr.InvalidRequest
	}
	t := a.Image().Topic(txn.StateTopic)
	if t == nil || a.TxnsPID == nil {
		return nil, kerr.NotCoordinator
	}
	p := txn.PartitionFor(id, int32(len(t.Partitions)))
	if t.Partitions[p].Leader != a.Node.NodeID {
		return nil, kerr.NotCoordinator
	}
	if pid := a.Txns.Get(id); pid != nil {
		return pid, nil
	}
	if !a.Txns.Loaded(p) {
		return nil, kerr.CoordinatorLoadInProgress
	}
	res, err := actors.Ask(a.System, a.TxnsPID, &txn.Open{ID: id}, a.RequestTimeout)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	r := res.(*txn.OpenResult)
	return r.PID, r.Err
}

// askTxn sends a transactional id's actor the message msg builds around
// its reply callback, and waits for the answer; failed gives the answer
// for an error instead: the id's coordinator is elsewhere or loading, the
// actor failed handling it or the node stops (NOT_COORDINATOR: the client
// finds the coordinator again), or nothing came in time
// (COORDINATOR_NOT_AVAILABLE).
func askTxn[T any](a *API, c *conn, id string, msg func(reply func(T)) any, failed func(*kerr.Error) T) T {
	pid, err := a.txnActor(id)
	if err != nil {
		return failed(err)
	}
	call := &txnCall[T]{ch: make(chan T, 1), abandoned: make(chan struct{})}
	self, ok := a.System.ProcessRegistry.Add(call, fmt.Sprintf("txn$%d", txnCallSeq.Add(1)))
	if !ok {
		return failed(kerr.CoordinatorNotAvailable)
	}
	defer a.System.ProcessRegistry.Remove(self)
	a.System.Root.RequestWithCustomSender(pid, msg(call.put), self)
	t := time.NewTimer(a.RequestTimeout)
	defer t.Stop()
	var stop, gone <-chan struct{}
	if c != nil {
		stop, gone = c.stop, c.gone
	}
	select {
	case r := <-call.ch:
		return r
	case <-call.abandoned:
		return failed(kerr.NotCoordinator)
	case <-stop:
		return failed(kerr.NotCoordinator)
	case <-gone:
		return failed(kerr.NotCoordinator)
	case <-t.C:
		return failed(kerr.CoordinatorNotAvailable)
	}
}

// txnCall takes a txn actor's answer, or the Abandoned its supervisor
// sends when the actor fails handling the request (actors.Backoff).
type txnCall[T any] struct {
	ch        chan T
	abandoned chan struct{}
	once      atomic.Bool
}

func (c *txnCall[T]) put(r T) {
	select {
	case c.ch <- r:
	default: // answered already
	}
}

func (c *txnCall[T]) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actors.Abandoned); ok && c.once.CompareAndSwap(false, true) {
		close(c.abandoned)
	}
}

func (c *txnCall[T]) SendSystemMessage(*actor.PID, any) {}
func (c *txnCall[T]) Stop(*actor.PID)                   {}

var txnCallSeq atomic.Uint64

// ensureTxnTopic creates __transaction_state if it does not exist and
// waits for its partitions to load here.
func (a *API) ensureTxnTopic() *kerr.Error {
	rf := a.Node.TransactionStateLogReplicationFactor
	// min.insync.replicas at most the replicas it will have, which are
	// fewer than rf with fewer live brokers (see ensureInternalTopic).
	minISR := min(a.Node.TransactionStateLogMinISR, max(min(rf, int16(len(a.Image().LiveBrokerIDs()))), 1))
	return a.ensureInternalTopic(controller.NewTopic{
		Name: txn.StateTopic, NumPartitions: a.Node.TransactionStateLogNumPartitions, ReplicationFactor: rf,
		// Kafka's: compacted, 100 MiB segments, no broker compression.
		Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "producer",
			"min.insync.replicas": fmt.Sprint(minISR), "segment.bytes": "104857600"},
	}, "transaction.state.log.replication.factor")
}

// verifyProduceError maps a transaction coordinator's answer to a
// partition leader's verification (KIP-890) to what a producer is told,
// as Kafka's ReplicaManager does: a coordinator that cannot answer now is
// NOT_ENOUGH_REPLICAS (retriable for every client version), a fenced epoch
// INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE, which clients before
// Produce v12 do not know, INVALID_TXN_STATE for them.
func verifyProduceError(err *kerr.Error, version int16) *kerr.Error {
	switch err {
	case nil:
		return nil
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions:
		return kerr.NotEnoughReplicas
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		if version < 12 {
			return kerr.InvalidTxnState
		}
	}
	return err
}

// clientError maps a coordinator's error to one a client at version knows:
// PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH before fencedSince,
// TRANSACTION_ABORTABLE (KIP-890) INVALID_TXN_STATE before abortableSince,
// as Kafka's KafkaApis does.
func clientError(err *kerr.Error, version, fencedSince, abortableSince int16) *kerr.Error {
	switch {
	case err == kerr.ProducerFenced && version < fencedSince:
		return kerr.InvalidProducerEpoch
	case err == kerr.TransactionAbortable && version < abortableSince:
		return kerr.InvalidTxnState
	}
	return err
}

// code is err's error code, 0 for nil.
func code(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
