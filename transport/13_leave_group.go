package transport

// LeaveGroup: v0-5
//
// Behaviour:
//   - With an authorizer: READ on the group, GROUP_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the group's coordinator actor (coordinator.Group.Leave):
//     the member leaves and the rest rebalance. v3+ batches members, each
//     named by member id and/or group.instance.id, with an error each
//     (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
//
// Version notes: v3 batched members (KIP-345); v4 flexible; v5 reason
// (KIP-800).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(13, handler{min: 0, max: 5, handle: a.handleLeaveGroup})
	})
}

func (a *API) handleLeaveGroup(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.LeaveGroupRequest)
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	if z := c.authz(); !z.may(read, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	return a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
}
