package tests

import (
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNextTransactionEndsBeforeMarkers: under transaction version 2 the
// EndTxn that commits a transaction answers with the bumped epoch as soon
// as the coordinator has written PrepareCommit; the markers follow. A
// producer starts its next transaction at once, and may end it at once:
// franz-go's GroupTransactSession aborts it when a rebalance revokes its
// partitions right after a commit. That EndTxn, at the very epoch the
// coordinator handed out, came while the markers were still being written
// and was answered PRODUCER_FENCED: a producer that did nothing wrong was
// fenced, about every other run of franz-go's TestTxnEtl. It must wait
// instead (CONCURRENT_TRANSACTIONS, which clients retry), then abort.
//
// The markers are held deterministically: the data partition drops every
// Append (the marker's way in) until the test removes the fault.
func TestNextTransactionEndsBeforeMarkers(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	cl := b.client()
	adm := b.admin()
	const id, topic = "next-txn", "next-txn"
	created, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, ctx, adm, topic, 1)

	var pid int64
	var epoch int16
	eventually(t, "InitProducerId", func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp := coordinatorRequest[*kmsg.InitProducerIDResponse](t, ctx, cl, req)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil && err != kerr.ConcurrentTransactions {
			t.Fatalf("InitProducerId: %v", err)
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode == 0
	})
	// Produce v12+ adds the partition to the transaction (KIP-890 part 2).
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, created.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = txnBatch(pid, epoch, 0, "committed")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	presp := request[*kmsg.ProduceResponse](t, ctx, cl, req)
	if presp.Version < 12 {
		t.Fatalf("Produce v%d: not transaction version 2", presp.Version)
	}
	if err := kerr.ErrorForCode(presp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// From here the commit marker cannot reach the partition.
	b.injectFault(`{"actor": "node/1/partitions/` + topic + `-0", "kind": "drop", "message": "Append", "rate": 1, "for": "2m"}`)
	endTxn := func(epoch int16, commit bool) *kmsg.EndTxnResponse {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		resp := coordinatorRequest[*kmsg.EndTxnResponse](t, ctx, cl, req)
		if resp.Version < 5 {
			t.Fatalf("EndTxn v%d: not transaction version 2", resp.Version)
		}
		return resp
	}
	commit := endTxn(epoch, true)
	if err := kerr.ErrorForCode(commit.ErrorCode); err != nil {
		t.Fatalf("EndTxn(commit): %v", err)
	}
	if commit.ProducerID != pid || commit.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn(commit) answered producer %d epoch %d, want %d and %d", commit.ProducerID, commit.ProducerEpoch, pid, epoch+1)
	}
	next := commit.ProducerEpoch

	// The next transaction ends while the commit's markers are held.
	if err := kerr.ErrorForCode(endTxn(next, false).ErrorCode); err != kerr.ConcurrentTransactions {
		t.Fatalf("EndTxn(abort) at the epoch the commit answered, before its markers are written: %v, want %v", err, kerr.ConcurrentTransactions)
	}

	// The markers go through; the client's retry aborts.
	if code, body := b.adminDo("DELETE", "/v1/faults", ""); code != http.StatusOK {
		t.Fatalf("DELETE /v1/faults: %d %s", code, body)
	}
	var abort *kmsg.EndTxnResponse
	eventually(t, "EndTxn(abort) to stop waiting for the commit's markers", func() bool {
		abort = endTxn(next, false)
		return abort.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	if err := kerr.ErrorForCode(abort.ErrorCode); err != nil {
		t.Fatalf("EndTxn(abort) once the markers are written: %v", err)
	}
	if abort.ProducerID != pid || abort.ProducerEpoch != next+1 {
		t.Fatalf("EndTxn(abort) answered producer %d epoch %d, want %d and %d", abort.ProducerID, abort.ProducerEpoch, pid, next+1)
	}
	waitStable(t, b, topic)
	if got := readIsolated(t, b, topic, true); !sameValues(got, "committed") {
		t.Fatalf("read_committed: %v, want [committed]", got)
	}
}
