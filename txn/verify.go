package txn

import (
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
)

// Verifier asks transaction coordinators, for this node's partition
// leaders, whether a producer's transaction in progress includes a
// partition, or to add it (KIP-890): the Verify message, to the txns
// supervisor of the node that coordinates the id, local or not.
type Verifier struct {
	System *actor.ActorSystem
	NodeID int32
	// Image returns the node's newest metadata image.
	Image   func() *image.Image
	Timeout time.Duration
}

// Verify asks, without blocking, and calls reply once with the
// coordinator's answer: nil when the partition is (now) in the
// transaction; NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE when the
// coordinator could not be asked.
//
// CONCURRENT_TRANSACTIONS is asked again, after 20 ms doubling to 100 ms,
// for up to concurrentWait, as Kafka's AddPartitionsToTxnManager retries
// it: under transaction version 2 a producer starts its next transaction
// as soon as EndTxn answers, while the coordinator still writes the last
// one's markers. NB: Kafka gives up after 100 ms
// (add.partitions.to.txn.retry.backoff.max.ms); Skein waits longer, since
// the error a producer then gets is retried after a metadata refresh
// (5 s for franz-go).
func (v *Verifier) Verify(id string, producerID int64, epoch int16, topic string, partition int32, add bool, reply func(*kerr.Error)) {
	deadline := time.Now().Add(concurrentWait)
	backoff := 20 * time.Millisecond
	var ask func()
	ask = func() {
		v.ask(id, producerID, epoch, topic, partition, add, func(err *kerr.Error) {
			if err != kerr.ConcurrentTransactions || time.Now().Add(backoff).After(deadline) {
				reply(err)
				return
			}
			// NB: backoff changes before the next ask is scheduled: that
			// ask's reply reads it on another goroutine.
			d := backoff
			backoff = min(2*backoff, 100*time.Millisecond)
			time.AfterFunc(d, ask)
		})
	}
	ask()
}

// concurrentWait bounds how long Verify asks again while a transaction
// ends.
const concurrentWait = 2 * time.Second

func (v *Verifier) ask(id string, producerID int64, epoch int16, topic string, partition int32, add bool, reply func(*kerr.Error)) {
	im := v.Image()
	t := im.Topic(StateTopic)
	if t == nil {
		reply(kerr.CoordinatorNotAvailable)
		return
	}
	leader := t.Partitions[PartitionFor(id, int32(len(t.Partitions)))].Leader
	addr := v.System.Address()
	if leader != v.NodeID {
		b, ok := im.Brokers[leader]
		if !ok || b.ClusterAddr == "" {
			reply(kerr.CoordinatorNotAvailable)
			return
		}
		addr = b.ClusterAddr
	}
	pid := actor.NewPID(addr, "node/"+strconv.Itoa(int(leader))+"/txns")
	msg := &Verify{TransactionalID: id, ProducerID: producerID, Epoch: epoch, Topic: topic, Partition: partition, Add: add}
	go func() {
		res, err := actors.Ask(v.System, pid, msg, v.Timeout)
		r, ok := res.(*VerifyResult)
		if err != nil || !ok {
			reply(kerr.CoordinatorNotAvailable)
			return
		}
		reply(r.Err)
	}()
}
