package transport

// AlterPartitionReassignments: v0-1
//
// Behaviour:
//   - With an authorizer: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the controller (controller/reassign.go): each partition
//     gets its target replicas added at once (adding), the others marked
//     removing; the new replicas fetch from the leader, and once the last
//     of them is in sync the replicas become the target, the removed ones
//     leave and delete their copy, and a leader outside the target hands
//     over. Null Replicas cancels a reassignment in progress
//     (NO_REASSIGNMENT_IN_PROGRESS if there is none).
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
//     (empty, a broker named twice or not registered), and with v1's
//     AllowReplicationFactorChange false, INVALID_REPLICATION_FACTOR for a
//     target of another size (KIP-860); REQUEST_TIMED_OUT when the
//     controller did not answer.
//   - The answer comes once the reassignment is started; ListPartitionReassignments
//     shows it until it completes.
//
// Version notes: v1 adds AllowReplicationFactorChange; both flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(45, handler{min: 0, max: 1, handle: a.handleAlterPartitionReassignments})
	})
}

func (a *API) handleAlterPartitionReassignments(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	cmd := &controller.AlterReassignments{TimeoutMs: req.TimeoutMillis, AllowRFChange: req.Version < 1 || req.AllowReplicationFactorChange}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			cmd.Partitions = append(cmd.Partitions, controller.Reassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	z := c.authz()
	if !z.may(alter, clusterResource, clusterName) {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(z.denial(alter, clusterResource, clusterName))
		return respond(resp)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		res, err := a.askController(cmd)
		var r *controller.AlterReassignmentsResult
		if err == nil {
			r = res.(*controller.AlterReassignmentsResult)
		}
		i := 0
		for _, rt := range req.Topics {
			t := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				p.Partition = rp.Partition
				switch {
				case err != nil:
					p.ErrorCode, p.ErrorMessage = kerr.RequestTimedOut.Code, kmsg.StringPtr(err.Error())
				case r.Err != nil:
					p.ErrorCode, p.ErrorMessage = r.Err.Code, kmsg.StringPtr(r.Message)
				case r.Partitions[i].Err != nil:
					p.ErrorCode = r.Partitions[i].Err.Code
					if m := r.Partitions[i].Message; m != "" {
						p.ErrorMessage = kmsg.StringPtr(m)
					}
				}
				a.metrics.errorCode(45, req.Version, p.ErrorCode)
				t.Partitions = append(t.Partitions, p)
				i++
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
}
