package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testTopicID = [16]byte{1}

func testTopics(topic string) ([16]byte, int32, bool) {
	if topic != "t" {
		return [16]byte{}, 0, false
	}
	return testTopicID, 4, true
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
	h.g.ConsumerHeartbeat(req, "c", "/h", testTopics, h.to(name))
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
