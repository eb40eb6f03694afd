package transport

// Metadata: v0-13
//
// Behaviour:
//   - Brokers, cluster id and controller from the newest image; with
//     controller-only nodes as the active controller, this node stands
//     for it (it forwards controller requests), as a KRaft broker names
//     a broker.
//   - Topics by name (and by id, v10+); a null list (v1+) or an empty one
//     (v0) means every topic.
//   - A missing topic is created when auto.create.topics.enable is on and
//     the request allows it (v4+ AllowAutoTopicCreation; always before),
//     with num.partitions and default.replication.factor, through the
//     controller; the response then carries the new topic.
//   - Invalid names: INVALID_TOPIC_EXCEPTION; missing: UNKNOWN_TOPIC_OR_PARTITION
//     (UNKNOWN_TOPIC_ID by id).
//   - With an authorizer, as Kafka: of all topics, those the client may
//     DESCRIBE; a named topic it may not DESCRIBE, or a missing one it
//     may not CREATE (on the cluster or the topic) when auto-creation
//     applies, is TOPIC_AUTHORIZATION_FAILED whether it exists or not; a
//     topic id it may not DESCRIBE is UNKNOWN_TOPIC_ID.
//
// Version notes:
//   - v7: leader epoch (KIP-320). v9: flexible. v10: topic ids.
//   - v8+: topic authorized operations when asked (KIP-430); v8-10 the
//     cluster's too; -2147483648 when not asked.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(3, handler{min: 0, max: 13, handle: a.handleMetadata})
	})
}

const authorizedOperationsUnset = -2147483648

func (a *API) handleMetadata(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.MetadataRequest)
	im := a.Image()
	z := c.authz()
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	autoCreate := a.Node.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation)
	// denied are the named topics the client may not see, or may not
	// create when they are missing: TOPIC_AUTHORIZATION_FAILED, whether
	// they exist or not.
	denied := map[string]bool{}
	var missing []string
	if !all {
		mayCreate := !autoCreate || z.may(create, clusterResource, clusterName)
		for _, t := range req.Topics {
			switch {
			case t.Topic == nil:
			case !z.may(describe, topicResource, *t.Topic):
				denied[*t.Topic] = true
			case autoCreate && im.Topic(*t.Topic) == nil:
				if mayCreate || z.may(create, topicResource, *t.Topic) {
					missing = append(missing, *t.Topic)
				} else {
					denied[*t.Topic] = true
				}
			}
		}
	}
	if len(missing) == 0 {
		return respond(a.metadataResponse(req, c.listener, im, z, all, denied, nil))
	}
	// Creating asks the controller: wait for it on the writer goroutine.
	return func() kmsg.Response {
		cmd := &controller.CreateTopics{}
		for _, name := range missing {
			cmd.Topics = append(cmd.Topics, controller.NewTopic{Name: name, NumPartitions: -1, ReplicationFactor: -1})
		}
		created := map[string]*kerr.Error{}
		res, err := a.askController(cmd)
		for i, name := range missing {
			switch {
			case err != nil:
				created[name] = kerr.RequestTimedOut
			default:
				r := res.(*controller.CreateTopicsResult).Topics[i]
				if r.Err != nil && r.Err != kerr.TopicAlreadyExists {
					created[name] = r.Err
				}
			}
		}
		var ok []string
		for _, name := range missing {
			if created[name] == nil {
				ok = append(ok, name)
			}
		}
		a.awaitHosted(ok, a.RequestTimeout)
		return a.metadataResponse(req, c.listener, a.Image(), z, all, denied, created)
	}
}

// metadataResponse describes the requested topics in im to a client on
// the named listener, with the brokers' addresses on it: of all topics,
// those it may describe; denied are named topics it may not see; failed
// holds the errors of topics that could not be auto-created.
func (a *API) metadataResponse(req *kmsg.MetadataRequest, listener string, im *image.Image, z authz, all bool,
	denied map[string]bool, failed map[string]*kerr.Error) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, id := range im.LiveBrokerIDs() {
		b := im.Brokers[id]
		rb := kmsg.NewMetadataResponseBroker()
		var ok bool
		if rb.Host, rb.Port, ok = b.Endpoint(listener); !ok {
			continue // a broker without this listener is not told of
		}
		rb.NodeID, rb.Rack = b.ID, rack(b)
		resp.Brokers = append(resp.Brokers, rb)
	}
	defer unreachableLeaders(resp, listener, im)
	resp.ClusterID = kmsg.StringPtr(im.ClusterID)
	resp.ControllerID = a.controllerForClients(im)
	resp.AuthorizedOperations = authorizedOperationsUnset
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = z.clusterOperations()
	}
	add := func(t *image.Topic) {
		mt := describeTopic(im, t)
		if req.IncludeTopicAuthorizedOperations {
			mt.AuthorizedOperations = z.operations(topicResource, t.Name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	if all {
		for _, name := range im.TopicNames() {
			if z.sees(describe, topicResource, name) {
				add(im.Topics[name])
			}
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *image.Topic
		if rt.Topic != nil {
			t = im.Topic(*rt.Topic)
		} else if t = im.TopicsByID[image.TopicID(rt.TopicID)]; t != nil && !z.may(describe, topicResource, t.Name) {
			t = nil // as an id no topic has: ids are not guessed
		}
		if t != nil && !denied[t.Name] {
			add(t)
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
		mt.AuthorizedOperations = authorizedOperationsUnset
		switch {
		case rt.Topic == nil:
			mt.ErrorCode = kerr.UnknownTopicID.Code
		case denied[*rt.Topic]:
			mt.ErrorCode, mt.TopicID = kerr.TopicAuthorizationFailed.Code, [16]byte{}
		case failed[*rt.Topic] != nil:
			mt.ErrorCode = failed[*rt.Topic].Code
		case controller.ValidateTopicName(*rt.Topic) == "":
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func describeTopic(im *image.Image, t *image.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	mt.AuthorizedOperations = authorizedOperationsUnset
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.Index, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = p.Replicas, p.ISR, offlineReplicas(im, p.Replicas)
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// unreachableLeaders marks the partitions whose leader has no address on
// the client's listener as Kafka does: LISTENER_NOT_FOUND (from v6,
// LEADER_NOT_AVAILABLE before), no leader.
func unreachableLeaders(resp *kmsg.MetadataResponse, listener string, im *image.Image) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.Leader < 0 {
				continue
			}
			if _, _, ok := im.Brokers[p.Leader].Endpoint(listener); ok {
				continue
			}
			p.Leader, p.ErrorCode = -1, kerr.ListenerNotFound.Code
			if resp.Version < 6 {
				p.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
	}
}

// offlineReplicas returns the replicas on brokers the image has fenced or
// does not know: they hold no copy anyone can read now.
func offlineReplicas(im *image.Image, replicas []int32) []int32 {
	out := []int32{}
	for _, r := range replicas {
		if b, ok := im.Brokers[r]; !ok || b.Fenced {
			out = append(out, r)
		}
	}
	return out
}
