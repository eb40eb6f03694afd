package transport

// ShareAcknowledge: v1-2 (KIP-932)
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - A share consumer's acknowledgements without a fetch, on each
//     partition's leader: ACCEPT, RELEASE (delivered again later, or
//     archived at share.delivery.count.limit), REJECT, GAP, and from v2
//     RENEW (KIP-1222, only with IsRenewAck). Each partition's batches
//     apply atomically; the answer waits until they are durable in
//     __share_group_state. An offset the member does not hold acquired is
//     INVALID_RECORD_STATE; malformed batches INVALID_REQUEST.
//   - The share session's epoch must match (0 is INVALID_SHARE_SESSION_EPOCH:
//     a session opens with ShareFetch); -1 applies the acknowledgements,
//     releases what the member still holds and ends the session, which a
//     consumer's close sends.
//   - READ on the group, READ on each topic; NOT_LEADER_OR_FOLLOWER with
//     the current leader (KIP-951), any other partition with CurrentLeader
//     0/0 (as Kafka: the field has no default).
//   - AcquisitionLockTimeoutMillis (v2) is the group's
//     share.record.lock.duration.ms, as Kafka answers it (KafkaApis
//     handleShareAcknowledgeRequest), 0 with a request-wide error.
//
// Version notes:
//   - v0 was Kafka's early access, removed in Kafka 4.1; not served.
//   - v2: IsRenewAck.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/share"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(79, handler{min: 1, max: 2, handle: a.handleShareAcknowledge})
	})
}

func (a *API) handleShareAcknowledge(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	fail := func(err *kerr.Error) finish {
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	z := c.authz()
	switch {
	case group == "" || member == "" || len(member) > 36:
		return fail(kerr.InvalidRequest)
	case !z.may(read, groupResource, group):
		return fail(kerr.GroupAuthorizationFailed)
	case req.ShareSessionEpoch == 0:
		return fail(kerr.InvalidShareSessionEpoch)
	}
	readable := z.memo(read, topicResource)
	return func() kmsg.Response {
		im := a.Image()
		k := shareSessionKey{group, member}
		var closed []shareTP
		var err *kerr.Error
		if req.ShareSessionEpoch == -1 {
			closed, err = a.shareSessions.close(k)
		} else {
			_, _, err = a.shareSessions.next(k, req.ShareSessionEpoch, nil, nil)
		}
		if err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		// The answer's shape is ShareFetch's: reuse its assembly.
		fetchResp := kmsg.NewPtrShareFetchResponse()
		var order []*sharePart
		parts := map[shareTP]*sharePart{}
		part := func(tp shareTP) *sharePart {
			if p := parts[tp]; p != nil {
				return p
			}
			p := &sharePart{tp: tp}
			p.topic, p.topicOK = topicRef(im, true, "", tp.topicID)
			if p.topicOK == nil && !readable(p.topic) {
				p.topicOK = kerr.TopicAuthorizationFailed
			}
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition = tp.partition
			p.out = &rp
			parts[tp] = p
			order = append(order, p)
			return p
		}
		acks := map[shareTP][]share.AckBatch{}
		for _, t := range req.Topics {
			for _, rp := range t.Partitions {
				acks[shareTP{t.TopicID, rp.Partition}] = ackBatches(rp.AcknowledgementBatches, func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})
			}
		}
		a.applyShareAcks(im, group, member, acks, req.IsRenewAck, part)
		if closed != nil {
			a.releaseShareSession(k, closed)
		}
		for _, p := range order {
			// A partition's one error code here is its acknowledgement's:
			// shareFetchAnswer gives NOT_LEADER_OR_FOLLOWER its leader.
			if p.out.AcknowledgeErrorCode != 0 {
				p.out.ErrorCode = p.out.AcknowledgeErrorCode
			}
		}
		a.shareFetchAnswer(im, c, fetchResp, order, 0)
		resp.AcquisitionLockTimeoutMillis = a.shareLockMs(group)
		for _, ft := range fetchResp.Topics {
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = ft.TopicID
			for _, fp := range ft.Partitions {
				p := kmsg.NewShareAcknowledgeResponseTopicPartition()
				p.Partition, p.ErrorCode = fp.Partition, fp.AcknowledgeErrorCode
				if p.ErrorCode == 0 {
					p.ErrorCode = fp.ErrorCode
				}
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = fp.CurrentLeader.LeaderID, fp.CurrentLeader.LeaderEpoch
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		for _, ne := range fetchResp.NodeEndpoints {
			e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port, e.Rack = ne.NodeID, ne.Host, ne.Port, ne.Rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
		return resp
	}
}

// deref returns a nullable string's value, "" for null.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
