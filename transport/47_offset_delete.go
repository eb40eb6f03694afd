package transport

// OffsetDelete: v0
//
// Behaviour:
//   - Delegated to the group's coordinator actor: GROUP_ID_NOT_FOUND for a
//     group that does not exist, NON_EMPTY_GROUP for a non-consumer group
//     with members, GROUP_SUBSCRIBED_TO_TOPIC per partition of a topic a
//     member subscribes to; otherwise tombstones for the committed offsets
//     are written (acks=-1) before the answer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(47, handler{min: 0, max: 0, handle: a.handleOffsetDelete})
	})
}

func (a *API) handleOffsetDelete(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	return a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
}
