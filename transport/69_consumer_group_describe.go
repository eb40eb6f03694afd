package transport

// ConsumerGroupDescribe: v0-1
//
// Behaviour:
//   - With group.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION for every group
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: DESCRIBE on each group
//     (GROUP_AUTHORIZATION_FAILED); a group with a member on a topic the
//     client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED; authorized
//     operations when asked.
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
// consumer: always consumer here).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(69, handler{min: 0, max: 1, handle: a.handleConsumerGroupDescribe})
	})
}

func (a *API) handleConsumerGroupDescribe(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	if err := a.featureOff(image.GroupVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, err.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return respond(resp)
	}
	describable := c.authz().memo(describe, topicResource)
	answers := a.describeGroups(c, req.Groups, func(g string) kmsg.Request {
		one := kmsg.NewPtrConsumerGroupDescribeRequest()
		one.Version, one.Groups = req.Version, []string{g}
		return one
	})
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for i, ans := range answers() {
			g := req.Groups[i]
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group = g
			if ans.err == nil {
				rg = ans.resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
			}
			fillDescribed(c, g, ans.err, &rg.ErrorCode, &rg.AuthorizedOperations, req.IncludeAuthorizedOperations, func() { hideMembers(&rg, describable) })
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// hideMembers answers a group one of whose members subscribes to or is
// assigned a topic the client may not DESCRIBE as Kafka 4 does:
// TOPIC_AUTHORIZATION_FAILED, without the members.
func hideMembers(rg *kmsg.ConsumerGroupDescribeResponseGroup, describable func(string) bool) {
	for _, m := range rg.Members {
		topics := slices.Clone(m.SubscribedTopics)
		for _, t := range m.Assignment.TopicPartitions {
			topics = append(topics, t.Topic)
		}
		for _, t := range m.TargetAssignment.TopicPartitions {
			topics = append(topics, t.Topic)
		}
		for _, t := range topics {
			if !describable(t) {
				rg.ErrorCode, rg.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
				rg.Members = nil
				return
			}
		}
	}
}
