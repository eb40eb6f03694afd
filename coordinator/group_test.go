package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests drive the Group state machine step by step, with no actor
// and no clock: timers fire when the test says so.

type harness struct {
	t   *testing.T
	g   *Group
	ids int
	// got holds answers by the name of the request that was sent.
	got    map[string]kmsg.Response
	timers []Timer
	// records are what the group asked to write, in order.
	records []Record
	topics  *fakeTopics
	// gone are the share group members reported gone, in order.
	gone []string
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, got: map[string]kmsg.Response{}, topics: newFakeTopics()}
	h.g = NewGroup("g", h.config())
	return h
}

func (h *harness) config() Config {
	return Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute,
		NewMemberID: func(client string) string { h.ids++; return fmt.Sprintf("%s-%d", client, h.ids) },
		Now:         func() time.Time { return time.UnixMilli(1000) },
		Topics:      func() Topics { return h.topics }}
}

func (h *harness) to(name string) Responder {
	return func(r kmsg.Response) { h.got[name] = r }
}

// step delivers what the last step produced.
func (h *harness) step() {
	r := h.g.Ready()
	for _, rep := range r.Replies {
		rep.To(rep.Resp)
	}
	h.timers = append(h.timers, r.Timers...)
	h.records = append(h.records, r.Records...)
	h.gone = append(h.gone, r.ShareGone...)
	if r.GroupMetadata {
		h.records = append(h.records, h.g.MetadataRecord()) // as the actor
	}
}

// fire fires every pending timer of kind for member ("" for any).
func (h *harness) fire(kind TimerKind, member string) {
	ts := h.timers
	h.timers = nil
	for _, t := range ts {
		if t.Kind == kind && (member == "" || t.Member == member) {
			h.g.Fire(t)
		} else {
			h.timers = append(h.timers, t)
		}
	}
	h.step()
}

func (h *harness) join(name, memberID, instance string, protocols ...string) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = 9, "g", memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 20000, "consumer"
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = p, []byte(name)
		req.Protocols = append(req.Protocols, jp)
	}
	h.g.Join(req, "c", "/h", h.to(name))
	h.step()
}

func (h *harness) joined(name string) *kmsg.JoinGroupResponse {
	h.t.Helper()
	r, ok := h.got[name].(*kmsg.JoinGroupResponse)
	if !ok {
		h.t.Fatalf("%s: no JoinGroup answer", name)
	}
	delete(h.got, name)
	return r
}

func (h *harness) sync(name, memberID string, gen int32, assign map[string]string) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 5, "g", memberID, gen
	for m, a := range assign {
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, sa)
	}
	h.g.Sync(req, h.to(name))
	h.step()
}

func (h *harness) heartbeat(memberID string, gen int32, instance string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = "g", memberID, gen
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	h.g.Heartbeat(req, h.to("hb"))
	h.step()
	r := h.got["hb"].(*kmsg.HeartbeatResponse)
	delete(h.got, "hb")
	return r.ErrorCode
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	code := int16(0)
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// stableOne brings one dynamic member to Stable and returns its id.
func (h *harness) stableOne(name string) string {
	h.join(name, "", "")
	id := h.joined(name).MemberID
	h.join(name, id, "")
	r := h.joined(name)
	wantCode(h.t, "join", r.ErrorCode, nil)
	h.sync(name, id, r.Generation, map[string]string{id: "A-" + name})
	return id
}

// TestKIP394MemberIDRequired: "a new member joining without a member id
// gets MEMBER_ID_REQUIRED and an id, and joins with that id".
func TestKIP394MemberIDRequired(t *testing.T) {
	h := newHarness(t)
	h.join("a", "", "")
	r := h.joined("a")
	wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	if r.MemberID == "" {
		t.Fatal("no member id handed out")
	}
	if h.g.State() != Empty {
		t.Fatalf("state %v", h.g.State())
	}
	h.join("a", r.MemberID, "")
	r2 := h.joined("a")
	wantCode(t, "second join", r2.ErrorCode, nil)
	if r2.Generation != 1 || r2.LeaderID != r.MemberID || len(r2.Members) != 1 || *r2.Protocol != "range" {
		t.Fatalf("join answer %+v", r2)
	}
	if h.g.State() != CompletingRebalance {
		t.Fatalf("state %v", h.g.State())
	}
	h.sync("a", r.MemberID, 1, map[string]string{r.MemberID: "P0"})
	s := h.got["a"].(*kmsg.SyncGroupResponse)
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "P0" || h.g.State() != Stable {
		t.Fatalf("sync %+v, state %v", s, h.g.State())
	}
}

// TestRebalanceWithTwoMembers: a second member starts a rebalance; the
// first is told REBALANCE_IN_PROGRESS by its heartbeat, rejoins, and both
// get generation 2; the follower's SyncGroup waits for the leader's.
func TestRebalanceWithTwoMembers(t *testing.T) {
	h := newHarness(t)
	a := h.stableOne("a")
	h.join("b", "", "")
	b := h.joined("b").MemberID
	h.join("b", b, "")
	if _, ok := h.got["b"]; ok {
		t.Fatal("b answered before a rejoined")
	}
	wantCode(t, "heartbeat during rebalance", h.heartbeat(a, 1, ""), kerr.RebalanceInProgress)
	wantCode(t, "stale heartbeat", h.heartbeat(a, 0, ""), kerr.IllegalGeneration)
	wantCode(t, "unknown heartbeat", h.heartbeat("nobody", 1, ""), kerr.UnknownMemberID)
	h.join("a", a, "")
	ra, rb := h.joined("a"), h.joined("b")
	if ra.Generation != 2 || rb.Generation != 2 || ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("answers %+v %+v", ra, rb)
	}
	wantCode(t, "commit while completing", errCode(h.g.CheckCommit(2, a, nil)), kerr.RebalanceInProgress)
	h.sync("b", b, 2, nil)
	if _, ok := h.got["b"]; ok {
		t.Fatal("follower's sync answered before the leader's")
	}
	h.sync("a", a, 2, map[string]string{a: "A", b: "B"})
	if s := h.got["b"].(*kmsg.SyncGroupResponse); string(s.MemberAssignment) != "B" {
		t.Fatalf("b got %q", s.MemberAssignment)
	}
	wantCode(t, "commit", errCode(h.g.CheckCommit(2, a, nil)), nil)
	wantCode(t, "stale commit", errCode(h.g.CheckCommit(1, a, nil)), kerr.IllegalGeneration)
	wantCode(t, "simple commit in a live group", errCode(h.g.CheckCommit(-1, "", nil)), kerr.UnknownMemberID)
}

// TestSessionTimeout: a member whose session timer fires is removed and
// the others rebalance; one that does not rejoin within the rebalance
// timeout is removed too.
func TestSessionTimeout(t *testing.T) {
	h := newHarness(t)
	a := h.stableOne("a")
	h.join("b", "", "")
	b := h.joined("b").MemberID
	h.join("b", b, "")
	h.join("a", a, "")
	h.joined("a")
	h.joined("b")
	h.sync("a", a, 2, map[string]string{a: "A", b: "B"})
	h.sync("b", b, 2, nil)
	h.fire(TimerSession, b)
	if h.g.State() != PreparingRebalance {
		t.Fatalf("state %v after b expired", h.g.State())
	}
	// a does not rejoin either: the rebalance timeout ends the round.
	h.fire(TimerRebalance, "")
	if h.g.State() != Empty || h.g.Generation() != 3 {
		t.Fatalf("state %v generation %d", h.g.State(), h.g.Generation())
	}
	wantCode(t, "simple commit in an empty group", errCode(h.g.CheckCommit(-1, "", nil)), nil)
}

// TestKIP345StaticMember: a static member that restarts (joins again
// without its member id) gets a new id and its assignment back with no
// rebalance; the old id is fenced.
func TestKIP345StaticMember(t *testing.T) {
	h := newHarness(t)
	h.join("s", "", "i1")
	r := h.joined("s")
	wantCode(t, "static join", r.ErrorCode, nil)
	old := r.MemberID
	h.sync("s", old, 1, map[string]string{old: "S"})
	h.join("s2", "", "i1")
	r2 := h.joined("s2")
	wantCode(t, "static rejoin", r2.ErrorCode, nil)
	if r2.MemberID == old || r2.Generation != 1 || h.g.State() != Stable {
		t.Fatalf("rejoin %+v, state %v", r2, h.g.State())
	}
	h.sync("s2", r2.MemberID, 1, nil)
	if s := h.got["s2"].(*kmsg.SyncGroupResponse); string(s.MemberAssignment) != "S" {
		t.Fatalf("assignment %q", s.MemberAssignment)
	}
	wantCode(t, "old id", h.heartbeat(old, 1, "i1"), kerr.FencedInstanceID)
	wantCode(t, "new id", h.heartbeat(r2.MemberID, 1, "i1"), nil)
	wantCode(t, "fenced commit", errCode(h.g.CheckCommit(1, old, kmsg.StringPtr("i1"))), kerr.FencedInstanceID)
}

// TestProtocolSelection: the protocol every member supports with the most
// first-choice votes wins; a member with no protocol in common is refused.
func TestProtocolSelection(t *testing.T) {
	h := newHarness(t)
	a := h.stableOne("a") // range only
	h.join("x", "", "", "sticky")
	wantCode(t, "no common protocol", h.joined("x").ErrorCode, kerr.InconsistentGroupProtocol)
	h.join("a", a, "", "sticky", "range")
	h.join("b", "", "")
	b := h.joined("b").MemberID
	h.join("b", b, "", "sticky", "range")
	ra := h.joined("a")
	if *ra.Protocol != "sticky" {
		t.Fatalf("protocol %q", *ra.Protocol)
	}
}

// TestLeave: v3+ batched leaves answer per member.
func TestLeave(t *testing.T) {
	h := newHarness(t)
	a := h.stableOne("a")
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	for _, id := range []string{a, "nobody"} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	h.g.Leave(req, h.to("leave"))
	h.step()
	r := h.got["leave"].(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave a", r.Members[0].ErrorCode, nil)
	wantCode(t, "leave nobody", r.Members[1].ErrorCode, kerr.UnknownMemberID)
	if h.g.State() != Empty {
		t.Fatalf("state %v", h.g.State())
	}
}

// TestRestore: the records a group writes rebuild it.
func TestRestore(t *testing.T) {
	h := newHarness(t)
	a := h.stableOne("a")
	h.g.Commit("t", 3, Offset{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 5})
	recs := []Record{h.g.MetadataRecord(), OffsetRecord("g", "t", 3, Offset{Offset: 42, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: 5}),
		OffsetRecord("other", "t", 3, Offset{Offset: 1}), OffsetRecord("g", "t", 4, Offset{Offset: 9}), OffsetTombstone("g", "t", 4)}
	g := NewGroup("g", h.g.cfg)
	for _, r := range recs {
		if err := g.Restore(r); err != nil {
			t.Fatal(err)
		}
	}
	g.Loaded()
	if g.State() != Stable || g.Generation() != 1 || g.members[a] == nil || string(g.members[a].assignment) != "A-a" {
		t.Fatalf("restored %v gen %d members %v", g.State(), g.Generation(), g.members)
	}
	if o, ok := g.Committed("t", 3); !ok || o.Offset != 42 || o.Metadata != "m" || o.LeaderEpoch != 7 {
		t.Fatalf("offset %+v %v", o, ok)
	}
	if _, ok := g.Committed("t", 4); ok {
		t.Fatal("tombstoned offset restored")
	}
	if len(g.Ready().Timers) != 1 {
		t.Fatal("restored member has no session timer")
	}
}

// TestPartitionFor: Kafka's abs(String.hashCode) % partitions, values from
// Java's hashCode over UTF-16.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  int32
	}{{"abc", 4}, {"my-consumer-group", 13}, {"console-consumer-12345", 6}, {"grüppe/😀", 42}, {"", 0}} {
		if got := PartitionFor(tc.group, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
}

// TestKIP211OffsetsExpiry: the offsets of a group that became empty expire
// offsets.retention after that; a standalone consumer's commit in an empty
// group starts the retention again, and a stale timer does nothing.
func TestKIP211OffsetsExpiry(t *testing.T) {
	h := newHarness(t)
	h.g.cfg.OffsetsRetention = time.Hour
	a := h.stableOne("a")
	h.g.Commit("t", 0, Offset{Offset: 5, CommitTimestamp: 1000})
	h.step()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}}
	h.g.Leave(req, h.to("leave"))
	h.step()
	if h.g.State() != Empty {
		t.Fatalf("state %v", h.g.State())
	}
	var expiry []Timer
	for _, tm := range h.timers {
		if tm.Kind == TimerOffsetsExpiry {
			expiry = append(expiry, tm)
		}
	}
	if len(expiry) != 1 || expiry[0].After != time.Hour {
		t.Fatalf("expiry timers %+v", expiry)
	}
	// A simple commit (now is 1000 ms) restarts the retention: the
	// first timer is stale.
	h.g.Commit("t", 1, Offset{Offset: 7, CommitTimestamp: 1000})
	h.g.Fire(expiry[0])
	if r := h.g.Ready(); r.ExpireOffsets || len(r.Timers) != 1 {
		t.Fatalf("stale timer: %+v", r)
	}
	h.g.Fire(Timer{Kind: TimerOffsetsExpiry, Seq: h.g.expirySeq})
	if !h.g.Ready().ExpireOffsets {
		t.Fatal("the current expiry timer expired nothing")
	}
	if n := len(h.g.Offsets()); n != 2 {
		t.Fatalf("%d offsets to expire", n)
	}
}
