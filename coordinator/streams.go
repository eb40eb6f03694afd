package coordinator

// Streams groups (KIP-1071): StreamsGroupHeartbeat, as Kafka 4.2's
// GroupMetadataManager runs it:
//
//   - A group id is a classic, consumer, share or streams group, never
//     two: StreamsGroupHeartbeat to another kind is GROUP_ID_NOT_FOUND
//     ("Group X is not a streams group."), as is a heartbeat with an epoch
//     other than 0 to an unknown group ("Streams group X not found."); an
//     empty classic group (offsets only) becomes a streams group, keeping
//     its offsets. The other protocols' requests to a streams group are
//     GROUP_ID_NOT_FOUND.
//   - The first member to join initializes the topology (streams_topology.go);
//     a later member with the same epoch must bring the same one
//     (INVALID_REQUEST "Topology updates are not supported yet."), one with
//     an older epoch is told STALE_TOPOLOGY.
//   - The topology is configured against the topics at every heartbeat
//     whose topics changed (the metadata hash); its internal topics that do
//     not exist are reported (MISSING_INTERNAL_TOPICS) and handed to
//     transport to create (Ready.CreateTopics).
//   - The group epoch moves with membership, member metadata, the topics
//     and the topology's validation; the target assignment is computed at
//     that epoch by the sticky assignor (streams_assignor.go) once the
//     topology is ready, after the group's initial rebalance delay
//     (streams.initial.rebalance.delay.ms, ASSIGNMENT_DELAYED meanwhile).
//   - A member reconciles as Kafka's streams CurrentAssignmentBuilder: it
//     first gives up the tasks not in its target (its epoch stays until a
//     heartbeat lists them gone, within its rebalance timeout), then takes
//     its target's tasks that no other member holds (an active task held
//     by any member, a standby held in the member's process, wait), at the
//     target epoch. Active tasks carry the epoch they were assigned in.
//   - Members expire after the session timeout (streams.session.timeout.ms,
//     else group.streams.session.timeout.ms) and leave with epoch -1.
//     Static membership, warm-up tasks, task offsets and source topic
//     regular expressions are refused, as Kafka 4.2 refuses them.

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsSettings are a streams group's settings in force: the group's
// streams.* configs, else the node's group.streams.* ones.
type StreamsSettings struct {
	// SessionTimeout is streams.session.timeout.ms (45 s).
	SessionTimeout time.Duration
	// HeartbeatInterval is streams.heartbeat.interval.ms (5 s).
	HeartbeatInterval time.Duration
	// NumStandbyReplicas is streams.num.standby.replicas (0).
	NumStandbyReplicas int
	// InitialRebalanceDelay is streams.initial.rebalance.delay.ms (3 s).
	InitialRebalanceDelay time.Duration
}

// DefaultStreamsSettings are Kafka's defaults.
var DefaultStreamsSettings = StreamsSettings{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second,
	InitialRebalanceDelay: 3 * time.Second}

// The timers of streams groups.
const (
	// TimerStreamsSession fences a streams group member that stopped
	// heartbeating.
	TimerStreamsSession TimerKind = 30
	// TimerStreamsRevocation fences a member that did not give up its
	// revoked tasks within its rebalance timeout.
	TimerStreamsRevocation TimerKind = 31
	// TimerStreamsInitialDelay ends a streams group's initial rebalance
	// delay.
	TimerStreamsInitialDelay TimerKind = 32
)

// Kafka's streams MemberState values.
const (
	streamsStable          int8 = 0
	streamsUnrevokedTasks  int8 = 1
	streamsUnreleasedTasks int8 = 2
)

// The streams group states, as Kafka's StreamsGroupState names them.
const (
	streamsStateEmpty       = "Empty"
	streamsStateNotReady    = "NotReady"
	streamsStateAssigning   = "Assigning"
	streamsStateReconciling = "Reconciling"
	streamsStateStable      = "Stable"
)

// streamsGroup is the streams-protocol part of a Group.
type streamsGroup struct {
	exists, deleted bool
	epoch           int32 // the group epoch
	targetEpoch     int32 // the epoch of target
	hash            int64 // the metadata hash at the group epoch
	validatedEpoch  int32 // the topology epoch validated, -1 none
	// lastConfigs are the assignment configs of the last assignment
	// (num.standby.replicas).
	lastConfigs map[string]string
	topology    *streamsTopology
	configured  *configuredTopology
	members     map[string]*streamsMember
	target      map[string]streamsTasks
	// delaySeq is the initial rebalance delay's timer, 0 when none runs.
	delaySeq      uint64
	endpointEpoch int32
	shutdownBy    string // the member that asked the application to shut down
	persisted     persistedConsumer
	// create are the internal topics the last heartbeat found missing.
	create []InternalTopic
	// restore collects the group's records during Restore
	// (streams_records.go).
	restore *streamsRestore
	// topologyValue is topology's StreamsGroupTopologyValue, encoded at
	// its first write.
	topologyValue []byte
}

type streamsMember struct {
	id                 string
	epoch, prevEpoch   int32
	state              int8
	rack               string
	clientID, host     string
	rebalanceTimeout   int32 // ms
	topologyEpoch      int32
	processID          string
	endpoint           *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	tags               [][2]string
	assigned, revoking streamsTasks
	sessionSeq         uint64
	revokeSeq          uint64
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{validatedEpoch: -1, members: map[string]*streamsMember{}, target: map[string]streamsTasks{},
		persisted: persistedConsumer{values: map[string][]byte{}}}
}

// IsStreams reports whether the group is a streams group (KIP-1071).
func (g *Group) IsStreams() bool { return g.state != Dead && g.streams.exists && !g.streams.deleted }

func (g *Group) streamsSettings() StreamsSettings {
	if g.cfg.StreamsSettings == nil {
		return DefaultStreamsSettings
	}
	return g.cfg.StreamsSettings()
}

// TakeStreamsTopics returns, and forgets, the internal topics the last
// StreamsHeartbeat found missing: the actor hands them to transport.
func (g *Group) TakeStreamsTopics() []InternalTopic {
	out := g.streams.create
	g.streams.create = nil
	return out
}

// streamsRequestError validates a StreamsGroupHeartbeat as Kafka's
// GroupCoordinatorService does before the group is looked at.
func streamsRequestError(req *kmsg.StreamsGroupHeartbeatRequest) (*kerr.Error, string) {
	notEmpty := func(ts []kmsg.TaskIDs) bool { return len(ts) > 0 }
	switch {
	case req.InstanceID != nil:
		return kerr.InvalidRequest, "Static membership is not yet supported."
	case req.TaskOffsets != nil:
		return kerr.InvalidRequest, "TaskOffsets are not supported yet."
	case req.TaskEndOffsets != nil:
		return kerr.InvalidRequest, "TaskEndOffsets are not supported yet."
	case notEmpty(req.WarmupTasks):
		return kerr.InvalidRequest, "WarmupTasks are not supported yet."
	}
	if req.Topology != nil {
		for _, s := range req.Topology.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				return kerr.InvalidRequest, "Regular expressions for source topics are not supported yet."
			}
		}
	}
	switch {
	case req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case notEmpty(req.ActiveTasks):
			return kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining."
		case notEmpty(req.StandbyTasks):
			return kerr.InvalidRequest, "StandbyTasks must be empty when (re-)joining."
		case req.Topology == nil:
			return kerr.InvalidRequest, "Topology must be non-null when (re-)joining."
		}
		for _, s := range req.Topology.Subtopologies {
			for _, ti := range s.StateChangelogTopics {
				if ti.NumPartitions != 0 {
					return kerr.StreamsInvalidTopology, fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", ti.Topic, ti.NumPartitions)
				}
			}
		}
	case req.MemberEpoch == -2:
		return kerr.InvalidRequest, "InstanceId can't be null."
	case req.MemberEpoch < -2:
		return kerr.InvalidRequest, fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if (req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil) &&
		(req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil) {
		return kerr.InvalidRequest, "If one task-type is non-null, all must be non-null."
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return kerr.InvalidRequest, "Topology can only be provided when (re-)joining."
	}
	return nil, ""
}

// tasksOf reads a request's task list.
func tasksOf(ts []kmsg.TaskIDs) taskSet {
	out := taskSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[streamsTask{t.SubtopologyID, p}] = 0
		}
	}
	return out
}

// StreamsHeartbeat handles a StreamsGroupHeartbeat request (v0).
func (g *Group) StreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, host string, reply Responder) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	fail := func(err *kerr.Error, msg string) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		g.reply(reply, resp)
	}
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable, "")
		return
	}
	if err, msg := streamsRequestError(req); err != nil {
		fail(err, msg)
		return
	}
	s := g.streams
	switch owner := g.typeOwner(); {
	case owner == "share" || owner == "consumer" || owner == "classic" && (len(g.members) > 0 || g.state != Empty):
		fail(kerr.GroupIDNotFound, "Group "+g.ID+" is not a streams group.")
		return
	case !g.IsStreams() && req.MemberEpoch != 0:
		fail(kerr.GroupIDNotFound, "Streams group "+g.ID+" not found.")
		return
	}
	m := s.members[req.MemberID]
	if req.MemberEpoch == -1 {
		if m == nil {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
			return
		}
		if req.ShutdownApplication {
			s.shutdownBy = m.id
		}
		g.removeStreamsMember(m)
		resp.MemberID, resp.MemberEpoch = m.id, -1
		resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
		g.reply(reply, resp)
		return
	}
	var owned *streamsTasks
	if req.ActiveTasks != nil {
		o := streamsTasks{active: tasksOf(req.ActiveTasks), standby: tasksOf(req.StandbyTasks), warmup: tasksOf(req.WarmupTasks)}
		owned = &o
	}
	// Nothing changes until the request is found valid (Kafka validates
	// before it writes any record): a new group and a new member are
	// kept aside, the member's changes made to a copy.
	bump := false
	newGroup, newMember := false, false
	switch {
	case req.MemberEpoch == 0 && m == nil:
		if len(s.members) >= g.cfg.StreamsMaxSize && g.cfg.StreamsMaxSize > 0 && g.IsStreams() {
			fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", g.cfg.StreamsMaxSize))
			return
		}
		if !g.IsStreams() {
			s = newStreamsGroup()
			s.exists, newGroup = true, true
		}
		m = &streamsMember{id: req.MemberID, assigned: newStreamsTasks(), revoking: newStreamsTasks(), rebalanceTimeout: -1}
		newMember, bump = true, true
	case req.MemberEpoch == 0:
	case m == nil:
		fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
		return
	case req.MemberEpoch > m.epoch:
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
		return
	case req.MemberEpoch < m.epoch && (req.MemberEpoch != m.prevEpoch || owned != nil && !ownedWithinAssigned(*owned, m.assigned)):
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
		return
	}
	nm := *m
	if req.MemberEpoch == 0 && !newMember {
		// A member joining again owns nothing: what it held is free.
		nm.assigned, nm.revoking, nm.state, nm.epoch = newStreamsTasks(), newStreamsTasks(), streamsStable, 0
	}
	// 1. The member's metadata.
	before := fmt.Sprint(nm.rack, nm.clientID, nm.host, nm.rebalanceTimeout, nm.topologyEpoch, nm.processID, nm.endpoint, nm.tags)
	if req.RackID != nil {
		nm.rack = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		nm.rebalanceTimeout = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		nm.topologyEpoch = req.Topology.Epoch
	}
	nm.clientID, nm.host = clientID, host
	if req.ProcessID != nil {
		nm.processID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		e := *req.UserEndpoint
		nm.endpoint = &e
	}
	if req.ClientTags != nil {
		nm.tags = nil
		for _, t := range req.ClientTags {
			nm.tags = append(nm.tags, [2]string{t.Key, t.Value})
		}
	}
	if fmt.Sprint(nm.rack, nm.clientID, nm.host, nm.rebalanceTimeout, nm.topologyEpoch, nm.processID, nm.endpoint, nm.tags) != before {
		bump = true
	}
	// 2. The topology.
	topology := s.topology
	if req.Topology != nil {
		t := topologyFromRequest(req.Topology)
		switch {
		case topology == nil:
			topology = t
		case topology.epoch > t.epoch:
		case !topology.equal(t):
			fail(kerr.InvalidRequest, "Topology updates are not supported yet.")
			return
		}
	}
	if topology == nil {
		// Only a damaged log leaves a member without its group's
		// topology (loadStreams drops such members).
		fail(kerr.InvalidRequest, "Topology must be non-null when (re-)joining.")
		return
	}
	var status []kmsg.StreamsGroupHeartbeatResponseStatus
	addStatus := func(code int8, detail string) {
		st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
		st.StatusCode, st.StatusDetail = code, detail
		status = append(status, st)
	}
	if nm.topologyEpoch < topology.epoch {
		addStatus(streamsStatusStaleTopology, fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", nm.topologyEpoch, topology.epoch))
	}
	// 3. The topology against the topics.
	topics := g.topics()
	hash := streamsMetadataHash(topology, topics)
	if hash != s.hash {
		bump = true
	}
	c := s.configured
	if c == nil || c.hash != hash || topology != s.topology {
		c = configureTopology(topology, topics, hash)
	}
	if c.invalid != "" {
		fail(kerr.StreamsInvalidTopology, c.invalid)
		return
	}
	validated := int32(-1)
	if c.ready() {
		validated = topology.epoch
		for _, ts := range []taskSet{owned.orEmpty().active, owned.orEmpty().standby} {
			for t := range ts {
				n, ok := c.tasks[t.sub]
				switch {
				case !ok:
					fail(kerr.InvalidRequest, "Subtopology "+t.sub+" does not exist in the topology.")
					return
				case t.p < 0 || t.p >= n:
					fail(kerr.InvalidRequest, fmt.Sprintf("Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", t.p, t.sub, n))
					return
				}
			}
		}
	}
	// The request is valid: from here on the group changes.
	if newGroup {
		g.streams = s
	}
	if newMember {
		s.members[m.id] = m
	}
	*m = nm
	if topology != s.topology {
		s.topologyValue = nil
	}
	s.topology, s.configured = topology, c
	if validated != s.validatedEpoch {
		bump = true
	}
	configs := map[string]string{"num.standby.replicas": fmt.Sprint(g.streamsSettings().NumStandbyReplicas)}
	if !bump && fmt.Sprint(configs) != fmt.Sprint(s.lastConfigs) {
		bump = true
	}
	if bump {
		if s.epoch == 0 {
			s.epoch = 2
		} else {
			s.epoch++
		}
		s.hash, s.validatedEpoch, s.lastConfigs = hash, validated, configs
	}
	// The initial rebalance delay of a group that had no member.
	if len(s.members) == 1 && req.MemberEpoch == 0 && s.targetEpoch == 0 && s.delaySeq == 0 {
		if d := g.streamsSettings().InitialRebalanceDelay; d > 0 {
			s.delaySeq = g.nextSeq()
			g.out.Timers = append(g.out.Timers, Timer{After: d, Kind: TimerStreamsInitialDelay, Seq: s.delaySeq})
		}
	}
	// 4. The target assignment.
	delayed := false
	if s.epoch > s.targetEpoch {
		if s.delaySeq != 0 {
			delayed = true
			addStatus(streamsStatusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay.")
		} else {
			g.computeStreamsTarget()
		}
	}
	// 5. The member's assignment.
	prev := m.assigned.clone()
	if delayed {
		// Members get an empty assignment, at epoch 1 at least, until
		// the delay ends; the group's assignment epoch stays (Kafka's
		// streamsGroupHeartbeat reconciles with a targetAssignmentEpoch
		// of its own, max(1, the group's), and writes no target).
		saved := s.targetEpoch
		s.targetEpoch = max(1, saved)
		g.reconcileStreams(m, owned)
		s.targetEpoch = saved
	} else {
		g.reconcileStreams(m, owned)
	}
	g.touchStreams(m)
	if req.ShutdownApplication {
		s.shutdownBy = m.id
	}
	resp.MemberID, resp.MemberEpoch = m.id, m.epoch
	resp.HeartbeatIntervalMillis = int32(g.streamsSettings().HeartbeatInterval / time.Millisecond)
	if req.MemberEpoch == 0 || !prev.same(m.assigned) {
		resp.ActiveTasks = taskIDs(m.assigned.active)
		resp.StandbyTasks = taskIDs(m.assigned.standby)
		resp.WarmupTasks = taskIDs(m.assigned.warmup)
		if m.endpoint != nil {
			s.endpointEpoch++
		}
	}
	if req.EndpointInformationEpoch != s.endpointEpoch {
		resp.PartitionsByUserEndpoint = g.streamsEndpoints()
	}
	resp.EndpointInformationEpoch = s.endpointEpoch
	if c.status >= 0 {
		addStatus(c.status, c.detail)
		s.create = c.create
	}
	if s.shutdownBy != "" {
		addStatus(streamsStatusShutdownApplication, fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", s.shutdownBy))
	}
	resp.Status = status
	if resp.Status == nil {
		resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	}
	g.reply(reply, resp)
}

func (o *streamsTasks) orEmpty() streamsTasks {
	if o == nil {
		return streamsTasks{}
	}
	return *o
}

// ownedWithinAssigned reports whether the tasks a member says it owns are
// all assigned to it (a member retrying with its previous epoch).
func ownedWithinAssigned(owned, assigned streamsTasks) bool {
	for _, pair := range [][2]taskSet{{owned.active, assigned.active}, {owned.standby, assigned.standby}, {owned.warmup, assigned.warmup}} {
		for t := range pair[0] {
			if _, ok := pair[1][t]; !ok {
				return false
			}
		}
	}
	return true
}

// taskIDs lists tasks by subtopology, sorted, never nil.
func taskIDs(ts taskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range ts.sorted() {
		if len(out) == 0 || out[len(out)-1].SubtopologyID != t.sub {
			ti := kmsg.NewTaskIDs()
			ti.SubtopologyID = t.sub
			out = append(out, ti)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, t.p)
	}
	return out
}

// computeStreamsTarget computes the target assignment at the group epoch:
// empty while the topology is not ready.
func (g *Group) computeStreamsTarget() {
	s := g.streams
	var ms []streamsAssignMember
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		prev, ok := s.target[id]
		if !ok {
			prev = newStreamsTasks()
		}
		ms = append(ms, streamsAssignMember{id: id, process: s.members[id].processID, prev: prev})
	}
	var subs []streamsSubtopologyTasks
	if s.configured.ready() && s.topology != nil {
		for _, st := range s.topology.subs {
			subs = append(subs, streamsSubtopologyTasks{id: st.id, tasks: s.configured.tasks[st.id], stateful: len(st.changelogs) > 0})
		}
	}
	s.target = stickyAssign(ms, subs, g.streamsSettings().NumStandbyReplicas)
	s.targetEpoch = s.epoch
}

// reconcileStreams moves a member towards its target, as Kafka's streams
// CurrentAssignmentBuilder; owned is what the member says it holds, nil
// when it did not say.
func (g *Group) reconcileStreams(m *streamsMember, owned *streamsTasks) {
	s := g.streams
	switch m.state {
	case streamsStable:
		if m.epoch != s.targetEpoch {
			g.nextStreamsAssignment(m, m.epoch, owned)
		}
	case streamsUnrevokedTasks:
		if owned == nil || owned.containsAny(m.revoking) {
			return
		}
		g.nextStreamsAssignment(m, m.epoch+1, owned)
	case streamsUnreleasedTasks:
		g.nextStreamsAssignment(m, m.epoch, owned)
	}
}

func (g *Group) nextStreamsAssignment(m *streamsMember, memberEpoch int32, owned *streamsTasks) {
	s := g.streams
	target, ok := s.target[m.id]
	if !ok {
		target = newStreamsTasks()
	}
	activeHolder, standbyHolders := g.streamsHolders()
	assigned, revoke, assign := newStreamsTasks(), newStreamsTasks(), newStreamsTasks()
	unreleased := false
	diff := func(cur, tgt, outAssigned, outRevoke, outAssign taskSet, taken func(streamsTask) bool) {
		for t, e := range cur {
			if _, ok := tgt[t]; ok {
				outAssigned[t] = e
			} else {
				outRevoke[t] = e
			}
		}
		for t := range tgt {
			if _, ok := outAssigned[t]; ok {
				continue
			}
			if taken(t) {
				unreleased = true
				continue
			}
			outAssign[t] = s.targetEpoch
		}
	}
	diff(m.assigned.active, target.active, assigned.active, revoke.active, assign.active, func(t streamsTask) bool {
		_, held := activeHolder[t]
		return held || standbyHolders[t][m.processID]
	})
	sameProcess := func(t streamsTask) bool {
		p, held := activeHolder[t]
		return held && p == m.processID || standbyHolders[t][m.processID]
	}
	diff(m.assigned.standby, target.standby, assigned.standby, revoke.standby, assign.standby, sameProcess)
	diff(m.assigned.warmup, target.warmup, assigned.warmup, revoke.warmup, assign.warmup, sameProcess)
	setEpoch := func(e int32) {
		if e != m.epoch {
			m.prevEpoch, m.epoch = m.epoch, e
		}
	}
	switch {
	case !revoke.empty() && (owned == nil || owned.containsAny(revoke)):
		m.state = streamsUnrevokedTasks
		setEpoch(memberEpoch)
		m.assigned, m.revoking = assigned, revoke
		if m.revokeSeq == 0 {
			g.startStreamsRevocation(m)
		}
		return
	case !assign.empty():
		for _, pair := range [][2]taskSet{{assigned.active, assign.active}, {assigned.standby, assign.standby}, {assigned.warmup, assign.warmup}} {
			for t, e := range pair[1] {
				pair[0][t] = e
			}
		}
		m.state = streamsStable
		if unreleased {
			m.state = streamsUnreleasedTasks
		}
	case unreleased:
		m.state = streamsUnreleasedTasks
	default:
		m.state = streamsStable
	}
	setEpoch(s.targetEpoch)
	m.assigned, m.revoking, m.revokeSeq = assigned, newStreamsTasks(), 0
}

// startStreamsRevocation starts the member's revocation timeout: its
// rebalance timeout, else the session timeout.
func (g *Group) startStreamsRevocation(m *streamsMember) {
	m.revokeSeq = g.nextSeq()
	after := time.Duration(m.rebalanceTimeout) * time.Millisecond
	if after <= 0 {
		after = g.streamsSettings().SessionTimeout
	}
	g.out.Timers = append(g.out.Timers, Timer{After: after, Kind: TimerStreamsRevocation, Member: m.id, Seq: m.revokeSeq})
}

// streamsHolders returns, for every task held by a member (assigned or
// being revoked), the process holding it as active, and the processes
// holding it as standby or warm-up.
func (g *Group) streamsHolders() (map[streamsTask]string, map[streamsTask]map[string]bool) {
	active, standby := map[streamsTask]string{}, map[streamsTask]map[string]bool{}
	for _, o := range g.streams.members {
		for _, ts := range []streamsTasks{o.assigned, o.revoking} {
			for t := range ts.active {
				active[t] = o.processID
			}
			for _, set := range []taskSet{ts.standby, ts.warmup} {
				for t := range set {
					if standby[t] == nil {
						standby[t] = map[string]bool{}
					}
					standby[t][o.processID] = true
				}
			}
		}
	}
	return active, standby
}

// streamsEndpoints is the partitions each member with a user endpoint
// serves (Interactive Queries), by its active and standby tasks.
func (g *Group) streamsEndpoints() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	s := g.streams
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if s.topology == nil {
		return out
	}
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	partitions := func(ts taskSet) (actives []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition) {
		byTopic := map[string][]int32{}
		for _, t := range ts.sorted() {
			st := s.topology.sub(t.sub)
			if st == nil {
				continue
			}
			for _, n := range st.sourceTopics {
				byTopic[n] = append(byTopic[n], t.p)
			}
			for _, ti := range st.repartitionSources {
				byTopic[ti.name] = append(byTopic[ti.name], t.p)
			}
		}
		for _, n := range SortedTopics(byTopic) {
			ap := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			ap.Topic, ap.Partitions = n, byTopic[n]
			actives = append(actives, ap)
		}
		return actives
	}
	for _, id := range ids {
		m := s.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.endpoint.Host, m.endpoint.Port
		e.ActivePartitions = partitions(m.assigned.active)
		for _, ap := range partitions(m.assigned.standby) {
			sp := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			sp.Topic, sp.Partitions = ap.Topic, ap.Partitions
			e.StandbyPartitions = append(e.StandbyPartitions, sp)
		}
		out = append(out, e)
	}
	return out
}

// removeStreamsMember removes a member that left or was fenced: its tasks
// are free at once, the group epoch moves.
func (g *Group) removeStreamsMember(m *streamsMember) {
	s := g.streams
	delete(s.members, m.id)
	delete(s.target, m.id)
	s.epoch++
	if len(s.members) == 0 {
		s.shutdownBy = ""
		g.emptySince = g.cfg.Now().UnixMilli()
		if len(g.offsets) > 0 {
			g.scheduleExpiry(g.emptySince)
		}
	}
}

func (g *Group) touchStreams(m *streamsMember) {
	m.sessionSeq = g.nextSeq()
	g.out.Timers = append(g.out.Timers, Timer{After: g.streamsSettings().SessionTimeout, Kind: TimerStreamsSession, Member: m.id, Seq: m.sessionSeq})
}

func (g *Group) fireStreams(t Timer) {
	s := g.streams
	switch t.Kind {
	case TimerStreamsSession:
		if m := s.members[t.Member]; m != nil && m.sessionSeq == t.Seq {
			g.removeStreamsMember(m)
		}
	case TimerStreamsRevocation:
		if m := s.members[t.Member]; m != nil && m.revokeSeq == t.Seq && m.state == streamsUnrevokedTasks {
			g.removeStreamsMember(m)
		}
	case TimerStreamsInitialDelay:
		if s.delaySeq == t.Seq {
			s.delaySeq = 0
			if s.epoch > s.targetEpoch && len(s.members) > 0 {
				g.computeStreamsTarget()
			}
		}
	}
}

// streamsState is the group's state as Kafka's StreamsGroup names it.
func (g *Group) streamsState() string {
	s := g.streams
	switch {
	case len(s.members) == 0:
		return streamsStateEmpty
	case s.topology == nil || s.validatedEpoch != s.topology.epoch:
		return streamsStateNotReady
	case s.epoch > s.targetEpoch:
		return streamsStateAssigning
	}
	for _, m := range s.members {
		if m.state != streamsStable || m.epoch != s.targetEpoch {
			return streamsStateReconciling
		}
	}
	return streamsStateStable
}

// checkStreamsCommit validates an offset commit to a streams group, as
// Kafka's StreamsGroup.validateOffsetCommit: epoch -1 without a member
// only while the group has no members; a member must exist
// (UNKNOWN_MEMBER_ID); a newer epoch than the member's is
// STALE_MEMBER_EPOCH, an older one is let through when the member holds
// active tasks assigned at or before it.
//
// NB: Kafka checks an older epoch per partition, against the epoch its
// task was assigned in; this checks it against the oldest of the member's
// active tasks.
func (g *Group) checkStreamsCommit(epoch int32, memberID string, txn bool) *kerr.Error {
	s := g.streams
	if epoch < 0 && len(s.members) == 0 {
		return nil
	}
	if txn && epoch < 0 && memberID == "" {
		return nil
	}
	m := s.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case epoch == m.epoch:
		return nil
	case epoch > m.epoch:
		return kerr.StaleMemberEpoch
	}
	for _, ts := range []taskSet{m.assigned.active, m.revoking.active} {
		for _, e := range ts {
			if e <= epoch {
				return nil
			}
		}
	}
	return kerr.StaleMemberEpoch
}

// checkStreamsFetch validates an OffsetFetch of a streams group member.
func (g *Group) checkStreamsFetch(memberID *string, epoch int32) *kerr.Error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	m := g.streams.members[deref(memberID)]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}
