package transport

// WriteShareGroupState: v0-1
//
// Behaviour:
//   - Kafka's inter-broker share-group state API (KIP-932), served for
//     tooling parity (Skein's share-partitions use share.StateClient).
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Each partition goes to this node's share coordinator
//     (share.WriteState): an update record of the batches (a snapshot of
//     the whole state every share.coordinator.snapshot.update.records.per.snapshot
//     updates), answered once durable. INVALID_REQUEST ("Write operation on
//     uninitialized share partition not allowed.") for a share-partition
//     without state, FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH for epochs
//     older than the state's (-1 checks neither); NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION as
//     InitializeShareGroupState.
//
// Version notes: v0 flexible; v1 DeliveryCompleteCount (KIP-1226, Kafka
// 4.2), -1 before.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/share"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(85, handler{min: 0, max: 1, handle: a.handleWriteShareGroupState})
	})
}

func (a *API) handleWriteShareGroupState(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	may := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		type item struct {
			msg   *share.WriteState
			reply *kmsg.WriteShareGroupStateResponseTopicPartition
		}
		var items []item
		resp.Topics = make([]kmsg.WriteShareGroupStateResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewWriteShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			t.Partitions = make([]kmsg.WriteShareGroupStateResponseTopicPartition, len(rt.Partitions))
			for j, rp := range rt.Partitions {
				t.Partitions[j] = kmsg.NewWriteShareGroupStateResponseTopicPartition()
				t.Partitions[j].Partition = rp.Partition
				m := &share.WriteState{Origin: actors.Origin{Node: a.Node.NodeID},
					Key:        share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition},
					StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset,
					DeliveryCompleteCount: rp.DeliveryCompleteCount}
				if req.Version < 1 {
					m.DeliveryCompleteCount = -1
				}
				for _, b := range rp.StateBatches {
					m.Batches = append(m.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
				}
				items = append(items, item{msg: m, reply: &t.Partitions[j]})
			}
		}
		shareStateEach(len(items), func(i int) {
			it := items[i]
			r := &share.StateResult{Code: kerr.ClusterAuthorizationFailed.Code, Message: kerr.ClusterAuthorizationFailed.Message}
			if may {
				r = a.askShareState(it.msg)
			}
			it.reply.ErrorCode, it.reply.ErrorMessage = r.Code, errMessage(r)
		})
		return resp
	}
}
