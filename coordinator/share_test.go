package coordinator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sgh sends a ShareGroupHeartbeat; subs nil keeps the subscription.
func (h *harness) sgh(name, member string, epoch int32, subs ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = 1, "g", member, epoch, subs
	h.g.ShareHeartbeat(req, "c", "/h", h.to(name))
	h.step()
	return h.got[name].(*kmsg.ShareGroupHeartbeatResponse)
}

func shareAssigned(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, t := range r.Assignment.TopicPartitions {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestKIP932ShareHeartbeat: KIP-932 "the group coordinator ... assigns
// the topic-partitions to the members" with no revocation: epoch 0 joins
// with a client-generated member id, each membership change moves the
// group epoch, a member takes its target (and the epoch) at its next
// heartbeat, -1 leaves.
func TestKIP932ShareHeartbeat(t *testing.T) {
	h := newHarness(t)
	r := h.sgh("a0", "a", 0, "t")
	if r.ErrorCode != 0 || deref(r.MemberID) != "a" || r.MemberEpoch != 1 || !slices.Equal(shareAssigned(r), []int32{0, 1, 2, 3}) {
		t.Fatalf("a joins: %+v %v", r, shareAssigned(r))
	}
	if r.HeartbeatIntervalMillis != 5000 {
		t.Errorf("heartbeat interval %d, want Kafka's default 5000", r.HeartbeatIntervalMillis)
	}
	if r.Assignment.TopicPartitions[0].TopicID != testTopicID {
		t.Errorf("topic id %v, want the image's", r.Assignment.TopicPartitions[0].TopicID)
	}
	r = h.sgh("b0", "b", 0, "t")
	if r.MemberEpoch != 2 || len(shareAssigned(r)) != 2 {
		t.Fatalf("b joins: epoch %d assigned %v, want epoch 2 and half at once (no revocation)", r.MemberEpoch, shareAssigned(r))
	}
	b := shareAssigned(r)
	// a learns the new epoch and its half at its next heartbeat.
	r = h.sgh("a1", "a", 1)
	if r.MemberEpoch != 2 || len(shareAssigned(r)) != 2 || slices.ContainsFunc(shareAssigned(r), func(p int32) bool { return slices.Contains(b, p) }) {
		t.Fatalf("a after b: epoch %d assigned %v (b has %v)", r.MemberEpoch, shareAssigned(r), b)
	}
	// Unchanged: no assignment in the answer.
	if r = h.sgh("a2", "a", 2); r.Assignment != nil || r.MemberEpoch != 2 {
		t.Errorf("a keepalive: epoch %d assignment %v, want none", r.MemberEpoch, r.Assignment)
	}
	// A full heartbeat carries it again.
	if r = h.sgh("a3", "a", 2, "t"); len(shareAssigned(r)) != 2 {
		t.Errorf("a full heartbeat: %v", shareAssigned(r))
	}
	r = h.sgh("b1", "b", -1)
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("b leaves: %+v", r)
	}
	if got := h.gone; !slices.Equal(got, []string{"b"}) {
		t.Errorf("members gone %v, want [b]", got)
	}
	if r = h.sgh("a4", "a", 2); r.MemberEpoch != 3 || !slices.Equal(shareAssigned(r), []int32{0, 1, 2, 3}) {
		t.Errorf("a after b left: epoch %d assigned %v", r.MemberEpoch, shareAssigned(r))
	}
}

// TestKIP932ShareHeartbeatErrors: the refusals, with Kafka's codes.
func TestKIP932ShareHeartbeatErrors(t *testing.T) {
	h := newHarness(t)
	wantCode(t, "unknown group, epoch 1", h.sgh("x", "a", 1).ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "no member id", h.sgh("x", "", 0, "t").ErrorCode, kerr.InvalidRequest)
	wantCode(t, "join without topics", h.sgh("x", "a", 0).ErrorCode, kerr.InvalidRequest)
	wantCode(t, "epoch -2", h.sgh("x", "a", -2).ErrorCode, kerr.InvalidRequest)
	h.sgh("a0", "a", 0, "t")
	wantCode(t, "unknown member", h.sgh("x", "z", 1).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "unknown member leaves", h.sgh("x", "z", -1).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "epoch ahead", h.sgh("x", "a", 7).ErrorCode, kerr.FencedMemberEpoch)
	h.sgh("b0", "b", 0, "t") // epoch 2
	h.sgh("a1", "a", 1)      // a at 2, previous 1
	wantCode(t, "previous epoch", h.sgh("x", "a", 1).ErrorCode, nil)
	h.sgh("c0", "c", 0, "t") // epoch 3
	h.sgh("a2", "a", 2)      // a at 3, previous 2
	wantCode(t, "older epoch", h.sgh("x", "a", 1).ErrorCode, kerr.FencedMemberEpoch)

	// group.share.max.size.
	h = newHarness(t)
	h.g.cfg.ShareMaxSize = 1
	h.sgh("a0", "a", 0, "t")
	wantCode(t, "over the max size", h.sgh("x", "b", 0, "t").ErrorCode, kerr.GroupMaxSizeReached)
	wantCode(t, "a member rejoins at the max size", h.sgh("x", "a", 0, "t").ErrorCode, nil)
}

// TestKIP932GroupTypes: a group id is of one type; the other protocols'
// requests are GROUP_ID_NOT_FOUND, as Kafka answers them.
func TestKIP932GroupTypes(t *testing.T) {
	h := newHarness(t)
	h.cgh("c0", "c", 0, []int32{})
	r := h.sgh("x", "a", 0, "t")
	if r.ErrorCode != kerr.GroupIDNotFound.Code || deref(r.ErrorMessage) != "Group g is not a share group." {
		t.Errorf("share heartbeat to a consumer group: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	h = newHarness(t)
	h.g.Commit("t", 0, Offset{Offset: 1})
	wantCode(t, "share heartbeat to a classic group", h.sgh("x", "a", 0, "t").ErrorCode, kerr.GroupIDNotFound)

	h = newHarness(t)
	h.sgh("a0", "a", 0, "t")
	if r := h.cgh("x", "c", 0, []int32{}); r.ErrorCode != kerr.GroupIDNotFound.Code || deref(r.ErrorMessage) != "Group g is not a consumer group." {
		t.Errorf("consumer heartbeat to a share group: %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	h.join("j", "", "", "range")
	// Kafka's classicGroupJoin: INCONSISTENT_GROUP_PROTOCOL, no member id.
	if r := h.joined("j"); r.ErrorCode != kerr.InconsistentGroupProtocol.Code || r.MemberID != "" {
		t.Errorf("JoinGroup to a share group: %d %q", r.ErrorCode, r.MemberID)
	}
	wantCode(t, "commit to a share group", errCode(h.g.CheckCommit(-1, "", nil)), kerr.GroupIDNotFound)
	if d := h.g.Describe(6); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Errorf("DescribeGroups of a share group: %+v", d)
	}
	if d := h.g.describeConsumer(); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupDescribe of a share group: %+v", d)
	}
	d := h.g.describeShare()
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 1 || d.AssignmentEpoch != 1 || d.Assignor != "simple" ||
		len(d.Members) != 1 || d.Members[0].MemberID != "a" || len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 4 ||
		d.Members[0].Assignment.TopicPartitions[0].Topic != "t" {
		t.Errorf("ShareGroupDescribe: %+v", d)
	}
	list := listGroup(h.g, kmsg.NewPtrListGroupsRequest(), nil)
	if len(list) != 1 || list[0].GroupType != "share" || list[0].ProtocolType != "share" || list[0].GroupState != "Stable" {
		t.Errorf("ListGroups: %+v", list)
	}
	h.sgh("a1", "a", -1)
	if list = listGroup(h.g, kmsg.NewPtrListGroupsRequest(), nil); len(list) != 1 || list[0].GroupState != "Empty" {
		t.Errorf("ListGroups of the empty share group: %+v", list)
	}
	if d := newHarness(t).g.describeShare(); d.ErrorCode != kerr.GroupIDNotFound.Code || deref(d.ErrorMessage) != "Group g not found." {
		t.Errorf("ShareGroupDescribe of no group: %+v", d)
	}
}

// TestKIP932SessionTimeout: a member that stops heartbeating is fenced
// after the session timeout: it leaves the group, its records are
// released, the group epoch moves, and it must rejoin.
func TestKIP932SessionTimeout(t *testing.T) {
	h := newHarness(t)
	h.g.cfg.ShareTimeouts = func() (time.Duration, time.Duration) { return 50 * time.Second, 6 * time.Second }
	if r := h.sgh("a0", "a", 0, "t"); r.HeartbeatIntervalMillis != 6000 {
		t.Errorf("heartbeat interval %d, want the group's 6000", r.HeartbeatIntervalMillis)
	}
	h.sgh("b0", "b", 0, "t")
	for _, tm := range h.timers {
		if tm.Kind == TimerShareSession && tm.After != 50*time.Second {
			t.Errorf("session timer %v, want the group's 50s", tm.After)
		}
	}
	h.sgh("a1", "a", 1)
	h.fire(TimerShareSession, "b")
	h.fire(TimerShareSession, "b") // stale timers of b: nothing more
	if !slices.Equal(h.gone, []string{"b"}) {
		t.Errorf("gone %v, want [b]", h.gone)
	}
	wantCode(t, "b after its session", h.sgh("x", "b", 2).ErrorCode, kerr.UnknownMemberID)
	if r := h.sgh("a2", "a", 2); r.MemberEpoch != 3 || len(shareAssigned(r)) != 4 {
		t.Errorf("a after b was fenced: epoch %d assigned %v", r.MemberEpoch, shareAssigned(r))
	}
}

// shareState renders a share group for comparisons.
func shareState(g *Group) string {
	s := g.share
	out := ""
	ids := make([]string, 0, len(s.members))
	for id := range s.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sorted := func(set tpSet) []topicPartition {
		var o []topicPartition
		for tp := range set {
			o = append(o, tp)
		}
		slices.SortFunc(o, func(a, b topicPartition) int {
			if a.Topic != b.Topic {
				return map[bool]int{true: -1, false: 1}[a.Topic < b.Topic]
			}
			return int(a.Partition - b.Partition)
		})
		return o
	}
	out += fmt.Sprintf("exists %v epoch %d target %d initialized %v\n", s.exists, s.epoch, s.targetEpoch, sorted(s.initialized))
	for _, id := range ids {
		m := s.members[id]
		out += fmt.Sprintf("%s: epoch %d prev %d rack %q client %s/%s subs %v assigned %v target %v\n",
			id, m.epoch, m.prevEpoch, m.rack, m.clientID, m.host, m.subscribed, sorted(m.assigned), sorted(s.target[id]))
	}
	return out
}

// TestKIP932GroupSurvivesRestart: a share group rebuilt from its
// ShareGroup* records is the group that wrote them, at every step, and a
// deleted one is gone.
func TestKIP932GroupSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	check := func(when string) {
		t.Helper()
		if want, got := shareState(h.g), shareState(h.restored()); got != want {
			t.Fatalf("%s: restored\n%s\nwant\n%s", when, got, want)
		}
	}
	h.sgh("a0", "a", 0, "t")
	check("a joined")
	h.sgh("b0", "b", 0, "t")
	check("b joined")
	h.sgh("a1", "a", 1)
	check("a moved on")
	h.g = h.restored()
	h.timers = nil
	if r := h.sgh("b1", "b", 2); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("b after the restart: %+v", r)
	}
	h.step()
	h.fire(TimerShareSession, "a")
	check("a fenced")
	h.sgh("b2", "b", 3, "t")
	h.sgh("b3", "b", -1)
	check("empty")
	if !h.restored().IsShare() {
		t.Fatal("the empty share group is gone after a restart")
	}
	h.records = append(h.records, h.g.ShareTombstones()...)
	if g := h.restored(); g.IsShare() || g.Exists() {
		t.Errorf("a deleted share group restored: %s", shareState(g))
	}
}
