package transport

// OffsetForLeaderEpoch: v2-4
//
// Behaviour, per partition, from the published view without a message to
// the partition's actor:
//   - With an authorizer: a follower's request (v3+ replica id) needs
//     CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED), a client's DESCRIBE
//     on each topic (TOPIC_AUTHORIZATION_FAILED).
//   - CurrentLeaderEpoch is checked as Fetch does (KIP-320): older than
//     ours is FENCED_LEADER_EPOCH, newer is UNKNOWN_LEADER_EPOCH, -1 skips
//     the check.
//   - The answer is the largest epoch at most LeaderEpoch in the log's
//     leader epoch history and the offset after its last record: the start
//     offset of the next epoch, or the log end offset for the latest
//     (KIP-101, KIP-279; store.View.EndOffsetForEpoch). Asked for an epoch
//     older than any the log knows, it is that epoch, ending where the
//     log's first epoch starts; both are -1 when the log knows no epoch.
//     As in Kafka's LeaderEpochFileCache,
//     the partition's current leader epoch is in the history from the
//     moment this node leads it, records or not: asked for it, the answer
//     is it and the log end offset (an empty partition's 0); asked for a
//     newer one, both are -1.
//   - An unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; a
//     partition this node does not lead: NOT_LEADER_OR_FOLLOWER.
//   - ReplicaID (v3+) is not used: followers reach the leader over
//     remoting, not through this API, so every caller is answered as a
//     consumer is.
//
// Version notes: v1 the epoch in the answer (KIP-279); v2 current leader
// epoch (KIP-320) and throttling; v3 replica id (KIP-392); v4 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(23, handler{min: 2, max: 4, handle: a.handleOffsetForLeaderEpoch})
	})
}

func (a *API) handleOffsetForLeaderEpoch(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	im := a.Image()
	z := c.authz()
	// A follower's request (v3+ replica id) needs CLUSTER_ACTION, a
	// client's DESCRIBE on each topic.
	var denied *kerr.Error
	if req.Version >= 3 && req.ReplicaID >= 0 && !z.may(clusterAction, clusterResource, clusterName) {
		denied = kerr.ClusterAuthorizationFailed
	}
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		_, topicErr := topicRef(im, false, rt.Topic, [16]byte{})
		switch {
		case denied != nil:
			topicErr = denied
		case req.ReplicaID < 0 && !z.may(describe, topicResource, rt.Topic):
			topicErr = kerr.TopicAuthorizationFailed
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition = rp.Partition
			if err := a.endOffsetForEpoch(rt.Topic, topicErr, rp, &p); err != nil {
				p.ErrorCode = err.Code
				a.metrics.errorCode(23, req.Version, err.Code)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}

func (a *API) endOffsetForEpoch(topic string, topicErr *kerr.Error, rp kmsg.OffsetForLeaderEpochRequestTopicPartition,
	p *kmsg.OffsetForLeaderEpochResponseTopicPartition) *kerr.Error {
	if topicErr != nil {
		return topicErr
	}
	if err := partitionRef(a.Image(), topic, rp.Partition); err != nil {
		return err
	}
	_, v, err := a.hosted(topic, rp.Partition)
	if err != nil {
		return err
	}
	if v.LeaderEpoch < 0 {
		return kerr.NotLeaderForPartition
	}
	if err := partition.CheckLeaderEpoch(rp.CurrentLeaderEpoch, v.LeaderEpoch); err != nil {
		return err
	}
	switch {
	case rp.LeaderEpoch == v.LeaderEpoch:
		p.LeaderEpoch, p.EndOffset = v.LeaderEpoch, v.Log.LogEndOffset
	case rp.LeaderEpoch > v.LeaderEpoch:
		p.LeaderEpoch, p.EndOffset = -1, -1
	default:
		// NB: when the history has no epoch after the one asked for, the
		// log end offset that EndOffsetForEpoch answers is the current
		// epoch's start: no record was written in it.
		p.LeaderEpoch, p.EndOffset = v.Log.EndOffsetForEpoch(rp.LeaderEpoch)
	}
	return nil
}
