package transport

// CreateTopics: v2-7
//
// Behaviour:
//   - Delegated to the controller, which validates (names, partition counts,
//     replication factor against registered brokers, assignments, configs)
//     and writes the topics to the metadata log; see controller/topics.go.
//   - ValidateOnly checks everything and creates nothing.
//   - A name given twice is answered once, INVALID_REQUEST, as Kafka
//     answers it; __cluster_metadata (Kafka's KRaft log) is refused with
//     INVALID_REQUEST, as Kafka refuses it.
//   - With an authorizer: CREATE on the cluster, or else on each topic
//     (TOPIC_AUTHORIZATION_FAILED, with what would allow it); the configs
//     of v5+ need DESCRIBE_CONFIGS on the topic (their error code says
//     TOPIC_AUTHORIZATION_FAILED otherwise).
//   - v5+ answers with the partition count, replication factor and every
//     config in force with its source.
//   - The answer waits, within the request's timeout counted from its
//     arrival, until this broker's replicas of the new partitions have
//     opened their logs; a topic created whose replicas here are not all
//     open by then is answered success with the message "created; still
//     opening N of its M partitions on broker B" (the skein CLI prints
//     it; other clients ignore a message beside error code 0).
//
// Version notes: v5 configs in the response (KIP-525); v7 topic ids.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(19, handler{min: 2, max: 7, handle: a.handleCreateTopics})
	})
}

func (a *API) handleCreateTopics(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.CreateTopicsRequest)
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	cmd := &controller.CreateTopics{ValidateOnly: req.ValidateOnly, TimeoutMs: req.TimeoutMillis}
	z := c.authz()
	mayCreateAll := z.may(create, clusterResource, clusterName)
	quota := c.mutations()
	wait := quota.over()
	// slots are the request's topics' places in cmd, -1 for one the
	// client may not create: denied holds why.
	slots, denied := make([]int, len(req.Topics)), map[string]string{}
	for i, rt := range req.Topics {
		slots[i] = -1
		if !mayCreateAll && !z.may(create, topicResource, rt.Topic) {
			denied[rt.Topic] = z.denial(create, topicResource, rt.Topic)
			continue
		}
		if wait > 0 && req.Version >= 6 {
			continue // THROTTLING_QUOTA_EXCEEDED
		}
		slots[i] = len(cmd.Topics)
		nt := controller.NewTopic{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}
		for _, ra := range rt.ReplicaAssignment {
			for int(ra.Partition) >= len(nt.Assignments) {
				nt.Assignments = append(nt.Assignments, nil)
			}
			nt.Assignments[ra.Partition] = ra.Replicas
		}
		for _, c := range rt.Configs {
			if nt.Configs == nil {
				nt.Configs = map[string]string{}
			}
			if c.Value != nil {
				nt.Configs[c.Name] = *c.Value
			}
		}
		cmd.Topics = append(cmd.Topics, nt)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
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
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = rt.Topic, -1, -1
			switch {
			case slots[i] < 0 && denied[rt.Topic] == "":
				t.ErrorCode, t.ErrorMessage = kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(kerr.ThrottlingQuotaExceeded.Message)
				a.metrics.errorCode(19, req.Version, t.ErrorCode)
			case slots[i] < 0:
				t.ErrorCode, t.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(denied[rt.Topic])
				a.metrics.errorCode(19, req.Version, t.ErrorCode)
			case err != nil:
				t.ErrorCode, t.ErrorMessage = kerr.RequestTimedOut.Code, kmsg.StringPtr(err.Error())
			default:
				r := res.(*controller.CreateTopicsResult).Topics[slots[i]]
				if r.Err != nil {
					t.ErrorCode, t.ErrorMessage = r.Err.Code, kmsg.StringPtr(r.Message)
					a.metrics.errorCode(19, req.Version, r.Err.Code)
					break
				}
				t.TopicID, t.NumPartitions, t.ReplicationFactor = r.ID, r.NumPartitions, r.ReplicationFactor
				if z.may(describeConfigs, topicResource, rt.Topic) {
					t.Configs = a.createdConfigs(cmd.Topics[slots[i]].Configs)
				} else {
					t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			}
			resp.Topics = append(resp.Topics, t)
		}
		resp.ThrottleMillis = int32(wait.Milliseconds())
		if !req.ValidateOnly {
			partitions := 0
			for _, t := range resp.Topics {
				if t.ErrorCode == 0 {
					partitions += int(max(t.NumPartitions, 0))
				}
			}
			resp.ThrottleMillis = int32(max(wait, quota.charge(partitions)).Milliseconds())
			var created []string
			for _, t := range resp.Topics {
				if t.ErrorCode == 0 {
					created = append(created, t.Topic)
				}
			}
			opening := a.awaitHosted(created, time.Until(deadline))
			for i, t := range resp.Topics {
				if n := opening[t.Topic]; n > 0 {
					resp.Topics[i].ErrorMessage = kmsg.StringPtr(fmt.Sprintf("created; still opening %d of its %d partitions on broker %d",
						n, t.NumPartitions, a.Node.NodeID))
				}
			}
		}
		return resp
	}
}

func (a *API) createdConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	entries, err := configs.DescribeTopic(a.nodeConfig(a.Image()), overrides)
	if err != nil {
		return nil
	}
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.Name, kmsg.StringPtr(e.Value), int8(e.Source)
		out = append(out, c)
	}
	return out
}
