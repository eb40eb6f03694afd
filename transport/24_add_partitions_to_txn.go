package transport

// AddPartitionsToTxn: v0-5
//
// Behaviour:
//   - With an authorizer: v0-3 need WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and on each
//     topic (TOPIC_AUTHORIZATION_FAILED, the others
//     OPERATION_NOT_ATTEMPTED); v4+, a broker's, CLUSTER_ACTION
//     (CLUSTER_AUTHORIZATION_FAILED).
//   - v0-3, from producers: the partitions join the producer's
//     transaction at its coordinator (package txn), which writes the new
//     state before answering; a partition of a topic that does not exist
//     is UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
//     nothing added. INVALID_PRODUCER_ID_MAPPING for another producer id,
//     PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2) for another epoch,
//     CONCURRENT_TRANSACTIONS while the transaction ends or its state is
//     being written.
//   - v4+, batched by transaction (KIP-890): each transaction is asked in
//     parallel, with VerifyOnly answering per partition whether it is in
//     the transaction in progress (TRANSACTION_ABORTABLE when not) without
//     adding it. Skein's own partition leaders verify over remoting
//     (txn.Verify); this serves other clients of the API.
//
// Version notes: v2 PRODUCER_FENCED; v3 flexible; v4 batched transactions
// and VerifyOnly; v5 TRANSACTION_ABORTABLE.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(24, handler{min: 0, max: 5, handle: a.handleAddPartitionsToTxn})
	})
}

// addTxn is one transaction of an AddPartitionsToTxn, in either shape.
type addTxn struct {
	id         string
	producerID int64
	epoch      int16
	verifyOnly bool
	topics     []kmsg.AddPartitionsToTxnRequestTransactionTopic
}

func (a *API) handleAddPartitionsToTxn(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	z := c.authz()
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if req.Version < 4 {
			t := addTxn{id: req.TransactionalID, producerID: req.ProducerID, epoch: req.ProducerEpoch}
			for _, rt := range req.Topics {
				t.topics = append(t.topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
			}
			for _, rt := range a.addToTxn(c, &z, req.Version, t) {
				top := kmsg.NewAddPartitionsToTxnResponseTopic()
				top.Topic = rt.Topic
				for _, p := range rt.Partitions {
					top.Partitions = append(top.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
				}
				resp.Topics = append(resp.Topics, top)
			}
			return resp
		}
		// v4+ is a broker's (KIP-890): it needs CLUSTER_ACTION.
		if !z.may(clusterAction, clusterResource, clusterName) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp
		}
		resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
		var wg sync.WaitGroup
		for i, rt := range req.Transactions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := kmsg.NewAddPartitionsToTxnResponseTransaction()
				r.TransactionalID = rt.TransactionalID
				r.Topics = a.addToTxn(c, nil, req.Version, addTxn{id: rt.TransactionalID, producerID: rt.ProducerID, epoch: rt.ProducerEpoch,
					verifyOnly: rt.VerifyOnly, topics: rt.Topics})
				resp.Transactions[i] = r
			}()
		}
		wg.Wait()
		return resp
	}
}

// addToTxn asks one transaction's coordinator and answers per partition;
// z, for a client's own request, authorizes it first.
func (a *API) addToTxn(c *conn, z *authz, version int16, t addTxn) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	im := a.Image()
	var parts []txn.TopicPartition
	unknown := false
	for _, rt := range t.topics {
		tt := im.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			if tt == nil || p < 0 || int(p) >= len(tt.Partitions) {
				unknown = true
			}
			parts = append(parts, txn.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	answer := func(errFor func(tp txn.TopicPartition) *kerr.Error) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
		var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
		for _, rt := range t.topics {
			top := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			top.Topic = rt.Topic
			for _, p := range rt.Partitions {
				err := clientError(errFor(txn.TopicPartition{Topic: rt.Topic, Partition: p}), version, 2, 5)
				top.Partitions = append(top.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: code(err)})
			}
			out = append(out, top)
		}
		return out
	}
	if z != nil && !z.may(write, txnResource, t.id) {
		return answer(func(txn.TopicPartition) *kerr.Error { return kerr.TransactionalIDAuthorizationFailed })
	}
	if z != nil {
		denied := map[string]bool{}
		for _, rt := range t.topics {
			if !z.may(write, topicResource, rt.Topic) {
				denied[rt.Topic] = true
			}
		}
		if len(denied) > 0 {
			return answer(func(tp txn.TopicPartition) *kerr.Error {
				if denied[tp.Topic] {
					return kerr.TopicAuthorizationFailed
				}
				return kerr.OperationNotAttempted
			})
		}
	}
	if unknown {
		return answer(func(tp txn.TopicPartition) *kerr.Error {
			if tt := im.Topic(tp.Topic); tt == nil || tp.Partition < 0 || int(tp.Partition) >= len(tt.Partitions) {
				return kerr.UnknownTopicOrPartition
			}
			return kerr.OperationNotAttempted
		})
	}
	r := askTxn(a, c, t.id,
		func(reply func(txn.AddResult)) any {
			return &txn.AddRequest{ProducerID: t.producerID, Epoch: t.epoch, Partitions: parts, VerifyOnly: t.verifyOnly, Reply: reply}
		},
		func(err *kerr.Error) txn.AddResult { return txn.AddResult{Err: err} })
	return answer(r.PartitionErr)
}
