package transport

// AddOffsetsToTxn: v0-4
//
// Behaviour:
//   - With an authorizer: WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//     (GROUP_AUTHORIZATION_FAILED).
//   - The group's __consumer_offsets partition joins the producer's
//     transaction at its coordinator, so that its TxnOffsetCommit and the
//     transaction's markers reach that partition; errors as
//     AddPartitionsToTxn's.
//
// Version notes: v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE
// (KIP-890).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(25, handler{min: 0, max: 4, handle: a.handleAddOffsetsToTxn})
	})
}

func (a *API) handleAddOffsetsToTxn(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	z := c.authz()
	var denied *kerr.Error
	switch {
	case !z.may(write, txnResource, req.TransactionalID):
		denied = kerr.TransactionalIDAuthorizationFailed
	case !z.may(read, groupResource, req.Group):
		denied = kerr.GroupAuthorizationFailed
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		if denied != nil {
			resp.ErrorCode = denied.Code
			return resp
		}
		err := kerr.InvalidGroupID
		if req.Group != "" {
			err = askTxn(a, c, req.TransactionalID,
				func(reply func(*kerr.Error)) any {
					return &txn.OffsetsRequest{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Group: req.Group, Reply: reply}
				},
				func(err *kerr.Error) *kerr.Error { return err })
		}
		resp.ErrorCode = code(clientError(err, req.Version, 2, 4))
		return resp
	}
}
