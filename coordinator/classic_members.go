package coordinator

// Classic-protocol members in a consumer group, and a group changing
// protocol, as Kafka 4.x's GroupMetadataManager does it (KIP-848's
// migration: classicGroupJoinToConsumerGroup, classicGroupSyncToConsumer-
// Group, classicGroupHeartbeatToConsumerGroup, convertToConsumerGroup,
// convertToClassicGroup):
//
//   - A JoinGroup (protocol type "consumer") to a consumer group with
//     members joins it as a classic member: its subscription is read from
//     its first protocol's metadata, the group's assignor assigns it, and
//     the JoinGroup is answered at once with its member epoch as the
//     generation and no leader, so that the client syncs as a follower;
//     SyncGroup hands it its partitions. Its heartbeats say
//     REBALANCE_IN_PROGRESS when it has to rejoin: the group epoch moved,
//     it must give partitions up (which its next JoinGroup's owned
//     partitions, or an eager client's none, show), or partitions it waits
//     for were released. It commits with its epoch as the generation.
//   - A consumer-protocol heartbeat to a classic group with members
//     upgrades it when group.consumer.migration.policy allows (upgrade or
//     bidirectional) and every member speaks the consumer protocol type:
//     the classic members become classic members of a consumer group at
//     the group's generation, keeping their assignments; otherwise the
//     heartbeat gets GROUP_ID_NOT_FOUND.
//   - When the last consumer-protocol member leaves a consumer group whose
//     other members are classic, it becomes a classic group again when the
//     policy allows (downgrade or bidirectional), at the group epoch, and
//     rebalances.
//   - Empty groups change protocol whatever the policy: a JoinGroup to an
//     empty consumer group deletes its consumer records (tombstones) and
//     starts a classic group.

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicProtocol is what a consumer group keeps of a member that speaks
// the classic protocol (Kafka's ClassicMemberMetadata).
type classicProtocol struct {
	sessionTimeout time.Duration
	protocols      []kmsg.JoinGroupRequestProtocol
}

// consumerJoin handles a JoinGroup to a consumer group with members.
func (g *Group) consumerJoin(req *kmsg.JoinGroupRequest, clientID, host, instance string, session, rebalance time.Duration, reply Responder) {
	c := g.consumer
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	fail := func(err *kerr.Error, memberID string) {
		// NB: no protocol type in an error, as Kafka answers (null).
		resp.ErrorCode, resp.MemberID, resp.Generation = err.Code, memberID, -1
		g.reply(reply, resp)
	}
	var sub kmsg.ConsumerMemberMetadata
	switch {
	case req.ProtocolType != "consumer" || !c.supportsClassic(req.Protocols):
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	case sub.ReadFrom(req.Protocols[0].Metadata) != nil:
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	id := req.MemberID
	if id == "" {
		id = g.cfg.NewMemberID(clientID)
		if instance == "" && req.Version >= 4 {
			// KIP-394: the member id comes back first.
			fail(kerr.MemberIDRequired, id)
			return
		}
	}
	m := c.members[id]
	bump := false
	if instance != "" {
		switch holder := c.static[instance]; {
		case holder != "" && holder != id && req.MemberID != "":
			fail(kerr.FencedInstanceID, req.MemberID)
			return
		case holder != "" && holder != id:
			// A static member restarted: its new incarnation takes its
			// place, partitions and all.
			m = g.replaceConsumer(c.members[holder], id, clientID, host)
		}
	}
	if m == nil {
		m = &consumerMember{id: id, instanceID: instance, assigned: tpSet{}, revoking: tpSet{}}
		c.members[id] = m
		if instance != "" {
			c.static[instance] = id
		}
		bump = true
	}
	m.clientID, m.host, m.assignor, m.regex = clientID, host, "", ""
	m.rebalanceTimeout = rebalance
	m.classic = &classicProtocol{sessionTimeout: session, protocols: slices.Clone(req.Protocols)}
	if subs := sortedNames(sub.Topics); !slices.Equal(subs, m.subscribed) {
		m.subscribed = subs
		bump = true
	}
	c.deleted = false
	g.touchConsumer(m)
	if g.refreshSubscribed() || bump {
		c.epoch++
	}
	if c.epoch > c.targetEpoch {
		g.computeTarget()
	}
	// What the client says it owns: a cooperative client lists its
	// partitions, an eager one gave them all up before joining.
	owned := tpSet{}
	for _, t := range sub.OwnedPartitions {
		for _, p := range t.Partitions {
			owned[topicPartition{t.Topic, p}] = true
		}
	}
	g.reconcile(m, owned)
	resp.MemberID, resp.Generation = m.id, m.epoch
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(req.Protocols[0].Name)
	g.reply(reply, resp)
}

// supportsClassic reports whether a joining classic member speaks a
// protocol every classic member of the group speaks (any, when it would
// be the first).
func (c *consumerGroup) supportsClassic(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		ok := true
		for _, m := range c.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names, as Kafka's validateConsumerGroupMember: by instance id
// when there is one (FENCED_INSTANCE_ID when it is held by another member
// id), else by member id.
func (c *consumerGroup) classicMember(memberID, instance string) (*consumerMember, *kerr.Error) {
	if instance != "" && memberID == "" {
		memberID = c.static[instance] // a LeaveGroup may name the instance alone
	}
	if _, err := c.checkStatic(instance, memberID); err != nil {
		return nil, err
	}
	m := c.members[memberID]
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// consumerSync hands a classic member of a consumer group its partitions.
func (g *Group) consumerSync(req *kmsg.SyncGroupRequest, reply Responder) {
	c := g.consumer
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	m, err := c.classicMember(req.MemberID, deref(req.InstanceID))
	switch {
	case err != nil:
	case req.Generation != m.epoch:
		err = kerr.IllegalGeneration
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && !slices.ContainsFunc(m.classic.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == *req.Protocol }):
		err = kerr.InconsistentGroupProtocol
	case c.epoch > m.epoch && len(m.revoking) == 0:
		// A newer epoch came since the join: rejoin first. (A member
		// still giving partitions up carries on with this one.)
		err = kerr.RebalanceInProgress
	}
	if err != nil {
		resp.ErrorCode = err.Code
		g.reply(reply, resp)
		return
	}
	g.touchConsumer(m)
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
	resp.MemberAssignment = c.classicAssignment(m)
	g.reply(reply, resp)
}

// classicAssignment encodes a classic member's partitions as the consumer
// protocol's assignment, at the version of its subscription (up to 3).
func (c *consumerGroup) classicAssignment(m *consumerMember) []byte {
	var sub kmsg.ConsumerMemberMetadata
	_ = sub.ReadFrom(m.classic.protocols[0].Metadata)
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = min(max(sub.Version, 0), 3)
	topics, parts := m.assigned.sorted()
	for _, t := range topics {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t, parts[t]
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// consumerHeartbeatClassic is a classic member's Heartbeat to a consumer
// group: REBALANCE_IN_PROGRESS tells it to rejoin.
func (g *Group) consumerHeartbeatClassic(req *kmsg.HeartbeatRequest) *kerr.Error {
	c := g.consumer
	m, err := c.classicMember(req.MemberID, deref(req.InstanceID))
	switch {
	case err != nil:
		return err
	case req.Generation != m.epoch:
		return kerr.IllegalGeneration
	}
	g.touchConsumer(m)
	if m.epoch < c.epoch || len(m.revoking) > 0 || c.memberState(m) == memberUnreleasedPartitions && !c.waitingOnOthers(m) {
		return kerr.RebalanceInProgress
	}
	return nil
}

// waitingOnOthers reports whether a partition of a member's target is
// still owned by another member.
func (c *consumerGroup) waitingOnOthers(m *consumerMember) bool {
	for tp := range c.target[m.id] {
		if o, ok := c.owner[tp]; ok && o != m.id {
			return true
		}
	}
	return false
}

// consumerLeaveClassic removes a classic member of a consumer group.
func (g *Group) consumerLeaveClassic(memberID, instance string) *kerr.Error {
	m, err := g.consumer.classicMember(memberID, instance)
	if err != nil {
		return err
	}
	g.removeConsumer(m)
	return nil
}

// upgradeToConsumer turns a classic group with members into a consumer
// group (convertToConsumerGroup): each member keeps its assignment as a
// classic member at the group's generation, which becomes the group
// epoch and the target's. Its pending joins and syncs are answered
// REBALANCE_IN_PROGRESS; the members rejoin through consumerJoin.
func (g *Group) upgradeToConsumer() {
	g.Abort(kerr.RebalanceInProgress)
	c := g.consumer
	c.epoch, c.targetEpoch = g.generation, g.generation
	topics := g.topics()
	for _, id := range g.joinOrder {
		om := g.members[id]
		var sub kmsg.ConsumerMemberMetadata
		_ = sub.ReadFrom(om.metadata(g.protocol))
		var a kmsg.ConsumerMemberAssignment
		_ = a.ReadFrom(om.assignment)
		m := &consumerMember{id: om.id, instanceID: om.instanceID, clientID: om.clientID, host: om.host,
			rebalanceTimeout: om.rebalanceTimeout, epoch: g.generation, prevEpoch: g.generation,
			assigned: tpSet{}, revoking: tpSet{},
			classic: &classicProtocol{sessionTimeout: om.sessionTimeout, protocols: slices.Clone(om.protocols)}}
		m.subscribed = sortedNames(sub.Topics)
		for _, t := range a.Topics {
			tid, n, ok := topics.Topic(t.Topic)
			if !ok {
				continue
			}
			c.topicIDs[t.Topic] = tid
			for _, p := range t.Partitions {
				if p < n && c.owner[topicPartition{t.Topic, p}] == "" {
					m.assigned[topicPartition{t.Topic, p}] = true
					c.owner[topicPartition{t.Topic, p}] = m.id
				}
			}
		}
		c.members[m.id] = m
		c.target[m.id] = maps.Clone(m.assigned)
		if m.instanceID != "" {
			c.static[m.instanceID] = m.id
		}
		g.touchConsumer(m)
	}
	g.refreshSubscribed()
	// The classic group is gone: its membership record gets a tombstone.
	g.out.extra = append(g.out.extra, classicGroupTombstone(g.ID))
	g.members, g.joinOrder, g.static, g.pending = map[string]*member{}, nil, map[string]string{}, map[string]uint64{}
	g.state, g.protocol, g.leader, g.generation = Empty, "", "", 0
	g.initial = initialDelay{}
}

// maybeDowngrade turns a consumer group whose members all speak the
// classic protocol back into a classic group (convertToClassicGroup) when
// the policy allows: at the target's epoch, each member with its
// assignment, then a rebalance that all of them rejoin.
func (g *Group) maybeDowngrade() {
	c := g.consumer
	if !g.cfg.AllowDowngrade || len(c.members) == 0 {
		return
	}
	for _, m := range c.members {
		if m.classic == nil {
			return
		}
	}
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// The generation is the target's epoch, where the reconciled members
	// are (the leave that brought this about moved the group epoch past
	// it): their heartbeats and commits stay valid until they rejoin.
	g.generation = c.targetEpoch
	g.protocolType = "consumer"
	for _, id := range ids {
		cm := c.members[id]
		m := &member{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, host: cm.host, protocolType: "consumer",
			protocols: cm.classic.protocols, sessionTimeout: cm.classic.sessionTimeout, rebalanceTimeout: cm.rebalanceTimeout,
			assignment: c.classicAssignment(cm)}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[id] = m
		g.joinOrder = append(g.joinOrder, id)
		if m.instanceID != "" {
			g.static[m.instanceID] = id
		}
	}
	g.protocol = g.selectProtocol()
	g.leader = g.joinOrder[0]
	g.dropConsumer()
	g.state = Stable
	// Written as Kafka writes it at the conversion: a restart before the
	// rebalance ends finds the classic group with its members.
	g.out.GroupMetadata = true
	for _, id := range g.joinOrder {
		g.touch(g.members[id])
	}
	g.prepareRebalance()
}

// dropConsumer deletes the consumer group's records (tombstones) and
// forgets it: the group is classic from now on.
func (g *Group) dropConsumer() {
	g.consumer.deleted = true
	g.out.extra = append(g.out.extra, g.persistConsumer()...)
	g.consumer = newConsumerGroup()
}

func classicGroupTombstone(group string) Record {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return Record{Key: k.AppendTo(nil)}
}
