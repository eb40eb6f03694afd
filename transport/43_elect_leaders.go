package transport

// ElectLeaders: v0-2
//
// Behaviour:
//   - With an authorizer: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED
//     otherwise.
//   - Delegated to the controller (controller/elections.go): a preferred
//     election (ElectionType 0, and every v0 request) gives each partition
//     to its preferred replica, the first of its replicas, if that one is
//     live and in sync; an unclean election (ElectionType 1) gives a
//     partition with no leader to a live ISR member, or else to any live
//     replica, which loses what only the ISR held.
//   - Null Topics means every partition; the answer then lists only the
//     partitions whose leader changed or could not be elected (Kafka
//     leaves out those that needed no election).
//   - Per partition: ELECTION_NOT_NEEDED when it has the leader asked for
//     already, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
//     UNKNOWN_TOPIC_OR_PARTITION; REQUEST_TIMED_OUT when the controller did
//     not answer.
//   - The answer comes once the change is committed; the partitions' new
//     leaders take over when their nodes apply it.
//
// Version notes: v1 adds ElectionType and a top-level error code; v2 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(43, handler{min: 0, max: 2, handle: a.handleElectLeaders})
	})
}

func (a *API) handleElectLeaders(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ElectLeadersRequest)
	cmd := &controller.ElectLeaders{Unclean: req.Version >= 1 && req.ElectionType == 1, TimeoutMs: req.TimeoutMillis}
	if req.Topics != nil {
		cmd.Partitions = []controller.TopicPartitions{}
		for _, rt := range req.Topics {
			cmd.Partitions = append(cmd.Partitions, controller.TopicPartitions{Topic: rt.Topic, Partitions: rt.Partitions})
		}
	}
	mayAlter := c.authz().may(alter, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		var res any
		err := error(errDenied)
		if mayAlter {
			res, err = a.askController(cmd)
		}
		var r *controller.ElectLeadersResult
		if err == nil {
			r = res.(*controller.ElectLeadersResult)
		}
		if err != nil || r.Err != nil {
			code := kerr.RequestTimedOut.Code
			switch {
			case err == errDenied:
				code = kerr.ClusterAuthorizationFailed.Code
			case err == nil:
				code = r.Err.Code
			}
			// Every partition asked shares the failure.
			for _, rt := range req.Topics {
				t := kmsg.NewElectLeadersResponseTopic()
				t.Topic = rt.Topic
				for _, p := range rt.Partitions {
					pr := kmsg.NewElectLeadersResponseTopicPartition()
					pr.Partition, pr.ErrorCode = p, code
					t.Partitions = append(t.Partitions, pr)
				}
				resp.Topics = append(resp.Topics, t)
			}
			// A denial is the whole request's too, as Kafka answers it.
			if req.Version >= 1 && (req.Topics == nil || err == errDenied) {
				resp.ErrorCode = code
			}
			a.metrics.errorCode(43, req.Version, code)
			return resp
		}
		byTopic := map[string]int{}
		for _, p := range r.Partitions {
			i, ok := byTopic[p.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[p.Topic] = i
				t := kmsg.NewElectLeadersResponseTopic()
				t.Topic = p.Topic
				resp.Topics = append(resp.Topics, t)
			}
			pr := kmsg.NewElectLeadersResponseTopicPartition()
			pr.Partition = p.Partition
			if p.Err != nil {
				pr.ErrorCode = p.Err.Code
				if p.Message != "" {
					pr.ErrorMessage = kmsg.StringPtr(p.Message)
				}
			}
			a.metrics.errorCode(43, req.Version, pr.ErrorCode)
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, pr)
		}
		return resp
	}
}
