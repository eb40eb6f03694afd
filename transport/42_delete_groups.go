package transport

// DeleteGroups: v0-2
//
// Behaviour:
//   - With an authorizer: DELETE on each group, GROUP_AUTHORIZATION_FAILED
//     otherwise.
//   - Each group is asked of its coordinator actor in parallel: only an
//     Empty group is deleted (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND
//     for one that does not exist); tombstones for its offsets and its
//     metadata are written (acks=-1) before the answer.
//
// Version notes: v1 throttle; v2 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(42, handler{min: 0, max: 2, handle: a.handleDeleteGroups})
	})
}

func (a *API) handleDeleteGroups(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	type ask struct {
		call *groupCall
		err  *kerr.Error
	}
	asks := make([]ask, len(req.Groups))
	z := c.authz()
	for i, g := range req.Groups {
		if !z.may(del, groupResource, g) {
			asks[i].err = kerr.GroupAuthorizationFailed
			continue
		}
		one := kmsg.NewPtrDeleteGroupsRequest()
		one.Version, one.Groups = req.Version, []string{g}
		asks[i].call, asks[i].err = a.startGroupRequest(c, g, one)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for i, g := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = g
			err := asks[i].err
			if err == nil {
				var r kmsg.Response
				if r, err = asks[i].call.wait(c, a.RequestTimeout); err == nil {
					rg = r.(*kmsg.DeleteGroupsResponse).Groups[0]
				}
			}
			if err != nil {
				rg.ErrorCode = err.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}
