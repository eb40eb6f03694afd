package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupCommands: a franz-go group consumer reads a topic and commits,
// more is produced, and describe shows the lag; list filters by state and
// type; delete and seek refuse an active group; after the consumer leaves,
// seek sets the offsets and delete removes the group.
func TestGroupCommands(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	ok(t, addr, "a\nb\nc\n", "produce", "orders", "-p", "0")
	ok(t, addr, "d\ne\n", "produce", "orders", "-p", "1")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("lag-test"),
		kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
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
	for n := 0; n < 5; {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatalf("polling after %d records: %v", n, err)
		}
		n += fetches.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// Lag: two more records in partition 0, one in partition 1.
	ok(t, addr, "f\ng\n", "produce", "orders", "-p", "0")
	ok(t, addr, "h\n", "produce", "orders", "-p", "1")

	out := ok(t, addr, "", "group", "describe", "billing")
	for _, want := range [][]string{
		{"GROUP", "billing"},
		{"STATE", "Stable"},
		{"MEMBERS", "1"},
		{"TOTAL-LAG", "3"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe: row %v, want %v\n%s", r, want, out)
		}
	}
	if r := row(out, "PROTOCOL"); len(r) != 2 || !strings.HasPrefix(r[1], "consumer/") {
		t.Errorf("describe: protocol row %v, want consumer/ASSIGNOR\n%s", r, out)
	}
	// The member, with its client id and both partitions.
	if r := row(out, "MEMBER-ID"); r == nil {
		t.Errorf("describe: no members table\n%s", out)
	}
	var member string
	for _, r := range table(out) {
		if len(r) == 5 && r[2] == "lag-test" {
			member = r[0]
			if r[1] != "-" || r[4] != "orders[0,1]" {
				t.Errorf("describe: member row %v, want no instance id and orders[0,1]\n%s", r, out)
			}
		}
	}
	if member == "" {
		t.Fatalf("describe: no member with client id lag-test\n%s", out)
	}
	for _, want := range [][]string{
		{"orders", "0", "3", "5", "2", member, "lag-test"},
		{"orders", "1", "2", "3", "1", member, "lag-test"},
	} {
		if r := row(out, want[:2]...); len(r) != 8 || !slices.Equal(r[:7], want) {
			t.Errorf("describe: partition row %v, want %v HOST\n%s", r, want, out)
		}
	}

	// -o json: the same, offsets and lag as numbers, the assignment by
	// topic; -o yaml the same keys.
	for _, gs := range [][]classicGroupView{groupsOf[classicGroupView](t, addr, "billing"), yamlOf[describedGroups[classicGroupView]](t, addr, "group", "describe", "billing").Groups} {
		if len(gs) != 1 {
			t.Fatalf("describe -o json: %+v", gs)
		}
		g := gs[0]
		if g.Group != "billing" || g.Type != "classic" || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol == "" || g.TotalLag != 3 ||
			len(g.Members) != 1 {
			t.Fatalf("describe -o json: %+v", g)
		}
		if m := g.Members[0]; m.MemberID != member || m.ClientID != "lag-test" || m.InstanceID != nil || !reflect.DeepEqual(m.Assignment, map[string][]int32{"orders": {0, 1}}) {
			t.Errorf("describe -o json: member %+v", m)
		}
		want := []groupOffset{
			{Topic: "orders", Partition: 0, Committed: ptr[int64](3), EndOffset: ptr[int64](5), Lag: ptr[int64](2), MemberID: &member, ClientID: ptr("lag-test"), Host: &g.Members[0].Host},
			{Topic: "orders", Partition: 1, Committed: ptr[int64](2), EndOffset: ptr[int64](3), Lag: ptr[int64](1), MemberID: &member, ClientID: ptr("lag-test"), Host: &g.Members[0].Host},
		}
		if !reflect.DeepEqual(g.Offsets, want) {
			t.Errorf("describe -o json: offsets %s, want %s", jsonText(g.Offsets), jsonText(want))
		}
	}

	// A second group, Empty, made by seek.
	out = ok(t, addr, "", "group", "seek", "audit", "--to", "end", "--topics", "orders", "--execute")
	for _, want := range [][]string{{"audit", "orders", "0", "-", "5"}, {"audit", "orders", "1", "-", "3"}} {
		if r := row(out, want[:3]...); !slices.Equal(r, want) {
			t.Errorf("seek audit --to end: row %v, want %v\n%s", r, want, out)
		}
	}

	groups := func(args ...string) []string {
		t.Helper()
		out := ok(t, addr, "", append([]string{"group", "list"}, args...)...)
		rows := table(out)
		if len(rows) == 0 || !slices.Equal(rows[0], []string{"GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "MEMBERS"}) {
			t.Fatalf("group list %v: no header\n%s", args, out)
		}
		var names []string
		for _, r := range rows[1:] {
			names = append(names, r[0])
		}
		return names
	}
	out = ok(t, addr, "", "group", "list")
	if r := row(out, "billing"); !slices.Equal(r, []string{"billing", "classic", "Stable", "consumer", "1"}) {
		t.Errorf("group list: billing row %v\n%s", r, out)
	}
	if r := row(out, "audit"); len(r) != 5 || r[2] != "Empty" || r[4] != "0" {
		t.Errorf("group list: audit row %v\n%s", r, out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"audit", "billing"}},
		{[]string{"--state", "stable"}, []string{"billing"}},
		{[]string{"--state", "Empty"}, []string{"audit"}},
		{[]string{"--state", "empty,stable"}, []string{"audit", "billing"}},
		{[]string{"--state", "PreparingRebalance"}, nil},
		{[]string{"--type", "classic"}, []string{"audit", "billing"}},
		{[]string{"--type", "consumer"}, nil},
		{[]string{"--type", "classic", "--state", "Empty"}, []string{"audit"}},
	} {
		if got := groups(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("group list %v: %v, want %v", tc.args, got, tc.want)
		}
	}
	fails(t, addr, 2, `--state "busy"`, "", "group", "list", "--state", "busy")
	fails(t, addr, 2, `--type "bogus": want classic, consumer, share or streams`, "", "group", "list", "--type", "bogus")

	// An active group can be neither deleted nor sought.
	fails(t, addr, 1, "skein: delete group billing: NON_EMPTY_GROUP", "", "group", "delete", "billing")
	fails(t, addr, 1, "skein: seek group billing: the group has 1 member(s) and is Stable: only an empty group's offsets can be set",
		"", "group", "seek", "billing", "--to", "start")

	// The consumer leaves (kgo's Close sends LeaveGroup and waits for it).
	cl.Close()
	closed = true
	out = ok(t, addr, "", "group", "describe", "billing")
	for _, want := range [][]string{{"STATE", "Empty"}, {"MEMBERS", "0"}, {"TOTAL-LAG", "3"}} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe after leave: row %v, want %v\n%s", r, want, out)
		}
	}
	for _, want := range [][]string{{"orders", "0", "3", "5", "2", "-", "-", "-"}, {"orders", "1", "2", "3", "1", "-", "-", "-"}} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("describe after leave: row %v, want %v\n%s", r, want, out)
		}
	}

	// Seek to the start without --execute: the plan, and nothing changed.
	var plan seekPlan
	decodeJSON(t, ok(t, addr, "", "group", "seek", "billing", "--to", "start", "-o", "json"), &plan)
	wantPlan := []seekPartition{{Topic: "orders", Partition: 0, CurrentOffset: 3, NewOffset: 0}, {Topic: "orders", Partition: 1, CurrentOffset: 2, NewOffset: 0}}
	if plan.Group != "billing" || plan.Executed || !slices.Equal(plan.Partitions, wantPlan) {
		t.Errorf("seek --to start (a dry run): %+v, want %+v", plan, wantPlan)
	}
	out = ok(t, addr, "", "group", "seek", "billing", "--to", "start")
	if !strings.Contains(out, "dry run: nothing was changed") {
		t.Errorf("seek without --execute does not say it is a dry run:\n%s", out)
	}
	out = ok(t, addr, "", "group", "describe", "billing")
	if r := row(out, "TOTAL-LAG"); !slices.Equal(r, []string{"TOTAL-LAG", "3"}) {
		t.Errorf("describe after a dry run: %v, want the lag unchanged\n%s", r, out)
	}
	// With --execute: committed 0, lag the whole partition.
	decodeJSON(t, ok(t, addr, "", "group", "seek", "billing", "--to", "start", "--execute", "-o", "json"), &plan)
	if !plan.Executed || !slices.Equal(plan.Partitions, wantPlan) {
		t.Errorf("seek --to start --execute: %+v, want %+v", plan, wantPlan)
	}
	out = ok(t, addr, "", "group", "seek", "billing", "--to", "start", "--execute")
	for _, want := range [][]string{{"billing", "orders", "0", "0", "0"}, {"billing", "orders", "1", "0", "0"}} {
		if r := row(out, want[:3]...); !slices.Equal(r, want) {
			t.Errorf("seek --to start: row %v, want %v\n%s", r, want, out)
		}
	}
	out = ok(t, addr, "", "group", "describe", "billing")
	for _, want := range [][]string{{"orders", "0", "0", "5", "5"}, {"orders", "1", "0", "3", "3"}} {
		if r := row(out, want[:2]...); len(r) < 5 || !slices.Equal(r[:5], want) {
			t.Errorf("describe after seek --to start: row %v, want %v\n%s", r, want, out)
		}
	}
	if r := row(out, "TOTAL-LAG"); !slices.Equal(r, []string{"TOTAL-LAG", "8"}) {
		t.Errorf("describe after seek --to start: %v\n%s", r, out)
	}
	// An offset, N before the end, and a time after every record (the end).
	for _, tc := range []struct {
		to   string
		want [2]string
	}{
		{"1", [2]string{"1", "1"}},
		{"-2", [2]string{"3", "1"}},
		{"@" + fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()), [2]string{"5", "3"}},
	} {
		ok(t, addr, "", "group", "seek", "billing", "--to", tc.to, "--execute")
		out = ok(t, addr, "", "group", "describe", "billing")
		for p, want := range tc.want {
			if r := row(out, "orders", fmt.Sprint(p)); len(r) < 3 || r[2] != want {
				t.Errorf("seek --to %s: partition %d row %v, want committed %s\n%s", tc.to, p, r, want, out)
			}
		}
	}
	fails(t, addr, 1, "seek group billing: topic orders: partition 1: offset 4 is out of range", "", "group", "seek", "billing", "--to", "4")
	fails(t, addr, 2, `--to "later"`, "", "group", "seek", "billing", "--to", "later")
	fails(t, addr, 2, "--to is required", "", "group", "seek", "billing")
	fails(t, addr, 1, "the group has no committed offsets: name the topics to seek with --topics", "", "group", "seek", "nobody", "--to", "start")

	// Now empty, it can be deleted, once.
	if out := ok(t, addr, "", "group", "delete", "billing", "audit"); out != "deleted billing\ndeleted audit\n" {
		t.Errorf("delete printed %q", out)
	}
	if got := groups(); len(got) != 0 {
		t.Errorf("group list after delete: %v", got)
	}
	fails(t, addr, 1, "skein: delete group billing: GROUP_ID_NOT_FOUND", "", "group", "delete", "billing")
	fails(t, addr, 1, "skein: describe group billing: GROUP_ID_NOT_FOUND", "", "group", "describe", "billing")

	// Several groups: each described in turn, the missing one an error.
	ok(t, addr, "", "group", "seek", "one", "--to", "start", "--topics", "orders", "--execute")
	ok(t, addr, "", "group", "seek", "two", "--to", "end", "--topics", "orders", "--execute")
	r := skeinCmd(t, addr, "", "group", "describe", "one", "nope", "two")
	if r.code != 1 || r.stderr != "skein: describe group nope: GROUP_ID_NOT_FOUND: The group id does not exist.\n" {
		t.Errorf("describe one nope two: %v", r)
	}
	var described []string
	for _, row := range table(r.stdout) {
		if len(row) == 2 && row[0] == "GROUP" {
			described = append(described, row[1])
		}
	}
	if !slices.Equal(described, []string{"one", "two"}) || strings.Contains(r.stdout, "\n\n\n") {
		t.Errorf("describe one nope two described %v:\n%s", described, r.stdout)
	}
	// -o json: the groups described, the error on stderr as before.
	r = skeinCmd(t, addr, "", "group", "describe", "one", "nope", "two", "-o", "json")
	var some describedGroups[classicGroupView]
	if err := json.Unmarshal([]byte(r.stdout), &some); err != nil || r.code != 1 || r.stderr != "skein: describe group nope: GROUP_ID_NOT_FOUND: The group id does not exist.\n" ||
		len(some.Groups) != 2 || some.Groups[0].Group != "one" || some.Groups[1].Group != "two" {
		t.Errorf("describe one nope two -o json: %v (%v)", r, err)
	}
	// two: committed at the end, no lag, no members.
	for _, g := range some.Groups[min(1, len(some.Groups)):] {
		if g.State != "Empty" || g.TotalLag != 0 || g.Members == nil || len(g.Members) != 0 || len(g.Offsets) != 2 ||
			!reflect.DeepEqual(g.Offsets[0], groupOffset{Topic: "orders", Partition: 0, Committed: ptr[int64](5), EndOffset: ptr[int64](5), Lag: ptr[int64](0)}) {
			t.Errorf("describe two -o json: %s", jsonText(g))
		}
	}
}
