package transport

// Heartbeat: v0-4
//
// Behaviour:
//   - With an authorizer: READ on the group, GROUP_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the group's coordinator actor
//     (coordinator.Group.Heartbeat): restarts the member's session timer;
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID and ILLEGAL_GENERATION as in
//     Kafka, REBALANCE_IN_PROGRESS while members join.
//
// Version notes: v3 group.instance.id (KIP-345); v4 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(12, handler{min: 0, max: 4, handle: a.handleHeartbeat})
	})
}

func (a *API) handleHeartbeat(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.HeartbeatRequest)
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
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
