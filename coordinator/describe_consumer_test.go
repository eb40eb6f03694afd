package coordinator

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgd describes the harness's group with ConsumerGroupDescribe v1.
func (h *harness) cgd() kmsg.ConsumerGroupDescribeResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{"g"}
	resp := h.g.DescribeConsumer(req).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].Group != "g" {
		h.t.Fatalf("ConsumerGroupDescribe answered %+v", resp.Groups)
	}
	return resp.Groups[0]
}

// partitionsOf returns the partitions of "t" in an assignment, after
// checking that every topic carries t's id and name.
func partitionsOf(t *testing.T, a kmsg.Assignment) []int32 {
	t.Helper()
	var out []int32
	for _, tp := range a.TopicPartitions {
		if tp.Topic != "t" || tp.TopicID != testTopicID {
			t.Fatalf("topic %q id %x, want t %x", tp.Topic, tp.TopicID, testTopicID)
		}
		out = append(out, tp.Partitions...)
	}
	return out
}

// members summarises the described members as id:epoch:assignment:target.
func members(t *testing.T, rg kmsg.ConsumerGroupDescribeResponseGroup) []string {
	t.Helper()
	var out []string
	for _, m := range rg.Members {
		out = append(out, fmt.Sprintf("%s:%d:%v:%v", m.MemberID, m.MemberEpoch, partitionsOf(t, m.Assignment), partitionsOf(t, m.TargetAssignment)))
	}
	return out
}

// wantDescribed checks a described group's state, epochs and members.
func wantDescribed(t *testing.T, step string, rg kmsg.ConsumerGroupDescribeResponseGroup, state string, epoch, assignmentEpoch int32, want ...string) {
	t.Helper()
	if rg.ErrorCode != 0 {
		t.Fatalf("%s: error %v", step, kerr.ErrorForCode(rg.ErrorCode))
	}
	got := members(t, rg)
	if rg.State != state || rg.Epoch != epoch || rg.AssignmentEpoch != assignmentEpoch || !slices.Equal(got, want) {
		t.Fatalf("%s: %s epoch %d assignment epoch %d members %v\nwant %s epoch %d assignment epoch %d members %v",
			step, rg.State, rg.Epoch, rg.AssignmentEpoch, got, state, epoch, assignmentEpoch, want)
	}
}

// TestKIP848DescribeStates: ConsumerGroupDescribe's group state through a
// rebalance, as Kafka's ConsumerGroup.maybeUpdateGroupState computes it:
// "EMPTY if there are no members; ASSIGNING if the group epoch is larger
// than the target assignment epoch; RECONCILING if a member is not
// reconciled to the target assignment epoch; STABLE otherwise". Each
// member shows its epoch, owned partitions (without those being revoked)
// and target.
func TestKIP848DescribeStates(t *testing.T) {
	h := newHarness(t)
	rg := h.cgd()
	if rg.ErrorCode != kerr.GroupIDNotFound.Code || rg.ErrorMessage == nil || *rg.ErrorMessage != "Group g not found." {
		t.Fatalf("unknown group: %v %v", kerr.ErrorForCode(rg.ErrorCode), rg.ErrorMessage)
	}

	h.cgh("a0", "a", 0, []int32{})
	rg = h.cgd()
	wantDescribed(t, "a alone", rg, "Stable", 1, 1, "a:1:[0 1 2 3]:[0 1 2 3]")
	m := rg.Members[0]
	if m.ClientID != "c" || m.ClientHost != "/h" || !slices.Equal(m.SubscribedTopics, []string{"t"}) ||
		m.MemberType != 1 || m.InstanceID != nil || m.RackID != nil || m.SubscribedTopicRegex == nil || *m.SubscribedTopicRegex != "" {
		t.Errorf("member fields: %+v", m)
	}
	if rg.AssignorName != "uniform" {
		t.Errorf("assignor %q, want uniform", rg.AssignorName)
	}

	// b joins: the target moves two partitions from a to b, which a
	// still owns: both members are short of their target.
	h.cgh("b0", "b", 0, []int32{})
	wantDescribed(t, "b joins", h.cgd(), "Reconciling", 2, 2,
		"a:1:[0 1 2 3]:[0 1]", "b:2:[]:[2 3]")
	// a is told to revoke 2 and 3: they are no longer in its assignment,
	// and its epoch stays until it acknowledges (UNREVOKED_PARTITIONS).
	h.cgh("a1", "a", 1, []int32{0, 1, 2, 3})
	wantDescribed(t, "a revoking", h.cgd(), "Reconciling", 2, 2,
		"a:1:[0 1]:[0 1]", "b:2:[]:[2 3]")
	// a acknowledges: it is reconciled, b still waits for 2 and 3
	// (UNRELEASED_PARTITIONS) until its next heartbeat.
	h.cgh("a2", "a", 1, []int32{0, 1})
	wantDescribed(t, "a reconciled", h.cgd(), "Reconciling", 2, 2,
		"a:2:[0 1]:[0 1]", "b:2:[]:[2 3]")
	h.cgh("b1", "b", 2, []int32{})
	wantDescribed(t, "both reconciled", h.cgd(), "Stable", 2, 2,
		"a:2:[0 1]:[0 1]", "b:2:[2 3]:[2 3]")

	// b leaves: the group epoch moves, the target is computed at a's
	// next heartbeat.
	h.cgh("b2", "b", -1, nil)
	wantDescribed(t, "b left", h.cgd(), "Assigning", 3, 2, "a:2:[0 1]:[0 1]")
	h.cgh("a3", "a", 2, []int32{0, 1})
	wantDescribed(t, "a takes all", h.cgd(), "Stable", 3, 3, "a:3:[0 1 2 3]:[0 1 2 3]")

	// a leaves: an empty consumer group is still one.
	h.cgh("a4", "a", -1, nil)
	wantDescribed(t, "empty", h.cgd(), "Empty", 4, 3)
}

// TestKIP848DescribeAssignorName: the assignor named is the one the
// target is computed with: the one most members ask for, as Kafka's
// preferredServerAssignor, uniform when none asks or on a tie.
func TestKIP848DescribeAssignorName(t *testing.T) {
	h := newHarness(t)
	h.cgh("a0", "a", 0, []int32{})
	h.cgh("b0", "b", 0, []int32{})
	h.cgh("c0", "c", 0, []int32{})
	for _, tc := range []struct{ a, b, c, want string }{
		{"uniform", "uniform", "", "uniform"},
		{"range", "uniform", "", "uniform"},
		{"range", "", "", "range"},
		{"range", "range", "uniform", "range"},
		{"", "", "", "uniform"},
	} {
		ms := h.g.consumer.members
		ms["a"].assignor, ms["b"].assignor, ms["c"].assignor = tc.a, tc.b, tc.c
		if got := h.cgd().AssignorName; got != tc.want {
			t.Errorf("members asking %q, %q and %q: assignor %q, want %q", tc.a, tc.b, tc.c, got, tc.want)
		}
	}
}

// TestKIP848DescribeGroupTypes: each describe API describes its own type
// of group, as Kafka 4.x's GroupMetadataManager: ConsumerGroupDescribe of
// a classic group is GROUP_ID_NOT_FOUND "Group g is not a consumer
// group."; DescribeGroups of a consumer group is Dead, and from v6
// GROUP_ID_NOT_FOUND "Group g is not a classic group." (also once the
// consumer group is empty). ListGroups shows a consumer group's state.
func TestKIP848DescribeGroupTypes(t *testing.T) {
	h := newHarness(t)
	h.stableOne("x")
	rg := h.cgd()
	if rg.ErrorCode != kerr.GroupIDNotFound.Code || rg.ErrorMessage == nil || *rg.ErrorMessage != "Group g is not a consumer group." ||
		len(rg.Members) != 0 {
		t.Fatalf("classic group: %v %v %+v", kerr.ErrorForCode(rg.ErrorCode), rg.ErrorMessage, rg.Members)
	}
	if d := h.g.Describe(6); d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("DescribeGroups of the classic group: %+v", d)
	}

	h = newHarness(t)
	h.cgh("a0", "a", 0, []int32{})
	for _, leave := range []bool{false, true} {
		if leave {
			h.cgh("a1", "a", -1, nil)
		}
		d := h.g.Describe(6)
		if d.ErrorCode != kerr.GroupIDNotFound.Code || d.ErrorMessage == nil || *d.ErrorMessage != "Group g is not a classic group." ||
			d.State != "Dead" || len(d.Members) != 0 || d.ProtocolType != "" {
			t.Errorf("DescribeGroups v6 of a consumer group (left %v): %+v", leave, d)
		}
		if d := h.g.Describe(5); d.ErrorCode != 0 || d.State != "Dead" || len(d.Members) != 0 {
			t.Errorf("DescribeGroups v5 of a consumer group (left %v): %+v", leave, d)
		}
	}

	// ListGroups types the group consumer, in Kafka's consumer states.
	h = newHarness(t)
	a := &groupActor{id: "g", g: h.g}
	list := func() string {
		resp := a.list(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].GroupType != "consumer" {
			t.Fatalf("ListGroups: %+v", resp.Groups)
		}
		return resp.Groups[0].GroupState
	}
	h.cgh("a0", "a", 0, []int32{})
	h.cgh("b0", "b", 0, []int32{})
	if s := list(); s != "Reconciling" {
		t.Errorf("ListGroups while b waits: %s, want Reconciling", s)
	}
}

// TestKIP848DescribeLoadError: a group whose actor could not load answers
// ConsumerGroupDescribe with the load error for its id.
func TestKIP848DescribeLoadError(t *testing.T) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{"g"}
	resp := errorResponse(req, kerr.CoordinatorLoadInProgress).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].Group != "g" || resp.Groups[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("error response %+v", resp.Groups)
	}
}
