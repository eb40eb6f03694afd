package tests

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skeinlog/skein/configs"
)

// TestGroupInitialRebalanceDelay: with Kafka's default
// group.initial.rebalance.delay.ms (3000), two unmodified franz-go group
// consumers of a new group get their partitions in the same, first,
// generation, instead of the first member taking everything in
// generation 1 and a rebalance following at once. Generations are what
// the clients observed (GroupMetadata in OnPartitionsAssigned); the
// assignment is what DescribeGroups reports once the group is Stable.
//
//   - together: both members are started at once, as a deployment does.
//     NB: without the delay this passes too when the two clients'
//     MEMBER_ID_REQUIRED round trips interleave (a member id handed out
//     and not yet used holds the rebalance, KIP-394); it shows the user's
//     view, not that the delay works;
//   - during the delay: the second member is started only once
//     DescribeGroups shows the first one's rebalance held in
//     PreparingRebalance, which without the delay it never is (the join
//     with a member id completes it in the same step, so this case then
//     fails waiting): the second joins during the delay, which waits for it.
func TestGroupInitialRebalanceDelay(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 3
		c.GroupMinSessionTimeoutMs = 500
		c.GroupInitialRebalanceDelayMs = configs.Default().GroupInitialRebalanceDelayMs
	})
	if b.cfg.GroupInitialRebalanceDelayMs != 3000 {
		t.Fatalf("group.initial.rebalance.delay.ms = %d, want Kafka's default 3000", b.cfg.GroupInitialRebalanceDelayMs)
	}
	adm := b.admin()
	ctx := ctxFor(t)
	const topic = "orders"
	mustCreate(t, ctx, adm, topic, 4, nil)

	describe := func(t *testing.T, group string) kadm.DescribedGroup {
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return gs[group]
	}
	for _, tc := range []struct {
		name, group string
		// beforeSecond runs between starting the first member and the
		// second.
		beforeSecond func(t *testing.T, group string)
	}{
		{"together", "g-delay-together", func(*testing.T, string) {}},
		{"during the delay", "g-delay-during", func(t *testing.T, group string) {
			eventually(t, "the first member's rebalance held in PreparingRebalance", func() bool {
				return describe(t, group).State == "PreparingRebalance"
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each waits out the delay on its own group: together.
			t.Parallel()
			l := newGroupLedger()
			m1 := startMember(t, b, l, "m1", tc.group, topic)
			tc.beforeSecond(t, tc.group)
			m2 := startMember(t, b, l, "m2", tc.group, topic)

			owns := func(name string) bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return len(l.owners[name]) > 0
			}
			eventually(t, "both members own partitions", func() bool { return owns("m1") && owns("m2") })
			l.mu.Lock()
			for _, name := range []string{"m1", "m2"} {
				if len(l.owned[1][name]) == 0 {
					t.Errorf("%s owned nothing in generation 1; it owned partitions in generations %v", name, generations(l.owned, name))
				}
			}
			l.mu.Unlock()
			l.check(t)
			for _, m := range []*groupMember{m1, m2} {
				if _, gen := m.cl.GroupMetadata(); gen != 1 {
					t.Errorf("%s: generation %d, want 1", m.name, gen)
				}
			}

			// The broker's view: Stable, both members, the four
			// partitions split between them.
			var d kadm.DescribedGroup
			eventually(t, "the group Stable with two members", func() bool {
				d = describe(t, tc.group)
				return d.State == "Stable" && len(d.Members) == 2
			})
			var all []int32
			for _, m := range d.Members {
				a, ok := m.Assigned.AsConsumer()
				if !ok {
					t.Fatalf("member %s: assignment is not a consumer assignment", m.MemberID)
				}
				var ps []int32
				for _, at := range a.Topics {
					ps = append(ps, at.Partitions...)
				}
				if len(ps) == 0 {
					t.Errorf("member %s (%s) has no partitions", m.MemberID, m.ClientID)
				}
				all = append(all, ps...)
			}
			slices.Sort(all)
			if !slices.Equal(all, []int32{0, 1, 2, 3}) {
				t.Errorf("assigned partitions %v, want each of 0-3 once", all)
			}
		})
	}
}

// generations lists the generations in which member owned partitions.
func generations(owned map[int32]map[string]map[int32]bool, member string) []int32 {
	var gens []int32
	for gen, members := range owned {
		if len(members[member]) > 0 {
			gens = append(gens, gen)
		}
	}
	slices.Sort(gens)
	return gens
}
