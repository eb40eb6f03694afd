package transport

// StreamsGroupHeartbeat: v0
//
// Behaviour:
//   - With streams.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - As Kafka 4.2's KafkaApis: READ on the group
//     (GROUP_AUTHORIZATION_FAILED); a topology naming one of Kafka's
//     internal topics, or a topic whose name is invalid, is
//     STREAMS_INVALID_TOPOLOGY; DESCRIBE on every topic of the topology
//     (TOPIC_AUTHORIZATION_FAILED).
//   - Delegated to the group's coordinator actor
//     (coordinator.Group.StreamsHeartbeat): KIP-1071's streams group
//     membership, topology, task assignment (the sticky assignor, active
//     and standby tasks), revocation before reassignment, session
//     timeouts and the group's streams.* configs.
//   - The internal topics (repartition and changelog topics) the group
//     finds missing are created through the controller with the
//     topology's partition counts, replication factors (-1: the default)
//     and configs, as Kafka's broker does after the heartbeat, if the
//     client may CREATE on the cluster or on the topics; the heartbeat is
//     answered without waiting (MISSING_INTERNAL_TOPICS until they exist).
//   - NOT_COORDINATOR when this node does not lead the group's
//     __consumer_offsets partition.
//
// Version notes: v0 is the version Kafka 4.2 serves (streams.version 1).

import (
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/coordinator"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(88, handler{min: 0, max: 0, handle: a.handleStreamsGroupHeartbeat})
	})
}

func (a *API) handleStreamsGroupHeartbeat(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.StreamsGroupHeartbeatRequest)
	if err := a.featureOff(image.StreamsVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	errResp := func(err *kerr.Error, msg string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	z := c.authz()
	if !z.may(read, groupResource, req.Group) {
		return respond(errResp(kerr.GroupAuthorizationFailed, ""))
	}
	if t := req.Topology; t != nil {
		var required []string
		seen := map[string]bool{}
		add := func(n string) {
			if !seen[n] {
				seen[n] = true
				required = append(required, n)
			}
		}
		for _, s := range t.Subtopologies {
			for _, n := range s.SourceTopics {
				add(n)
			}
			for _, n := range s.RepartitionSinkTopics {
				add(n)
			}
			for _, ti := range s.RepartitionSourceTopics {
				add(ti.Topic)
			}
			for _, ti := range s.StateChangelogTopics {
				add(ti.Topic)
			}
		}
		var internal, invalid []string
		for _, n := range required {
			switch {
			case n == coordinator.OffsetsTopic || n == "__transaction_state" || n == "__share_group_state":
				internal = append(internal, n)
			case controller.ValidateTopicName(n) != "":
				invalid = append(invalid, n)
			}
		}
		if internal != nil {
			return respond(errResp(kerr.StreamsInvalidTopology, "Use of Kafka internal topics "+strings.Join(internal, ",")+" in a Kafka Streams topology is prohibited."))
		}
		if invalid != nil {
			return respond(errResp(kerr.StreamsInvalidTopology, "Topic names "+strings.Join(invalid, ",")+" are not valid topic names."))
		}
		for _, n := range required {
			if !z.may(describe, topicResource, n) {
				return respond(errResp(kerr.TopicAuthorizationFailed, ""))
			}
		}
	}
	mayCreate := func(topic string) bool {
		return z.may(create, clusterResource, clusterName) || z.may(create, topicResource, topic)
	}
	call, err := a.startGroupRequestWith(c, req.Group, req, func(m *coordinator.Request) {
		m.CreateTopics = func(ts []coordinator.InternalTopic) { a.createStreamsTopics(ts, mayCreate) }
	})
	if err != nil {
		return respond(errResp(err, ""))
	}
	return func() kmsg.Response {
		resp, err := call.wait(c, a.RequestTimeout)
		if err != nil {
			return errResp(err, "")
		}
		return resp
	}
}

// streamsCreating are the internal topics of streams groups being
// created, so that every heartbeat does not ask the controller again.
var streamsCreating sync.Map

// createStreamsTopics creates the internal topics of a streams group in
// the background, those the client may create.
func (a *API) createStreamsTopics(ts []coordinator.InternalTopic, mayCreate func(string) bool) {
	var cmd controller.CreateTopics
	for _, t := range ts {
		if !mayCreate(t.Name) {
			a.Logger.Info().Str("topic", t.Name).Msg("streams group: not authorized to create an internal topic")
			continue
		}
		if _, busy := streamsCreating.LoadOrStore(t.Name, true); busy {
			continue
		}
		cmd.Topics = append(cmd.Topics, controller.NewTopic{Name: t.Name, NumPartitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: t.Configs})
	}
	if len(cmd.Topics) == 0 {
		return
	}
	go func() {
		defer func() {
			for _, t := range cmd.Topics {
				streamsCreating.Delete(t.Name)
			}
		}()
		res, err := a.askController(&cmd)
		if err != nil {
			a.Logger.Warn().Err(err).Msg("streams group: creating internal topics")
			return
		}
		var names []string
		for i, r := range res.(*controller.CreateTopicsResult).Topics {
			if r.Err != nil && r.Err != kerr.TopicAlreadyExists {
				a.Logger.Warn().Str("topic", cmd.Topics[i].Name).Str("err", r.Message).Msg("streams group: creating an internal topic")
				continue
			}
			names = append(names, cmd.Topics[i].Name)
		}
		a.awaitHosted(names, a.RequestTimeout)
	}()
}
