package transport

// SyncGroup: v0-5
//
// Behaviour:
//   - With an authorizer: READ on the group, GROUP_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the group's coordinator actor (coordinator.Group.Sync):
//     member, instance id (FENCED_INSTANCE_ID) and generation
//     (ILLEGAL_GENERATION) checks, REBALANCE_IN_PROGRESS while members
//     join; the leader's assignment is handed to every member, and a
//     follower's answer waits for it.
//
// Version notes: v3 group.instance.id (KIP-345); v4 flexible; v5 protocol
// type and name, checked against the group's (KIP-559).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(14, handler{min: 0, max: 5, handle: a.handleSyncGroup})
	})
}

// syncWait bounds a SyncGroup's wait for the leader's assignment: the
// leader's session timeout ends it sooner when the leader is gone.
const syncWait = 5 * time.Minute

func (a *API) handleSyncGroup(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.SyncGroupRequest)
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	if z := c.authz(); !z.may(read, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	return a.askGroup(c, req.Group, req, syncWait, errResp)
}
