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

	"github.com/skeinlog/skein/configs"
)

// TestGroupDescribeConsumerProtocol: two franz-go consumers with the
// server-side balancer (KIP-848) share a four-partition topic. `group
// describe` shows the consumer group from ConsumerGroupDescribe (Kafka's
// DescribeGroups describes classic groups only): Stable, its epochs, both
// members with their epoch, assignment and target, every partition with
// its member and lag. `group list` counts its members; seek refuses it;
// once both consumers leave it is Empty.
func TestGroupDescribeConsumerProtocol(t *testing.T) {
	addr := startNode(t, func(c *configs.Node) {
		c.GroupConsumerHeartbeatIntervalMs, c.GroupConsumerSessionTimeoutMs = 200, 5000
		c.GroupConsumerMinHeartbeatIntervalMs, c.GroupConsumerMinSessionTimeoutMs = 200, 5000
	})
	ok(t, addr, "", "topic", "create", "orders", "-p", "4")
	ok(t, addr, "a\nb\nc\n", "produce", "orders", "-p", "0")

	var clients []*kgo.Client
	for _, id := range []string{"cli-a", "cli-b"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(id),
			kgo.ConsumerGroup("billing848"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer(),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !cl.PollFetches(context.Background()).IsClientClosed() {
			}
		}()
		t.Cleanup(func() { cl.Close(); <-done })
	}

	// describe waits until the group is in state with members members.
	describe := func(state, members string) string {
		t.Helper()
		var r result
		for end := time.Now().Add(deadline); ; {
			r = skeinCmd(t, addr, "", "group", "describe", "billing848")
			if r.code == 0 && slices.Equal(row(r.stdout, "STATE"), []string{"STATE", state}) &&
				slices.Equal(row(r.stdout, "MEMBERS"), []string{"MEMBERS", members}) {
				return r.stdout
			}
			if time.Now().After(end) {
				t.Fatalf("group describe billing848: not %s with %s members within %v: %v", state, members, deadline, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	out := describe("Stable", "2")
	for _, want := range [][]string{
		{"GROUP", "billing848"},
		{"PROTOCOL", "consumer/uniform"},
		{"TOTAL-LAG", "3"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe: row %v, want %v\n%s", r, want, out)
		}
	}
	epoch := row(out, "ASSIGNMENT-EPOCH")
	if g := row(out, "GROUP-EPOCH"); len(epoch) != 2 || len(g) != 2 || g[1] != epoch[1] {
		t.Errorf("describe: %v and %v, want equal epochs once Stable\n%s", g, epoch, out)
	}
	if r := row(out, "MEMBER-ID"); !slices.Equal(r, []string{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT", "TARGET"}) {
		t.Fatalf("describe: members header %v\n%s", r, out)
	}
	// Each member owns its target; together they own every partition once.
	owner := map[string][2]string{} // partition → member id, client id
	var clientIDs []string
	for _, r := range table(out) {
		if len(r) != 7 || !strings.HasPrefix(r[2], "cli-") {
			continue
		}
		clientIDs = append(clientIDs, r[2])
		if r[1] != "-" || r[4] != epoch[1] || r[5] != r[6] || !strings.HasPrefix(r[5], "orders[") {
			t.Errorf("describe: member row %v, want no instance id, epoch %s, assignment equal to target\n%s", r, epoch[1], out)
			continue
		}
		for p := range strings.SplitSeq(strings.Trim(strings.TrimPrefix(r[5], "orders"), "[]"), ",") {
			if o, ok := owner[p]; ok {
				t.Errorf("describe: partition %s owned by %s and %s\n%s", p, o[1], r[2], out)
			}
			owner[p] = [2]string{r[0], r[2]}
		}
	}
	if slices.Sort(clientIDs); !slices.Equal(clientIDs, []string{"cli-a", "cli-b"}) || len(owner) != 4 {
		t.Fatalf("describe: members %v owning %v, want cli-a and cli-b owning 4 partitions\n%s", clientIDs, owner, out)
	}
	// Nothing committed: partition 0 lags by its three records.
	for p := range 4 {
		end := "0"
		if p == 0 {
			end = "3"
		}
		o := owner[strconv.Itoa(p)]
		want := []string{"orders", strconv.Itoa(p), "-", end, end, o[0], o[1]}
		if r := row(out, "orders", strconv.Itoa(p)); len(r) != 8 || !slices.Equal(r[:7], want) {
			t.Errorf("describe: partition row %v, want %v HOST\n%s", r, want, out)
		}
	}

	// -o json: the same, each member's assignment and target by topic.
	gs := groupsOf[consumerGroupView](t, addr, "billing848")
	if len(gs) != 1 {
		t.Fatalf("describe -o json: %s", jsonText(gs))
	}
	g := gs[0]
	if g.Type != "consumer" || g.State != "Stable" || g.Assignor != "uniform" || strconv.Itoa(int(g.AssignmentEpoch)) != epoch[1] ||
		g.GroupEpoch != g.AssignmentEpoch || g.TotalLag != 3 || len(g.Members) != 2 || len(g.Offsets) != 4 {
		t.Fatalf("describe -o json: %s", jsonText(g))
	}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch || m.InstanceID != nil || len(m.Assignment["orders"]) != 2 || !reflect.DeepEqual(m.Assignment, m.TargetAssignment) {
			t.Errorf("describe -o json: member %s", jsonText(m))
		}
	}
	for p, o := range g.Offsets {
		end := int64(0)
		if p == 0 {
			end = 3
		}
		want := groupOffset{Topic: "orders", Partition: int32(p), EndOffset: &end, Lag: &end}
		if o.MemberID != nil && o.ClientID != nil && o.Host != nil && *o.MemberID == owner[strconv.Itoa(p)][0] && *o.ClientID == owner[strconv.Itoa(p)][1] {
			want.MemberID, want.ClientID, want.Host = o.MemberID, o.ClientID, o.Host
		}
		if !reflect.DeepEqual(o, want) {
			t.Errorf("describe -o json: offset %s, want %s with member %v", jsonText(o), jsonText(want), owner[strconv.Itoa(p)])
		}
	}

	out = ok(t, addr, "", "group", "list")
	if r := row(out, "billing848"); !slices.Equal(r, []string{"billing848", "consumer", "Stable", "consumer", "2"}) {
		t.Errorf("group list: billing848 row %v\n%s", r, out)
	}
	fails(t, addr, 1, "skein: seek group billing848: the group has 2 member(s) and is Stable: only an empty group's offsets can be set",
		"", "group", "seek", "billing848", "--to", "start")
	r := skeinCmd(t, addr, "", "group", "describe", "billing848", "nope")
	if r.code != 1 || r.stderr != "skein: describe group nope: GROUP_ID_NOT_FOUND: The group id does not exist.\n" ||
		!slices.Equal(row(r.stdout, "GROUP"), []string{"GROUP", "billing848"}) {
		t.Errorf("describe billing848 nope: %v", r)
	}

	for _, cl := range clients {
		cl.Close() // leaves the group (member epoch -1)
	}
	out = describe("Empty", "0")
	if r := row(out, "MEMBER-ID"); r != nil {
		t.Errorf("describe after leaving: members table %v\n%s", r, out)
	}
}
