package transport

// ReadShareGroupStateSummary: v0-1
//
// Behaviour:
//   - Kafka's inter-broker share-group state API (KIP-932), served for
//     tooling parity (Skein's group coordinators use share.StateClient for
//     DescribeShareGroupOffsets).
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Each partition goes to this node's share coordinator
//     (share.ReadSummary): the state's start offset, state and leader
//     epochs, without batches, recording nothing. A share-partition
//     without state answers start offset -1, state and leader epoch 0, as
//     Kafka's shard (PartitionFactory's defaults). NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS as InitializeShareGroupState.
//
// Version notes: v0 flexible; v1 DeliveryCompleteCount (KIP-1226, Kafka
// 4.2).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/share"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(87, handler{min: 0, max: 1, handle: a.handleReadShareGroupStateSummary})
	})
}

func (a *API) handleReadShareGroupStateSummary(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ReadShareGroupStateSummaryRequest)
	may := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		type item struct {
			key   share.Key
			reply *kmsg.ReadShareGroupStateSummaryResponseTopicPartition
		}
		var items []item
		resp.Topics = make([]kmsg.ReadShareGroupStateSummaryResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewReadShareGroupStateSummaryResponseTopic()
			t.TopicID = rt.TopicID
			t.Partitions = make([]kmsg.ReadShareGroupStateSummaryResponseTopicPartition, len(rt.Partitions))
			for j, rp := range rt.Partitions {
				t.Partitions[j] = kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				t.Partitions[j].Partition = rp.Partition
				items = append(items, item{key: share.Key{Group: req.GroupID, TopicID: rt.TopicID, Partition: rp.Partition}, reply: &t.Partitions[j]})
			}
		}
		shareStateEach(len(items), func(i int) {
			it := items[i]
			r := &share.StateResult{Code: kerr.ClusterAuthorizationFailed.Code, Message: kerr.ClusterAuthorizationFailed.Message}
			if may {
				r = a.askShareState(&share.ReadSummary{Origin: actors.Origin{Node: a.Node.NodeID}, Key: it.key})
			}
			p := it.reply
			switch {
			case r.Code != 0:
				p.ErrorCode, p.ErrorMessage = r.Code, errMessage(r)
			case !r.Found:
				p.StartOffset, p.StateEpoch, p.LeaderEpoch = share.Uninitialized, 0, 0
			default:
				p.StartOffset, p.StateEpoch, p.LeaderEpoch = r.StartOffset, r.StateEpoch, r.LeaderEpoch
				p.DeliveryCompleteCount = r.DeliveryCompleteCount
			}
		})
		return resp
	}
}
