package transport

// ShareGroupDescribe: v1
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION for every group
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: DESCRIBE on each group
//     (GROUP_AUTHORIZATION_FAILED); a group with a member subscribed to or
//     assigned a topic the client may not DESCRIBE is
//     TOPIC_AUTHORIZATION_FAILED, without its members; authorized
//     operations when asked.
//   - Each group is asked of its coordinator actor in parallel
//     (coordinator.Group.DescribeShare): the share group's state (Empty,
//     Stable), group and assignment epochs, the "simple" assignor, and its
//     members with their epochs, racks, subscriptions and assignments.
//   - A group id that is unknown, or held by a classic or consumer group,
//     is GROUP_ID_NOT_FOUND, with Kafka's messages ("Group X not found.",
//     "Group X is not a share group."); an empty group id is
//     INVALID_GROUP_ID.
//   - NOT_COORDINATOR for a group another node coordinates.
//
// Version notes: v0 was KIP-932's early access (Kafka 4.0), removed in
// Kafka 4.1; v1 is the stable version, the one Kafka 4.2 serves.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(77, handler{min: 1, max: 1, handle: a.handleShareGroupDescribe})
	})
}

func (a *API) handleShareGroupDescribe(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for _, g := range req.GroupIDs {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = g, err.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return respond(resp)
	}
	describable := c.authz().memo(describe, topicResource)
	answers := a.describeGroups(c, req.GroupIDs, func(g string) kmsg.Request {
		one := kmsg.NewPtrShareGroupDescribeRequest()
		one.Version, one.GroupIDs = req.Version, []string{g}
		return one
	})
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for i, ans := range answers() {
			g := req.GroupIDs[i]
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID = g
			if ans.err == nil {
				rg = ans.resp.(*kmsg.ShareGroupDescribeResponse).Groups[0]
			}
			fillDescribed(c, g, ans.err, &rg.ErrorCode, &rg.AuthorizedOperations, req.IncludeAuthorizedOperations, func() { hideShareMembers(&rg, describable) })
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// hideShareMembers answers a share group one of whose members subscribes
// to or is assigned a topic the client may not DESCRIBE as Kafka does:
// TOPIC_AUTHORIZATION_FAILED, without the members.
func hideShareMembers(rg *kmsg.ShareGroupDescribeResponseGroup, describable func(string) bool) {
	for _, m := range rg.Members {
		topics := append([]string(nil), m.SubscribedTopicNames...)
		for _, t := range m.Assignment.TopicPartitions {
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
