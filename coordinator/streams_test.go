package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStickyAssignBalancedAndSticky: tasks spread evenly over members, and
// a member joining moves only what it must.
func TestStickyAssignBalancedAndSticky(t *testing.T) {
	subs := []streamsSubtopologyTasks{{id: "0", tasks: 4}, {id: "1", tasks: 4, stateful: true}}
	one := stickyAssign([]streamsAssignMember{{id: "a", process: "p1", prev: newStreamsTasks()}, {id: "b", process: "p1", prev: newStreamsTasks()}}, subs, 0)
	if len(one["a"].active) != 4 || len(one["b"].active) != 4 {
		t.Fatalf("uneven: a %v b %v", one["a"].active, one["b"].active)
	}
	two := stickyAssign([]streamsAssignMember{{id: "a", process: "p1", prev: one["a"]}, {id: "b", process: "p1", prev: one["b"]},
		{id: "c", process: "p2", prev: newStreamsTasks()}, {id: "d", process: "p2", prev: newStreamsTasks()}}, subs, 1)
	kept := 0
	for task := range two["a"].active {
		if _, ok := one["a"].active[task]; ok {
			kept++
		}
	}
	if len(two["a"].active) != 2 || kept != 2 {
		t.Fatalf("a: %v (kept %d of %v)", two["a"].active, kept, one["a"].active)
	}
	// Standbys of the stateful subtopology, never in the active's process.
	for _, m := range []string{"a", "b", "c", "d"} {
		for task := range two[m].standby {
			for _, o := range []string{"a", "b", "c", "d"} {
				if _, ok := two[o].active[task]; ok && (o < "c") == (m < "c") {
					t.Fatalf("standby %v of %s in the process of its active %s", task, m, o)
				}
			}
		}
	}
}

// TestStreamsHeartbeatJoinsAndAssigns: a member joins with a topology whose
// source topic exists, is told the internal topics are missing, and gets
// every task once they exist.
func TestStreamsHeartbeatJoinsAndAssigns(t *testing.T) {
	topics := &fakeStreamsTopics{parts: map[string]int32{"in": 2}}
	g := NewGroup("app", Config{Topics: func() Topics { return topics }, StreamsSettings: func() StreamsSettings {
		s := DefaultStreamsSettings
		s.InitialRebalanceDelay = 0
		return s
	}})
	beat := func(epoch int32, topo bool) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "app", "m1", epoch, 1000
		req.ProcessID = kmsg.StringPtr("p1")
		if topo {
			tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			s.SubtopologyID, s.SourceTopics = "0", []string{"in"}
			cl := kmsg.NewTopicInfo()
			cl.Topic = "app-store-changelog"
			s.StateChangelogTopics = []kmsg.TopicInfo{cl}
			tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s}
			req.Topology = &tp
		}
		var got kmsg.Response
		g.StreamsHeartbeat(req, "c", "h", func(r kmsg.Response) { got = r })
		for _, r := range g.Ready().Replies {
			r.To(r.Resp)
		}
		return got.(*kmsg.StreamsGroupHeartbeatResponse)
	}
	r := beat(0, true)
	if r.ErrorCode != 0 || len(r.Status) != 1 || r.Status[0].StatusCode != streamsStatusMissingInternalTopics {
		t.Fatalf("join: %+v", r)
	}
	if ts := g.TakeStreamsTopics(); len(ts) != 1 || ts[0].Name != "app-store-changelog" || ts[0].Partitions != 2 {
		t.Fatalf("topics to create: %+v", ts)
	}
	topics.parts["app-store-changelog"] = 2
	r = beat(r.MemberEpoch, false)
	if r.ErrorCode != 0 || len(r.Status) != 0 || len(r.ActiveTasks) != 1 || len(r.ActiveTasks[0].Partitions) != 2 {
		t.Fatalf("after creation: %+v", r)
	}
	if g.streamsState() != streamsStateStable {
		t.Fatalf("state %s", g.streamsState())
	}
}

type fakeStreamsTopics struct{ parts map[string]int32 }

func (f *fakeStreamsTopics) Topic(name string) ([16]byte, int32, bool) {
	n, ok := f.parts[name]
	return [16]byte{byte(len(name))}, n, ok
}
func (f *fakeStreamsTopics) Name([16]byte) (string, bool) { return "", false }
func (f *fakeStreamsTopics) Names() ([]string, int64)     { return nil, 0 }

// TestKIP1071InvalidJoinChangesNothing: a heartbeat refused after its
// member and topology were read (another topology, an invalid one) leaves
// the group as it was, as Kafka, which validates before it writes: no
// member added, no epoch moved, and no group made of a refused first
// join.
func TestKIP1071InvalidJoinChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.topics.set("app-store-changelog", [16]byte{2}, 4)
	h.sth("a0", "a", "p1", 0, nil, true)
	before := streamsDump(h.g)
	records := len(h.records)

	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "b", 30000
	tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	tp.Epoch = 1
	st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	st.SubtopologyID, st.SourceTopics = "0", []string{"other"}
	tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
	req.Topology = &tp
	h.g.StreamsHeartbeat(req, "c", "h", h.to("b0"))
	h.step()
	if r := h.got["b0"].(*kmsg.StreamsGroupHeartbeatResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("another topology: %+v", r)
	}
	if after := streamsDump(h.g); after != before || len(h.records) != records {
		t.Fatalf("the group changed:\n%s\nwas\n%s", after, before)
	}

	// A first join with a topology that cannot be configured (a
	// repartition topic read and never written) makes no group.
	fresh := newHarness(t)
	ri := kmsg.NewTopicInfo()
	ri.Topic = "unwritten-repartition"
	st.SourceTopics, st.RepartitionSourceTopics = nil, []kmsg.TopicInfo{ri}
	tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
	req.MemberID = "a"
	fresh.g.StreamsHeartbeat(req, "c", "h", fresh.to("a0"))
	fresh.step()
	if r := fresh.got["a0"].(*kmsg.StreamsGroupHeartbeatResponse); r.ErrorCode != kerr.StreamsInvalidTopology.Code {
		t.Fatalf("an invalid topology: %+v", r)
	}
	if fresh.g.Exists() || len(fresh.records) != 0 {
		t.Fatalf("a group made of a refused join: %s, %d records", streamsDump(fresh.g), len(fresh.records))
	}
}

// TestKIP1071ClassicJoin: a classic JoinGroup to a streams group with
// members is INCONSISTENT_GROUP_PROTOCOL with no member id; to an empty
// one it makes the group a classic group, the streams group's records
// tombstoned, as Kafka's classicGroupJoin and maybeDeleteEmptyStreamsGroup.
func TestKIP1071ClassicJoin(t *testing.T) {
	h := newHarness(t)
	h.topics.set("app-store-changelog", [16]byte{2}, 4)
	h.sth("a0", "a", "p1", 0, nil, true)
	h.join("k0", "", "")
	if r := h.got["k0"].(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code || r.MemberID != "" {
		t.Fatalf("classic join of a streams group with a member: %+v", r)
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "g", "a", -1
	h.g.StreamsHeartbeat(req, "c", "h", h.to("a1"))
	h.step()
	h.join("k1", "", "")
	if r := h.got["k1"].(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("classic join of an empty streams group: %+v", r)
	}
	if h.g.IsStreams() {
		t.Fatal("still a streams group")
	}
	if g := h.restored(); g.IsStreams() {
		t.Fatalf("a restart finds the streams group: %s", streamsDump(g))
	}
}
