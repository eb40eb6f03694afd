package transport

// DeleteShareGroupState: v0
//
// Behaviour:
//   - Kafka's inter-broker share-group state API (KIP-932), served for
//     tooling parity (Skein's group coordinators use share.StateClient).
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Each partition goes to this node's share coordinator
//     (share.DeleteState): a tombstone for a share-partition with state,
//     answered once durable; nothing for one without. NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION as
//     InitializeShareGroupState.
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
		a.register(86, handler{min: 0, max: 0, handle: a.handleDeleteShareGroupState})
	})
}

func (a *API) handleDeleteShareGroupState(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteShareGroupStateRequest)
	may := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		type item struct {
			key   share.Key
			reply *kmsg.DeleteShareGroupStateResponseTopicPartition
		}
		var items []item
		resp.Topics = make([]kmsg.DeleteShareGroupStateResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewDeleteShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			t.Partitions = make([]kmsg.DeleteShareGroupStateResponseTopicPartition, len(rt.Partitions))
			for j, rp := range rt.Partitions {
				t.Partitions[j] = kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				t.Partitions[j].Partition = rp.Partition
				items = append(items, item{key: share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}, reply: &t.Partitions[j]})
			}
		}
		shareStateEach(len(items), func(i int) {
			it := items[i]
			r := &share.StateResult{Code: kerr.ClusterAuthorizationFailed.Code, Message: kerr.ClusterAuthorizationFailed.Message}
			if may {
				r = a.askShareState(&share.DeleteState{Origin: actors.Origin{Node: a.Node.NodeID}, Key: it.key})
			}
			it.reply.ErrorCode, it.reply.ErrorMessage = r.Code, errMessage(r)
		})
		return resp
	}
}
