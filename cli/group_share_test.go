package cli

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestGroupShareCommands: a franz-go share consumer (KIP-932) of the share
// group "jobs" accepts every record of a two-partition topic; three more
// come to partition 0, of which it holds the first (acquired, no
// acknowledgement), accepts the second and rejects the third. `group list`
// shows the share group; `group describe` its member, each partition's
// start offset (SPSO), end and lag, and with --admin what each
// share-partition holds in flight; seek, delete-offsets and delete are
// refused with NON_EMPTY_GROUP while the consumer is a member. Once it
// leaves, seek sets the start offsets, delete-offsets removes them, seek
// --share makes a new share group, and delete removes both groups.
func TestGroupShareCommands(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) {
		// The held record must stay acquired while the test looks.
		c.GroupShareRecordLockDurationMs = c.GroupShareMaxRecordLockDurationMs
	})
	addr, admin := n.Addr().String(), "--admin="+n.AdminAddr().String()
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	ok(t, addr, "a\nb\nc\n", "produce", "orders", "-p", "0")
	ok(t, addr, "d\ne\n", "produce", "orders", "-p", "1")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("share-test"),
		kgo.ShareGroup("jobs"), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cl.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// The records already there are for the group too (Kafka's default
	// is latest).
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "jobs"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset=earliest: %v %v", err, resp)
	}
	// poll polls until n records came, acknowledging each as ack says.
	poll := func(n int, ack func(r *kgo.Record)) {
		t.Helper()
		for got := 0; got < n; {
			fetches := cl.PollFetches(ctx)
			if err := fetches.Err(); err != nil {
				t.Fatalf("polling after %d of %d records: %v", got, n, err)
			}
			fetches.EachRecord(ack)
			got += fetches.NumRecords()
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	poll(5, func(r *kgo.Record) { r.Ack(kgo.AckAccept) })
	// One batch of three (the producer lingers until it has them all):
	// acquired by one fetch, so polled at once, and 3 can be held.
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("f")}, &kgo.Record{Topic: "orders", Value: []byte("g")},
		&kgo.Record{Topic: "orders", Value: []byte("h")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll(3, func(r *kgo.Record) {
		switch r.Offset {
		case 4:
			r.Ack(kgo.AckAccept)
		case 5:
			r.Ack(kgo.AckReject)
		} // 3 is held
	})

	out := ok(t, addr, "", "group", "list")
	if r := row(out, "jobs"); !slices.Equal(r, []string{"jobs", "share", "Stable", "share", "1"}) {
		t.Errorf("group list: jobs row %v\n%s", r, out)
	}
	out = ok(t, addr, "", "group", "list", "--type", "share")
	if rows := table(out); len(rows) != 2 || rows[1][0] != "jobs" {
		t.Errorf("group list --type share:\n%s", out)
	}

	out = ok(t, addr, "", "group", "describe", "jobs")
	for _, want := range [][]string{
		{"GROUP", "jobs"},
		{"STATE", "Stable"},
		{"PROTOCOL", "share/simple"},
		{"MEMBERS", "1"},
		// Partition 0: from its SPSO 3 to the end 6, the record held.
		{"TOTAL-LAG", "1"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe: row %v, want %v\n%s", r, want, out)
		}
	}
	epoch := row(out, "GROUP-EPOCH")
	if r := row(out, "MEMBER-ID"); !slices.Equal(r, []string{"MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"}) {
		t.Fatalf("describe: members header %v\n%s", r, out)
	}
	var member []string
	for _, r := range table(out) {
		if len(r) == 5 && r[1] == "share-test" {
			member = r
		}
	}
	if len(member) != 5 || len(epoch) != 2 || member[3] != epoch[1] || member[4] != "orders[0,1]" {
		t.Errorf("describe: member row %v, want epoch %v and orders[0,1]\n%s", member, epoch, out)
	}
	for _, want := range [][]string{
		{"TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBERS"},
		{"orders", "0", "3", "6", "1", "1"},
		{"orders", "1", "2", "2", "0", "1"},
	} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("describe: partition row %v, want %v\n%s", r, want, out)
		}
	}

	// From the partitions' leader: 3, 4 and 5 in flight, 3 acquired, 5
	// archived (it stays in the window until 3 is done).
	out = ok(t, addr, "", "group", "describe", "jobs", admin)
	for _, want := range [][]string{
		{"TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBERS", "IN-FLIGHT", "ACQUIRED", "ARCHIVED"},
		{"orders", "0", "3", "6", "1", "1", "3", "1", "1"},
		{"orders", "1", "2", "2", "0", "1", "0", "0", "0"},
	} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("describe --admin: partition row %v, want %v\n%s", r, want, out)
		}
	}
	// -o json: the same; in_flight, acquired and archived only with --admin.
	gs := groupsOf[shareGroupView](t, addr, "jobs", admin)
	if len(gs) != 1 {
		t.Fatalf("describe --admin -o json: %s", jsonText(gs))
	}
	g := gs[0]
	if g.Type != "share" || g.State != "Stable" || g.Assignor != "simple" || strconv.Itoa(int(g.GroupEpoch)) != epoch[1] || g.TotalLag != 1 ||
		len(g.Members) != 1 || g.Members[0].ClientID != "share-test" || g.Members[0].MemberEpoch != g.GroupEpoch ||
		!reflect.DeepEqual(g.Members[0].Assignment, map[string][]int32{"orders": {0, 1}}) {
		t.Errorf("describe --admin -o json: %s", jsonText(g))
	}
	wantOffsets := []shareOffset{
		{Topic: "orders", Partition: 0, StartOffset: ptr[int64](3), EndOffset: ptr[int64](6), Lag: ptr[int64](1), MembersAssigned: 1, InFlight: ptr[int64](3), Acquired: ptr(1), Archived: ptr(1)},
		{Topic: "orders", Partition: 1, StartOffset: ptr[int64](2), EndOffset: ptr[int64](2), Lag: ptr[int64](0), MembersAssigned: 1, InFlight: ptr[int64](0), Acquired: ptr(0), Archived: ptr(0)},
	}
	if !reflect.DeepEqual(g.Offsets, wantOffsets) {
		t.Errorf("describe --admin -o json: offsets %s, want %s", jsonText(g.Offsets), jsonText(wantOffsets))
	}
	if out := ok(t, addr, "", "group", "describe", "jobs", "-o", "json"); strings.Contains(out, "in_flight") || !strings.Contains(out, `"start_offset": 3`) {
		t.Errorf("describe -o json without --admin:\n%s", out)
	}
	fails(t, addr, 1, "skein: describe group jobs: --admin 127.0.0.1:1: ", "", "group", "describe", "jobs", "--admin=127.0.0.1:1")

	// A group with a member: Kafka refuses to change its offsets or
	// delete it.
	const nonEmpty = "NON_EMPTY_GROUP: The group is not empty. (The group has active members.): the share group has 1 member(s): only an empty share group's offsets can be changed, stop its consumers first"
	fails(t, addr, 1, "skein: seek group jobs: "+nonEmpty, "", "group", "seek", "jobs", "--to", "start", "--execute")
	fails(t, addr, 1, "skein: seek group jobs: NON_EMPTY_GROUP: The group is not empty.: the share group has 1 member(s)", "", "group", "seek", "jobs", "--to", "start")
	fails(t, addr, 1, "skein: delete offsets of group jobs: "+nonEmpty, "", "group", "delete-offsets", "jobs", "--topics", "orders")
	fails(t, addr, 1, "skein: delete group jobs: NON_EMPTY_GROUP", "", "group", "delete", "jobs")

	// The consumer leaves: what it held is released.
	cl.Close()
	closed = true
	for end := time.Now().Add(deadline); ; {
		out = ok(t, addr, "", "group", "describe", "jobs", admin)
		if slices.Equal(row(out, "STATE"), []string{"STATE", "Empty"}) && slices.Equal(row(out, "orders", "0"), []string{"orders", "0", "3", "6", "1", "-", "3", "0", "1"}) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("describe after leaving: not Empty with record 3 released within %v\n%s", deadline, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := row(out, "MEMBER-ID"); r != nil {
		t.Errorf("describe after leaving: members table %v\n%s", r, out)
	}

	// Seek: prior and new start offsets; what was delivered is forgotten,
	// so the lag is every record from the start.
	var plan seekPlan
	decodeJSON(t, ok(t, addr, "", "group", "seek", "jobs", "--to", "start", "-o", "json"), &plan)
	wantPlan := []seekPartition{{Topic: "orders", Partition: 0, CurrentOffset: 3, NewOffset: 0}, {Topic: "orders", Partition: 1, CurrentOffset: 2, NewOffset: 0}}
	if plan.Type != "share" || plan.Executed || !slices.Equal(plan.Partitions, wantPlan) {
		t.Errorf("seek --to start without --execute: %+v, want the plan %+v", plan, wantPlan)
	}
	out = ok(t, addr, "", "group", "seek", "jobs", "--to", "start", "--execute")
	for _, want := range [][]string{{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"}, {"jobs", "orders", "0", "3", "0"}, {"jobs", "orders", "1", "2", "0"}} {
		if r := row(out, want[:3]...); !slices.Equal(r, want) {
			t.Errorf("seek --to start: row %v, want %v\n%s", r, want, out)
		}
	}
	// The share-partitions' actors stop to read the new state at their
	// next use: told so by the coordinator, unanswered.
	for end := time.Now().Add(deadline); ; {
		out = ok(t, addr, "", "group", "describe", "jobs", admin)
		if slices.Equal(row(out, "orders", "0"), []string{"orders", "0", "0", "6", "6", "-", "-", "-", "-"}) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("describe after seek --to start: partition 0's actor not stopped within %v\n%s", deadline, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Served by no node: null with --admin.
	if gs := groupsOf[shareGroupView](t, addr, "jobs", admin); len(gs) != 1 || len(gs[0].Offsets) != 2 || gs[0].Offsets[0].InFlight != nil ||
		gs[0].Offsets[0].Acquired != nil || !reflect.DeepEqual(gs[0].Offsets[0].StartOffset, ptr[int64](0)) || len(gs[0].Members) != 0 || gs[0].Members == nil {
		t.Errorf("describe --admin -o json after seek --to start: %s", jsonText(gs))
	}
	if out := ok(t, addr, "", "group", "describe", "jobs", admin, "-o", "json"); !strings.Contains(out, `"in_flight": null`) {
		t.Errorf("describe --admin -o json after seek --to start: no in_flight null\n%s", out)
	}
	for _, want := range [][]string{{"orders", "1", "0", "2", "2", "-", "-", "-", "-"}, {"TOTAL-LAG", "8"}} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("describe after seek --to start: row %v, want %v\n%s", r, want, out)
		}
	}
	ok(t, addr, "", "group", "seek", "jobs", "--to", "-1", "--topics", "orders", "--execute")
	out = ok(t, addr, "", "group", "describe", "jobs")
	for _, want := range [][]string{{"orders", "0", "5", "6", "1", "-"}, {"orders", "1", "1", "2", "1", "-"}} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("describe after seek --to -1: row %v, want %v\n%s", r, want, out)
		}
	}
	fails(t, addr, 1, "seek group jobs: topic orders: partition 1: offset 4 is out of range", "", "group", "seek", "jobs", "--to", "4")

	// delete-offsets: the group keeps no start offset.
	if out := ok(t, addr, "", "group", "delete-offsets", "jobs", "--topics", "orders"); out != "deleted the offsets of jobs on orders\n" {
		t.Errorf("delete-offsets printed %q", out)
	}
	out = ok(t, addr, "", "group", "describe", "jobs")
	if r := row(out, "orders"); r != nil || !slices.Equal(row(out, "TOTAL-LAG"), []string{"TOTAL-LAG", "0"}) {
		t.Errorf("describe after delete-offsets:\n%s", out)
	}
	fails(t, addr, 1, "the share group has no start offsets: name the topics to seek with --topics", "", "group", "seek", "jobs", "--to", "start")
	fails(t, addr, 2, "--topics is required", "", "group", "delete-offsets", "jobs")

	// seek --share makes a share group of a new group id.
	out = ok(t, addr, "", "group", "seek", "fresh", "--to", "end", "--topics", "orders", "--share", "--execute")
	if r := row(out, "fresh", "orders", "0"); !slices.Equal(r, []string{"fresh", "orders", "0", "-", "6"}) {
		t.Errorf("seek fresh --share: row %v\n%s", r, out)
	}
	out = ok(t, addr, "", "group", "list", "--type", "share")
	if r := row(out, "fresh"); !slices.Equal(r, []string{"fresh", "share", "Empty", "share", "0"}) {
		t.Errorf("group list after seek --share: fresh row %v\n%s", r, out)
	}

	if out := ok(t, addr, "", "group", "delete", "jobs", "fresh"); out != "deleted jobs\ndeleted fresh\n" {
		t.Errorf("delete printed %q", out)
	}
	if out := ok(t, addr, "", "group", "list"); strings.Contains(out, "jobs") || strings.Contains(out, "fresh") {
		t.Errorf("group list after delete:\n%s", out)
	}
	fails(t, addr, 1, "skein: describe group jobs: GROUP_ID_NOT_FOUND", "", "group", "describe", "jobs")
}

// TestGroupDeleteOffsetsClassic: delete-offsets of a classic group deletes
// its committed offsets of the topic's partitions (OffsetDelete).
func TestGroupDeleteOffsetsClassic(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	ok(t, addr, "", "topic", "create", "audit", "-p", "1")
	ok(t, addr, "", "group", "seek", "billing", "--to", "start", "--topics", "orders,audit", "--execute")
	if out := ok(t, addr, "", "group", "delete-offsets", "billing", "--topics", "orders"); out != "deleted the offsets of billing on orders[0,1]\n" {
		t.Errorf("delete-offsets printed %q", out)
	}
	out := ok(t, addr, "", "group", "describe", "billing")
	if row(out, "orders") != nil || row(out, "audit", "0") == nil {
		t.Errorf("describe after delete-offsets orders:\n%s", out)
	}
	fails(t, addr, 1, "skein: delete offsets of group billing: topic nope: UNKNOWN_TOPIC_OR_PARTITION", "", "group", "delete-offsets", "billing", "--topics", "nope")
}
