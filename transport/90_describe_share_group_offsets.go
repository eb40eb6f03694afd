package transport

// DescribeShareGroupOffsets: v0-1
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION for every group
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - With an authorizer: DESCRIBE on each group (the group's
//     GROUP_AUTHORIZATION_FAILED) and DESCRIBE on each topic (its
//     partitions TOPIC_AUTHORIZATION_FAILED; with Topics null, the topics
//     the client may not describe are left out), as Kafka 4.2.
//   - Each group is asked of its coordinator actor in parallel
//     (coordinator share_offsets.go), which asks the share coordinator
//     for each partition's state summary: StartOffset and LeaderEpoch (-1
//     and 0 for a partition with no share state) and, from v1, Lag. Topics
//     null describes every partition the group has share state for.
//   - As Kafka 4.2, the group is not looked up: a group id that is unknown
//     or held by a classic or consumer group, an unknown topic or
//     partition, all have no share state and are answered so, without an
//     error; NOT_COORDINATOR for a group another node coordinates.
//
// Version notes: v0 KIP-932; v1 adds Lag (KIP-1226).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(90, handler{min: 0, max: 1, handle: a.handleDescribeShareGroupOffsets})
	})
}

func (a *API) handleDescribeShareGroupOffsets(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, err.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return respond(resp)
	}
	type ask struct {
		call   *groupCall
		err    *kerr.Error
		denied []kmsg.DescribeShareGroupOffsetsResponseGroupTopic // topics the client may not describe
	}
	asks := make([]ask, len(req.Groups))
	z := c.authz()
	describable := z.memo(describe, topicResource)
	for i, g := range req.Groups {
		if !z.may(describe, groupResource, g.GroupID) {
			asks[i].err = kerr.GroupAuthorizationFailed
			continue
		}
		if g.GroupID == "" {
			asks[i].err = kerr.InvalidGroupID
			continue
		}
		one := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		one.Version = req.Version
		rg := kmsg.DescribeShareGroupOffsetsRequestGroup{GroupID: g.GroupID}
		if g.Topics != nil {
			rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
		}
		for _, t := range g.Topics {
			if describable(t.Topic) {
				rg.Topics = append(rg.Topics, t)
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			asks[i].denied = append(asks[i].denied, rt)
		}
		one.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{rg}
		asks[i].call, asks[i].err = a.startGroupRequest(c, g.GroupID, one)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for i, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID = g.GroupID
			err := asks[i].err
			if err == nil {
				var r kmsg.Response
				if r, err = asks[i].call.wait(c, a.RequestTimeout); err == nil {
					rg = r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
				}
			}
			if err != nil {
				rg.ErrorCode, rg.Topics = err.Code, nil
			}
			if rg.ErrorCode == 0 {
				// Topics null: leave out what the client may not see.
				kept := rg.Topics[:0]
				for _, t := range rg.Topics {
					if describable(t.Topic) {
						kept = append(kept, t)
					}
				}
				rg.Topics = append(kept, asks[i].denied...)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}
