package coordinator

// Share groups (KIP-932): ShareGroupHeartbeat, as Kafka 4.2's
// GroupMetadataManager runs it for a share group:
//
//   - A group id is a classic, a consumer or a share group, never two:
//     ShareGroupHeartbeat to a classic or consumer group is
//     GROUP_ID_NOT_FOUND ("Group X is not a share group."), as is a
//     heartbeat with an epoch other than 0 to an unknown group ("Share
//     group X not found."); JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//     OffsetCommit and ConsumerGroupHeartbeat to a share group are
//     GROUP_ID_NOT_FOUND too, as Kafka answers them.
//   - Member ids are the client's (a UUID); epoch 0 joins (or rejoins),
//     -1 leaves. A member past group.share.max.size is refused
//     GROUP_MAX_SIZE_REACHED, an unknown one UNKNOWN_MEMBER_ID, an epoch
//     that is neither the member's nor its previous one
//     FENCED_MEMBER_EPOCH.
//   - The group epoch moves with membership, subscriptions and the
//     subscribed topics' partition counts; the target assignment (the
//     share "simple" assignor, share_assignor.go) is computed again at
//     that epoch, and a member takes its target and the group epoch at
//     its next heartbeat: there is no revocation, since several members
//     may share a partition.
//   - A heartbeat carries the assignment when it is a full one
//     (SubscribedTopicNames set) or the member's assignment changed.
//   - A member that does not heartbeat within the session timeout (the
//     group's share.session.timeout.ms, else
//     group.share.session.timeout.ms) is fenced: removed, its records'
//     locks released (Config.ShareMemberGone), the group epoch moved.
//   - Every topic partition the assignor ever assigns is recorded as
//     having share state (Kafka's ShareGroupStatePartitionMetadata), as
//     are those AlterShareGroupOffsets sets (share_offsets.go), so that
//     DescribeShareGroupOffsets and DeleteGroups know them.
//   - The group is written to __consumer_offsets as Kafka's ShareGroup*
//     records (share_records.go) and a heartbeat that changed it is
//     answered once they are durable.

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for share groups.
const (
	// DefaultShareSessionTimeout is group.share.session.timeout.ms.
	DefaultShareSessionTimeout = 45 * time.Second
	// DefaultShareHeartbeatInterval is group.share.heartbeat.interval.ms.
	DefaultShareHeartbeatInterval = 5 * time.Second
	// DefaultShareMaxSize is group.share.max.size.
	DefaultShareMaxSize = 200
)

// The timer of share groups.
const (
	// TimerShareSession fences a share group member that stopped
	// heartbeating.
	TimerShareSession TimerKind = 20
)

// The share group states, as Kafka's ShareGroupState names them.
const (
	shareStateEmpty  = "Empty"
	shareStateStable = "Stable"
)

// shareGroup is the share-protocol part of a Group.
type shareGroup struct {
	// exists is set once a member joined or AlterShareGroupOffsets made
	// the group; deleted when DeleteGroups removed it.
	exists      bool
	epoch       int32 // the group epoch
	targetEpoch int32 // the epoch of target
	members     map[string]*shareMember
	target      map[string]tpSet
	// subscribed is the partition count of each subscribed topic when
	// the target was computed (0: the topic does not exist).
	subscribed map[string]int32
	topicIDs   map[string][16]byte
	// initialized are the topic partitions with share state (Kafka's
	// ShareGroupStatePartitionMetadata InitializedTopics).
	initialized tpSet
	persisted   persistedConsumer
	deleted     bool
}

type shareMember struct {
	id               string
	epoch, prevEpoch int32
	rack             string
	clientID, host   string
	subscribed       []string // sorted
	assigned         tpSet
	sessionSeq       uint64
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: map[string]*shareMember{}, target: map[string]tpSet{}, subscribed: map[string]int32{},
		topicIDs: map[string][16]byte{}, initialized: tpSet{}, persisted: persistedConsumer{values: map[string][]byte{}}}
}

// IsShare reports whether the group is a share group (KIP-932).
func (g *Group) IsShare() bool { return g.state != Dead && g.share.exists && !g.share.deleted }

// typeOwner is the type Kafka gives a group id that holds something:
// "classic", "consumer", "share", or "" for none.
func (g *Group) typeOwner() string {
	switch {
	case g.IsShare():
		return "share"
	case g.IsStreams():
		return "streams"
	case g.isConsumerGroup() || g.IsConsumer():
		return "consumer"
	case g.Exists():
		return "classic"
	}
	return ""
}

func (g *Group) shareSessionTimeout() time.Duration {
	if g.cfg.ShareTimeouts == nil {
		return DefaultShareSessionTimeout
	}
	session, _ := g.cfg.ShareTimeouts()
	return session
}

func (g *Group) shareHeartbeatInterval() time.Duration {
	if g.cfg.ShareTimeouts == nil {
		return DefaultShareHeartbeatInterval
	}
	_, heartbeat := g.cfg.ShareTimeouts()
	return heartbeat
}

func (g *Group) shareMaxSize() int {
	if g.cfg.ShareMaxSize > 0 {
		return g.cfg.ShareMaxSize
	}
	return DefaultShareMaxSize
}

// ShareHeartbeat handles a ShareGroupHeartbeat request (v1).
func (g *Group) ShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, host string, reply Responder) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(err *kerr.Error, msg string) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		g.reply(reply, resp)
	}
	s := g.share
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable, "")
		return
	case req.MemberID == "":
		fail(kerr.InvalidRequest, "MemberId can't be empty.")
		return
	case req.RackID != nil && *req.RackID == "":
		fail(kerr.InvalidRequest, "RackId can't be empty.")
		return
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
		return
	case req.MemberEpoch < -1:
		fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
		return
	case g.typeOwner() != "" && g.typeOwner() != "share":
		fail(kerr.GroupIDNotFound, "Group "+g.ID+" is not a share group.")
		return
	case !g.IsShare() && req.MemberEpoch != 0:
		fail(kerr.GroupIDNotFound, "Share group "+g.ID+" not found.")
		return
	}
	m := s.members[req.MemberID]
	if req.MemberEpoch == -1 {
		if m == nil {
			fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
			return
		}
		g.removeShareMember(m)
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), -1
		g.reply(reply, resp)
		return
	}
	bump := false
	switch {
	case req.MemberEpoch == 0 && m == nil:
		if len(s.members) >= g.shareMaxSize() {
			fail(kerr.GroupMaxSizeReached, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", g.shareMaxSize()))
			return
		}
		g.createShare()
		m = &shareMember{id: req.MemberID, assigned: tpSet{}}
		s.members[m.id] = m
		bump = true
	case req.MemberEpoch == 0:
		// A member that lost its epoch joins again, keeping its place.
	case m == nil:
		fail(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))
		return
	case req.MemberEpoch != m.epoch && req.MemberEpoch != m.prevEpoch:
		// NB: the previous epoch is let through as for KIP-848 members:
		// a member whose answer moving it on was lost retries with it.
		fail(kerr.FencedMemberEpoch, fmt.Sprintf("The share group member has a %s member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
			map[bool]string{true: "greater", false: "smaller"}[req.MemberEpoch > m.epoch], req.MemberEpoch, m.epoch))
		return
	}
	m.clientID, m.host = clientID, host
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		if subs := sortedNames(req.SubscribedTopicNames); !slices.Equal(subs, m.subscribed) {
			m.subscribed = subs
			bump = true
		}
	}
	g.touchShare(m)
	if g.refreshShareSubscribed() || bump {
		s.epoch++
	}
	if s.epoch > s.targetEpoch {
		g.computeShareTarget()
	}
	before := m.assigned
	if m.epoch != s.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, s.targetEpoch
		m.assigned = cloneSet(s.target[m.id])
	}
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), m.epoch
	resp.HeartbeatIntervalMillis = int32(g.shareHeartbeatInterval() / time.Millisecond)
	if req.SubscribedTopicNames != nil || req.MemberEpoch == 0 || !sameSet(before, m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		topics, parts := m.assigned.sorted()
		for _, t := range topics {
			rt := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			rt.TopicID, rt.Partitions = s.topicIDs[t], parts[t]
			a.TopicPartitions = append(a.TopicPartitions, rt)
		}
		resp.Assignment = &a
	}
	g.reply(reply, resp)
}

// createShare makes the group a share group, if it is not one yet.
func (g *Group) createShare() {
	if !g.share.exists || g.share.deleted {
		g.share.exists, g.share.deleted = true, false
	}
}

func cloneSet(s tpSet) tpSet {
	out := make(tpSet, len(s))
	for tp := range s {
		out[tp] = true
	}
	return out
}

// removeShareMember removes a member that left or was fenced: the group
// epoch moves and the member's records are released. NB: as Kafka's
// shareGroupFenceMember, the target is not computed again here but at the
// next heartbeat of a member (the group epoch is then ahead of the
// target's), so that ShareGroupDescribe shows the assignment epoch behind
// the group epoch until then (tests/diff TestShareGroup).
func (g *Group) removeShareMember(m *shareMember) {
	s := g.share
	delete(s.members, m.id)
	delete(s.target, m.id)
	s.epoch++
	g.refreshShareSubscribed()
	g.out.ShareGone = append(g.out.ShareGone, m.id)
}

func (g *Group) touchShare(m *shareMember) {
	m.sessionSeq = g.nextSeq()
	g.out.Timers = append(g.out.Timers, Timer{After: g.shareSessionTimeout(), Kind: TimerShareSession, Member: m.id, Seq: m.sessionSeq})
}

func (g *Group) fireShareSession(t Timer) {
	if m := g.share.members[t.Member]; m != nil && m.sessionSeq == t.Seq {
		g.removeShareMember(m)
	}
}

// refreshShareSubscribed reads the subscribed topics' ids and partition
// counts; it reports whether any changed since the target was computed.
func (g *Group) refreshShareSubscribed() bool {
	s := g.share
	topics := g.topics()
	now := map[string]int32{}
	for _, m := range s.members {
		for _, t := range m.subscribed {
			if _, ok := now[t]; ok {
				continue
			}
			id, n, ok := topics.Topic(t)
			if ok {
				now[t] = n
				s.topicIDs[t] = id
			} else {
				now[t] = 0
			}
		}
	}
	changed := len(now) != len(s.subscribed)
	for t, n := range now {
		if o, ok := s.subscribed[t]; !ok || o != n {
			changed = true
		}
	}
	s.subscribed = now
	return changed
}

// computeShareTarget computes the target assignment at the group epoch and
// records its partitions as having share state.
func (g *Group) computeShareTarget() {
	s := g.share
	s.target = shareAssign(s.members, s.subscribed, s.target)
	s.targetEpoch = s.epoch
	for _, set := range s.target {
		for tp := range set {
			s.initialized[tp] = true
		}
	}
}

// shareState is the share group's state as Kafka's ShareGroup names it:
// Empty without members, Stable with.
func (g *Group) shareState() string {
	if len(g.share.members) == 0 {
		return shareStateEmpty
	}
	return shareStateStable
}
