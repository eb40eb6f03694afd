package transport

// StreamsGroupDescribe: v0
//
// Behaviour:
//   - With streams.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION for every group
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); a group whose
//     topology names a topic the client may not DESCRIBE is
//     TOPIC_AUTHORIZATION_FAILED, without its topology and members;
//     authorized operations when asked.
//   - Each group is asked of its coordinator actor in parallel
//     (coordinator.Group.DescribeStreams): the streams group's state
//     (Empty, NotReady, Assigning, Reconciling, Stable), group and
//     assignment epochs, its topology as configured, and its members
//     with their process ids, endpoints, assignments and targets.
//   - A group id that is unknown, or held by another kind of group, is
//     GROUP_ID_NOT_FOUND with Kafka's messages; an empty group id is
//     INVALID_GROUP_ID.
//   - NOT_COORDINATOR for a group another node coordinates.
//
// Version notes: v0 is the version Kafka 4.2 serves.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(89, handler{min: 0, max: 0, handle: a.handleStreamsGroupDescribe})
	})
}

func (a *API) handleStreamsGroupDescribe(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.StreamsGroupDescribeRequest)
	if err := a.featureOff(image.StreamsVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, err.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return respond(resp)
	}
	describable := c.authz().memo(describe, topicResource)
	answers := a.describeGroups(c, req.Groups, func(g string) kmsg.Request {
		one := kmsg.NewPtrStreamsGroupDescribeRequest()
		one.Version, one.Groups = req.Version, []string{g}
		return one
	})
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for i, ans := range answers() {
			g := req.Groups[i]
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group = g
			if ans.err == nil {
				rg = ans.resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
			}
			fillDescribed(c, g, ans.err, &rg.ErrorCode, &rg.AuthorizedOperations, req.IncludeAuthorizedOperations, func() { hideStreamsGroup(&rg, describable) })
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// hideStreamsGroup answers a streams group whose topology names a topic
// the client may not DESCRIBE with TOPIC_AUTHORIZATION_FAILED, without
// its topology and members.
func hideStreamsGroup(rg *kmsg.StreamsGroupDescribeResponseGroup, describable func(string) bool) {
	if rg.Topology == nil {
		return
	}
	for _, s := range rg.Topology.Subtopologies {
		topics := append(append([]string(nil), s.SourceTopics...), s.RepartitionSinkTopics...)
		for _, ti := range append(append([]kmsg.TopicInfo(nil), s.StateChangelogTopics...), s.RepartitionSourceTopics...) {
			topics = append(topics, ti.Topic)
		}
		for _, t := range topics {
			if !describable(t) {
				rg.ErrorCode, rg.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("The described group uses topics that the client is not authorized to describe.")
				rg.Topology, rg.Members = nil, nil
				return
			}
		}
	}
}
