package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testTopicID = [16]byte{1}

// fakeTopics is the cluster's topics as a test sets them.
type fakeTopics struct {
	parts   map[string]int32
	ids     map[string][16]byte
	version int64
}

// newFakeTopics has topic "t" with 4 partitions.
func newFakeTopics() *fakeTopics {
	f := &fakeTopics{parts: map[string]int32{}, ids: map[string][16]byte{}}
	f.set("t", testTopicID, 4)
	return f
}

func (f *fakeTopics) set(name string, id [16]byte, partitions int32) {
	f.parts[name], f.ids[name] = partitions, id
	f.version++
}

func (f *fakeTopics) Topic(name string) ([16]byte, int32, bool) {
	n, ok := f.parts[name]
	return f.ids[name], n, ok
}

func (f *fakeTopics) Name(id [16]byte) (string, bool) {
	for name, tid := range f.ids {
		if tid == id {
			return name, true
		}
	}
	return "", false
}

func (f *fakeTopics) Names() ([]string, int64) {
	var out []string
	for name := range f.parts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, f.version
}

// cgh sends a ConsumerGroupHeartbeat; owned nil is a keepalive (Topics
// unchanged), otherwise the partitions of "t" the member owns.
func (h *harness) cgh(name, member string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 10000, []string{"t"}
		req.ServerAssignor = kmsg.StringPtr("uniform")
	}
	if owned != nil {
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = testTopicID, owned
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{rt}
	}
	return h.send848(name, req)
}

func (h *harness) send848(name string, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.g.ConsumerHeartbeat(req, "c", "/h", h.to(name))
	h.step()
	return h.got[name].(*kmsg.ConsumerGroupHeartbeatResponse)
}

func assignedOf(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	var out []int32
	for _, t := range r.Assignment.Topics {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestKIP848RevocationBeforeReassignment: KIP-848 "the partitions are
// revoked from the current owner before being assigned to the new one": a
// second member gets a moved partition only after the first member's
// heartbeat no longer lists it; session expiry and leave free partitions.
func TestKIP848RevocationBeforeReassignment(t *testing.T) {
	h := newHarness(t)
	r := h.cgh("a0", "a", 0, []int32{})
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || !slices.Equal(assignedOf(r), []int32{0, 1, 2, 3}) {
		t.Fatalf("a joins: err %d epoch %d assigned %v", r.ErrorCode, r.MemberEpoch, assignedOf(r))
	}
	r = h.cgh("b0", "b", 0, []int32{})
	if r.MemberEpoch != 2 || len(assignedOf(r)) != 0 {
		t.Fatalf("b joins: epoch %d assigned %v, want epoch 2 and nothing while a owns all", r.MemberEpoch, assignedOf(r))
	}
	// a is told to give up two partitions; its epoch stays.
	r = h.cgh("a1", "a", 1, []int32{0, 1, 2, 3})
	if r.MemberEpoch != 1 || len(assignedOf(r)) != 2 {
		t.Fatalf("a revokes: epoch %d assigned %v", r.MemberEpoch, assignedOf(r))
	}
	keep := assignedOf(r)
	// Until a acknowledges, b still gets nothing.
	if r = h.cgh("b1", "b", 2, []int32{}); len(assignedOf(r)) != 0 {
		t.Fatalf("b before the revocation: assigned %v", assignedOf(r))
	}
	r = h.cgh("a2", "a", 1, keep)
	if r.MemberEpoch != 2 {
		t.Fatalf("a acknowledges: epoch %d", r.MemberEpoch)
	}
	r = h.cgh("b2", "b", 2, []int32{})
	if got := assignedOf(r); len(got) != 2 || slices.ContainsFunc(got, func(p int32) bool { return slices.Contains(keep, p) }) {
		t.Fatalf("b after the revocation: %v, a keeps %v", got, keep)
	}
	// Stale epochs are fenced; unknown members unknown.
	wantCode(t, "future epoch", h.cgh("a3", "a", 7, nil).ErrorCode, kerr.FencedMemberEpoch)
	wantCode(t, "unknown member", h.cgh("x", "x", 1, nil).ErrorCode, kerr.UnknownMemberID)
	if err := h.g.CheckCommit(3, "a", nil); err != kerr.StaleMemberEpoch {
		t.Errorf("commit at a future epoch: %v", err)
	}
	if err := h.g.CheckCommit(2, "x", nil); err != kerr.UnknownMemberID {
		t.Errorf("commit by an unknown member: %v", err)
	}
	// The previous epoch is accepted too: the answer that moved the
	// member on may not have reached it yet.
	for _, e := range []int32{1, 2} {
		if err := h.g.CheckCommit(e, "a", nil); err != nil {
			t.Errorf("commit at epoch %d: %v", e, err)
		}
	}
	// b's session expires: a gets everything at the next epoch.
	h.fire(TimerConsumerSession, "b")
	r = h.cgh("a4", "a", 2, keep)
	if r.MemberEpoch != 3 || !slices.Equal(assignedOf(r), []int32{0, 1, 2, 3}) {
		t.Fatalf("after b expired: epoch %d assigned %v", r.MemberEpoch, assignedOf(r))
	}
	// a leaves: the group is empty, and simple commits are allowed again.
	if r = h.cgh("a5", "a", -1, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: err %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if h.g.IsConsumer() {
		t.Fatal("the group still has members")
	}
	if err := h.g.CheckCommit(-1, "", nil); err != nil {
		t.Errorf("simple commit to an empty group: %v", err)
	}
}

// TestKIP848RevocationTimeout: a member that keeps heartbeating but never
// gives up a revoked partition is removed when its rebalance timeout
// fires, and the partition goes to the member waiting for it.
func TestKIP848RevocationTimeout(t *testing.T) {
	h := newHarness(t)
	h.cgh("a0", "a", 0, []int32{})
	h.cgh("b0", "b", 0, []int32{})
	if r := h.cgh("a1", "a", 1, []int32{0, 1, 2, 3}); len(assignedOf(r)) != 2 {
		t.Fatalf("a revokes: assigned %v", assignedOf(r))
	}
	// a still lists everything: nothing is released.
	h.cgh("a2", "a", 1, []int32{0, 1, 2, 3})
	if r := h.cgh("b1", "b", 2, []int32{}); len(assignedOf(r)) != 0 {
		t.Fatalf("b while a holds on: %v", assignedOf(r))
	}
	h.fire(TimerConsumerRevocation, "a")
	wantCode(t, "a after its rebalance timeout", h.cgh("a3", "a", 1, nil).ErrorCode, kerr.UnknownMemberID)
	if r := h.cgh("b2", "b", 2, []int32{}); !slices.Equal(assignedOf(r), []int32{0, 1, 2, 3}) {
		t.Fatalf("b after a was removed: epoch %d assigned %v", r.MemberEpoch, assignedOf(r))
	}
}

// consumerState renders what a consumer group must keep across a
// coordinator restart.
func consumerState(g *Group) string {
	c := g.consumer
	sorted := func(s tpSet) []string {
		var out []string
		for tp := range s {
			out = append(out, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
		}
		slices.Sort(out)
		return out
	}
	out := fmt.Sprintf("epoch %d target %d\n", c.epoch, c.targetEpoch)
	ids := slices.Sorted(maps.Keys(c.members))
	for _, id := range ids {
		m := c.members[id]
		out += fmt.Sprintf("%s: epoch %d prev %d instance %q client %s/%s subs %v regex %q assignor %s timeout %v assigned %v revoking %v target %v\n",
			id, m.epoch, m.prevEpoch, m.instanceID, m.clientID, m.host, m.subscribed, m.regex, m.assignor, m.rebalanceTimeout,
			sorted(m.assigned), sorted(m.revoking), sorted(c.target[id]))
	}
	return out
}

// restored is the group a restarted coordinator rebuilds from the records
// written so far.
func (h *harness) restored() *Group {
	h.t.Helper()
	g := NewGroup("g", h.config())
	for _, r := range h.records {
		if err := g.Restore(r); err != nil {
			h.t.Fatal(err)
		}
	}
	g.Loaded()
	return g
}

// TestKIP848GroupSurvivesRestart: at every step of a rebalance, a group
// rebuilt from its records is the group that wrote them, and its members
// carry on with their epochs, as after a coordinator restart.
func TestKIP848GroupSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	check := func(when string) {
		t.Helper()
		if want, got := consumerState(h.g), consumerState(h.restored()); got != want {
			t.Fatalf("%s: restored\n%s\nwant\n%s", when, got, want)
		}
	}
	h.cgh("a0", "a", 0, []int32{})
	check("a joined")
	h.cgh("b0", "b", 0, []int32{})
	check("b joined")
	r := h.cgh("a1", "a", 1, []int32{0, 1, 2, 3})
	keep := assignedOf(r)
	check("a revoking")
	// The coordinator restarts mid-revocation: a acknowledges to the new
	// one, and b gets the released partitions.
	h.g = h.restored()
	h.timers = nil
	if r = h.cgh("a2", "a", 1, keep); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("a acknowledges after the restart: err %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if r = h.cgh("b1", "b", 2, []int32{}); len(assignedOf(r)) != 2 {
		t.Fatalf("b after the restart: %v", assignedOf(r))
	}
	check("balanced")
	// Sessions run again from the restart: b, silent, expires.
	h.g = h.restored()
	h.timers = nil
	h.step() // the restored sessions' timers
	h.fire(TimerConsumerSession, "b")
	check("b expired")
	if r = h.cgh("a3", "a", 2, keep); r.MemberEpoch != 3 || len(assignedOf(r)) != 4 {
		t.Fatalf("a after b expired: epoch %d assigned %v", r.MemberEpoch, assignedOf(r))
	}
	// A partition count change while the coordinator was away is seen:
	// the epoch moves on load.
	h.topics.set("t", testTopicID, 6)
	if g := h.restored(); g.consumer.epoch != h.g.consumer.epoch+1 {
		t.Errorf("after the topic grew: epoch %d, want %d", g.consumer.epoch, h.g.consumer.epoch+1)
	}
	h.cgh("a4", "a", -1, nil)
	check("empty")
}

// TestKIP848RegexSubscription: a member subscribed by regular expression
// gets the partitions of every matching topic (whole names, internal ones
// aside by Topics), and of a matching topic created later.
func TestKIP848RegexSubscription(t *testing.T) {
	h := newHarness(t)
	h.topics.set("tx", [16]byte{2}, 2)
	h.topics.set("other", [16]byte{3}, 2)
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", "a", 10000
	req.SubscribedTopicRegex = kmsg.StringPtr("t.*")
	r := h.send848("a0", req)
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.Topics) != 2 {
		t.Fatalf("join by regex: err %d assignment %+v", r.ErrorCode, r.Assignment)
	}
	h.topics.set("t2", [16]byte{4}, 3)
	req = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = 1, "g", "a", r.MemberEpoch, -1
	r = h.send848("a1", req)
	if r.MemberEpoch != 2 || r.Assignment == nil || len(r.Assignment.Topics) != 3 {
		t.Fatalf("after t2 was created: epoch %d assignment %+v", r.MemberEpoch, r.Assignment)
	}
	if want, got := consumerState(h.g), consumerState(h.restored()); got != want {
		t.Fatalf("restored\n%s\nwant\n%s", got, want)
	}
	bad := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	bad.Version, bad.Group, bad.MemberID, bad.RebalanceTimeoutMillis = 1, "g", "b", 10000
	bad.SubscribedTopicRegex = kmsg.StringPtr("t(")
	wantCode(t, "invalid regex", h.send848("b0", bad).ErrorCode, kerr.InvalidRegularExpression)
}

// TestKIP848StaticMember: a static member that leaves with epoch -2 and
// comes back under a new member id takes its partitions back with no
// new group epoch; while it is in the group its instance id cannot be
// taken, and its old member id is fenced once replaced.
func TestKIP848StaticMember(t *testing.T) {
	h := newHarness(t)
	join := func(name, member string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", member, 10000
		req.InstanceID, req.SubscribedTopicNames = kmsg.StringPtr("i"), []string{"t"}
		return h.send848(name, req)
	}
	r := join("a0", "a")
	h.cgh("b0", "b", 0, []int32{})
	r = h.cgh("a1", "a", r.MemberEpoch, []int32{0, 1, 2, 3})
	r = h.cgh("a2", "a", r.MemberEpoch, assignedOf(r))
	owned := assignedOf(r)
	epoch := h.g.consumer.epoch
	wantCode(t, "instance taken", join("x0", "x").ErrorCode, kerr.UnreleasedInstanceID)

	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = 1, "g", "a", -2, kmsg.StringPtr("i")
	if r = h.send848("a3", leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: err %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	// Restarted as a2: the same partitions, at once.
	r = join("n0", "a2")
	if r.ErrorCode != 0 || !slices.Equal(assignedOf(r), owned) || h.g.consumer.epoch != epoch {
		t.Fatalf("static rejoin: err %d assigned %v (had %v) group epoch %d (was %d)",
			r.ErrorCode, assignedOf(r), owned, h.g.consumer.epoch, epoch)
	}
	wantCode(t, "the replaced member id", func() int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = 1, "g", "a", r.MemberEpoch, kmsg.StringPtr("i")
		req.RebalanceTimeoutMillis = -1
		return h.send848("a4", req).ErrorCode
	}(), kerr.FencedInstanceID)
	if want, got := consumerState(h.g), consumerState(h.restored()); got != want {
		t.Fatalf("restored\n%s\nwant\n%s", got, want)
	}
}

// TestKIP848OffsetFetchMemberEpoch: OffsetFetch v9+ to a consumer group
// checks its member as Kafka does: an admin fetch (no member, epoch -1)
// passes, an unknown member does not, a member must be at its epoch.
func TestKIP848OffsetFetchMemberEpoch(t *testing.T) {
	h := newHarness(t)
	r := h.cgh("a0", "a", 0, []int32{})
	a := kmsg.StringPtr("a")
	for _, c := range []struct {
		member *string
		epoch  int32
		want   *kerr.Error
	}{
		{nil, -1, nil},
		{a, r.MemberEpoch, nil},
		{a, r.MemberEpoch + 1, kerr.StaleMemberEpoch},
		{kmsg.StringPtr("x"), r.MemberEpoch, kerr.UnknownMemberID},
		{nil, r.MemberEpoch, kerr.UnknownMemberID},
	} {
		if got := h.g.CheckFetch(c.member, c.epoch); got != c.want {
			t.Errorf("fetch by %v at epoch %d: %v, want %v", deref(c.member), c.epoch, got, c.want)
		}
	}
}

// TestKIP848OffsetDeleteSubscribedTopic: OffsetDelete in a consumer group
// with members is refused for a topic a member subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC, as Kafka's isSubscribedToTopic) and allowed
// for another; once the group is empty, for any.
func TestKIP848OffsetDeleteSubscribedTopic(t *testing.T) {
	h := newHarness(t)
	h.cgh("a0", "a", 0, []int32{})
	if err := h.g.CheckOffsetDelete("t"); err != kerr.GroupSubscribedToTopic {
		t.Errorf("subscribed topic: %v", err)
	}
	if err := h.g.CheckOffsetDelete("other"); err != nil {
		t.Errorf("another topic: %v", err)
	}
	h.cgh("a1", "a", -1, nil)
	if err := h.g.CheckOffsetDelete("t"); err != nil {
		t.Errorf("empty group: %v", err)
	}
}
