package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition/store"
)

// `skein chaos cut --one-way` from a partition's leader to a transaction's
// coordinator stops the leader's verification of the transaction
// (KIP-890: the leader asks the coordinator, over remoting, from outside
// any actor, which a cut once let pass): a transactional produce to that
// partition is refused while the cut lasts. Healed, a transaction goes
// through.
func TestChaosCutStopsTxnVerification(t *testing.T) {
	// The transaction log has one replica, on its coordinator: its writes
	// wait for no other node, so that what the cut stops is the
	// verification itself.
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.5.%d", i) },
		flags: []string{"--set", "transaction.state.log.replication.factor=1", "--set", "transaction.state.log.min.isr=1"}})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Neither end of the cut is the active controller, which would fence
	// the other as a whole: a transactional id coordinated elsewhere, and
	// a partition led by the third node.
	active := int(c.agreedController(ctx, []int{1, 2, 3}, func(id int32) bool { return id > 0 }))
	var id string
	var coordinator int
	for n := 0; coordinator == 0 || coordinator == active; n++ {
		id = fmt.Sprintf("verify-cut-%d", n)
		coordinator = c.txnCoordinator(t, ctx, id)
	}
	leader := 6 - active - coordinator
	const topic = "verified"
	createOn(t, ctx, c, topic, []int32{int32(leader)}, nil)
	client := func() *kgo.Client {
		return c.client([]int{1, 2, 3}, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(time.Minute))
	}
	commit := func(cl *kgo.Client, value string) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	cl := client()
	if err := commit(cl, "before"); err != nil {
		t.Fatalf("a transaction before the cut: %v", err)
	}
	cl.Close()

	// A transactional batch of a producer of the id, sent to the leader
	// by hand (a client would retry what is refused): the leader must
	// have the coordinator add the partition to the transaction.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60_000
	var ir *kmsg.InitProducerIDResponse
	waitFor(t, time.Minute, "a producer id (the last transaction ends)", func() string {
		var err error
		if ir, err = init.RequestWith(ctx, c.seeds[coordinator]); err == nil {
			err = kerr.ErrorForCode(ir.ErrorCode)
		}
		if err != nil {
			return err.Error()
		}
		return ""
	})
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, c.seeds[leader])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	batch, err := store.AppendBatch(nil, store.Header{ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, BaseSequence: 0,
		Attributes: 0x10, BaseTimestamp: now, MaxTimestamp: now}, []store.Record{{Value: []byte("during")}}, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID, produce.Acks, produce.TimeoutMillis = &id, -1, 30_000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = topic, mresp.Topics[0].TopicID
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	t.Logf("cutting node %d (leads %s-0) from node %d (coordinates %s); node %d is the active controller", leader, topic, coordinator, id, active)
	// One way, the leader's messages to the coordinator: the request is
	// what must not pass (the answer would come from an actor).
	c.skeinChaos(t, "cut", fmt.Sprint(leader), fmt.Sprint(coordinator), "--one-way", "--for", "5m")
	// The leader waits verifyTimeout (10 s) for the coordinator's answer,
	// which cannot come, and refuses the batch.
	presp, err := produce.RequestWith(ctx, c.seeds[leader].SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatalf("a transactional batch was verified across the cut between node %d and node %d", leader, coordinator)
	} else {
		t.Logf("during the cut, the produce was refused: %v", kerr.ErrorForCode(code))
	}
	c.skeinChaos(t, "heal")
	cl = client()
	defer cl.Close()
	if err := commit(cl, "after"); err != nil {
		t.Fatalf("a transaction after the heal: %v", err)
	}
}

// txnCoordinator returns the node that coordinates transactional id.
func (c *cluster) txnCoordinator(t *testing.T, ctx context.Context, id string) int {
	t.Helper()
	var node int32
	waitFor(t, time.Minute, "the coordinator of "+id, func() string {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		resp, err := req.RequestWith(ctx, c.seeds[1])
		if err != nil {
			return err.Error()
		}
		k := resp.Coordinators[0]
		if err := kerr.ErrorForCode(k.ErrorCode); err != nil {
			return err.Error()
		}
		node = k.NodeID
		return ""
	})
	return int(node)
}
