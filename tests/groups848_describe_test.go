package tests

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupDescribe848: two franz-go consumers with the
// server-side balancer (KIP-848) share a six-partition topic, and kadm's
// DescribeConsumerGroups (ConsumerGroupDescribe v1), unmodified, shows
// what a user checks: the group Stable once both are assigned, both
// members with their client ids, every partition owned by exactly one
// member, each member's assignment equal to its target. The raw answer
// carries the topic's id and Kafka's error messages for a classic and an
// unknown group (GROUP_ID_NOT_FOUND), INVALID_GROUP_ID for an empty group
// id; DescribeGroups answers the consumer
// group GROUP_ID_NOT_FOUND as Kafka 4.x does. When a member leaves, the
// other gets every partition.
func TestConsumerGroupDescribe848(t *testing.T) {
	b := consumerGroupBroker(t)
	adm := b.admin()
	ctx := ctxFor(t)
	topic, group, classic := "described848", "gd848", "gd-classic"
	mustCreate(t, ctx, adm, topic, 6, nil)
	l := newGroupLedger()
	m1 := startMember(t, b, l, "m1", group, topic, kgo.ServerSideBalancer(), kgo.ClientID("describe-m1"))
	startMember(t, b, l, "m2", group, topic, kgo.ServerSideBalancer(), kgo.ClientID("describe-m2"))

	// describe returns the group once it is in state and each member
	// owns want partitions.
	describe := func(what, state string, want ...int) kadm.DescribedConsumerGroup {
		t.Helper()
		var d kadm.DescribedConsumerGroup
		eventually(t, what, func() bool {
			all, err := adm.DescribeConsumerGroups(ctx, group)
			if err != nil {
				t.Fatalf("DescribeConsumerGroups: %v", err)
			}
			d = all[group]
			switch {
			case errors.Is(d.Err, kerr.GroupIDNotFound):
				return false // no member has heartbeated yet
			case d.Err != nil:
				t.Fatalf("describe %s: %v", group, d.Err)
			}
			var owned []int
			for _, m := range d.Members {
				owned = append(owned, len(m.Assignment[topic]))
			}
			return d.State == state && slices.Equal(owned, want)
		})
		return d
	}
	// checkOwners: every partition is owned by exactly one member, each
	// member owns its target, all at the assignment epoch.
	checkOwners := func(d kadm.DescribedConsumerGroup) {
		t.Helper()
		owners := map[int32][]string{}
		for _, m := range d.Members {
			for p := range m.Assignment[topic] {
				owners[p] = append(owners[p], m.ClientID)
			}
			if fmt.Sprint(m.Assignment.Sorted()) != fmt.Sprint(m.TargetAssignment.Sorted()) {
				t.Errorf("%s: assignment %v, target %v", m.ClientID, m.Assignment.Sorted(), m.TargetAssignment.Sorted())
			}
			if m.MemberEpoch != d.AssignmentEpoch || m.MemberType != 1 || !slices.Equal(m.SubscribedTopics, []string{topic}) ||
				m.ClientHost == "" || m.MemberID == "" {
				t.Errorf("%s: epoch %d (assignment epoch %d), type %d, subscribed %v, host %q, id %q",
					m.ClientID, m.MemberEpoch, d.AssignmentEpoch, m.MemberType, m.SubscribedTopics, m.ClientHost, m.MemberID)
			}
		}
		for p := range int32(6) {
			if len(owners[p]) != 1 {
				t.Errorf("partition %d owned by %v, want exactly one member", p, owners[p])
			}
		}
		if d.Epoch != d.AssignmentEpoch || d.AssignorName != "uniform" || d.Coordinator.NodeID != b.cfg.NodeID {
			t.Errorf("group epoch %d, assignment epoch %d, assignor %q, coordinator %d",
				d.Epoch, d.AssignmentEpoch, d.AssignorName, d.Coordinator.NodeID)
		}
	}

	d := describe("both members assigned three partitions", "Stable", 3, 3)
	var clients []string
	for _, m := range d.Members {
		clients = append(clients, m.ClientID)
	}
	if slices.Sort(clients); !slices.Equal(clients, []string{"describe-m1", "describe-m2"}) {
		t.Errorf("members' client ids %v", clients)
	}
	checkOwners(d)

	// A classic group (franz-go's default, JoinGroup) next to it; this
	// broker keeps Kafka's group.min.session.timeout.ms.
	lc := newGroupLedger()
	startMember(t, b, lc, "c1", classic, topic, kgo.SessionTimeout(10*time.Second))
	eventually(t, "the classic group to be Stable", func() bool {
		dg, err := adm.DescribeGroups(ctx, classic)
		return err == nil && dg[classic].Err == nil && dg[classic].State == "Stable"
	})
	all, err := adm.DescribeConsumerGroups(ctx, classic, "gd-nobody")
	if err != nil {
		t.Fatalf("DescribeConsumerGroups: %v", err)
	}
	for _, g := range []string{classic, "gd-nobody"} {
		if !errors.Is(all[g].Err, kerr.GroupIDNotFound) || len(all[g].Members) != 0 {
			t.Errorf("ConsumerGroupDescribe %s: %v, %d members; want GROUP_ID_NOT_FOUND", g, all[g].Err, len(all[g].Members))
		}
	}

	// The raw answer: topic ids and names, and Kafka's messages.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group, classic, "gd-nobody"}
	resp := rawReq[*kmsg.ConsumerGroupDescribeResponse](t, b.client(), req)
	byGroup := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
	for _, g := range resp.Groups {
		byGroup[g.Group] = g
	}
	for _, m := range byGroup[group].Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if tp.Topic != topic || tp.TopicID != [16]byte(md.Topics[topic].ID) {
					t.Errorf("%s: topic %q id %x, want %q %x", m.ClientID, tp.Topic, tp.TopicID, topic, md.Topics[topic].ID)
				}
			}
		}
	}
	for g, want := range map[string]string{
		classic:     "Group " + classic + " is not a consumer group.",
		"gd-nobody": "Group gd-nobody not found.",
	} {
		rg := byGroup[g]
		if rg.ErrorCode != kerr.GroupIDNotFound.Code || rg.ErrorMessage == nil || *rg.ErrorMessage != want {
			t.Errorf("raw ConsumerGroupDescribe %s: %v %v, want GROUP_ID_NOT_FOUND %q", g, kerr.ErrorForCode(rg.ErrorCode), rg.ErrorMessage, want)
		}
	}

	// An empty group id, sent to the broker itself (a client would look
	// for its coordinator first), is INVALID_GROUP_ID.
	empty := kmsg.NewPtrConsumerGroupDescribeRequest()
	empty.Groups = []string{""}
	kr, err := b.client().Broker(int(b.cfg.NodeID)).Request(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	if gs := kr.(*kmsg.ConsumerGroupDescribeResponse).Groups; len(gs) != 1 || gs[0].Group != "" || gs[0].ErrorCode != kerr.InvalidGroupID.Code {
		t.Errorf("ConsumerGroupDescribe of an empty group id: %+v", gs)
	}

	// DescribeGroups describes classic groups only (Kafka 4.x).
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	if g := dg[group]; !errors.Is(g.Err, kerr.GroupIDNotFound) || g.ErrMessage != "Group "+group+" is not a classic group." || g.State != "Dead" {
		t.Errorf("DescribeGroups of the consumer group: %v %q state %q", g.Err, g.ErrMessage, g.State)
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.State != "Stable" || len(listed) != 1 {
		t.Errorf("ListGroups type consumer: %+v", listed)
	}

	// m1 leaves: m2 gets every partition.
	m1.close()
	d = describe("m2 alone with six partitions", "Stable", 6)
	if d.Members[0].ClientID != "describe-m2" {
		t.Errorf("the remaining member is %s", d.Members[0].ClientID)
	}
	checkOwners(d)
}
