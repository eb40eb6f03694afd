package transport

// DeleteShareGroupOffsets: v0
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: DELETE on the group (GROUP_AUTHORIZATION_FAILED)
//     and READ on each topic (the topic's TOPIC_AUTHORIZATION_FAILED), as
//     Kafka 4.2.
//   - Delegated to the group's coordinator actor (coordinator
//     share_offsets.go): the group must have no members (NON_EMPTY_GROUP);
//     the share state of each named topic's partitions is deleted by the
//     share coordinator and the group no longer records it. A group id
//     that is unknown or held by a classic or consumer group is
//     GROUP_ID_NOT_FOUND; an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
//   - NOT_COORDINATOR when this node does not lead the group's
//     __consumer_offsets partition.
//
// Version notes: v0 KIP-932.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(92, handler{min: 0, max: 0, handle: a.handleDeleteShareGroupOffsets})
	})
}

func (a *API) handleDeleteShareGroupOffsets(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr("The version of API is not supported.")
		return respond(resp)
	}
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	z := c.authz()
	if !z.may(del, groupResource, req.GroupID) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	if req.GroupID == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	readable := z.memo(read, topicResource)
	one := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	one.Version, one.GroupID = req.Version, req.GroupID
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range req.Topics {
		if readable(t.Topic) {
			one.Topics = append(one.Topics, t)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	call, err := a.startGroupRequest(c, req.GroupID, one)
	if err != nil {
		return respond(errResp(err))
	}
	return func() kmsg.Response {
		r, err := call.wait(c, a.RequestTimeout)
		if err != nil {
			return errResp(err)
		}
		resp := r.(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.Version = req.Version
		if resp.ErrorCode == 0 {
			resp.Topics = append(resp.Topics, denied...)
		}
		return resp
	}
}
