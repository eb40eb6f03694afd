package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicJoin sends a JoinGroup with the consumer protocol's subscription
// to topic "t" and the partitions the member says it owns.
func (h *harness) classicJoin(name, memberID string, owned []int32) *kmsg.JoinGroupResponse {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 1, []string{"t"}
	if len(owned) > 0 {
		ot := kmsg.NewConsumerMemberMetadataOwnedPartition()
		ot.Topic, ot.Partitions = "t", owned
		sub.OwnedPartitions = append(sub.OwnedPartitions, ot)
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = 9, "g", memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 20000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "cooperative-sticky", sub.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	h.g.Join(req, "c", "/h", h.to(name))
	h.step()
	return h.joined(name)
}

// classicSync syncs as a follower and returns the partitions of "t" it
// was given.
func (h *harness) classicSync(name, memberID string, gen int32) ([]int32, int16) {
	h.sync(name, memberID, gen, nil)
	r := h.got[name].(*kmsg.SyncGroupResponse)
	delete(h.got, name)
	var a kmsg.ConsumerMemberAssignment
	if r.ErrorCode == 0 {
		if err := a.ReadFrom(r.MemberAssignment); err != nil {
			h.t.Fatalf("%s: assignment does not decode: %v", name, err)
		}
	}
	var ps []int32
	for _, t := range a.Topics {
		ps = append(ps, t.Partitions...)
	}
	slices.Sort(ps)
	return ps, r.ErrorCode
}

// TestClassicMemberInConsumerGroup: a classic consumer joins a consumer
// group as Kafka 4 lets it (KIP-848): JoinGroup answered at once with its
// member epoch and no leader, SyncGroup with its partitions once the
// consumer member released them, REBALANCE_IN_PROGRESS on heartbeats
// when it must rejoin, commits checked against its generation; it
// survives a coordinator restart and leaves with LeaveGroup.
func TestClassicMemberInConsumerGroup(t *testing.T) {
	h := newHarness(t)
	r := h.cgh("a0", "a", 0, []int32{})
	if len(assignedOf(r)) != 4 {
		t.Fatalf("a: %v", assignedOf(r))
	}
	j := h.classicJoin("k0", "", nil)
	wantCode(t, "classic join without member id", j.ErrorCode, kerr.MemberIDRequired)
	k := j.MemberID
	j = h.classicJoin("k1", k, nil)
	if j.ErrorCode != 0 || j.Generation != 2 || j.LeaderID != "" || deref(j.Protocol) != "cooperative-sticky" {
		t.Fatalf("classic join: err %v generation %d leader %q protocol %v", kerr.ErrorForCode(j.ErrorCode), j.Generation, j.LeaderID, deref(j.Protocol))
	}
	if ps, code := h.classicSync("k2", k, j.Generation); code != 0 || len(ps) != 0 {
		t.Fatalf("sync while a owns everything: %v %v", ps, kerr.ErrorForCode(code))
	}
	wantCode(t, "heartbeat while waiting for a", h.heartbeat(k, j.Generation, ""), nil)
	// a gives up two partitions.
	r = h.cgh("a1", "a", 1, []int32{0, 1, 2, 3})
	keep := assignedOf(r)
	h.cgh("a2", "a", 1, keep)
	wantCode(t, "heartbeat once released", h.heartbeat(k, j.Generation, ""), kerr.RebalanceInProgress)
	j = h.classicJoin("k3", k, nil)
	ps, code := h.classicSync("k4", k, j.Generation)
	if code != 0 || len(ps) != 2 || slices.ContainsFunc(ps, func(p int32) bool { return slices.Contains(keep, p) }) {
		t.Fatalf("k after the release: %v %v (a keeps %v)", ps, kerr.ErrorForCode(code), keep)
	}
	wantCode(t, "stable heartbeat", h.heartbeat(k, j.Generation, ""), nil)
	wantCode(t, "heartbeat at another generation", h.heartbeat(k, j.Generation-1, ""), kerr.IllegalGeneration)
	if err := h.g.CheckCommit(j.Generation-1, k, nil); err != kerr.IllegalGeneration {
		t.Errorf("classic commit at an old generation: %v", err)
	}
	if err := h.g.CheckCommit(j.Generation, k, nil); err != nil {
		t.Errorf("classic commit: %v", err)
	}
	if want, got := consumerState(h.g), consumerState(h.restored()); got != want {
		t.Fatalf("restored\n%s\nwant\n%s", got, want)
	}
	if g := h.restored(); g.consumer.members[k].classic == nil {
		t.Fatal("the classic member's protocols were not restored")
	}
	// A third member: k must give a partition up; as a cooperative client
	// it rejoins listing what it owns, is told its smaller assignment, and
	// rejoins once it revoked.
	h.cgh("b0", "b", 0, []int32{})
	wantCode(t, "heartbeat after the epoch moved", h.heartbeat(k, j.Generation, ""), kerr.RebalanceInProgress)
	j = h.classicJoin("k5", k, ps)
	now, code := h.classicSync("k6", k, j.Generation)
	if code != 0 || len(now) != 1 {
		t.Fatalf("k told to revoke: %v %v", now, kerr.ErrorForCode(code))
	}
	wantCode(t, "heartbeat while revoking", h.heartbeat(k, j.Generation, ""), kerr.RebalanceInProgress)
	j = h.classicJoin("k7", k, now)
	if ps, code = h.classicSync("k8", k, j.Generation); code != 0 || !slices.Equal(ps, now) || j.Generation != h.g.consumer.epoch {
		t.Fatalf("k after revoking: %v %v generation %d epoch %d", ps, kerr.ErrorForCode(code), j.Generation, h.g.consumer.epoch)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 3, "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = k
	leave.Members = append(leave.Members, lm)
	h.g.Leave(leave, h.to("leave"))
	h.step()
	if lr := h.got["leave"].(*kmsg.LeaveGroupResponse); lr.Members[0].ErrorCode != 0 || h.g.consumer.members[k] != nil {
		t.Fatalf("leave: %+v", lr)
	}
}

// TestGroupProtocolMigration: a consumer-protocol member joining a classic
// group with members upgrades it (group.consumer.migration.policy
// bidirectional): the classic members keep their partitions at the
// group's generation and are told to rejoin; once the consumer member
// leaves, the group is classic again and rebalances. With the policy
// disabled the heartbeat gets GROUP_ID_NOT_FOUND.
func TestGroupProtocolMigration(t *testing.T) {
	for _, allow := range []bool{true, false} {
		h := newHarness(t)
		h.g.cfg.AllowUpgrade, h.g.cfg.AllowDowngrade = allow, allow
		// A classic group with one member owning all of "t".
		j := h.classicJoin("x0", "", nil)
		x := j.MemberID
		j = h.classicJoin("x1", x, nil)
		wantCode(t, "classic join", j.ErrorCode, nil)
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "t", []int32{0, 1, 2, 3}
		a.Topics = append(a.Topics, at)
		h.sync("x2", x, j.Generation, map[string]string{x: string(a.AppendTo(nil))})
		gen := j.Generation
		r := h.cgh("c0", "c", 0, []int32{})
		if !allow {
			wantCode(t, "consumer heartbeat to a classic group, migration disabled", r.ErrorCode, kerr.GroupIDNotFound)
			continue
		}
		if r.ErrorCode != 0 || len(assignedOf(r)) != 0 || !h.g.IsConsumer() {
			t.Fatalf("upgrade: err %v assigned %v consumer %v", kerr.ErrorForCode(r.ErrorCode), assignedOf(r), h.g.IsConsumer())
		}
		if m := h.g.consumer.members[x]; m == nil || m.classic == nil || len(m.assigned) != 4 || m.epoch != gen {
			t.Fatalf("x after the upgrade: %+v", m)
		}
		wantCode(t, "x told to rejoin", h.heartbeat(x, gen, ""), kerr.RebalanceInProgress)
		j = h.classicJoin("x3", x, nil) // eager: gave everything up
		ps, _ := h.classicSync("x4", x, j.Generation)
		r = h.cgh("c1", "c", r.MemberEpoch, []int32{})
		if len(ps) != 2 || len(assignedOf(r)) != 2 {
			t.Fatalf("after the upgrade: x %v, c %v (err %v epoch %d)", ps, assignedOf(r), kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
		}
		// c leaves: the group is classic again and rebalances.
		h.cgh("c2", "c", -1, nil)
		if h.g.IsConsumer() || h.g.members[x] == nil || h.g.State() != PreparingRebalance {
			t.Fatalf("after the downgrade: consumer %v state %v", h.g.IsConsumer(), h.g.State())
		}
		if g := h.restored(); g.IsConsumer() || g.members[x] == nil || g.Generation() != j.Generation {
			t.Fatalf("restored after the downgrade: consumer %v, members %v, generation %d", g.IsConsumer(), g.joinOrder, g.Generation())
		}
		// x's generation is still good: it is told to rejoin, not fenced.
		wantCode(t, "x after the downgrade", h.heartbeat(x, j.Generation, ""), kerr.RebalanceInProgress)
	}
}
