package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequireStableWhileTxnOffsetCommitWritten (KIP-447): a consumer
// taking a partition over asks for its group's offset with RequireStable;
// while a transactional producer's TxnOffsetCommit of that partition is
// being written (here held, by a delay injected into the transaction
// coordinator's answer to the KIP-890 verification), the answer must be
// UNSTABLE_OFFSET_COMMIT, not the offset the transaction is about to move:
// a consumer starting from it would process again what the transaction
// commits. Once the transaction commits, the offset is the transaction's.
// Found by tests/cluster's TestTransactionalCopyUnderFaults, whose copies
// were duplicated when a rebalance moved a partition while its copier's
// commit was in flight.
func TestRequireStableWhileTxnOffsetCommitWritten(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	const topic, group, id = "stable", "stable-g", "stable-p"
	mustCreate(t, ctx, adm, topic, 1, nil)
	var committed kadm.Offsets
	committed.AddOffset(topic, 0, 5, -1)
	if r, err := adm.CommitOffsets(ctx, group, committed); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	cl := b.client(tv1()) // TxnOffsetCommit v4: verified, not added (KIP-890 part 1)
	pid := beginTxnOffsets(t, ctx, cl, id, group)

	// The commit's record waits for the verification, which the delay
	// holds for 3 s (longer than this test needs: it asks meanwhile).
	b.injectFault(`{"actor": "node/1/txns", "kind": "delay", "delay": "3s", "count": 1, "message": "Verify"}`)
	written := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, pid.ProducerID, pid.ProducerEpoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 10
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		written <- err
	}()
	eventually(t, "the verification held", func() bool {
		code, body := b.adminDo("GET", "/v1/faults", "")
		var f struct{ Faults []json.RawMessage }
		return code == http.StatusOK && json.Unmarshal(body, &f) == nil && len(f.Faults) == 0
	})
	// NB: another client, another connection: a connection's answers
	// leave in request order, behind the held commit's.
	fetch := func() kmsg.OffsetFetchResponseGroupTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := coordinatorRequest[*kmsg.OffsetFetchResponse](t, ctx, b.client(), req)
		if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetFetch: %+v", resp)
		}
		return resp.Groups[0].Topics[0].Partitions[0]
	}
	select {
	case err := <-written:
		t.Fatalf("the TxnOffsetCommit was answered (%v) while its verification was held", err)
	default:
	}
	if p := fetch(); p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("OffsetFetch with RequireStable while a transactional commit is written: offset %d, %v; want UNSTABLE_OFFSET_COMMIT",
			p.Offset, kerr.ErrorForCode(p.ErrorCode))
	}
	if err := <-written; err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	ereq := kmsg.NewPtrEndTxnRequest()
	ereq.TransactionalID, ereq.ProducerID, ereq.ProducerEpoch, ereq.Commit = id, pid.ProducerID, pid.ProducerEpoch, true
	if err := kerr.ErrorForCode(coordinatorRequest[*kmsg.EndTxnResponse](t, ctx, cl, ereq).ErrorCode); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	eventually(t, "the committed offset 10", func() bool {
		p := fetch()
		return p.ErrorCode == 0 && p.Offset == 10
	})
}

// beginTxnOffsets starts a transaction of transactional id id that will
// commit offsets of group: InitProducerId, then AddOffsetsToTxn.
func beginTxnOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, id, group string) *kmsg.InitProducerIDResponse {
	t.Helper()
	ireq := kmsg.NewPtrInitProducerIDRequest()
	ireq.TransactionalID, ireq.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	pid := coordinatorRequest[*kmsg.InitProducerIDResponse](t, ctx, cl, ireq)
	if err := kerr.ErrorForCode(pid.ErrorCode); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	areq := kmsg.NewPtrAddOffsetsToTxnRequest()
	areq.TransactionalID, areq.ProducerID, areq.ProducerEpoch, areq.Group = id, pid.ProducerID, pid.ProducerEpoch, group
	if err := kerr.ErrorForCode(coordinatorRequest[*kmsg.AddOffsetsToTxnResponse](t, ctx, cl, areq).ErrorCode); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	return pid
}
