package transport

// TxnOffsetCommit: v0-5
//
// Behaviour:
//   - Delegated to the group's coordinator actor (as OffsetCommit): a
//     member id and generation, when given, must be the group's (KIP-447:
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), so that
//     a zombie's commit is fenced; without them any producer may commit.
//   - The offsets are written as a transactional batch of the producer
//     to the group's __consumer_offsets partition, after the partition
//     verified with the transaction's coordinator that the transaction
//     includes it (KIP-890; v5+ adds it implicitly), and stay pending
//     until the transaction's marker: committed, they become the group's
//     offsets; aborted, they are dropped. OffsetFetch with RequireStable
//     answers UNSTABLE_OFFSET_COMMIT meanwhile.
//   - A producer whose epoch was bumped (a newer instance, a timed out
//     transaction) gets PRODUCER_FENCED.
//   - With an authorizer: WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//     (GROUP_AUTHORIZATION_FAILED), each on every partition; READ on each
//     topic (TOPIC_AUTHORIZATION_FAILED on its partitions, not committed).
//
// Version notes: v2 leader epoch; v3 flexible, member id, generation and
// instance id (KIP-447); v4 and v5 are KIP-890's (v5: the partition is
// added to the transaction implicitly).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(28, handler{min: 0, max: 5, handle: a.handleTxnOffsetCommit})
	})
}

func (a *API) handleTxnOffsetCommit(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	answer := func(resp *kmsg.TxnOffsetCommitResponse, topics []kmsg.TxnOffsetCommitRequestTopic, err *kerr.Error) {
		for _, t := range topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	errResp := func(err *kerr.Error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		answer(resp, req.Topics, err)
		return resp
	}
	z := c.authz()
	switch {
	case !z.may(write, txnResource, req.TransactionalID):
		return respond(errResp(kerr.TransactionalIDAuthorizationFailed))
	case !z.may(read, groupResource, req.Group):
		return respond(errResp(kerr.GroupAuthorizationFailed))
	}
	denied := unreadable(z, &req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) (string, bool) { return t.Topic, true })
	if req.Group == "" {
		return respond(errResp(kerr.InvalidGroupID))
	}
	if denied == nil {
		return a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
	}
	withDenied := func(r kmsg.Response) kmsg.Response {
		answer(r.(*kmsg.TxnOffsetCommitResponse), denied, kerr.TopicAuthorizationFailed)
		return r
	}
	if len(req.Topics) == 0 {
		return respond(withDenied(req.ResponseKind()))
	}
	f := a.askGroup(c, req.Group, req, a.RequestTimeout, errResp)
	return func() kmsg.Response { return withDenied(f()) }
}
