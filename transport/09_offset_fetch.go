package transport

// OffsetFetch: v1-10
//
// Behaviour:
//   - Each group goes to its coordinator actor, which answers from the
//     committed offsets it holds (rebuilt from __consumer_offsets when it
//     starts): offset -1 and empty metadata for a partition with none;
//     null topics (v2+) means every committed offset of the group.
//   - v8+ batches groups: each is asked in parallel and answered with its
//     own error code.
//   - RequireStable (v7+, KIP-447): a partition whose offset a transaction
//     not over yet committed answers UNSTABLE_OFFSET_COMMIT (retriable)
//     instead of the offset.
//   - v9+ to a consumer-protocol group (KIP-848): a member id must be a
//     member's (UNKNOWN_MEMBER_ID) fetching at its epoch
//     (STALE_MEMBER_EPOCH); no member id with epoch -1 (admin clients)
//     may fetch. Classic groups check no member, as Kafka.
//   - Offsets on a deleted topic are deleted by the coordinator soon after
//     the topic (coordinator.TopicsDeleted); v10 leaves out those not
//     deleted yet, which have no topic id. A topic named by an id that no
//     topic has is answered UNKNOWN_TOPIC_ID on each partition, as Kafka
//     answers it.
//   - With an authorizer: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED
//     as its error) and on each topic: a named topic the client may not
//     describe is TOPIC_AUTHORIZATION_FAILED on its partitions; of all
//     topics (null), those are left out.
//
// Version notes: v2 group error code, null topics; v5 leader epoch; v6
// flexible; v7 RequireStable (KIP-447); v8 batched groups (KIP-709); v9
// member id and epoch (KIP-848); v10
// topic ids.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(9, handler{min: 1, max: 10, handle: a.handleOffsetFetch})
	})
}

func (a *API) handleOffsetFetch(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.OffsetFetchRequest)
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	im := a.Image()
	// unknownIDs are, per group, the topics a v10 request names by an id
	// no topic has: not asked of the coordinator, answered
	// UNKNOWN_TOPIC_ID on every partition, as Kafka answers them.
	unknownIDs := make([][]kmsg.OffsetFetchRequestGroupTopic, len(groups))
	if req.Version >= 10 {
		for i := range groups {
			var known []kmsg.OffsetFetchRequestGroupTopic
			for _, t := range groups[i].Topics {
				if tt := im.TopicsByID[image.TopicID(t.TopicID)]; tt != nil {
					t.Topic = tt.Name
					known = append(known, t)
				} else {
					unknownIDs[i] = append(unknownIDs[i], t)
				}
			}
			if groups[i].Topics != nil {
				groups[i].Topics = known
				if known == nil {
					groups[i].Topics = []kmsg.OffsetFetchRequestGroupTopic{}
				}
			}
		}
	}
	type ask struct {
		call *groupCall
		err  *kerr.Error
	}
	asks := make([]ask, len(groups))
	z := c.authz()
	describable := z.memo(describe, topicResource)
	for i, g := range groups {
		if !z.may(describe, groupResource, g.Group) {
			asks[i].err = kerr.GroupAuthorizationFailed
			continue
		}
		one := kmsg.NewPtrOffsetFetchRequest()
		one.Version, one.Groups = 8, []kmsg.OffsetFetchRequestGroup{g}
		one.RequireStable = req.RequireStable
		asks[i].call, asks[i].err = a.startGroupRequest(c, g.Group, one)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		for i, g := range groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			err := asks[i].err
			if err == nil {
				var r kmsg.Response
				if r, err = asks[i].call.wait(c, a.RequestTimeout); err == nil {
					rg = r.(*kmsg.OffsetFetchResponse).Groups[0]
				}
			}
			if err != nil {
				rg.ErrorCode = err.Code
			}
			hideTopics(&rg, g.Topics != nil, describable, z)
			if req.Version >= 10 {
				// v10 names topics by id only: commits on a topic that no
				// longer exists have no id to be named by, and are left
				// out. The coordinator deletes them with the topic
				// (coordinator.TopicsDeleted), but after DeleteTopics is
				// answered, and not at all in a partition that was still
				// loading: until then they are hidden here.
				kept := rg.Topics[:0]
				for _, gt := range rg.Topics {
					if t := im.Topic(gt.Topic); t != nil {
						gt.TopicID = t.ID
						kept = append(kept, gt)
					}
				}
				rg.Topics = kept
				if rg.ErrorCode == 0 {
					for _, t := range unknownIDs[i] {
						gt := kmsg.NewOffsetFetchResponseGroupTopic()
						gt.TopicID = t.TopicID
						for _, p := range t.Partitions {
							gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
							gp.Partition, gp.Offset, gp.LeaderEpoch = p, -1, -1
							gp.Metadata, gp.ErrorCode = kmsg.StringPtr(""), kerr.UnknownTopicID.Code
							gt.Partitions = append(gt.Partitions, gp)
						}
						rg.Topics = append(rg.Topics, gt)
					}
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		if req.Version >= 8 {
			return resp
		}
		rg := resp.Groups[0]
		resp.Groups = nil
		resp.ErrorCode = rg.ErrorCode
		for _, gt := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = gt.Topic
			for _, gp := range gt.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if req.Version < 2 && rg.ErrorCode != 0 {
			// v1 has no group error code: every partition carries it.
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, rg.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	}
}

// hideTopics applies DESCRIBE on topics to a group's offsets: a topic the
// request named is answered TOPIC_AUTHORIZATION_FAILED on each partition,
// one it did not name (all topics asked) is left out, as Kafka does.
func hideTopics(rg *kmsg.OffsetFetchResponseGroup, named bool, describable func(string) bool, z authz) {
	kept := rg.Topics[:0]
	for _, gt := range rg.Topics {
		switch {
		case named && !describable(gt.Topic):
			for j := range gt.Partitions {
				gp := &gt.Partitions[j]
				gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = -1, -1, kmsg.StringPtr(""), kerr.TopicAuthorizationFailed.Code
			}
		case !named && !z.sees(describe, topicResource, gt.Topic):
			continue
		}
		kept = append(kept, gt)
	}
	rg.Topics = kept
}
