package transport

// DescribeTransactions: v0
//
// Behaviour:
//   - With an authorizer: DESCRIBE on each transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the partitions of topics the
//     client may not DESCRIBE are left out, as Kafka.
//   - Each transactional id is described by its coordinator actor on this
//     node (KIP-664): state (Kafka's names), producer id and epoch,
//     timeout, start time and partitions; TRANSACTIONAL_ID_NOT_FOUND for an
//     id with no state, NOT_COORDINATOR for one coordinated elsewhere
//     (admin clients ask each id's coordinator), in parallel.

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(65, handler{min: 0, max: 0, handle: a.handleDescribeTransactions})
	})
}

func (a *API) handleDescribeTransactions(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	z := c.authz()
	describable := make([]bool, len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		describable[i] = z.may(describe, txnResource, id)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		resp.TransactionStates = make([]kmsg.DescribeTransactionsResponseTransactionState, len(req.TransactionalIDs))
		var wg sync.WaitGroup
		for i, id := range req.TransactionalIDs {
			if !describable[i] {
				d := kmsg.NewDescribeTransactionsResponseTransactionState()
				d.TransactionalID, d.ErrorCode, d.ProducerID, d.ProducerEpoch, d.StartTimestamp = id, kerr.TransactionalIDAuthorizationFailed.Code, -1, -1, -1
				resp.TransactionStates[i] = d
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp.TransactionStates[i] = askTxn(a, c, id,
					func(reply func(kmsg.DescribeTransactionsResponseTransactionState)) any {
						return &txn.DescribeRequest{Reply: reply}
					},
					func(err *kerr.Error) kmsg.DescribeTransactionsResponseTransactionState {
						d := kmsg.NewDescribeTransactionsResponseTransactionState()
						d.TransactionalID, d.ErrorCode, d.ProducerID, d.ProducerEpoch, d.StartTimestamp = id, err.Code, -1, -1, -1
						return d
					})
			}()
		}
		wg.Wait()
		// As Kafka: the partitions of topics the client may not describe
		// are left out.
		for i := range resp.TransactionStates {
			s := &resp.TransactionStates[i]
			s.Topics = slices.DeleteFunc(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !z.sees(describe, topicResource, t.Topic)
			})
		}
		return resp
	}
}
