package transport

// ReadShareGroupState: v0
//
// Behaviour:
//   - Kafka's inter-broker share-group state API (KIP-932), served for
//     tooling parity (Skein's share-partitions use share.StateClient).
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Each partition goes to this node's share coordinator
//     (share.ReadState): the merged state (start offset, state epoch,
//     batches); a leader epoch newer than the state's is recorded (durably,
//     before the answer), an older one is FENCED_LEADER_EPOCH.
//     INVALID_REQUEST ("Read operation on uninitialized share partition not
//     allowed.") for a share-partition without state, as Kafka 4.2;
//     NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     UNKNOWN_TOPIC_OR_PARTITION as InitializeShareGroupState.
//
// Version notes: v0 only (Kafka 4.2), flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/share"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(84, handler{min: 0, max: 0, handle: a.handleReadShareGroupState})
	})
}

func (a *API) handleReadShareGroupState(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ReadShareGroupStateRequest)
	may := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		type item struct {
			key         share.Key
			leaderEpoch int32
			reply       *kmsg.ReadShareGroupStateResponseTopicPartition
		}
		var items []item
		resp.Topics = make([]kmsg.ReadShareGroupStateResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewReadShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			t.Partitions = make([]kmsg.ReadShareGroupStateResponseTopicPartition, len(rt.Partitions))
			for j, rp := range rt.Partitions {
				t.Partitions[j] = kmsg.NewReadShareGroupStateResponseTopicPartition()
				t.Partitions[j].Partition = rp.Partition
				items = append(items, item{key: share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition},
					leaderEpoch: rp.LeaderEpoch, reply: &t.Partitions[j]})
			}
		}
		shareStateEach(len(items), func(i int) {
			it := items[i]
			r := &share.StateResult{Code: kerr.ClusterAuthorizationFailed.Code, Message: kerr.ClusterAuthorizationFailed.Message}
			if may {
				r = a.askShareState(&share.ReadState{Origin: actors.Origin{Node: a.Node.NodeID}, Key: it.key, LeaderEpoch: it.leaderEpoch})
			}
			p := it.reply
			switch {
			case r.Code != 0:
				p.ErrorCode, p.ErrorMessage = r.Code, errMessage(r)
			case !r.Found:
				msg := share.MsgReadUninitialized
				p.ErrorCode, p.ErrorMessage = kerr.InvalidRequest.Code, &msg
			default:
				p.StateEpoch, p.StartOffset = r.StateEpoch, r.StartOffset
				p.StateBatches = make([]kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch, len(r.Batches))
				for k, b := range r.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
					p.StateBatches[k] = sb
				}
			}
		})
		return resp
	}
}
