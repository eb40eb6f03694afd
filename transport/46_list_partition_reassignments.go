package transport

// ListPartitionReassignments: v0
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - Answered from this node's image: every partition (of the topics and
//     partitions asked, or all when Topics is null) with a reassignment in
//     progress, with its replicas and the ones being added and removed.
//     Partitions not being reassigned, and unknown ones, are left out, as
//     Kafka does.
//
// Version notes: v0 is flexible.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(46, handler{min: 0, max: 0, handle: a.handleListPartitionReassignments})
	})
}

func (a *API) handleListPartitionReassignments(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if z := c.authz(); !z.may(describe, clusterResource, clusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(z.denial(describe, clusterResource, clusterName))
		return respond(resp)
	}
	im := a.Image()
	list := func(t *image.Topic, want func(int32) bool) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			if (len(p.Adding) == 0 && len(p.Removing) == 0) || !want(p.Index) {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition, rp.Replicas = p.Index, p.Replicas
			rp.AddingReplicas, rp.RemovingReplicas = nonNil(p.Adding), nonNil(p.Removing)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, name := range im.TopicNames() {
			list(im.Topics[name], func(int32) bool { return true })
		}
		return respond(resp)
	}
	for _, rt := range req.Topics {
		if t := im.Topic(rt.Topic); t != nil {
			list(t, func(p int32) bool { return slices.Contains(rt.Partitions, p) })
		}
	}
	return respond(resp)
}

// nonNil returns ids, or an empty list for nil (a non-nullable array).
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
