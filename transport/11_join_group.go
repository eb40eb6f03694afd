package transport

// JoinGroup: v0-9
//
// Behaviour:
//   - With an authorizer: READ on the group, GROUP_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the group's coordinator actor (coordinator.Group.Join):
//     protocol type and protocol checks across members, session timeout
//     within group.min/max.session.timeout.ms, KIP-394 member ids,
//     static membership (KIP-345), and the join phase of a rebalance. The
//     answer waits until every member has joined or the rebalance timeout
//     fires.
//   - To a consumer group (KIP-848) with members: the member joins it as a
//     classic member, assigned by the broker's assignor and answered at
//     once (coordinator/classic_members.go); SyncGroup, Heartbeat and
//     LeaveGroup follow it there.
//   - NOT_COORDINATOR when this node does not lead the group's
//     __consumer_offsets partition.
//
// Version notes: v1 rebalance timeout; v4 MEMBER_ID_REQUIRED (KIP-394);
// v5 group.instance.id (KIP-345); v6 flexible; v7 protocol type in the
// answer; v8 reason (KIP-800); v9 SkipAssignment (KIP-814).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(11, handler{min: 0, max: 9, handle: a.handleJoinGroup})
	})
}

func (a *API) handleJoinGroup(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.JoinGroupRequest)
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = err.Code, -1, req.MemberID
		return resp
	}
	if z := c.authz(); !z.may(read, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	rebalance := req.SessionTimeoutMillis
	if req.Version >= 1 {
		rebalance = req.RebalanceTimeoutMillis
	}
	wait := time.Duration(max(rebalance, 0))*time.Millisecond + a.RequestTimeout
	return a.askGroup(c, req.Group, req, wait, errResp)
}
