package transport

// OffsetCommit: v2-10
//
// Behaviour:
//   - Delegated to the group's coordinator actor: a member's commit is
//     checked (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
//     REBALANCE_IN_PROGRESS while the generation's assignment is not
//     final); generation -1 with no member id is a simple commit, allowed
//     while the group has no members. Partitions of unknown topics get
//     UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 bytes
//     OFFSET_METADATA_TOO_LARGE.
//   - The offsets are written to the group's __consumer_offsets partition
//     as Kafka's OffsetCommitKey/OffsetCommitValue records, acks=-1: the
//     answer comes once they are durable.
//   - With an authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED on
//     every partition), READ on each topic (TOPIC_AUTHORIZATION_FAILED on
//     its partitions, which are not committed; the others are).
//   - The retention time of v2-4 is ignored (offsets.retention.minutes
//     applies, as since Kafka 2.1).
//
// Version notes: v3 throttle; v6 leader epoch (KIP-320); v7
// group.instance.id (KIP-345); v8 flexible; v10 topic ids (KIP-848).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(8, handler{min: 2, max: 10, handle: a.handleOffsetCommit})
	})
}

func (a *API) handleOffsetCommit(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.OffsetCommitRequest)
	if req.Version >= 10 {
		im := a.Image()
		for i := range req.Topics {
			t := &req.Topics[i]
			t.Topic = ""
			if tt := im.TopicsByID[image.TopicID(t.TopicID)]; tt != nil {
				t.Topic = tt.Name
			}
		}
	}
	answer := func(resp *kmsg.OffsetCommitResponse, topics []kmsg.OffsetCommitRequestTopic, err *kerr.Error) {
		for _, t := range topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	z := c.authz()
	if !z.may(read, groupResource, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		answer(resp, req.Topics, kerr.GroupAuthorizationFailed)
		return respond(resp)
	}
	// A topic named by an id no topic has ("") is the coordinator's to
	// answer.
	denied := unreadable(z, &req.Topics, func(t kmsg.OffsetCommitRequestTopic) (string, bool) { return t.Topic, t.Topic != "" })
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		answer(resp, req.Topics, err)
		return resp
	}
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	if denied == nil {
		return a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
	}
	withDenied := func(r kmsg.Response) kmsg.Response {
		answer(r.(*kmsg.OffsetCommitResponse), denied, kerr.TopicAuthorizationFailed)
		return r
	}
	if len(req.Topics) == 0 {
		return respond(withDenied(req.ResponseKind()))
	}
	f := a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
	return func() kmsg.Response { return withDenied(f()) }
}
