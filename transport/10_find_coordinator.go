package transport

// FindCoordinator: v0-6
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED)
//     or on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
//     before anything is created.
//   - A group's coordinator is the leader of its partition of the
//     internal compacted topic __consumer_offsets, partition
//     abs(javaStringHashCode(group)) % offsets.topic.num.partitions, as in
//     Kafka. The topic is created through the controller (internal, so
//     Metadata reports IsInternal) by the first FindCoordinator for a
//     group, which waits for its partitions to load here.
//   - A transactional id's coordinator (key type 1) is the leader of its
//     partition of __transaction_state (transaction.state.log.num.partitions),
//     created the same way on first use: compacted, with
//     transaction.state.log.replication.factor replicas (capped at the live
//     brokers) and transaction.state.log.min.isr.
//   - A share-partition's share coordinator (key type 2, v6+, KIP-932; the
//     key is Kafka's "group:topicId:partition", INVALID_REQUEST when it
//     does not parse) is the leader of its partition of
//     __share_group_state (share.coordinator.state.topic.num.partitions),
//     created the same way (cleanup.policy delete, retention.ms -1). Only
//     brokers ask it: CLUSTER_ACTION on the cluster, as Kafka
//     (CLUSTER_AUTHORIZATION_FAILED). Any other type is INVALID_REQUEST.
//   - This file also holds what every group API shares: finding a group's
//     coordinator actor (groups/<escaped id>, spawned by the groups
//     supervisor on first use) and sending it the request.
//
// Version notes: v1 key type; v3 flexible; v4 batched CoordinatorKeys
// (KIP-699); v6 key type 2, SHARE (KIP-932).

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/coordinator"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/share"
	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(10, handler{min: 0, max: 6, handle: a.handleFindCoordinator})
	})
}

func (a *API) handleFindCoordinator(conn *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	z := conn.authz()
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, key := range keys {
			c := a.findCoordinator(conn.listener, z, req.Version, req.CoordinatorType, key)
			if req.Version < 4 {
				resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
				resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
				break
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
}

// findCoordinator names the coordinator of a key, by its address on the
// client's listener.
func (a *API) findCoordinator(listener string, z authz, version int16, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = err.Code, kmsg.StringPtr(err.Message)
		return c
	}
	topic, ensure := coordinator.OffsetsTopic, a.ensureOffsetsTopic
	partitionFor := func(n int32) int32 { return partition.ForKey(key, n) }
	switch keyType {
	case 0:
		if !z.may(describe, groupResource, key) {
			return fail(kerr.GroupAuthorizationFailed)
		}
	case 1:
		topic, ensure = txn.StateTopic, a.ensureTxnTopic
		if !z.may(describe, txnResource, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed)
		}
		if key == "" {
			return fail(kerr.InvalidRequest)
		}
	case 2:
		if version < 6 {
			return fail(kerr.InvalidRequest)
		}
		if !z.may(clusterAction, clusterResource, clusterName) {
			return fail(kerr.ClusterAuthorizationFailed)
		}
		k, ok := share.ParseKey(key)
		if !ok {
			return fail(kerr.InvalidRequest)
		}
		topic, ensure = share.StateTopic, a.ensureShareStateTopic
		partitionFor = func(n int32) int32 { return share.PartitionFor(k, n) }
	default:
		return fail(kerr.InvalidRequest)
	}
	if err := ensure(); err != nil {
		return fail(err)
	}
	im := a.Image()
	t := im.Topic(topic)
	p := t.Partitions[partitionFor(int32(len(t.Partitions)))]
	b, ok := im.Brokers[p.Leader]
	if !ok {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if c.Host, c.Port, ok = b.Endpoint(listener); !ok {
		c.Port = -1
		return fail(kerr.CoordinatorNotAvailable)
	}
	c.NodeID = b.ID
	return c
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist and
// waits for its partitions to load here.
func (a *API) ensureOffsetsTopic() *kerr.Error {
	return a.ensureInternalTopic(controller.NewTopic{
		Name: coordinator.OffsetsTopic, NumPartitions: a.Node.OffsetsTopicNumPartitions,
		ReplicationFactor: a.Node.OffsetsTopicReplicationFactor,
		Configs:           map[string]string{"cleanup.policy": "compact", "compression.type": "producer"},
	}, "offsets.topic.replication.factor")
}

// ensureInternalTopic creates an internal topic if it does not exist,
// with one replica per live broker when fewer live than t asks (named by
// rfKey in the log line), and waits for its partitions to load here.
// COORDINATOR_NOT_AVAILABLE when it cannot.
func (a *API) ensureInternalTopic(t controller.NewTopic, rfKey string) *kerr.Error {
	im := a.Image()
	if im.Topic(t.Name) != nil {
		return nil
	}
	if live := int16(len(im.LiveBrokerIDs())); t.ReplicationFactor > live {
		a.Logger.Info().Int16(rfKey, t.ReplicationFactor).Int16("live_brokers", live).
			Msgf("creating %s with one replica per live broker, fewer than %s asks", t.Name, rfKey)
		t.ReplicationFactor = max(live, 1)
	}
	t.Internal = true
	res, err := a.askController(&controller.CreateTopics{Topics: []controller.NewTopic{t}})
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	// TOPIC_ALREADY_EXISTS (another request created it) comes once this
	// node's image has the topic, as a creation does.
	if r := res.(*controller.CreateTopicsResult).Topics[0]; r.Err != nil && r.Err != kerr.TopicAlreadyExists {
		a.Logger.Warn().Str("err", r.Message).Msg("creating " + t.Name)
		return kerr.CoordinatorNotAvailable
	}
	a.awaitHosted([]string{t.Name}, a.RequestTimeout)
	if a.Image().Topic(t.Name) == nil {
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// askGroup sends one group's request to its coordinator actor and returns
// a finish that waits for the answer, at most wait (JoinGroup waits for a
// rebalance); failed answers errResp's error instead.
func (a *API) askGroup(c *conn, group string, req kmsg.Request, wait time.Duration, errResp func(*kerr.Error) kmsg.Response) finish {
	call, err := a.startGroupRequest(c, group, req)
	if err != nil {
		return respond(errResp(err))
	}
	return func() kmsg.Response {
		resp, err := call.wait(c, wait)
		if err != nil {
			return errResp(err)
		}
		return resp
	}
}

// groupCall is a request sent to a group actor, waiting for its answer.
// Its reply process takes the Abandoned a failing actor's supervisor sends
// (actors.Backoff), so that a request lost to a panic is answered at once.
type groupCall struct {
	a    *API
	ch   chan kmsg.Response // the answer; nil when the actor abandoned it
	self *actor.PID
}

func (g *groupCall) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actors.Abandoned); ok {
		g.put(nil)
	}
}

func (g *groupCall) SendSystemMessage(*actor.PID, any) {}
func (g *groupCall) Stop(*actor.PID)                   {}

func (g *groupCall) put(r kmsg.Response) {
	select {
	case g.ch <- r:
	default: // the first answer wins
	}
}

var groupCallSeq atomic.Uint64

// wait returns the answer, or the error to answer with instead: the actor
// failed or the node stops (NOT_COORDINATOR: the client finds the
// coordinator again), or nothing came within d
// (COORDINATOR_NOT_AVAILABLE).
func (g *groupCall) wait(c *conn, d time.Duration) (kmsg.Response, *kerr.Error) {
	defer g.a.System.ProcessRegistry.Remove(g.self)
	t := time.NewTimer(d)
	defer t.Stop()
	var stop, gone <-chan struct{}
	if c != nil {
		stop, gone = c.stop, c.gone
	}
	select {
	case resp := <-g.ch:
		if resp == nil {
			return nil, kerr.NotCoordinator
		}
		return resp, nil
	case <-stop:
		// The node is stopping: the group moves, as Kafka answers when
		// its coordinator resigns.
		return nil, kerr.NotCoordinator
	case <-gone:
		return nil, kerr.NotCoordinator // nobody reads it
	case <-t.C:
		return nil, kerr.CoordinatorNotAvailable
	}
}

// startGroupRequest sends req to the coordinator actor of a group this
// node coordinates, spawning it on first use; wait on the returned call
// for the answer. NOT_COORDINATOR when another node leads the group's
// partition (or the topic does not exist yet), and
// COORDINATOR_LOAD_IN_PROGRESS while the partition loads.
func (a *API) startGroupRequest(c *conn, group string, req kmsg.Request) (*groupCall, *kerr.Error) {
	return a.startGroupRequestWith(c, group, req, nil)
}

// startGroupRequestWith is startGroupRequest with set, when not nil,
// filling in the Request's callbacks.
func (a *API) startGroupRequestWith(c *conn, group string, req kmsg.Request, set func(*coordinator.Request)) (*groupCall, *kerr.Error) {
	im := a.Image()
	t := im.Topic(coordinator.OffsetsTopic)
	if t == nil {
		return nil, kerr.NotCoordinator
	}
	p := coordinator.PartitionFor(group, int32(len(t.Partitions)))
	if t.Partitions[p].Leader != a.Node.NodeID {
		return nil, kerr.NotCoordinator
	}
	pid, err := a.openGroup(group)
	if err != nil {
		return nil, err
	}
	call := &groupCall{a: a, ch: make(chan kmsg.Response, 1)}
	self, ok := a.System.ProcessRegistry.Add(call, fmt.Sprintf("group$%d", groupCallSeq.Add(1)))
	if !ok {
		return nil, kerr.CoordinatorNotAvailable
	}
	call.self = self
	m := &coordinator.Request{Req: req, TopicError: a.topicError, Reply: call.put}
	if set != nil {
		set(m)
	}
	if c != nil {
		m.ClientID = c.client
		if host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String()); err == nil {
			m.ClientHost = "/" + host
		}
	}
	a.System.Root.RequestWithCustomSender(pid, m, self)
	return call, nil
}

// openGroup returns the actor of a group this node coordinates (its
// partition hosted and loaded here), spawning it on first use.
func (a *API) openGroup(group string) (*actor.PID, *kerr.Error) {
	if pid := a.Groups.Get(group); pid != nil {
		return pid, nil
	}
	t := a.Image().Topic(coordinator.OffsetsTopic)
	if t == nil {
		return nil, kerr.NotCoordinator
	}
	h, _, herr := a.hosted(coordinator.OffsetsTopic, coordinator.PartitionFor(group, int32(len(t.Partitions))))
	if herr != nil {
		return nil, kerr.CoordinatorLoadInProgress
	}
	res, err := actors.Ask(a.System, a.GroupsPID, &coordinator.Open{Group: group, Partition: h}, a.RequestTimeout)
	if err != nil || res.(*coordinator.OpenResult).PID == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	return res.(*coordinator.OpenResult).PID, nil
}

// topicError says why a partition cannot take a committed offset.
// topicLookup returns a topic's id and partition count from the image,
// for the group coordinator's server-side assignment (KIP-848).
func (a *API) topicError(topic string, p int32) *kerr.Error {
	if topic == "" {
		return kerr.UnknownTopicID // v10 named a topic id we do not know
	}
	t := a.Image().Topic(topic)
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}
