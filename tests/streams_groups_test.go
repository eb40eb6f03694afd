package tests

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// streamsHeartbeat sends a StreamsGroupHeartbeat, retrying while the
// group's coordinator is loading or moving, as the Java client does.
// owned nil says nothing of the member's tasks; epoch 0 joins with a
// topology of one subtopology reading source, with a changelog.
func streamsHeartbeat(t *testing.T, cl *kgo.Client, group, member, source string, epoch int32, owned []int32) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, epoch, 30000
	req.ProcessID = kmsg.StringPtr("process-" + member)
	if epoch == 0 {
		tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		tp.Epoch = 1
		st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		st.SubtopologyID, st.SourceTopics = "0", []string{source}
		cl := kmsg.NewTopicInfo()
		cl.Topic = group + "-store-changelog"
		st.StateChangelogTopics = []kmsg.TopicInfo{cl}
		tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
		req.Topology = &tp
	}
	if owned != nil {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if len(owned) > 0 {
			ti := kmsg.NewTaskIDs()
			ti.SubtopologyID, ti.Partitions = "0", owned
			req.ActiveTasks = []kmsg.TaskIDs{ti}
		}
	}
	findCoordinator(t, cl, group)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp := brokerReq[*kmsg.StreamsGroupHeartbeatResponse](t, cl, req)
		switch {
		case (resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.NotCoordinator.Code ||
			resp.ErrorCode == kerr.CoordinatorNotAvailable.Code) && time.Now().Before(deadline):
			continue
		}
		return resp
	}
}

// streamsDescribe describes one streams group, retrying while its
// coordinator loads; it returns the group's description as JSON.
func streamsDescribe(t *testing.T, cl *kgo.Client, group string) (kmsg.StreamsGroupDescribeResponseGroup, string) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp := brokerReq[*kmsg.StreamsGroupDescribeResponse](t, cl, req)
		if len(resp.Groups) != 1 {
			t.Fatalf("describe %s: %+v", group, resp)
		}
		g := resp.Groups[0]
		switch g.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
			if time.Now().Before(deadline) {
				continue
			}
		}
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		return g, string(b)
	}
}

// findCoordinator asks for a group's coordinator, as clients do first:
// it creates __consumer_offsets on first use.
func findCoordinator(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{group}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp := rawReq[*kmsg.FindCoordinatorResponse](t, cl, req)
		if len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 || time.Now().After(deadline) {
			return
		}
	}
}

// brokerReq sends a request to node 1, the coordinator of every group of
// a one-node broker: franz-go v1.22 does not route the streams group APIs
// ("client is too old").
func brokerReq[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		// A connection the broker's restart closed: once more.
		resp, err := cl.Broker(1).Request(ctxFor(t), req)
		if err == nil {
			return resp.(R)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%T: %v", req, err)
		}
	}
}

func activeTasksOf(r *kmsg.StreamsGroupHeartbeatResponse) []int32 {
	var out []int32
	for _, ti := range r.ActiveTasks {
		out = append(out, ti.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestStreamsGroupSurvivesRestart: a streams group (KIP-1071) is written to
// __consumer_offsets (Kafka's StreamsGroup* records) and rebuilt from it:
// across a broker restart StreamsGroupDescribe shows the same state,
// epochs, topology and members with their tasks, ListGroups lists it as a
// streams group, and its members carry on with their epochs.
func TestStreamsGroupSurvivesRestart(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) { c.OffsetsTopicNumPartitions = 3 })
	const group, source = "streams-restart", "streams-restart-in"
	if _, err := b.admin().CreateTopic(ctxFor(t), 4, 1, nil, source); err != nil {
		t.Fatal(err)
	}
	cl := b.client()
	epochs := map[string]int32{}
	owned := map[string][]int32{}
	for _, m := range []string{"a", "b"} {
		r := streamsHeartbeat(t, cl, group, m, source, 0, nil)
		wantErr(t, m+" joins", r.ErrorCode, nil)
		epochs[m], owned[m] = r.MemberEpoch, activeTasksOf(r)
	}
	// Heartbeats until the changelog exists, the initial rebalance delay
	// is over and the tasks are shared.
	eventually(t, "the tasks shared", func() bool {
		for _, m := range []string{"a", "b"} {
			r := streamsHeartbeat(t, cl, group, m, source, epochs[m], owned[m])
			wantErr(t, m+" heartbeats", r.ErrorCode, nil)
			epochs[m] = r.MemberEpoch
			if r.ActiveTasks != nil {
				owned[m] = activeTasksOf(r)
			}
		}
		g, _ := streamsDescribe(t, cl, group)
		return g.State == "Stable" && len(owned["a"]) == 2 && len(owned["b"]) == 2
	})
	before, want := streamsDescribe(t, cl, group)
	if before.Topology == nil || before.Topology.Epoch != 1 || len(before.Members) != 2 {
		t.Fatalf("before the restart: %s", want)
	}

	b.restart()

	after, got := streamsDescribe(t, cl, group)
	if got != want {
		t.Fatalf("after the restart:\n%s\nwant\n%s", got, want)
	}
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch {
		t.Fatalf("epochs after the restart: %d/%d, want %d/%d", after.Epoch, after.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"streams"}
	listed := rawReq[*kmsg.ListGroupsResponse](t, cl, lg)
	if !slices.ContainsFunc(listed.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
		return g.Group == group && g.GroupType == "streams" && g.GroupState == "Stable"
	}) {
		t.Errorf("ListGroups of type streams after the restart: %+v", listed.Groups)
	}
	for _, m := range []string{"a", "b"} {
		r := streamsHeartbeat(t, cl, group, m, source, epochs[m], owned[m])
		wantErr(t, m+" after the restart", r.ErrorCode, nil)
		if r.MemberEpoch != epochs[m] {
			t.Errorf("%s after the restart: epoch %d, want %d", m, r.MemberEpoch, epochs[m])
		}
	}
}

// TestStreamsGroupConfigs: a streams group's streams.* group configs
// (IncrementalAlterConfigs on the GROUP resource) are in force at its
// coordinator: the heartbeat interval it gives its members, and the node's
// group.streams.initial.rebalance.delay.ms, 0 here, assigns at once.
func TestStreamsGroupConfigs(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 3
		c.GroupStreamsMinHeartbeatIntervalMs, c.GroupStreamsInitialRebalanceDelayMs = 100, 0
	})
	const group, source = "streams-configs", "streams-configs-in"
	if _, err := b.admin().CreateTopic(ctxFor(t), 2, 1, nil, source); err != nil {
		t.Fatal(err)
	}
	cl := b.client()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range map[string]string{"streams.heartbeat.interval.ms": "500", "streams.session.timeout.ms": "45000"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, c)
	}
	alter.Resources = append(alter.Resources, rr)
	if r := rawReq[*kmsg.IncrementalAlterConfigsResponse](t, cl, alter); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r.Resources[0])
	}
	var r *kmsg.StreamsGroupHeartbeatResponse
	eventually(t, "the group config applied", func() bool {
		r = streamsHeartbeat(t, cl, group, "a", source, 0, nil)
		return r.ErrorCode == 0 && r.HeartbeatIntervalMillis == 500
	})
	owned := activeTasksOf(r)
	eventually(t, "both tasks, with no initial delay", func() bool {
		r = streamsHeartbeat(t, cl, group, "a", source, r.MemberEpoch, owned)
		if r.ActiveTasks != nil {
			owned = activeTasksOf(r)
		}
		return r.ErrorCode == 0 && len(owned) == 2
	})
}
