package transport

// InitProducerId: v0-5
//
// Behaviour:
//   - With an authorizer: WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, IDEMPOTENT_WRITE
//     on the cluster or WRITE on any topic (CLUSTER_AUTHORIZATION_FAILED),
//     as Kafka since 3.0.
//   - Idempotent producers (no transactional id) get a fresh producer id
//     with epoch 0. Ids come from blocks the controller hands out and
//     records durably, so no id is ever given twice, across restarts too.
//   - A request naming a transactional id goes to the id's transaction
//     coordinator actor (package txn), on the node leading the id's
//     __transaction_state partition (NOT_COORDINATOR elsewhere): a new id
//     gets a fresh producer id, a known one its epoch bumped (an older
//     producer of the id is fenced), and a transaction in progress is
//     aborted first (CONCURRENT_TRANSACTIONS until it is); KIP-360 recovery
//     with the producer id and epoch a v3+ producer sends;
//     INVALID_TRANSACTION_TIMEOUT above transaction.max.timeout.ms. The
//     answer comes once the id's new state is durable.
//   - Without a transactional id, the id and epoch a v3+ producer sends
//     (KIP-360) are ignored and a new id is handed out, as Kafka does.
//
// Version notes: v2 flexible; v3 ProducerID/ProducerEpoch (KIP-360).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(22, handler{min: 0, max: 5, handle: a.handleInitProducerID})
	})
}

func (a *API) handleInitProducerID(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.InitProducerIDRequest)
	z := c.authz()
	var denied *kerr.Error
	switch {
	case req.TransactionalID != nil:
		if !z.may(write, txnResource, *req.TransactionalID) {
			denied = kerr.TransactionalIDAuthorizationFailed
		}
	case !z.may(idempotentWrite, clusterResource, clusterName) && !z.mayAny(write, topicResource):
		// As Kafka since 3.0 (KIP-679): WRITE on any topic will do.
		denied = kerr.ClusterAuthorizationFailed
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if denied != nil {
			resp.ErrorCode = denied.Code
			return resp
		}
		if req.TransactionalID != nil {
			return askTxn(a, c, *req.TransactionalID,
				func(reply func(*kmsg.InitProducerIDResponse)) any { return &txn.InitRequest{Req: req, Reply: reply} },
				func(err *kerr.Error) *kmsg.InitProducerIDResponse { resp.ErrorCode = err.Code; return resp })
		}
		id, err := a.NewProducerID()
		if err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}
}
