package transport

// InitializeShareGroupState: v0
//
// Behaviour:
//   - Kafka's inter-broker share-group state API (KIP-932), served for
//     tooling parity: Skein's share-partitions and group coordinators ask
//     the share coordinator over remoting (share.StateClient).
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Each partition goes to this node's share coordinator
//     (share.InitializeState to node/<id>/sharestate): a snapshot of the
//     new state epoch with the start offset and no batches, answered once
//     durable. NOT_COORDINATOR for a partition whose key's
//     __share_group_state partition another node leads,
//     COORDINATOR_LOAD_IN_PROGRESS while it loads here, FENCED_STATE_EPOCH
//     for a state epoch older than the state's, UNKNOWN_TOPIC_OR_PARTITION
//     for a topic partition the image does not have, INVALID_REQUEST for a
//     negative partition.
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
		a.register(83, handler{min: 0, max: 0, handle: a.handleInitializeShareGroupState})
	})
}

func (a *API) handleInitializeShareGroupState(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.InitializeShareGroupStateRequest)
	may := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		type item struct {
			key   share.Key
			req   kmsg.InitializeShareGroupStateRequestTopicPartition
			reply *kmsg.InitializeShareGroupStateResponseTopicPartition
		}
		var items []item
		resp.Topics = make([]kmsg.InitializeShareGroupStateResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewInitializeShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			t.Partitions = make([]kmsg.InitializeShareGroupStateResponseTopicPartition, len(rt.Partitions))
			for j, rp := range rt.Partitions {
				t.Partitions[j] = kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				t.Partitions[j].Partition = rp.Partition
				items = append(items, item{key: share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}, req: rp, reply: &t.Partitions[j]})
			}
		}
		shareStateEach(len(items), func(i int) {
			it := items[i]
			r := &share.StateResult{Code: kerr.ClusterAuthorizationFailed.Code, Message: kerr.ClusterAuthorizationFailed.Message}
			if may {
				r = a.askShareState(&share.InitializeState{Origin: actors.Origin{Node: a.Node.NodeID}, Key: it.key,
					StateEpoch: it.req.StateEpoch, StartOffset: it.req.StartOffset})
			}
			it.reply.ErrorCode, it.reply.ErrorMessage = r.Code, errMessage(r)
		})
		return resp
	}
}
