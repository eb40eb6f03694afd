package coordinator

// The KIP-848 consumer protocol: ConsumerGroupHeartbeat with server-side
// assignment, as Kafka's GroupMetadataManager and ConsumerGroup run it:
//
//   - A group is classic or consumer as Kafka decides it, classic members
//     of consumer groups included (classic_members.go).
//   - The group epoch is bumped by every change of membership, of a
//     subscription or of a subscribed topic's partition count; the target
//     assignment is then computed again (uniform or range) at that epoch.
//   - A member reconciles towards its target one heartbeat at a time: it
//     is first told to give up the partitions no longer in its target
//     (its epoch stays); once a heartbeat lists its owned partitions
//     without them, they are released and it moves to the target epoch,
//     taking the partitions of its target that no other member still
//     owns. A partition therefore never has two owners. A member that
//     has not given its partitions up within its rebalance timeout is
//     removed.
//   - Session timeouts (the group's consumer.session.timeout.ms, else
//     group.consumer.session.timeout.ms) and leaves
//     (epoch -1 or -2) remove a member and release its partitions.
//
//   - Static members (InstanceId): one leaving with epoch -2 keeps its
//     partitions until its session expires; its instance coming back
//     under a new member id takes its place at once, without a new group
//     epoch (UNRELEASED_INSTANCE_ID while the old one is still there,
//     FENCED_INSTANCE_ID to the replaced member id).
//   - Regex subscriptions (SubscribedTopicRegex, RE2 as Kafka's RE2/J,
//     whole names, internal topics excluded) are resolved against the
//     topics at every heartbeat; a matching topic created later moves the
//     group epoch.
//   - The group is persisted in __consumer_offsets as Kafka's
//     ConsumerGroup* records (consumer_records.go) and a heartbeat that
//     changed it is answered once they are durable; a coordinator
//     restart or a broker restart keeps every member's epoch and
//     partitions.
//   - OffsetCommit and OffsetFetch (v9+) check member epochs.

import (
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for consumer-protocol groups.
const (
	// DefaultConsumerSessionTimeout is group.consumer.session.timeout.ms.
	DefaultConsumerSessionTimeout = 45 * time.Second
	// DefaultConsumerHeartbeatInterval is
	// group.consumer.heartbeat.interval.ms.
	DefaultConsumerHeartbeatInterval = 5 * time.Second
)

type tpSet map[topicPartition]bool

// sortedNames returns topic names sorted, without duplicates, as a
// member's subscription is kept; names is left as it is.
func sortedNames(names []string) []string {
	s := slices.Clone(names)
	slices.Sort(s)
	return slices.Compact(s)
}

// sorted returns a set's partitions by topic: the topics in order, and
// each topic's partitions in order.
func (s tpSet) sorted() (topics []string, parts map[string][]int32) {
	parts = map[string][]int32{}
	for tp := range s {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	for _, ps := range parts {
		slices.Sort(ps)
	}
	return SortedTopics(parts), parts
}

// consumerGroup is the consumer-protocol part of a Group.
type consumerGroup struct {
	epoch       int32 // the group epoch
	targetEpoch int32 // the epoch of target
	members     map[string]*consumerMember
	target      map[string]tpSet
	// owner maps each partition to the member that owns it: assigned, or
	// given up but not yet acknowledged as revoked.
	owner map[topicPartition]string
	// subscribed is the partition count of each subscribed topic when
	// the target was computed (0: the topic does not exist).
	subscribed map[string]int32
	topicIDs   map[string][16]byte
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// regexes caches the resolution of the members' regular expressions
	// at a version of the topics.
	regexes map[string]resolvedRegex
	// persisted is what the log has of the group; deleted is set when
	// the group is deleted, so that its records get tombstones.
	persisted persistedConsumer
	deleted   bool
}

type resolvedRegex struct {
	version int64
	topics  []string
}

type consumerMember struct {
	id                 string
	epoch, prevEpoch   int32
	instanceID         string
	clientID, host     string
	subscribed         []string // sorted, as the member sent them
	regex              string   // SubscribedTopicRegex, "" if none
	topics             []string // sorted: subscribed and what regex matches
	assignor           string
	rebalanceTimeout   time.Duration
	assigned, revoking tpSet
	sessionSeq         uint64
	// revokeSeq is the sequence of the rebalance timer bounding the
	// current revocation, 0 when none runs.
	revokeSeq uint64
	// sent is false when assigned changed since the member was told.
	sent bool
	// classic is set for a member speaking the classic protocol
	// (classic_members.go).
	classic *classicProtocol
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*consumerMember{}, target: map[string]tpSet{},
		owner: map[topicPartition]string{}, subscribed: map[string]int32{}, topicIDs: map[string][16]byte{},
		static: map[string]string{}, regexes: map[string]resolvedRegex{}, persisted: persistedConsumer{values: map[string][]byte{}}}
}

// IsConsumer reports whether the group is a consumer-protocol group with
// members.
func (g *Group) IsConsumer() bool { return len(g.consumer.members) > 0 }

func (g *Group) consumerSessionTimeout() time.Duration {
	if g.cfg.ConsumerTimeouts == nil {
		return DefaultConsumerSessionTimeout
	}
	session, _ := g.cfg.ConsumerTimeouts()
	return session
}

func (g *Group) consumerHeartbeatInterval() time.Duration {
	if g.cfg.ConsumerTimeouts == nil {
		return DefaultConsumerHeartbeatInterval
	}
	_, heartbeat := g.cfg.ConsumerTimeouts()
	return heartbeat
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat request (v0-1).
func (g *Group) ConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, host string, reply Responder) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(err *kerr.Error, msg string) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		// NB: an error's member epoch is 0, as Kafka answers it (the
		// field's default), not -1.
		resp.MemberEpoch = 0
		g.reply(reply, resp)
	}
	c := g.consumer
	instance := deref(req.InstanceID)
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable, "")
		return
	case g.IsShare() || g.IsStreams():
		fail(kerr.GroupIDNotFound, "Group "+g.ID+" is not a consumer group.")
		return
	case len(g.members) > 0 && (!g.cfg.AllowUpgrade || g.protocolType != "consumer"):
		fail(kerr.GroupIDNotFound, "Cannot upgrade classic group "+g.ID+" to consumer group.")
		return
	case req.MemberEpoch < -2:
		fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
		return
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch != 0):
		fail(kerr.InvalidRequest, "MemberId can't be empty.")
		return
	case req.InstanceID != nil && instance == "":
		fail(kerr.InvalidRequest, "InstanceId can't be empty.")
		return
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		fail(kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		return
	case req.ServerAssignor != nil && *req.ServerAssignor != "uniform" && *req.ServerAssignor != "range":
		fail(kerr.UnsupportedAssignor, "ServerAssignor "+*req.ServerAssignor+" is not supported.")
		return
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			fail(kerr.InvalidRegularExpression, "SubscribedTopicRegex is not a valid regular expression: "+err.Error())
			return
		}
	}
	if req.MemberEpoch < 0 {
		g.consumerLeave(req, fail, reply)
		return
	}
	if len(g.members) > 0 {
		g.upgradeToConsumer()
	}
	g.pending = map[string]uint64{}
	// A group whose deletion is being written lives again: its records
	// are written anew after the tombstones.
	c.deleted = false
	m := c.members[req.MemberID]
	staticMsg, staticErr := c.checkStatic(instance, req.MemberID)
	// bump is set by a change that moves the group epoch: one step by
	// heartbeat, however many changes it brings.
	bump := false
	switch {
	case req.MemberEpoch == 0 && instance != "" && c.static[instance] != "" && c.static[instance] != req.MemberID:
		// A static member comes back under a new member id (KIP-848,
		// KIP-345): if its previous instance left with epoch -2, it takes
		// that member's place, assignment and all, without a rebalance.
		old := c.members[c.static[instance]]
		if old.epoch != leftStaticEpoch {
			fail(kerr.UnreleasedInstanceID, "Static member "+instance+" with a different member id is still in the group.")
			return
		}
		m = g.replaceConsumer(old, req.MemberID, clientID, host)
	case req.MemberEpoch == 0:
		if m != nil {
			// A member that lost its epoch joins again: it owns nothing.
			g.removeConsumer(m)
		}
		id := req.MemberID
		if id == "" {
			id = g.cfg.NewMemberID(clientID)
		}
		m = &consumerMember{id: id, instanceID: instance, clientID: clientID, host: host, assigned: tpSet{}, revoking: tpSet{},
			rebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond}
		c.members[id] = m
		if instance != "" {
			c.static[instance] = id
		}
		bump = true
	case staticErr != nil:
		fail(staticErr, staticMsg)
		return
	case m == nil:
		fail(kerr.UnknownMemberID, "")
		return
	case req.MemberEpoch > m.epoch,
		req.MemberEpoch < m.epoch && (req.MemberEpoch != m.prevEpoch || !ownedWithin(req.Topics, c, m)):
		fail(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch than expected.")
		return
	}
	g.touchConsumer(m)
	if req.SubscribedTopicNames != nil {
		if subs := sortedNames(req.SubscribedTopicNames); !slices.Equal(subs, m.subscribed) {
			m.subscribed = subs
			bump = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex = *req.SubscribedTopicRegex
		bump = true
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if g.refreshSubscribed() || bump {
		c.epoch++
	}
	if c.epoch > c.targetEpoch {
		g.computeTarget()
	}
	var owned tpSet
	if req.Topics != nil {
		owned = tpSet{}
		for _, t := range req.Topics {
			name := c.topicName(t.TopicID)
			for _, p := range t.Partitions {
				owned[topicPartition{name, p}] = true
			}
		}
	}
	g.reconcile(m, owned)
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.consumerHeartbeatInterval() / time.Millisecond)
	if !m.sent || (owned != nil && !sameSet(owned, m.assigned)) {
		m.sent = true
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		topics, parts := m.assigned.sorted()
		for _, t := range topics {
			rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			rt.TopicID, rt.Partitions = c.topicIDs[t], parts[t]
			a.Topics = append(a.Topics, rt)
		}
		resp.Assignment = &a
	}
	g.reply(reply, resp)
}

// leftStaticEpoch is the epoch of a static member that left for a while
// (it sent epoch -2): it keeps its assignment until its session expires or
// its instance comes back.
const leftStaticEpoch = -2

// consumerLeave handles a heartbeat with epoch -1 (leave) or -2 (a static
// member leaves for a while, as when it restarts).
func (g *Group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest, fail func(*kerr.Error, string), reply Responder) {
	c := g.consumer
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	m := c.members[req.MemberID]
	instance := deref(req.InstanceID)
	if msg, err := c.checkStatic(instance, req.MemberID); err != nil {
		fail(err, msg)
		return
	}
	if m == nil {
		fail(kerr.UnknownMemberID, "")
		return
	}
	if req.MemberEpoch == leftStaticEpoch && instance != "" {
		// Its session timer runs on: if it does not come back in time,
		// it is removed and its partitions move.
		m.prevEpoch, m.epoch = m.epoch, leftStaticEpoch
	} else {
		g.removeConsumer(m)
		g.maybeDowngrade()
	}
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), req.MemberEpoch
	g.reply(reply, resp)
}

// checkStatic checks that a member naming an instance id holds it:
// UNKNOWN_MEMBER_ID when no member does, FENCED_INSTANCE_ID when another
// member id does (Kafka's throwIfStaticMemberIsUnknown and
// throwIfInstanceIdIsFenced). No instance id passes.
func (c *consumerGroup) checkStatic(instance, memberID string) (msg string, err *kerr.Error) {
	switch holder := c.static[instance]; {
	case instance == "":
		return "", nil
	case holder == "":
		return "Instance id " + instance + " is unknown.", kerr.UnknownMemberID
	case holder != memberID:
		return "Static member " + instance + " was replaced by another member id.", kerr.FencedInstanceID
	}
	return "", nil
}

// replaceConsumer gives a static member's place to its new incarnation:
// same subscription, target and partitions, under a new member id, at
// epoch 0 (the heartbeat's reconcile moves it to the target epoch).
func (g *Group) replaceConsumer(old *consumerMember, id, clientID, host string) *consumerMember {
	c := g.consumer
	m := *old
	m.id, m.clientID, m.host = id, clientID, host
	m.epoch, m.prevEpoch, m.sent, m.revokeSeq = 0, 0, false, 0
	delete(c.members, old.id)
	c.members[id] = &m
	c.target[id] = c.target[old.id]
	delete(c.target, old.id)
	for tp, o := range c.owner {
		if o == old.id {
			c.owner[tp] = id
		}
	}
	c.static[m.instanceID] = id
	if len(m.revoking) > 0 {
		g.startRevocationTimer(&m)
	}
	return &m
}

func (c *consumerGroup) topicName(id [16]byte) string {
	for name, tid := range c.topicIDs {
		if tid == id {
			return name
		}
	}
	return ""
}

// ownedWithin reports whether the partitions a member says it owns are
// within what it was assigned: a member whose last answer was lost may
// heartbeat with its previous epoch.
func ownedWithin(ts []kmsg.ConsumerGroupHeartbeatRequestTopic, c *consumerGroup, m *consumerMember) bool {
	for _, t := range ts {
		name := c.topicName(t.TopicID)
		for _, p := range t.Partitions {
			tp := topicPartition{name, p}
			if !m.assigned[tp] && !m.revoking[tp] {
				return false
			}
		}
	}
	return true
}

func sameSet(a, b tpSet) bool {
	if len(a) != len(b) {
		return false
	}
	for tp := range a {
		if !b[tp] {
			return false
		}
	}
	return true
}

// refreshSubscribed resolves the members' subscriptions (names and
// regular expressions) against the topics and reads the subscribed
// topics' partition counts; it reports whether any changed since the
// target was computed.
func (g *Group) refreshSubscribed() bool {
	c := g.consumer
	topics := g.topics()
	now := map[string]int32{}
	for _, m := range c.members {
		m.topics = m.subscribed
		if m.regex != "" {
			m.topics = sortedNames(slices.Concat(m.subscribed, c.resolve(m.regex, topics)))
		}
		for _, t := range m.topics {
			if _, ok := now[t]; ok {
				continue
			}
			id, n, ok := topics.Topic(t)
			if ok {
				now[t] = n
				c.topicIDs[t] = id
			} else {
				now[t] = 0
			}
		}
	}
	changed := len(now) != len(c.subscribed)
	for t, n := range now {
		if o, ok := c.subscribed[t]; !ok || o != n {
			changed = true
		}
	}
	c.subscribed = now
	return changed
}

// resolve returns the topics a regular expression matches, as Kafka's
// RE2/J matches() does: the whole name. Resolutions are kept until the
// topics change.
func (c *consumerGroup) resolve(regex string, topics Topics) []string {
	names, version := topics.Names()
	if r, ok := c.regexes[regex]; ok && r.version == version {
		return r.topics
	}
	re, err := compileRegex(regex)
	if err != nil {
		return nil // refused when the member sent it
	}
	var out []string
	for _, t := range names {
		if re.MatchString(t) {
			out = append(out, t)
		}
	}
	c.regexes[regex] = resolvedRegex{version: version, topics: out}
	return out
}

// compileRegex compiles a subscription's regular expression to match
// whole topic names. Go's regexp is RE2, as Kafka's RE2/J.
func compileRegex(regex string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + regex + ")$")
}

// computeTarget computes the target assignment at the group epoch with
// the assignor the members ask for (uniform unless they all ask range).
func (g *Group) computeTarget() {
	c := g.consumer
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if c.assignorName() == "range" {
		c.target = rangeAssign(ids, c.members, c.subscribed)
	} else {
		c.target = uniformAssign(ids, c.members, c.subscribed, c.target)
	}
	c.targetEpoch = c.epoch
}

// uniformAssign spreads the subscribed partitions evenly, keeping each
// member's previous target where the balance allows.
func uniformAssign(ids []string, members map[string]*consumerMember, counts map[string]int32, prev map[string]tpSet) map[string]tpSet {
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	var all []topicPartition
	for _, t := range SortedTopics(topicsOf(counts)) {
		for p := range counts[t] {
			all = append(all, topicPartition{t, p})
		}
	}
	if len(ids) == 0 {
		return out
	}
	eligible := func(id string, tp topicPartition) bool {
		_, ok := slices.BinarySearch(members[id].topics, tp.Topic)
		return ok
	}
	quota, extra := len(all)/len(ids), len(all)%len(ids)
	taken := map[topicPartition]bool{}
	for _, id := range ids {
		limit := quota
		kept := 0
		for _, tp := range all {
			if !prev[id][tp] || !eligible(id, tp) {
				continue
			}
			if kept == limit {
				if extra == 0 || limit > quota {
					break
				}
				extra--
				limit++
			}
			out[id][tp], taken[tp] = true, true
			kept++
		}
	}
	for _, tp := range all {
		if taken[tp] {
			continue
		}
		best := ""
		for _, id := range ids {
			if eligible(id, tp) && (best == "" || len(out[id]) < len(out[best])) {
				best = id
			}
		}
		if best != "" {
			out[best][tp] = true
		}
	}
	return out
}

// rangeAssign gives each member of a topic's subscribers a contiguous
// range of its partitions, the first members one more when they do not
// divide evenly, as Kafka's RangeAssignor does.
func rangeAssign(ids []string, members map[string]*consumerMember, counts map[string]int32) map[string]tpSet {
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	for _, t := range SortedTopics(topicsOf(counts)) {
		var subs []string
		for _, id := range ids {
			if _, ok := slices.BinarySearch(members[id].topics, t); ok {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(counts[t])
		quota, extra := n/len(subs), n%len(subs)
		p := 0
		for i, id := range subs {
			k := quota
			if i < extra {
				k++
			}
			for range k {
				out[id][topicPartition{t, int32(p)}] = true
				p++
			}
		}
	}
	return out
}

func topicsOf(counts map[string]int32) map[string][]int32 {
	out := make(map[string][]int32, len(counts))
	for t, n := range counts {
		if n > 0 {
			out[t] = nil
		}
	}
	return out
}

// reconcile moves a member towards its target: first the partitions to
// give up (its epoch stays until a heartbeat shows them revoked), then the
// target epoch with every partition of its target no one else owns.
func (g *Group) reconcile(m *consumerMember, owned tpSet) {
	c := g.consumer
	g.releaseRevoked(m, owned)
	target := c.target[m.id]
	for tp := range m.assigned {
		if !target[tp] {
			delete(m.assigned, tp)
			m.revoking[tp] = true
			m.sent = false
		}
	}
	// A member may have given them up already: a classic member of an
	// eager client rejoins owning nothing.
	g.releaseRevoked(m, owned)
	if len(m.revoking) > 0 {
		if m.revokeSeq == 0 {
			g.startRevocationTimer(m)
		}
		return
	}
	for tp := range target {
		if m.assigned[tp] {
			continue
		}
		if o, ok := c.owner[tp]; ok && o != m.id {
			continue // unreleased: the next heartbeat tries again
		}
		c.owner[tp] = m.id
		m.assigned[tp] = true
		m.sent = false
	}
	if m.epoch != c.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, c.targetEpoch
		m.sent = false
	}
}

// releaseRevoked frees the partitions a member was to give up once what
// it says it owns (nil: it did not say) has none of them.
func (g *Group) releaseRevoked(m *consumerMember, owned tpSet) {
	if len(m.revoking) == 0 || owned == nil {
		return
	}
	for tp := range owned {
		if m.revoking[tp] {
			return // not revoked yet
		}
	}
	for tp := range m.revoking {
		if g.consumer.owner[tp] == m.id {
			delete(g.consumer.owner, tp)
		}
	}
	m.revoking = tpSet{}
	m.revokeSeq = 0
}

// startRevocationTimer bounds a revocation: a member that does not give
// up its partitions within its rebalance timeout is removed, as Kafka
// fences it.
func (g *Group) startRevocationTimer(m *consumerMember) {
	m.revokeSeq = g.nextSeq()
	after := m.rebalanceTimeout
	if after <= 0 {
		after = g.consumerSessionTimeout()
	}
	g.out.Timers = append(g.out.Timers, Timer{After: after, Kind: TimerConsumerRevocation, Member: m.id, Seq: m.revokeSeq})
}

// removeConsumer removes a member that left or expired: its partitions are
// free at once, and the group epoch moves.
func (g *Group) removeConsumer(m *consumerMember) {
	c := g.consumer
	delete(c.members, m.id)
	delete(c.target, m.id)
	if c.static[m.instanceID] == m.id {
		delete(c.static, m.instanceID)
	}
	for tp, o := range c.owner {
		if o == m.id {
			delete(c.owner, tp)
		}
	}
	c.epoch++
	g.refreshSubscribed()
	if len(c.members) == 0 {
		g.emptySince = g.cfg.Now().UnixMilli()
		if len(g.offsets) > 0 {
			g.scheduleExpiry(g.emptySince)
		}
	}
}

func (g *Group) touchConsumer(m *consumerMember) {
	m.sessionSeq = g.nextSeq()
	after := g.consumerSessionTimeout()
	if m.classic != nil {
		after = m.classic.sessionTimeout
	}
	g.out.Timers = append(g.out.Timers, Timer{After: after, Kind: TimerConsumerSession, Member: m.id, Seq: m.sessionSeq})
}

func (g *Group) fireConsumerSession(t Timer) {
	if m := g.consumer.members[t.Member]; m != nil && m.sessionSeq == t.Seq {
		g.removeConsumer(m)
		if m.classic == nil {
			g.maybeDowngrade()
		}
	}
}

func (g *Group) fireConsumerRevocation(t Timer) {
	if m := g.consumer.members[t.Member]; m != nil && m.revokeSeq == t.Seq && len(m.revoking) > 0 {
		g.removeConsumer(m)
		if m.classic == nil {
			g.maybeDowngrade()
		}
	}
}

// checkConsumerCommit validates an OffsetCommit to a consumer group, as
// Kafka's ConsumerGroup.validateOffsetCommit: epoch -1 without a member is
// allowed only while the group has no members; a member must exist
// (UNKNOWN_MEMBER_ID) and commit with its epoch or, while its newer epoch
// may not have reached it, the previous one (STALE_MEMBER_EPOCH).
func (g *Group) checkConsumerCommit(epoch int32, memberID string) *kerr.Error {
	c := g.consumer
	if epoch < 0 && memberID == "" {
		if len(c.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := c.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case m.classic != nil && epoch != m.epoch:
		// A classic member commits with its generation, Kafka's
		// validateMemberEpoch for classic members.
		return kerr.IllegalGeneration
	case epoch != m.epoch && epoch != m.prevEpoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// CheckFetch validates the member of an OffsetFetch (v9+) to a consumer
// group, as Kafka's ConsumerGroup.validateOffsetFetch: no member id with a
// negative epoch (an admin client, or an older client) may fetch; a member
// must exist (UNKNOWN_MEMBER_ID) and fetch at its epoch
// (STALE_MEMBER_EPOCH). Classic groups do not check members on fetch.
func (g *Group) CheckFetch(memberID *string, epoch int32) *kerr.Error {
	if g.IsStreams() {
		return g.checkStreamsFetch(memberID, epoch)
	}
	if memberID == nil && epoch < 0 || len(g.members) > 0 || g.consumer.epoch == 0 {
		return nil
	}
	m := g.consumer.members[deref(memberID)]
	switch {
	case memberID == nil || m == nil:
		return kerr.UnknownMemberID
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}
