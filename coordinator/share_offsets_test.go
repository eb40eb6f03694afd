package coordinator

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// fakeStates is ShareStates in memory: the share coordinator as the group
// actor sees it. Replies come on another goroutine, as the real one's.
type fakeStates struct {
	mu      sync.Mutex
	start   map[stateKey]int64
	deleted []stateKey
}

type stateKey struct {
	group string
	topic [16]byte
	p     int32
}

func (f *fakeStates) Initialize(group string, topic [16]byte, p int32, start int64, reply func(int16)) {
	f.mu.Lock()
	f.start[stateKey{group, topic, p}] = start
	f.mu.Unlock()
	go reply(0)
}

func (f *fakeStates) Summary(group string, topic [16]byte, p int32, reply func(int16, bool, int64, int32, int32)) {
	f.mu.Lock()
	start, ok := f.start[stateKey{group, topic, p}]
	f.mu.Unlock()
	go reply(0, ok, start, 3, 2)
}

func (f *fakeStates) Delete(group string, topic [16]byte, p int32, reply func(int16)) {
	f.mu.Lock()
	delete(f.start, stateKey{group, topic, p})
	f.deleted = append(f.deleted, stateKey{group, topic, p})
	f.mu.Unlock()
	go reply(0)
}

// TestKIP932ShareGroupOffsetsAdmin: as franz-go's TestShareGroupOffsetsAdmin
// asks it: AlterShareGroupOffsets makes a share group of an unknown id;
// DescribeShareGroupOffsets with the topic and with Topics null both show
// the start offset; DeleteShareGroupOffsets drops it; the group survives a
// coordinator restart; DeleteGroups deletes its state.
func TestKIP932ShareGroupOffsetsAdmin(t *testing.T) {
	sys, h := hostOffsets(t)
	im, err := image.Empty().Apply(0, &image.CreateTopic{Name: "t", ID: image.TopicID(testTopicID),
		Partitions: []image.Partition{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	states := &fakeStates{start: map[stateKey]int64{}}
	dir := &Directory{}
	spawn := func(name string) *actor.PID {
		pid, err := sys.Root.SpawnNamed(SupervisorProps(SupervisorConfig{Directory: dir, Logger: zerolog.Nop(),
			Image: func() *image.Image { return im }, ShareStates: states,
			HighWatermark: func(string, int32) (int64, bool) { return 20, true }},
			actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), name)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	groups := spawn("groups")

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 8}}},
		{Topic: "nope", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}}}
	ar := askGroup(t, sys, groups, h, "sg", alter).(*kmsg.AlterShareGroupOffsetsResponse)
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 || ar.Topics[0].TopicID != testTopicID ||
		ar.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("alter: %+v", ar)
	}
	describe := func(what string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg", Topics: topics}}
		r := askGroup(t, sys, groups, h, "sg", req).(*kmsg.DescribeShareGroupOffsetsResponse)
		if g := r.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: %+v", what, r.Groups)
		}
		return r.Groups[0].Topics[0].Partitions[0]
	}
	for what, asked := range map[string][]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{
		"explicit": {{Topic: "t", Partitions: []int32{0}}}, "all": nil,
	} {
		// Lag: high watermark 20, less start 8, less 2 delivered.
		if p := describe(what, asked); p.StartOffset != 8 || p.LeaderEpoch != 3 || p.Lag != 10 || p.ErrorCode != 0 {
			t.Errorf("describe %s: %+v", what, p)
		}
	}
	if p := describe("uninitialized", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}); p.StartOffset != -1 || p.Lag != -1 {
		t.Errorf("describe a partition with no state: %+v", p)
	}

	// A restarted coordinator knows the group and its initialized
	// partitions from the log.
	// (A new supervisor with a new directory: it reads the log anew.)
	sys.Root.Stop(groups)
	dir = &Directory{}
	groups = spawn("groups2")
	if p := describe("after a restart", nil); p.StartOffset != 8 {
		t.Errorf("after a restart: %+v", p)
	}
	list := askGroup(t, sys, groups, h, "sg", kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "share" || list.Groups[0].GroupState != "Empty" {
		t.Errorf("ListGroups: %+v", list.Groups)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID, del.Topics = "sg", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
	dr := askGroup(t, sys, groups, h, "sg", del).(*kmsg.DeleteShareGroupOffsetsResponse)
	if dr.ErrorCode != 0 || dr.Topics[0].ErrorCode != 0 || len(states.deleted) != 1 {
		t.Fatalf("delete offsets: %+v, deleted %v", dr, states.deleted)
	}
	if r := askGroup(t, sys, groups, h, "sg", &kmsg.DescribeShareGroupOffsetsRequest{Version: 1,
		Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}}).(*kmsg.DescribeShareGroupOffsetsResponse); len(r.Groups[0].Topics) != 0 {
		t.Errorf("describe all after the delete: %+v", r.Groups[0].Topics)
	}

	// A member makes the group non-empty: Alter and DeleteGroups refuse.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "sg", "m", []string{"t"}
	if r := askGroup(t, sys, groups, h, "sg", hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch == 0 {
		t.Fatalf("join: %+v", r)
	}
	if r := askGroup(t, sys, groups, h, "sg", alter).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("alter with a member: %+v", r)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"sg"}
	if r := askGroup(t, sys, groups, h, "sg", dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("DeleteGroups with a member: %+v", r.Groups)
	}
	hb.MemberEpoch = -1
	askGroup(t, sys, groups, h, "sg", hb)
	states.mu.Lock()
	states.deleted = nil
	states.mu.Unlock()
	if r := askGroup(t, sys, groups, h, "sg", dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %+v", r.Groups)
	}
	states.mu.Lock()
	if len(states.deleted) != 4 { // the member was assigned all 4 partitions of t
		t.Errorf("DeleteGroups deleted the state of %v, want t's 4 partitions", states.deleted)
	}
	states.mu.Unlock()
	if g := restoreGroup(t, h, "sg"); g.Exists() {
		t.Errorf("the deleted share group is restored: %s", shareState(g))
	}
}

// TestKIP932ShareAdminWithoutStates: until node wires the share
// coordinator, the admin APIs are COORDINATOR_NOT_AVAILABLE once the
// group passes their checks (an unknown group is still not found).
func TestKIP932ShareAdminWithoutStates(t *testing.T) {
	sys, h := hostOffsets(t)
	groups := spawnGroups(t, sys, &Directory{}, "groups")
	if r := askGroup(t, sys, groups, h, "sg", &kmsg.AlterShareGroupOffsetsRequest{GroupID: "sg"}).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("alter: %+v", r)
	}
	if r := askGroup(t, sys, groups, h, "sg", &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "sg"}).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("delete of an unknown group: %+v", r)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = 1, "sg", "m", []string{"t"}
	askGroup(t, sys, groups, h, "sg", hb)
	r := askGroup(t, sys, groups, h, "sg", &kmsg.DescribeShareGroupOffsetsRequest{Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}}).(*kmsg.DescribeShareGroupOffsetsResponse)
	if r.Groups[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("describe: %+v", r)
	}
}
