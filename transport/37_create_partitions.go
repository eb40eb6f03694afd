package transport

// CreatePartitions: v0-3
//
// Behaviour:
//   - With an authorizer: ALTER on each topic, TOPIC_AUTHORIZATION_FAILED
//     otherwise (with what would allow it).
//   - Delegated to the controller, which validates each topic (it exists;
//     the new count is above the current one, else INVALID_PARTITIONS;
//     assignments, when given, cover exactly the new partitions, name
//     registered brokers once each and keep the topic's replication factor,
//     else INVALID_REPLICA_ASSIGNMENT; a topic named twice is
//     INVALID_REQUEST, answered once as Kafka answers it) and writes the
//     new partitions to the metadata log;
//     see controller/topics.go.
//   - ValidateOnly checks everything and creates nothing.
//   - The metadata actor then hosts the new partitions; until one has
//     loaded, requests for it get NOT_LEADER_OR_FOLLOWER, which clients
//     retry.
//
// Version notes: v1 throttling; v2 flexible; v3 as v2 (KIP-599 quotas,
// which Skein does not enforce).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(37, handler{min: 0, max: 3, handle: a.handleCreatePartitions})
	})
}

func (a *API) handleCreatePartitions(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	cmd := &controller.CreatePartitions{ValidateOnly: req.ValidateOnly, TimeoutMs: req.TimeoutMillis}
	z := c.authz()
	quota := c.mutations()
	wait := quota.over()
	// slots are the request's topics' places in cmd, -1 for one the
	// client may not alter (or, throttled, not now).
	slots, throttled := make([]int, len(req.Topics)), map[string]bool{}
	before := map[string]int{} // partition counts, for the quota
	im := a.Image()
	for i, rt := range req.Topics {
		slots[i] = -1
		if !z.may(alter, topicResource, rt.Topic) {
			continue
		}
		if wait > 0 && req.Version >= 3 {
			throttled[rt.Topic] = true
			continue
		}
		if t := im.Topic(rt.Topic); t != nil {
			before[rt.Topic] = len(t.Partitions)
		}
		slots[i] = len(cmd.Topics)
		pc := controller.PartitionCount{Name: rt.Topic, Count: rt.Count}
		for _, as := range rt.Assignment {
			pc.Assignments = append(pc.Assignments, as.Replicas)
		}
		cmd.Topics = append(cmd.Topics, pc)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		var res any
		var err error
		if len(cmd.Topics) > 0 {
			res, err = a.askController(cmd)
		}
		answered := map[string]bool{}
		for i, rt := range req.Topics {
			if answered[rt.Topic] {
				continue // a duplicate: Kafka answers each name once
			}
			answered[rt.Topic] = true
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic = rt.Topic
			switch {
			case throttled[rt.Topic]:
				t.ErrorCode, t.ErrorMessage = kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(kerr.ThrottlingQuotaExceeded.Message)
			case slots[i] < 0:
				t.ErrorCode, t.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(z.denial(alter, topicResource, rt.Topic))
			case err != nil:
				t.ErrorCode, t.ErrorMessage = kerr.RequestTimedOut.Code, kmsg.StringPtr(err.Error())
			default:
				if r := res.(*controller.CreatePartitionsResult).Topics[slots[i]]; r.Err != nil {
					t.ErrorCode, t.ErrorMessage = r.Err.Code, kmsg.StringPtr(r.Message)
				}
			}
			a.metrics.errorCode(37, req.Version, t.ErrorCode)
			resp.Topics = append(resp.Topics, t)
		}
		counts := map[string]int32{}
		for _, rt := range req.Topics {
			counts[rt.Topic] = rt.Count
		}
		added := 0
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 && !req.ValidateOnly {
				added += max(int(counts[t.Topic])-before[t.Topic], 0)
			}
		}
		resp.ThrottleMillis = int32(max(wait, quota.charge(added)).Milliseconds())
		return resp
	}
}
