package transport

// ShareGroupHeartbeat: v1
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED) and
//     DESCRIBE on every subscribed topic (TOPIC_AUTHORIZATION_FAILED naming
//     them), as Kafka 4.2.
//   - Delegated to the group's coordinator actor
//     (coordinator.Group.ShareHeartbeat): KIP-932's share group membership
//     with client-generated member ids (epoch 0 joins, -1 leaves), the
//     group epoch, the share "simple" assignor (a partition may be shared
//     by several members; no revocation), group.share.max.size
//     (GROUP_MAX_SIZE_REACHED), session timeouts and heartbeat intervals
//     (the group's share.session.timeout.ms and share.heartbeat.interval.ms,
//     else group.share.*). A group id held by a classic or consumer group,
//     or an unknown one with an epoch other than 0, is GROUP_ID_NOT_FOUND.
//     The group is written to __consumer_offsets and answered once durable.
//   - NOT_COORDINATOR when this node does not lead the group's
//     __consumer_offsets partition.
//
// Version notes: v0 was KIP-932's early access (Kafka 4.0), removed in
// Kafka 4.1; v1 is the stable version, the one Kafka 4.2 serves.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(76, handler{min: 1, max: 1, handle: a.handleShareGroupHeartbeat})
	})
}

func (a *API) handleShareGroupHeartbeat(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	z := c.authz()
	if !z.may(read, groupResource, req.GroupID) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	var hidden []string
	for _, t := range req.SubscribedTopicNames {
		if !z.may(describe, topicResource, t) {
			hidden = append(hidden, t)
		}
	}
	if hidden != nil {
		resp := errResp(kerr.TopicAuthorizationFailed).(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorMessage = kmsg.StringPtr("Unauthorized topics: " + strings.Join(hidden, ", ") + "; " + z.denial(describe, topicResource, hidden[0]))
		return respond(resp)
	}
	if req.GroupID == "" {
		resp := errResp(kerr.InvalidRequest).(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorMessage = kmsg.StringPtr("GroupId can't be empty.")
		return respond(resp)
	}
	return a.askGroup(c, req.GroupID, req, a.RequestTimeout, errResp)
}
