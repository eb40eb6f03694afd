package cli

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestGroupStreamsCommands: two members of the streams group "app"
// (KIP-1071, StreamsGroupHeartbeat as a Kafka Streams client sends it)
// share the two tasks of a one-subtopology topology reading "words"; one
// commits offset 1 of the partition its task reads. `group list` shows
// the streams group with its type, state and members, `--type streams`
// only it; `group describe` its state, epochs, topology epoch, each member
// with its process and tasks, the subtopology, and the lag of each
// partition (from the commit, or from the log start without one) with the
// member reading it.
func TestGroupStreamsCommands(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) { c.GroupStreamsInitialRebalanceDelayMs = 0 })
	addr := n.Addr().String()
	ok(t, addr, "", "topic", "create", "words", "-p", "2")
	ok(t, addr, "a\nb\nc\n", "produce", "words", "-p", "0")
	ok(t, addr, "d\ne\n", "produce", "words", "-p", "1")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// As the Java client: FindCoordinator first (which creates
	// __consumer_offsets), then StreamsGroupHeartbeat to the coordinator,
	// the only node.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"app"}
	for {
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Coordinators[0].ErrorCode == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	epochs, owned := map[string]int32{}, map[string][]int32{}
	beat := func(member string) *kmsg.StreamsGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "app", member, epochs[member], 30000
		req.ProcessID = kmsg.StringPtr("process-" + member)
		if epochs[member] == 0 {
			tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			tp.Epoch = 1
			st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			st.SubtopologyID, st.SourceTopics = "0", []string{"words"}
			cl := kmsg.NewTopicInfo()
			cl.Topic = "app-store-changelog"
			st.StateChangelogTopics = []kmsg.TopicInfo{cl}
			tp.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{st}
			req.Topology = &tp
		} else {
			ti := kmsg.NewTaskIDs()
			ti.SubtopologyID, ti.Partitions = "0", owned[member]
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{ti}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		r, err := cl.Broker(int(configs.Default().NodeID)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.StreamsGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("%s: error %d %v", member, resp.ErrorCode, resp.ErrorMessage)
		}
		epochs[member] = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			owned[member] = nil
			for _, ti := range resp.ActiveTasks {
				owned[member] = append(owned[member], ti.Partitions...)
			}
		}
		return resp
	}
	for start := time.Now(); len(owned["a"]) != 1 || len(owned["b"]) != 1 || row(ok(t, addr, "", "group", "list"), "app")[2] != "Stable"; {
		if time.Since(start) > deadline {
			t.Fatalf("the tasks not shared: a %v b %v", owned["a"], owned["b"])
		}
		beat("a")
		beat("b")
		time.Sleep(20 * time.Millisecond)
	}
	// The member reading partition 0 commits offset 1 of it, as Kafka
	// Streams commits under its application id.
	reader, other := "a", "b"
	if owned["a"][0] != 0 {
		reader, other = "b", "a"
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = "app", reader, epochs[reader]
	ct := kmsg.NewOffsetCommitRequestTopic()
	// OffsetCommit v10 (KIP-848) names topics by id.
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "words")
	if err != nil {
		t.Fatal(err)
	}
	ct.Topic, ct.TopicID = "words", topics["words"].ID
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if resp, err := commit.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v %+v", err, resp)
	}

	out := ok(t, addr, "", "group", "list")
	if r := row(out, "app"); !slices.Equal(r, []string{"app", "streams", "Stable", "streams", "2"}) {
		t.Errorf("group list: app row %v\n%s", r, out)
	}
	out = ok(t, addr, "", "group", "list", "--type", "streams", "--state", "stable")
	if rows := table(out); len(rows) != 2 || rows[1][0] != "app" {
		t.Errorf("group list --type streams --state stable:\n%s", out)
	}

	out = ok(t, addr, "", "group", "describe", "app")
	epoch := row(out, "GROUP-EPOCH")
	for _, want := range [][]string{
		{"GROUP", "app"},
		{"STATE", "Stable"},
		{"PROTOCOL", "streams"},
		{"ASSIGNMENT-EPOCH", epoch[1]},
		{"TOPOLOGY-EPOCH", "1"},
		{"MEMBERS", "2"},
		{"TOTAL-LAG", "4"}, // partition 1, uncommitted, lags from its start
		{"MEMBER-ID", "PROCESS-ID", "CLIENT-ID", "HOST", "EPOCH", "ACTIVE", "STANDBY"},
		{"SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SINKS", "CHANGELOGS"},
		{"0", "words", "-", "app-store-changelog"},
		{"words", "0", "1", "3", "2", reader},
		{"words", "1", "-", "2", "2", other},
	} {
		if r := row(out, want...); !slices.Equal(r[:min(len(r), len(want))], want) {
			t.Errorf("describe: row %v, want %v\n%s", r, want, out)
		}
	}
	for m, task := range map[string]string{reader: "0:[0]", other: "0:[1]"} {
		r := row(out, m)
		if len(r) != 7 || r[1] != "process-"+m || r[4] != epoch[1] || r[5] != task || r[6] != "-" {
			t.Errorf("describe: member %s row %v, want process-%s, epoch %s, active %s\n%s", m, r, m, epoch[1], task, out)
		}
	}
	if strings.Contains(out, "WARMUP") {
		t.Errorf("describe: a warm-up column with no warm-up task\n%s", out)
	}

	// -o json: the same, tasks by subtopology.
	gs := groupsOf[streamsGroupView](t, addr, "app")
	if len(gs) != 1 {
		t.Fatalf("describe -o json: %s", jsonText(gs))
	}
	g := gs[0]
	wantSubs := []streamsSubtopology{{Subtopology: "0", SourceTopics: []string{"words"}, RepartitionSourceTopics: []string{}, RepartitionSinkTopics: []string{},
		StateChangelogTopics: []string{"app-store-changelog"}}}
	if g.Type != "streams" || g.State != "Stable" || strconv.Itoa(int(g.GroupEpoch)) != epoch[1] || !reflect.DeepEqual(g.TopologyEpoch, ptr[int32](1)) ||
		g.TotalLag != 4 || len(g.Members) != 2 || !reflect.DeepEqual(g.Subtopologies, wantSubs) {
		t.Errorf("describe -o json: %s", jsonText(g))
	}
	for _, m := range g.Members {
		want := map[string][]int32{"0": {0}}
		if m.MemberID == other {
			want = map[string][]int32{"0": {1}}
		}
		if m.ProcessID != "process-"+m.MemberID || !reflect.DeepEqual(m.ActiveTasks, want) || len(m.StandbyTasks) != 0 || len(m.WarmupTasks) != 0 {
			t.Errorf("describe -o json: member %s", jsonText(m))
		}
	}
	wantOffsets := []groupOffset{
		{Topic: "words", Partition: 0, Committed: ptr[int64](1), EndOffset: ptr[int64](3), Lag: ptr[int64](2), MemberID: ptr(reader)},
		{Topic: "words", Partition: 1, EndOffset: ptr[int64](2), Lag: ptr[int64](2), MemberID: ptr(other)},
	}
	for i := range min(len(g.Offsets), len(wantOffsets)) {
		// The client id and host are the heartbeat's connection's.
		wantOffsets[i].ClientID, wantOffsets[i].Host = g.Offsets[i].ClientID, g.Offsets[i].Host
	}
	if !reflect.DeepEqual(g.Offsets, wantOffsets) {
		t.Errorf("describe -o json: offsets %s, want %s", jsonText(g.Offsets), jsonText(wantOffsets))
	}
}
