package transport

// EndTxn: v0-5
//
// Behaviour:
//   - With an authorizer: WRITE on the transactional id,
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise.
//   - The producer's coordinator (package txn) writes PrepareCommit or
//     PrepareAbort and answers once it is durable: the outcome is decided.
//     It then writes a marker to every partition of the transaction (and
//     to the __consumer_offsets partition of its offsets), over remoting
//     to their leaders, and CompleteCommit or CompleteAbort once all are
//     written. A retry of a finished commit or abort succeeds; the other
//     outcome is INVALID_TXN_STATE; CONCURRENT_TRANSACTIONS while markers
//     of the same outcome are still being written.
//   - v5+ (KIP-890 transaction version 2): every commit or abort bumps the
//     producer epoch (the markers carry the new one, so a late batch of the
//     finished transaction is refused); the answer carries the producer id
//     and epoch to use next.
//
// Version notes: v2 PRODUCER_FENCED; v3 flexible; v4
// TRANSACTION_ABORTABLE; v5 ProducerID and ProducerEpoch (KIP-890).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(26, handler{min: 0, max: 5, handle: a.handleEndTxn})
	})
}

func (a *API) handleEndTxn(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.EndTxnRequest)
	mayWrite := c.authz().may(write, txnResource, req.TransactionalID)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		if !mayWrite {
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
			return resp
		}
		r := askTxn(a, c, req.TransactionalID,
			func(reply func(txn.EndResult)) any {
				return &txn.EndRequest{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Commit: req.Commit, TV2: req.Version >= 5, Reply: reply}
			},
			func(err *kerr.Error) txn.EndResult { return txn.EndResult{Err: err, ProducerID: -1, Epoch: -1} })
		resp.ErrorCode = code(clientError(r.Err, req.Version, 2, 4))
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.Epoch
		if r.Err != nil {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		return resp
	}
}
