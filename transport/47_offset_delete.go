package transport

// OffsetDelete: v0
//
// Behaviour:
//   - Delegated to the group's coordinator actor: GROUP_ID_NOT_FOUND for a
//     group that does not exist, NON_EMPTY_GROUP for a non-consumer group
//     with members, GROUP_SUBSCRIBED_TO_TOPIC per partition of a topic a
//     member subscribes to; otherwise tombstones for the committed offsets
//     are written (acks=-1) before the answer.
//   - With an authorizer: DELETE on the group (GROUP_AUTHORIZATION_FAILED),
//     READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions,
//     whose offsets stay).

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
	z := c.authz()
	if !z.may(del, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	denied := unreadable(z, &req.Topics, func(t kmsg.OffsetDeleteRequestTopic) (string, bool) { return t.Topic, true })
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	withDenied := func(r kmsg.Response) kmsg.Response {
		resp := r.(*kmsg.OffsetDeleteResponse)
		if resp.ErrorCode != 0 {
			return resp
		}
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	f := a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
	return func() kmsg.Response { return withDenied(f()) }
}
