package transport

// WriteTxnMarkers: v1-2
//
// Behaviour:
//   - With an authorizer: CLUSTER_ACTION on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every partition otherwise.
//   - Writes each marker to the partitions this node leads, as a
//     transaction coordinator's markers are written (the node's appends
//     actor, partition.RemoteMarker): answered once the marker is below the
//     high watermark; a marker in __consumer_offsets applies or drops the
//     producer's pending group offsets. Skein's own coordinators send their
//     markers over remoting; this API serves Kafka's admin tools, whose
//     abortTransaction (kafka-transactions abort) ends a transaction that
//     hangs with it.
//   - Per partition: NOT_LEADER_OR_FOLLOWER for one this node does not
//     lead, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH for an epoch
//     older than the producer's, TRANSACTION_COORDINATOR_FENCED for an
//     older coordinator epoch, REQUEST_TIMED_OUT.
//
// Version notes: v1 flexible (v0 was removed in Kafka 4); v2
// TransactionVersion (KIP-890).

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(27, handler{min: 1, max: 2, handle: a.handleWriteTxnMarkers})
	})
}

func (a *API) handleWriteTxnMarkers(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	mayWrite := c.authz().may(clusterAction, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		var wg sync.WaitGroup
		resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
		for i, rm := range req.Markers {
			m := &resp.Markers[i]
			*m = kmsg.NewWriteTxnMarkersResponseMarker()
			m.ProducerID = rm.ProducerID
			m.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(rm.Topics))
			mk := partition.Marker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch, Commit: rm.Committed,
				CoordinatorEpoch: rm.CoordinatorEpoch, TV2: rm.TransactionVersion >= 2}
			for j, rt := range rm.Topics {
				top := &m.Topics[j]
				*top = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				top.Topic = rt.Topic
				top.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(rt.Partitions))
				for k, p := range rt.Partitions {
					if !mayWrite {
						top.Partitions[k] = kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: kerr.ClusterAuthorizationFailed.Code}
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						top.Partitions[k] = kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: code(a.writeMarker(rt.Topic, p, mk))}
					}()
				}
			}
		}
		wg.Wait()
		return resp
	}
}

// writeMarker writes one marker through the node's appends actor.
func (a *API) writeMarker(topic string, p int32, m partition.Marker) *kerr.Error {
	if a.Appends == nil {
		return kerr.NotLeaderForPartition
	}
	if _, _, err := a.hosted(topic, p); err != nil {
		return err
	}
	res, err := actors.Ask(a.System, a.Appends, &partition.RemoteMarker{Topic: topic, Partition: p, LeaderEpoch: -1, Marker: m,
		TimeoutMs: int32(a.RequestTimeout.Milliseconds())}, a.RequestTimeout)
	r, ok := res.(*partition.RemoteAppendResult)
	if err != nil || !ok {
		return kerr.RequestTimedOut
	}
	return r.Err
}
