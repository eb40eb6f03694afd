package transport

// DescribeGroups: v0-6
//
// Behaviour:
//   - With an authorizer: DESCRIBE on each group
//     (GROUP_AUTHORIZATION_FAILED); v3+ authorized operations when asked
//     (KIP-430).
//   - Each group is asked of its coordinator actor in parallel: state,
//     protocol type, protocol (when Stable) and members with their
//     metadata and assignment (when Stable). A group that does not exist
//     is Dead, and v6+ says GROUP_ID_NOT_FOUND.
//   - NOT_COORDINATOR for a group another node coordinates.
//
// Version notes: v1 throttle; v3 authorized operations (KIP-430); v4 group.instance.id;
// v5 flexible; v6 error message.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(15, handler{min: 0, max: 6, handle: a.handleDescribeGroups})
	})
}

func (a *API) handleDescribeGroups(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	type ask struct {
		call *groupCall
		err  *kerr.Error
	}
	asks := make([]ask, len(req.Groups))
	z := c.authz()
	for i, g := range req.Groups {
		if !z.may(describe, groupResource, g) {
			asks[i].err = kerr.GroupAuthorizationFailed
			continue
		}
		one := kmsg.NewPtrDescribeGroupsRequest()
		one.Version, one.Groups = req.Version, []string{g}
		asks[i].call, asks[i].err = a.startGroupRequest(c, g, one)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for i, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group = g
			err := asks[i].err
			if err == nil {
				var r kmsg.Response
				if r, err = asks[i].call.wait(c, a.RequestTimeout); err == nil {
					rg = r.(*kmsg.DescribeGroupsResponse).Groups[0]
				}
			}
			if err != nil {
				rg.ErrorCode = err.Code
			}
			rg.AuthorizedOperations = authorizedOperationsUnset
			if req.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
				rg.AuthorizedOperations = z.operations(groupResource, g)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}
