package coordinator

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// TestKIP1071RecordFormats: each StreamsGroup* record a streams group
// writes is, byte for byte, what Kafka 4.2's generated classes write for
// the same fields (the JSON schemas of group-coordinator's
// common/message/StreamsGroup*.json, laid out by hand below), and a group
// restored from them writes the same bytes again.
func TestKIP1071RecordFormats(t *testing.T) {
	g := NewGroup("g", Config{})
	s := newStreamsGroup()
	s.exists, s.epoch, s.targetEpoch, s.hash, s.validatedEpoch = true, 3, 3, 0x0102030405060708, 1
	s.lastConfigs = map[string]string{"num.standby.replicas": "0"}
	s.topology = &streamsTopology{epoch: 1, subs: []streamsSubtopology{{id: "0", sourceTopics: []string{"in"},
		changelogs: []streamsTopicInfo{{name: "c", configs: [][2]string{{"k", "v"}}}}}}}
	s.members["m"] = &streamsMember{id: "m", epoch: 3, prevEpoch: 2, state: streamsUnrevokedTasks, clientID: "c", host: "h",
		rebalanceTimeout: 1000, topologyEpoch: 1, processID: "p",
		endpoint: &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "e", Port: 9}, tags: [][2]string{{"z", "1"}},
		assigned: streamsTasks{active: taskSet{{"0", 1}: 3}, standby: taskSet{}, warmup: taskSet{}},
		revoking: streamsTasks{active: taskSet{{"0", 0}: 2}, standby: taskSet{}, warmup: taskSet{}}}
	s.target["m"] = streamsTasks{active: taskSet{{"0", 1}: 0}, standby: taskSet{}, warmup: taskSet{}}
	g.streams = s

	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	str := func(v string) []byte { return append([]byte{byte(len(v) + 1)}, v...) } // compact string
	want := map[string][]byte{
		// StreamsGroupMetadataValue: Epoch, MetadataHash, then 2 tagged
		// fields: 0 ValidatedTopologyEpoch (4 bytes), 1
		// LastAssignmentConfigs (one Key/Value with no tags, 25 bytes).
		"\x00\x11\x00\x01g": cat([]byte{0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 4, 0, 0, 0, 1, 1, 25, 2},
			str("num.standby.replicas"), str("0"), []byte{0}),
		// StreamsGroupMemberMetadataValue: InstanceId null, RackId null,
		// ClientId, ClientHost, RebalanceTimeoutMs 1000, TopologyEpoch 1,
		// ProcessId, UserEndpoint (present: 1, Host, Port uint16, tags),
		// ClientTags [z=1], tags.
		"\x00\x13\x00\x01g\x00\x01m": cat([]byte{0, 0, 0, 0}, str("c"), str("h"), []byte{0, 0, 3, 0xe8, 0, 0, 0, 1}, str("p"),
			[]byte{1}, str("e"), []byte{0, 9, 0}, []byte{2}, str("z"), str("1"), []byte{0, 0}),
		// StreamsGroupTargetAssignmentMetadataValue: AssignmentEpoch.
		"\x00\x14\x00\x01g": {0, 0, 0, 0, 0, 3, 0},
		// StreamsGroupTargetAssignmentMemberValue: ActiveTasks [0: [1]],
		// StandbyTasks [], WarmupTasks [], tags.
		"\x00\x15\x00\x01g\x00\x01m": cat([]byte{0, 0, 2}, str("0"), []byte{2, 0, 0, 0, 1, 0}, []byte{1, 1, 0}),
		// StreamsGroupCurrentMemberAssignmentValue: MemberEpoch 3,
		// PreviousMemberEpoch 2, State 1 (UNREVOKED_TASKS), ActiveTasks
		// [0: [1]] with tag 0 AssignmentEpochs [3], StandbyTasks [],
		// WarmupTasks [], ActiveTasksPendingRevocation [0: [0]] with
		// AssignmentEpochs [2], the other two pending [], tags.
		"\x00\x16\x00\x01g\x00\x01m": cat([]byte{0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 1},
			[]byte{2}, str("0"), []byte{2, 0, 0, 0, 1, 1, 0, 5, 2, 0, 0, 0, 3}, []byte{1, 1},
			[]byte{2}, str("0"), []byte{2, 0, 0, 0, 0, 1, 0, 5, 2, 0, 0, 0, 2}, []byte{1, 1}, []byte{0}),
		// StreamsGroupTopologyValue: Epoch 1, one Subtopology: id,
		// SourceTopics [in], SourceTopicRegex [], StateChangelogTopics
		// [c: Partitions 0, ReplicationFactor 0, TopicConfigs [k=v]],
		// RepartitionSinkTopics [], RepartitionSourceTopics [],
		// CopartitionGroups [], tags; tags.
		"\x00\x17\x00\x01g": cat([]byte{0, 0, 0, 0, 0, 1, 2}, str("0"), []byte{2}, str("in"), []byte{1},
			[]byte{2}, str("c"), []byte{0, 0, 0, 0, 0, 0}, []byte{2}, str("k"), str("v"), []byte{0, 0},
			[]byte{1, 1, 1, 0, 0}),
	}
	got := g.streamsValues()
	for k, w := range want {
		if !bytes.Equal(got[k], w) {
			t.Errorf("record type %d: got\n% x\nwant\n% x", binary.BigEndian.Uint16([]byte(k)), got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d", len(got), len(want))
	}

	// Restored, the group is the same and writes the same bytes.
	r := NewGroup("g", Config{})
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if err := r.Restore(Record{Key: []byte(k), Value: want[k]}); err != nil {
			t.Fatal(err)
		}
	}
	r.Loaded()
	if a, b := streamsDump(g), streamsDump(r); a != b {
		t.Fatalf("restored\n%s\nwant\n%s", b, a)
	}
	for k, v := range r.streamsValues() {
		if !bytes.Equal(v, want[k]) {
			t.Errorf("restored, record type %d: got\n% x\nwant\n% x", binary.BigEndian.Uint16([]byte(k)), v, want[k])
		}
	}
	// What was restored is what was written: nothing to write again.
	if recs := r.Ready().Records; len(recs) != 0 {
		t.Errorf("a restored group writes %d records", len(recs))
	}
}

// streamsDump prints a streams group's durable state.
func streamsDump(g *Group) string {
	s := g.streams
	var b strings.Builder
	fmt.Fprintf(&b, "exists %v epoch %d target %d hash %x validated %d configs %v topology %+v\n",
		g.IsStreams(), s.epoch, s.targetEpoch, s.hash, s.validatedEpoch, s.lastConfigs, s.topology)
	tasks := func(t streamsTasks) string {
		return fmt.Sprint(t.active.sortedWithEpochs(), t.standby.sorted(), t.warmup.sorted())
	}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range s.members {
			if !yield(id) {
				return
			}
		}
	}) {
		m := s.members[id]
		ep := "<nil>"
		if m.endpoint != nil {
			ep = fmt.Sprint(m.endpoint.Host, ":", m.endpoint.Port)
		}
		target, ok := s.target[id]
		if !ok {
			target = newStreamsTasks()
		}
		fmt.Fprintf(&b, "%s: epoch %d prev %d state %d rack %q client %s/%s timeout %d topology %d process %s endpoint %s tags %v assigned %s revoking %s target %s\n",
			id, m.epoch, m.prevEpoch, m.state, m.rack, m.clientID, m.host, m.rebalanceTimeout, m.topologyEpoch, m.processID, ep, m.tags,
			tasks(m.assigned), tasks(m.revoking), tasks(target))
	}
	return b.String()
}

func (s taskSet) sortedWithEpochs() []string {
	var out []string
	for _, t := range s.sorted() {
		out = append(out, fmt.Sprintf("%s_%d@%d", t.sub, t.p, s[t]))
	}
	return out
}

// sth sends a StreamsGroupHeartbeat for member of process; owned nil
// says nothing of the member's tasks; topology joins with the test's.
func (h *harness) sth(name, member, process string, epoch int32, owned []int32, topology bool) *kmsg.StreamsGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", member, epoch, 30000
	req.ProcessID = kmsg.StringPtr(process)
	if topology {
		tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		tp.Epoch = 1
		st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		st.SubtopologyID, st.SourceTopics = "0", []string{"t"}
		cl := kmsg.NewTopicInfo()
		cl.Topic = "app-store-changelog"
		st.StateChangelogTopics = []kmsg.TopicInfo{cl}
		tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
		req.Topology = &tp
	}
	if owned != nil {
		ti := kmsg.NewTaskIDs()
		ti.SubtopologyID, ti.Partitions = "0", owned
		req.ActiveTasks = []kmsg.TaskIDs{ti}
		if len(owned) == 0 {
			req.ActiveTasks = []kmsg.TaskIDs{}
		}
		req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	h.g.StreamsHeartbeat(req, "client", "host", h.to(name))
	h.step()
	r := h.got[name].(*kmsg.StreamsGroupHeartbeatResponse)
	if r.ErrorCode != 0 {
		h.t.Fatalf("%s: error %d %v", name, r.ErrorCode, r.ErrorMessage)
	}
	return r
}

func activeOf(r *kmsg.StreamsGroupHeartbeatResponse) []int32 {
	var out []int32
	for _, ti := range r.ActiveTasks {
		out = append(out, ti.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestKIP1071GroupSurvivesRestart: at every step of a streams group's
// rebalance, a group rebuilt from its StreamsGroup* records is the group
// that wrote them; its members carry on with their epochs after a
// restart (one giving up tasks included), one that does not come back
// expires, and a deleted group is gone.
func TestKIP1071GroupSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.topics.set("app-store-changelog", [16]byte{2}, 4)
	check := func(when string) {
		t.Helper()
		if want, got := streamsDump(h.g), streamsDump(h.restored()); got != want {
			t.Fatalf("%s: restored\n%s\nwant\n%s", when, got, want)
		}
	}
	h.sth("a0", "a", "p1", 0, nil, true)
	check("a joined")
	h.fire(TimerStreamsInitialDelay, "")
	if r := h.sth("a1", "a", "p1", 1, []int32{}, false); len(activeOf(r)) != 4 {
		t.Fatalf("a after the delay: %v", activeOf(r))
	}
	check("a stable")
	h.sth("b0", "b", "p2", 0, nil, true)
	check("b joined")
	r := h.sth("a2", "a", "p1", 2, []int32{0, 1, 2, 3}, false)
	keep := activeOf(r)
	if len(keep) != 2 || h.g.streams.members["a"].state != streamsUnrevokedTasks {
		t.Fatalf("a revoking: keeps %v, state %d", keep, h.g.streams.members["a"].state)
	}
	check("a revoking")

	// The coordinator restarts mid-revocation: a acknowledges to the new
	// one, and b gets the released tasks.
	h.g = h.restored()
	h.timers = nil
	if r = h.sth("a3", "a", "p1", 2, keep, false); r.MemberEpoch != 3 {
		t.Fatalf("a acknowledges after the restart: epoch %d", r.MemberEpoch)
	}
	if r = h.sth("b1", "b", "p2", 3, []int32{}, false); len(activeOf(r)) != 2 {
		t.Fatalf("b after the restart: %v", activeOf(r))
	}
	check("balanced")

	// Sessions run again from the restart: b, silent, expires; its
	// records get tombstones in Kafka's order.
	h.g = h.restored()
	h.timers = nil
	h.step() // the restored sessions' timers
	before := len(h.records)
	h.fire(TimerStreamsSession, "b")
	var types []int16
	for _, rec := range h.records[before:] {
		if rec.Value == nil {
			types = append(types, int16(binary.BigEndian.Uint16(rec.Key)))
		}
	}
	if want := []int16{recStreamsCurrent, recStreamsTarget, recStreamsMember}; !slices.Equal(types, want) {
		t.Errorf("tombstones of b: types %v, want %v", types, want)
	}
	check("b expired")
	h.sth("a4", "a", "p1", 3, keep, false)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "g", "a", -1
	h.g.StreamsHeartbeat(req, "client", "host", h.to("a5"))
	h.step()
	check("empty")
	if g := h.restored(); !g.IsStreams() || g.streamsState() != streamsStateEmpty {
		t.Fatal("the empty streams group is gone after a restart")
	}

	// Deleted: the group's records get tombstones, the group's record
	// and then the topology's last, and a restart finds no group.
	before = len(h.records)
	h.records = append(h.records, h.g.StreamsTombstones()...)
	types = nil
	for _, rec := range h.records[before:] {
		types = append(types, int16(binary.BigEndian.Uint16(rec.Key)))
	}
	if want := []int16{recStreamsTargetHdr, recStreamsGroup, recStreamsTopology}; !slices.Equal(types, want) {
		t.Errorf("tombstones of the group: types %v, want %v", types, want)
	}
	if g := h.restored(); g.IsStreams() || g.Exists() {
		t.Errorf("a deleted streams group restored: %s", streamsDump(g))
	}
}

// TestKIP1071GroupSurvivesActorRestart: a streams group's actor that fails
// is restarted by the groups supervisor and rebuilds the group from its
// records in __consumer_offsets (through the partition's index), as does
// a coordinator started again on the same log: StreamsGroupDescribe shows
// the same members, epochs, topology and assignments, and the member
// carries on with its epoch.
func TestKIP1071GroupSurvivesActorRestart(t *testing.T) {
	sys, h := hostOffsets(t)
	im, err := image.Empty().Apply(0, &image.CreateTopic{Name: "t", ID: image.TopicID{7},
		Partitions: []image.Partition{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}})
	if err == nil {
		im, err = im.Apply(1, &image.CreateTopic{Name: "app-store-changelog", ID: image.TopicID{8},
			Partitions: []image.Partition{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}})
	}
	if err != nil {
		t.Fatal(err)
	}
	spawn := func(dir *Directory, name string) *actor.PID {
		pid, err := sys.Root.SpawnNamed(SupervisorProps(SupervisorConfig{Directory: dir, Logger: zerolog.Nop(),
			Image: func() *image.Image { return im },
			StreamsSettings: func(string) StreamsSettings {
				s := DefaultStreamsSettings
				s.InitialRebalanceDelay = 0
				return s
			}}, actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), name)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	dir := &Directory{}
	groups := spawn(dir, "groups")
	beat := func(groups *actor.PID, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "app", "m", epoch, 30000
		req.ProcessID = kmsg.StringPtr("p")
		if epoch == 0 {
			tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			st.SubtopologyID, st.SourceTopics = "0", []string{"t"}
			cl := kmsg.NewTopicInfo()
			cl.Topic = "app-store-changelog"
			st.StateChangelogTopics = []kmsg.TopicInfo{cl}
			tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
			req.Topology = &tp
		}
		r := askGroup(t, sys, groups, h, "app", req).(*kmsg.StreamsGroupHeartbeatResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat at epoch %d: error %d %v", epoch, r.ErrorCode, r.ErrorMessage)
		}
		return r
	}
	describe := func(groups *actor.PID) string {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{"app"}
		r := askGroup(t, sys, groups, h, "app", req).(*kmsg.StreamsGroupDescribeResponse)
		if len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
			t.Fatalf("describe: %+v", r)
		}
		b, err := json.Marshal(r.Groups[0])
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := beat(groups, 0)
	if len(activeOf(r)) != 4 {
		t.Fatalf("joined: %+v", r)
	}
	epoch := r.MemberEpoch
	want := describe(groups)
	if !strings.Contains(want, `"State":"Stable"`) || !strings.Contains(want, `"Subtopologies":[{`) {
		t.Fatalf("not stable: %s", want)
	}

	// The group's actor fails (a request it cannot handle panics it).
	pid := dir.Get("app")
	sys.Root.Send(pid, &Request{Req: kmsg.NewPtrProduceRequest(), Reply: func(kmsg.Response) {}})
	if got := describe(groups); got != want {
		t.Errorf("after the actor's restart:\n%s\nwant\n%s", got, want)
	}
	if r := beat(groups, epoch); r.MemberEpoch != epoch {
		t.Errorf("after the actor's restart, epoch %d, want %d", r.MemberEpoch, epoch)
	}

	// A coordinator started again on the same log (the node restarted,
	// or the partition's leadership came back here).
	again := spawn(&Directory{}, "groups-again")
	if got := describe(again); got != want {
		t.Errorf("on a coordinator started again:\n%s\nwant\n%s", got, want)
	}
	if r := beat(again, epoch); r.MemberEpoch != epoch {
		t.Errorf("on a coordinator started again, epoch %d, want %d", r.MemberEpoch, epoch)
	}
}
