package transport

// ConsumerGroupDescribe: v0-1
//
// Behaviour:
//   - Each group is asked of its coordinator actor in parallel
//     (coordinator.Group.DescribeConsumer), as DescribeGroups does: the
//     consumer group's state (Empty, Assigning, Reconciling, Stable),
//     group and assignment epochs, assignor, and its members with their
//     epochs, subscriptions, current and target assignments.
//   - A group id that is unknown, or held by a classic group, is
//     GROUP_ID_NOT_FOUND, with Kafka's messages ("Group X not found.",
//     "Group X is not a consumer group."); an empty group id is
//     INVALID_GROUP_ID.
//   - NOT_COORDINATOR for a group another node coordinates.
//
// Version notes: v0 KIP-848; v1 adds the member type (classic or
// consumer: always consumer here). Authorized operations are not computed
// (Skein has no ACLs) and answer the unset value even when asked for.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(69, handler{min: 0, max: 1, handle: a.handleConsumerGroupDescribe})
	})
}

func (a *API) handleConsumerGroupDescribe(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	type ask struct {
		call *groupCall
		err  *kerr.Error
	}
	asks := make([]ask, len(req.Groups))
	for i, g := range req.Groups {
		if g == "" {
			asks[i].err = kerr.InvalidGroupID
			continue
		}
		one := kmsg.NewPtrConsumerGroupDescribeRequest()
		one.Version, one.Groups = req.Version, []string{g}
		asks[i].call, asks[i].err = a.startGroupRequest(c, g, one)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for i, g := range req.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group = g
			err := asks[i].err
			if err == nil {
				var r kmsg.Response
				if r, err = asks[i].call.wait(c, a.RequestTimeout); err == nil {
					rg = r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
				}
			}
			if err != nil {
				rg.ErrorCode = err.Code
			}
			rg.AuthorizedOperations = authorizedOperationsUnset
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}
