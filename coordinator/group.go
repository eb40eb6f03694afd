package coordinator

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka's ClassicGroupState.
type State int8

// The classic group states.
const (
	// Empty: no members; the group may hold committed offsets.
	Empty State = iota
	// PreparingRebalance: members are (re)joining; JoinGroup answers wait
	// until every known member has joined or the rebalance timeout fires.
	PreparingRebalance
	// CompletingRebalance: the join answers are out; the leader's
	// SyncGroup carries the assignment.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: the group was deleted.
	Dead
)

func (s State) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// Responder takes the answer to one request. The state machine never calls
// it: it returns it in Ready.Replies, and the actor calls it.
type Responder func(kmsg.Response)

// Reply is an answer to send.
type Reply struct {
	To   Responder
	Resp kmsg.Response
}

// TimerKind says what a timer is for.
type TimerKind int8

// The timers a group schedules.
const (
	// TimerSession expires a member that stopped heartbeating.
	TimerSession TimerKind = iota
	// TimerRebalance ends the join phase of a rebalance.
	TimerRebalance
	// TimerPendingMember forgets a member id handed out with
	// MEMBER_ID_REQUIRED (KIP-394) that never joined with it.
	TimerPendingMember
	// TimerOffsetsExpiry deletes the offsets of a group that stayed
	// empty for offsets.retention.minutes (KIP-211).
	TimerOffsetsExpiry
	// TimerConsumerSession expires a consumer-protocol member (KIP-848)
	// that stopped heartbeating (Config.ConsumerTimeouts).
	TimerConsumerSession
	// TimerConsumerRevocation removes a consumer-protocol member that did
	// not give up its revoked partitions within its rebalance timeout.
	TimerConsumerRevocation
	// TimerInitialRebalance ends the initial rebalance delay of a group
	// that was Empty (group.initial.rebalance.delay.ms), or extends it if
	// a member joined meanwhile.
	TimerInitialRebalance
)

// Timer asks the actor to call Group.Fire with it after After. Timers are
// never cancelled: a stale one (its Seq no longer current) does nothing.
type Timer struct {
	After  time.Duration
	Kind   TimerKind
	Member string
	Seq    uint64
}

// Config is a group's fixed configuration.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min.session.timeout.ms, group.max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// OffsetsRetention is how long an empty group keeps its offsets
	// (offsets.retention.minutes); 0 keeps them for ever.
	OffsetsRetention time.Duration
	// InitialRebalanceDelay is how long the first rebalance of an Empty
	// group waits for more members, extended by as much for each member
	// that joins meanwhile, within the rebalance timeout
	// (group.initial.rebalance.delay.ms, Kafka's default 3000); 0 does
	// not wait.
	InitialRebalanceDelay time.Duration
	// NewMemberID returns a fresh member id for a client; the actor makes
	// them unique across restarts, tests make them predictable.
	NewMemberID func(clientID string) string
	// Now is the time of the current step, for commit timestamps.
	Now func() time.Time
	// ConsumerTimeouts returns a consumer-protocol member's (KIP-848)
	// session timeout and heartbeat interval now: the group's configs, or
	// the node's group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms. Asked at every heartbeat, so a
	// change applies at the next. nil gives Kafka's defaults, 45 s and 5 s.
	ConsumerTimeouts func() (session, heartbeat time.Duration)
	// Topics returns the cluster's topics as this node knows them now,
	// for consumer-protocol groups; nil knows none.
	Topics func() Topics
	// AllowUpgrade and AllowDowngrade are group.consumer.migration.policy:
	// whether a classic group with members may become a consumer group,
	// and a consumer group left with classic members only a classic one.
	AllowUpgrade, AllowDowngrade bool
	// ShareTimeouts returns a share group member's (KIP-932) session
	// timeout and heartbeat interval now: the group's
	// share.session.timeout.ms and share.heartbeat.interval.ms, or the
	// node's group.share.* settings. Asked at every heartbeat. nil gives
	// Kafka's defaults, 45 s and 5 s.
	ShareTimeouts func() (session, heartbeat time.Duration)
	// ShareMaxSize is group.share.max.size; 0 gives Kafka's 200.
	ShareMaxSize int
	// StreamsSettings returns a streams group's (KIP-1071) settings now:
	// its streams.* group configs, or the node's group.streams.* ones.
	// nil gives Kafka's defaults (DefaultStreamsSettings).
	StreamsSettings func() StreamsSettings
	// StreamsMaxSize is group.streams.max.size; 0 is no limit (Kafka's
	// default is Integer.MAX_VALUE).
	StreamsMaxSize int
}

// Group is one classic consumer group's state machine: JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, offsets. It is deterministic and does
// no I/O: each step records answers, timers and records to persist, which
// the caller takes with Ready.
//
// Concurrency: not safe for concurrent use; its actor owns it.
type Group struct {
	ID  string
	cfg Config

	state        State
	protocolType string
	protocol     string
	generation   int32
	leader       string

	members map[string]*member
	// joinOrder is the order members joined, for a stable leader choice
	// and a stable member list in the leader's JoinGroup answer.
	joinOrder []string
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// pending are member ids handed out with MEMBER_ID_REQUIRED (KIP-394)
	// that have not joined yet, with their timer sequence.
	pending map[string]uint64

	rebalanceSeq uint64
	// initial is the initial rebalance delay under way, if any.
	initial   initialDelay
	expirySeq uint64
	seq       uint64 // the source of timer sequences
	// emptySince is when the group last became empty (ms), for expiry.
	emptySince int64

	offsets map[topicPartition]Offset
	// pendingTxn are the offsets of transactions not over yet, by
	// producer id (txn_offsets.go).
	pendingTxn map[int64]map[topicPartition]Offset
	// writingTxn counts, by partition, the transactional offsets whose
	// record is being written (txn_offsets.go).
	writingTxn map[topicPartition]int

	// consumer is the group's KIP-848 consumer-protocol state; a group
	// has classic members or consumer members, never both.
	consumer *consumerGroup
	// restore collects the consumer group's records during Restore.
	restore *consumerRestore
	// share is the group's KIP-932 share-protocol state (share.go); a
	// share group has no classic or consumer members, nor offsets.
	share *shareGroup
	// shareRestore collects the share group's records during Restore.
	shareRestore *shareRestore
	// streams is the group's KIP-1071 streams-protocol state (streams.go).
	streams *streamsGroup

	out Ready
}

// initialDelay is the state of an initial rebalance delay: the rebalance
// of a group that was Empty waits for more members before it completes,
// so that members started together share one first generation instead of
// rebalancing once for each (Kafka's InitialDelayedJoin).
type initialDelay struct {
	// active is set from the first join of an Empty group until its
	// rebalance completes; meanwhile only TimerInitialRebalance (or a
	// member's removal) ends the join phase, not every member having
	// joined, since more are expected.
	active bool
	// remaining is what the rebalance timeout leaves after the wait
	// under way: the most further waits may add up to.
	remaining time.Duration
	// newMember is set when a member joined during the wait under way.
	newMember bool
}

type member struct {
	id, instanceID   string
	clientID, host   string
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	join             *pendingJoin
	sync             *pendingSync
	assignment       []byte
	sessionSeq       uint64
}

type pendingJoin struct {
	version int16
	reply   Responder
}

type pendingSync struct {
	version int16
	reply   Responder
}

// Ready is what a step produced: answers to send, timers to schedule and
// records to append to the group's __consumer_offsets partition.
type Ready struct {
	Replies []Reply
	Timers  []Timer
	// GroupMetadata is set when the group's membership record must be
	// written (after a rebalance completes or the group empties).
	GroupMetadata bool
	// ExpireOffsets is set when the group stayed empty for the offsets'
	// retention: its offsets (Offsets) are to be deleted, then
	// DeleteOffset called for each whose tombstone is durable.
	ExpireOffsets bool
	// Records are a consumer-protocol group's records to write; the
	// Replies must wait until they are durable, as Kafka's do.
	Records []Record
	// ShareGone are the share group members that left or were fenced:
	// the records they hold are to be released (Config.ShareMemberGone
	// in the actor), once the records above are durable.
	ShareGone []string
	// extra are records a step wrote besides the consumer group's diff
	// (tombstones of a group that changed protocol), written first.
	extra []Record
}

// NewGroup returns an Empty group with no offsets.
func NewGroup(id string, cfg Config) *Group {
	return &Group{ID: id, cfg: cfg, members: map[string]*member{}, static: map[string]string{},
		pending: map[string]uint64{}, offsets: map[topicPartition]Offset{}, consumer: newConsumerGroup(), share: newShareGroup(), streams: newStreamsGroup()}
}

// Ready returns and clears what the steps since the last call produced.
func (g *Group) Ready() Ready {
	g.out.Records = append(append(append(g.out.extra, g.persistConsumer()...), g.persistShare()...), g.persistStreams()...)
	g.out.extra = nil
	r := g.out
	g.out = Ready{}
	return r
}

// State returns the group's state.
func (g *Group) State() State { return g.state }

// Generation returns the group's generation.
func (g *Group) Generation() int32 { return g.generation }

func (g *Group) reply(to Responder, resp kmsg.Response) {
	g.out.Replies = append(g.out.Replies, Reply{To: to, Resp: resp})
}

func (g *Group) nextSeq() uint64 {
	g.seq++
	return g.seq
}

// touch restarts a member's session timer.
func (g *Group) touch(m *member) {
	m.sessionSeq = g.nextSeq()
	g.out.Timers = append(g.out.Timers, Timer{After: m.sessionTimeout, Kind: TimerSession, Member: m.id, Seq: m.sessionSeq})
}

// Fire handles a timer the actor scheduled.
func (g *Group) Fire(t Timer) {
	switch t.Kind {
	case TimerSession:
		m := g.members[t.Member]
		if m == nil || m.sessionSeq != t.Seq {
			return
		}
		if m.join != nil || m.sync != nil {
			// A member waiting on us is alive: the rebalance timeout, not
			// the session, bounds its wait.
			g.touch(m)
			return
		}
		g.removeMember(m, kerr.UnknownMemberID)
	case TimerRebalance:
		if g.state == PreparingRebalance && t.Seq == g.rebalanceSeq {
			g.completeJoin()
		}
	case TimerInitialRebalance:
		if g.state == PreparingRebalance && t.Seq == g.rebalanceSeq && g.initial.active {
			g.fireInitialDelay()
		}
	case TimerOffsetsExpiry:
		if t.Seq == g.expirySeq && g.state == Empty && !g.IsConsumer() && len(g.offsets) > 0 {
			g.out.ExpireOffsets = true
		}
	case TimerConsumerSession:
		g.fireConsumerSession(t)
	case TimerConsumerRevocation:
		g.fireConsumerRevocation(t)
	case TimerShareSession:
		g.fireShareSession(t)
	case TimerStreamsSession, TimerStreamsRevocation, TimerStreamsInitialDelay:
		g.fireStreams(t)
	case TimerPendingMember:
		if seq, ok := g.pending[t.Member]; ok && seq == t.Seq {
			delete(g.pending, t.Member)
			if g.state == PreparingRebalance {
				g.maybeCompleteJoin()
			}
		}
	}
}

// Join handles a JoinGroup request.
func (g *Group) Join(req *kmsg.JoinGroupRequest, clientID, host string, reply Responder) {
	fail := func(err *kerr.Error, memberID string) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		// NB: no protocol type in an error, as Kafka answers (null).
		resp.ErrorCode, resp.MemberID, resp.Generation = err.Code, memberID, -1
		g.reply(reply, resp)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable, req.MemberID)
		return
	case session < g.cfg.MinSessionTimeout || session > g.cfg.MaxSessionTimeout:
		fail(kerr.InvalidSessionTimeout, req.MemberID)
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	case g.IsShare() || g.IsStreams() && len(g.streams.members) > 0:
		// Kafka's classicGroupJoin: a group that exists and is neither
		// classic nor consumer (nor an empty streams group) is
		// INCONSISTENT_GROUP_PROTOCOL with no member id (tests/diff
		// TestShareGroupOtherTypes, TestStreamsGroupRequests).
		fail(kerr.InconsistentGroupProtocol, "")
		return
	case g.IsStreams():
		// An empty streams group becomes a classic group, its offsets
		// kept (Kafka's maybeDeleteEmptyStreamsGroup): its records get
		// tombstones.
		g.out.extra = append(g.out.extra, g.StreamsTombstones()...)
		g.streams = newStreamsGroup()
	case g.IsConsumer():
		g.consumerJoin(req, clientID, host, instance, session, rebalance, reply)
		return
	case g.consumer.epoch > 0:
		// An empty consumer group becomes a classic one.
		g.dropConsumer()
	}
	switch {
	case len(g.members) > 0 && (req.ProtocolType != g.protocolType || !g.supportsAny(req.Protocols)):
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	if req.MemberID == "" {
		if instance != "" {
			if old, ok := g.static[instance]; ok {
				g.replaceStatic(g.members[old], req, clientID, host, session, rebalance, reply)
				return
			}
			g.addMember(g.cfg.NewMemberID(clientID), instance, req, clientID, host, session, rebalance, reply)
			return
		}
		id := g.cfg.NewMemberID(clientID)
		if req.Version >= 4 {
			seq := g.nextSeq()
			g.pending[id] = seq
			g.out.Timers = append(g.out.Timers, Timer{After: session, Kind: TimerPendingMember, Member: id, Seq: seq})
			fail(kerr.MemberIDRequired, id)
			return
		}
		g.addMember(id, "", req, clientID, host, session, rebalance, reply)
		return
	}
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addMember(req.MemberID, instance, req, clientID, host, session, rebalance, reply)
		return
	}
	m := g.members[req.MemberID]
	if err := g.checkInstance(req.MemberID, instance); err != nil {
		fail(err, req.MemberID)
		return
	}
	if m == nil {
		fail(kerr.UnknownMemberID, req.MemberID)
		return
	}
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, session, rebalance, reply)
		g.joined()
	case CompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// A member whose join answer was lost rejoins: answer it again.
			m.join = &pendingJoin{version: req.Version, reply: reply}
			g.answerJoin(m)
			return
		}
		g.updateMember(m, req, session, rebalance, reply)
		g.prepareRebalance()
	case Stable:
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			g.updateMember(m, req, session, rebalance, reply)
			g.prepareRebalance()
			return
		}
		m.join = &pendingJoin{version: req.Version, reply: reply}
		g.answerJoin(m)
	default: // Empty holds no members
		fail(kerr.UnknownMemberID, req.MemberID)
	}
}

// checkInstance fences a member id that does not hold the static instance
// id it names (KIP-345).
func (g *Group) checkInstance(memberID, instance string) *kerr.Error {
	if instance == "" {
		return nil
	}
	if holder, ok := g.static[instance]; ok && holder != memberID {
		return kerr.FencedInstanceID
	}
	return nil
}

func (g *Group) supportsAny(ps []kmsg.JoinGroupRequestProtocol) bool {
	for _, p := range ps {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

// allSupport reports whether every member lists protocol.
func (g *Group) allSupport(protocol string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol }) {
			return false
		}
	}
	return true
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

func (g *Group) addMember(id, instance string, req *kmsg.JoinGroupRequest, clientID, host string, session, rebalance time.Duration, reply Responder) {
	m := &member{id: id, instanceID: instance, clientID: clientID, host: host}
	g.members[id] = m
	g.joinOrder = append(g.joinOrder, id)
	if instance != "" {
		g.static[instance] = id
	}
	if len(g.members) == 1 {
		g.protocolType = req.ProtocolType
	}
	g.updateMember(m, req, session, rebalance, reply)
	if g.state == PreparingRebalance {
		if g.initial.active {
			g.initial.newMember = true
		}
		g.joined()
		return
	}
	g.prepareRebalance()
}

func (g *Group) updateMember(m *member, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Responder) {
	m.protocolType = req.ProtocolType
	m.protocols = slices.Clone(req.Protocols)
	m.sessionTimeout, m.rebalanceTimeout = session, rebalance
	if m.join != nil {
		// The member sent a new JoinGroup before the first was answered.
		g.joinError(m, kerr.UnknownMemberID)
	}
	m.join = &pendingJoin{version: req.Version, reply: reply}
	g.touch(m)
}

// replaceStatic gives a rejoining static member a new member id, fencing
// the old one (KIP-345). In a Stable group whose protocol the member still
// speaks, it gets the current generation back without a rebalance.
func (g *Group) replaceStatic(old *member, req *kmsg.JoinGroupRequest, clientID, host string, session, rebalance time.Duration, reply Responder) {
	id := g.cfg.NewMemberID(clientID)
	if old.join != nil {
		g.joinError(old, kerr.FencedInstanceID)
	}
	if old.sync != nil {
		g.syncError(old, kerr.FencedInstanceID)
	}
	oldID := old.id
	delete(g.members, oldID)
	m := old
	m.id, m.clientID, m.host = id, clientID, host
	g.members[id] = m
	g.static[m.instanceID] = id
	for i, o := range g.joinOrder {
		if o == oldID {
			g.joinOrder[i] = id
		}
	}
	if g.leader == oldID {
		g.leader = id
	}
	switch g.state {
	case Stable:
		if g.allSupportIn(req.Protocols, g.protocol) {
			m.protocols = slices.Clone(req.Protocols)
			m.sessionTimeout, m.rebalanceTimeout = session, rebalance
			m.join = &pendingJoin{version: req.Version, reply: reply}
			g.touch(m)
			g.answerJoin(m)
			g.out.GroupMetadata = true
			return
		}
		g.updateMember(m, req, session, rebalance, reply)
		g.prepareRebalance()
	case CompletingRebalance:
		g.updateMember(m, req, session, rebalance, reply)
		g.prepareRebalance()
	default:
		g.updateMember(m, req, session, rebalance, reply)
		g.joined()
	}
}

func (g *Group) allSupportIn(ps []kmsg.JoinGroupRequestProtocol, protocol string) bool {
	return slices.ContainsFunc(ps, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol })
}

// prepareRebalance starts a rebalance: syncs in flight fail with
// REBALANCE_IN_PROGRESS, and the join phase lasts at most the longest
// rebalance timeout of the members. The first rebalance of an Empty group
// waits the initial rebalance delay instead.
func (g *Group) prepareRebalance() {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				g.syncError(m, kerr.RebalanceInProgress)
			}
		}
	}
	initial := g.state == Empty && g.cfg.InitialRebalanceDelay > 0
	g.state = PreparingRebalance
	g.rebalanceSeq = g.nextSeq()
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	if initial {
		// As Kafka's GroupMetadataManager.prepareRebalance: the delay
		// timer is the only one; it gives up extending once the
		// rebalance timeout is spent.
		d := g.cfg.InitialRebalanceDelay
		g.initial = initialDelay{active: true, remaining: max(timeout-d, 0)}
		g.out.Timers = append(g.out.Timers, Timer{After: d, Kind: TimerInitialRebalance, Seq: g.rebalanceSeq})
		return
	}
	g.out.Timers = append(g.out.Timers, Timer{After: timeout, Kind: TimerRebalance, Seq: g.rebalanceSeq})
	g.maybeCompleteJoin()
}

// fireInitialDelay ends a wait of the initial rebalance delay: if a member
// joined during it and the rebalance timeout is not spent, it waits again,
// for the delay or what the timeout leaves, whichever is shorter;
// otherwise the join phase completes. This is Kafka's
// tryCompleteInitialRebalanceElseSchedule, so the extensions add up to at
// most the rebalance timeout, and the whole wait to at most the larger of
// the delay and that timeout.
func (g *Group) fireInitialDelay() {
	d := &g.initial
	if !d.newMember || d.remaining <= 0 {
		g.completeJoin()
		return
	}
	next := min(g.cfg.InitialRebalanceDelay, d.remaining)
	g.initial = initialDelay{active: true, remaining: d.remaining - next}
	g.rebalanceSeq = g.nextSeq()
	g.out.Timers = append(g.out.Timers, Timer{After: next, Kind: TimerInitialRebalance, Seq: g.rebalanceSeq})
}

// joined follows a JoinGroup in PreparingRebalance: the join phase
// completes once every member has joined, except during the initial
// rebalance delay, when more members are expected and only its timer ends
// the phase (Kafka's maybeCompleteJoinPhase skips a group whose previous
// state was Empty). A member's removal, by contrast, completes it at once
// (maybeCompleteJoin), as Kafka does.
func (g *Group) joined() {
	if !g.initial.active {
		g.maybeCompleteJoin()
	}
}

func (g *Group) maybeCompleteJoin() {
	if g.state != PreparingRebalance || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, a protocol is chosen and every joined
// member gets its answer, the leader with the members' metadata.
func (g *Group) completeJoin() {
	g.initial = initialDelay{}
	for _, id := range slices.Clone(g.joinOrder) {
		if m := g.members[id]; m != nil && m.join == nil {
			g.dropMember(m)
		}
	}
	g.pending = map[string]uint64{}
	g.generation++
	if len(g.members) == 0 {
		// The protocol type stays: an empty consumer group is still one
		// (ListGroups shows it), until a member of another type joins.
		g.state, g.protocol, g.leader = Empty, "", ""
		g.out.GroupMetadata = true
		g.emptySince = g.cfg.Now().UnixMilli()
		g.scheduleExpiry(g.emptySince)
		return
	}
	g.protocol = g.selectProtocol()
	if g.members[g.leader] == nil {
		g.leader = g.joinOrder[0]
	}
	g.state = CompletingRebalance
	for _, id := range g.joinOrder {
		m := g.members[id]
		g.answerJoin(m)
		// A member's session starts again with its answer, as in Kafka's
		// completeClassicGroupJoin: the session timer of a member that
		// waited through a long join phase (the initial delay lasts
		// several session timeouts) may be about to fire, and must not
		// remove the member before its SyncGroup.
		g.touch(m)
	}
}

// selectProtocol is Kafka's vote: among the protocols every member
// supports, each member votes for the first in its own preference order;
// the most votes win, ties going to the protocol listed first by the
// earliest member.
func (g *Group) selectProtocol() string {
	votes := map[string]int{}
	var candidates []string
	for _, id := range g.joinOrder {
		for _, p := range g.members[id].protocols {
			if g.allSupport(p.Name) {
				if !slices.Contains(candidates, p.Name) {
					candidates = append(candidates, p.Name)
				}
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// answerJoin answers m's pending JoinGroup with the current generation.
func (g *Group) answerJoin(m *member) {
	j := m.join
	m.join = nil
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = j.version
	resp.Generation, resp.MemberID, resp.LeaderID = g.generation, m.id, g.leader
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	if m.id == g.leader {
		// A static leader that came back to a Stable group learns the
		// members but must not assign again (KIP-814).
		resp.SkipAssignment = g.state == Stable
		if !resp.SkipAssignment || j.version >= 9 {
			for _, id := range g.joinOrder {
				o := g.members[id]
				jm := kmsg.NewJoinGroupResponseMember()
				jm.MemberID, jm.ProtocolMetadata = o.id, o.metadata(g.protocol)
				if o.instanceID != "" {
					jm.InstanceID = kmsg.StringPtr(o.instanceID)
				}
				resp.Members = append(resp.Members, jm)
			}
		}
		if resp.SkipAssignment && j.version < 9 {
			// Before v9 a leader cannot be told to skip: it is told it is
			// a follower, and SyncGroup hands back its assignment.
			resp.LeaderID = ""
		}
	}
	g.reply(j.reply, resp)
}

func (g *Group) joinError(m *member, err *kerr.Error) {
	j := m.join
	m.join = nil
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = j.version
	resp.ErrorCode, resp.MemberID, resp.Generation = err.Code, m.id, -1
	g.reply(j.reply, resp)
}

func (g *Group) syncError(m *member, err *kerr.Error) {
	s := m.sync
	m.sync = nil
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = s.version
	resp.ErrorCode = err.Code
	g.reply(s.reply, resp)
}

// dropMember removes a member without starting a rebalance.
func (g *Group) dropMember(m *member) {
	delete(g.members, m.id)
	g.joinOrder = slices.DeleteFunc(g.joinOrder, func(id string) bool { return id == m.id })
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.joinOrder) > 0 {
			g.leader = g.joinOrder[0]
		}
	}
}

// removeMember removes a member that left or expired, answering what it
// waits for with err, and rebalances the rest.
func (g *Group) removeMember(m *member, err *kerr.Error) {
	if m.join != nil {
		g.joinError(m, err)
	}
	if m.sync != nil {
		g.syncError(m, err)
	}
	g.dropMember(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance()
	case PreparingRebalance:
		g.maybeCompleteJoin()
	}
}

// Sync handles a SyncGroup request.
func (g *Group) Sync(req *kmsg.SyncGroupRequest, reply Responder) {
	if g.IsConsumer() {
		g.consumerSync(req, reply)
		return
	}
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(err *kerr.Error) {
		resp.ErrorCode = err.Code
		g.reply(reply, resp)
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	m := g.members[req.MemberID]
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable)
		return
	case g.IsShare() || g.IsStreams():
		fail(kerr.GroupIDNotFound)
		return
	case g.checkInstance(req.MemberID, instance) != nil:
		fail(kerr.FencedInstanceID)
		return
	case m == nil:
		fail(kerr.UnknownMemberID)
		return
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if req.Version >= 5 {
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	}
	g.touch(m)
	switch g.state {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		if m.sync != nil {
			g.syncError(m, kerr.UnknownMemberID)
		}
		m.sync = &pendingSync{version: req.Version, reply: reply}
		if m.id != g.leader {
			return
		}
		for _, o := range g.members {
			o.assignment = nil
		}
		for _, a := range req.GroupAssignment {
			if o := g.members[a.MemberID]; o != nil {
				o.assignment = a.MemberAssignment
			}
		}
		g.state = Stable
		g.out.GroupMetadata = true
		for _, id := range g.joinOrder {
			if o := g.members[id]; o.sync != nil {
				g.answerSync(o)
			}
		}
	case Stable:
		m.sync = &pendingSync{version: req.Version, reply: reply}
		g.answerSync(m)
	}
}

func (g *Group) answerSync(m *member) {
	s := m.sync
	m.sync = nil
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = s.version
	if s.version >= 5 {
		resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	}
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	g.reply(s.reply, resp)
}

// Abort answers every JoinGroup and SyncGroup waiting on the group with
// err: its actor is going away (a restart after a failure, or a stop), and
// the members must find the coordinator again and rejoin.
func (g *Group) Abort(err *kerr.Error) {
	for _, id := range g.joinOrder {
		m := g.members[id]
		if m == nil {
			continue
		}
		if m.join != nil {
			g.joinError(m, err)
		}
		if m.sync != nil {
			g.syncError(m, err)
		}
	}
}

// scheduleExpiry sets the offsets' expiry timer to fire the retention
// after ref (ms), replacing any earlier one.
func (g *Group) scheduleExpiry(ref int64) {
	if g.cfg.OffsetsRetention <= 0 {
		return
	}
	g.expirySeq = g.nextSeq()
	after := time.UnixMilli(ref).Add(g.cfg.OffsetsRetention).Sub(g.cfg.Now())
	g.out.Timers = append(g.out.Timers, Timer{After: max(after, 0), Kind: TimerOffsetsExpiry, Seq: g.expirySeq})
}

// Heartbeat handles a Heartbeat request.
func (g *Group) Heartbeat(req *kmsg.HeartbeatRequest, reply Responder) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = errCode(g.heartbeat(req))
	g.reply(reply, resp)
}

func (g *Group) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if g.IsConsumer() {
		return g.consumerHeartbeatClassic(req)
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	m := g.members[req.MemberID]
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.IsShare() || g.IsStreams():
		return kerr.GroupIDNotFound
	case g.checkInstance(req.MemberID, instance) != nil:
		return kerr.FencedInstanceID
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	g.touch(m)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leave handles a LeaveGroup request: v0-2 name one member, v3+ a batch
// with instance ids (KIP-345).
func (g *Group) Leave(req *kmsg.LeaveGroupRequest, reply Responder) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if g.state == Dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		g.reply(reply, resp)
		return
	}
	if req.Version < 3 {
		resp.ErrorCode = errCode(g.leave(req.MemberID, ""))
		g.reply(reply, resp)
		return
	}
	for _, lm := range req.Members {
		instance := ""
		if lm.InstanceID != nil {
			instance = *lm.InstanceID
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = errCode(g.leave(lm.MemberID, instance))
		resp.Members = append(resp.Members, rm)
	}
	g.reply(reply, resp)
}

func (g *Group) leave(memberID, instance string) *kerr.Error {
	if g.IsShare() || g.IsStreams() {
		return kerr.GroupIDNotFound
	}
	if g.IsConsumer() {
		return g.consumerLeaveClassic(memberID, instance)
	}
	if instance != "" {
		holder, ok := g.static[instance]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case memberID != "" && holder != memberID:
			return kerr.FencedInstanceID
		}
		memberID = holder
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		g.maybeCompleteJoin()
		return nil
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	g.removeMember(m, kerr.UnknownMemberID)
	return nil
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
