package coordinator

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/quick"
)

func shareMembers(subs map[string][]string) map[string]*shareMember {
	out := map[string]*shareMember{}
	for id, s := range subs {
		out[id] = &shareMember{id: id, subscribed: sortedNames(s)}
	}
	return out
}

// TestShareAssignSpreadAndShare: KIP-932's simple assignor: with no more
// members than partitions each partition has one member and the members'
// counts differ by at most one; with more members than partitions every
// partition is shared by ⌈m/p⌉ members and every member has one.
func TestShareAssignSpreadAndShare(t *testing.T) {
	for _, c := range []struct{ members, partitions int }{{1, 4}, {2, 4}, {3, 4}, {4, 4}, {5, 4}, {7, 3}, {8, 2}, {3, 1}} {
		subs := map[string][]string{}
		for i := range c.members {
			subs[fmt.Sprintf("m%d", i)] = []string{"t"}
		}
		got := shareAssign(shareMembers(subs), map[string]int32{"t": int32(c.partitions)}, nil)
		sharing := max(1, (c.members+c.partitions-1)/c.partitions)
		per := map[int32]int{}
		lo, hi := 1<<30, 0
		for _, set := range got {
			lo, hi = min(lo, len(set)), max(hi, len(set))
			for tp := range set {
				per[tp.Partition]++
			}
		}
		for p := range int32(c.partitions) {
			if per[p] != sharing {
				t.Errorf("%d members, %d partitions: partition %d has %d members, want %d", c.members, c.partitions, p, per[p], sharing)
			}
		}
		if lo == 0 || hi-lo > 1 {
			t.Errorf("%d members, %d partitions: members hold %d to %d partitions", c.members, c.partitions, lo, hi)
		}
	}
	// Balance across topics: two one-partition topics, two members.
	got := shareAssign(shareMembers(map[string][]string{"a": {"x", "y"}, "b": {"x", "y"}}), map[string]int32{"x": 1, "y": 1}, nil)
	if len(got["a"]) != 1 || len(got["b"]) != 1 {
		t.Errorf("two topics of one partition: %v", got)
	}
	// Only subscribers get a topic's partitions; a missing topic none.
	got = shareAssign(shareMembers(map[string][]string{"a": {"x"}, "b": {"y", "gone"}}), map[string]int32{"x": 2, "y": 1, "gone": 0}, nil)
	if len(got["a"]) != 2 || len(got["b"]) != 1 || !got["b"][topicPartition{"y", 0}] {
		t.Errorf("separate subscriptions: %v", got)
	}
}

// TestShareAssignSticky: a member joining moves as little as it must: the
// members already there keep what they had, within their fair share.
func TestShareAssignSticky(t *testing.T) {
	counts := map[string]int32{"t": 6}
	subs := map[string][]string{"a": {"t"}, "b": {"t"}}
	first := shareAssign(shareMembers(subs), counts, nil)
	subs["c"] = []string{"t"}
	second := shareAssign(shareMembers(subs), counts, first)
	for _, id := range []string{"a", "b"} {
		kept := 0
		for tp := range second[id] {
			if first[id][tp] {
				kept++
			}
		}
		if kept != 2 || len(second[id]) != 2 {
			t.Errorf("%s: had %v, now %v: want 2 kept of 2", id, first[id], second[id])
		}
	}
}

// TestShareAssignQuick: whatever the members, subscriptions and previous
// target, every partition of a subscribed topic is shared by ⌈m/p⌉ of its
// subscribers (or all of them; p counting every topic's partitions when
// the subscriptions are all the same), no member holds a partition of a topic it
// does not subscribe to, and the result does not depend on map order.
func TestShareAssignQuick(t *testing.T) {
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 1))
		topics := []string{"t0", "t1", "t2"}
		counts := map[string]int32{}
		for _, t := range topics {
			counts[t] = int32(rng.IntN(5))
		}
		subs := map[string][]string{}
		prev := map[string]tpSet{}
		for i := range rng.IntN(8) + 1 {
			id := fmt.Sprintf("m%d", i)
			prev[id] = tpSet{}
			for _, t := range topics {
				if rng.IntN(2) == 0 {
					subs[id] = append(subs[id], t)
					for p := range counts[t] {
						if rng.IntN(3) == 0 {
							prev[id][topicPartition{t, p}] = true
						}
					}
				}
			}
		}
		// Kafka's homogeneous case: every member subscribes to the
		// same topics, whose partitions are counted together.
		homogeneous, total, first := true, 0, ""
		for id, s := range subs {
			if first == "" {
				first = id
			}
			homogeneous = homogeneous && fmt.Sprint(sortedNames(s)) == fmt.Sprint(sortedNames(subs[first]))
		}
		for _, t := range subs[first] {
			total += int(counts[t])
		}
		got := shareAssign(shareMembers(subs), counts, prev)
		again := shareAssign(shareMembers(subs), counts, prev)
		if fmt.Sprint(got) != fmt.Sprint(again) {
			return false
		}
		for _, t := range topics {
			n := 0
			for _, s := range subs {
				for _, x := range s {
					if x == t {
						n++
					}
				}
			}
			if n == 0 || counts[t] == 0 {
				continue
			}
			sharing := max(1, (n+int(counts[t])-1)/int(counts[t]))
			if homogeneous && len(subs) == n {
				sharing = max(1, (n+total-1)/total)
			}
			for p := range counts[t] {
				holders := 0
				for id, set := range got {
					if set[topicPartition{t, p}] {
						holders++
						if !shareMembers(subs)[id].subscribes(t) {
							return false
						}
					}
				}
				if holders != min(sharing, n) {
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Error(err)
	}
}

func (m *shareMember) subscribes(topic string) bool {
	for _, t := range m.subscribed {
		if t == topic {
			return true
		}
	}
	return false
}
