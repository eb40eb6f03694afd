package transport

// ConsumerGroupHeartbeat: v0-1
//
// Behaviour:
//   - With group.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED) and
//     DESCRIBE on every subscribed topic (TOPIC_AUTHORIZATION_FAILED naming
//     them), as Kafka 4.
//   - Delegated to the group's coordinator actor
//     (coordinator.Group.ConsumerHeartbeat): the KIP-848 consumer protocol
//     with server-side assignment (uniform and range assignors), member
//     epochs, incremental revocation before a partition moves to another
//     member, session timeouts and heartbeat intervals (the group's
//     configs, else group.consumer.session.timeout.ms and
//     group.consumer.heartbeat.interval.ms),
//     leaves (member epoch -1, or -2 for a static member), static
//     membership (InstanceId) and regex subscriptions
//     (SubscribedTopicRegex; INVALID_REGULAR_EXPRESSION when it does not
//     compile). The group is written to __consumer_offsets and answered
//     once durable.
//   - A group id used by a classic group with members: the group becomes
//     a consumer group whose classic members stay, when
//     group.consumer.migration.policy allows (upgrade, bidirectional);
//     GROUP_ID_NOT_FOUND otherwise.
//   - NOT_COORDINATOR when this node does not lead the group's
//     __consumer_offsets partition.
//
// Version notes: v0 server-generated member ids (KIP-848 early access);
// v1 client-generated member ids and SubscribedTopicRegex. franz-go and
// librdkafka pin v1.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(68, handler{min: 0, max: 1, handle: a.handleConsumerGroupHeartbeat})
	})
}

func (a *API) handleConsumerGroupHeartbeat(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	if err := a.featureOff(image.GroupVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = err.Code // member epoch 0, as Kafka answers an error
		return resp
	}
	z := c.authz()
	if !z.may(read, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	// As Kafka 4: every topic named in the subscription must be one the
	// member may DESCRIBE.
	var hidden []string
	for _, t := range req.SubscribedTopicNames {
		if !z.may(describe, topicResource, t) {
			hidden = append(hidden, t)
		}
	}
	if hidden != nil {
		resp := errResp(kerr.TopicAuthorizationFailed).(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorMessage = kmsg.StringPtr("Unauthorized topics: " + strings.Join(hidden, ", ") + "; " + z.denial(describe, topicResource, hidden[0]))
		return respond(resp)
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	return a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
}
