package coordinator

// The share "simple" assignor (Kafka's
// org.apache.kafka.coordinator.group.assignor.SimpleAssignor, KIP-932):
// several members of a share group may consume one partition, so the
// assignor spreads members over partitions rather than partitions over
// members. With m members and p partitions (of all the topics when every
// member subscribes to the same ones, Kafka's homogeneous case; of each
// topic and its subscribers otherwise):
//
//   - m ≤ p: each partition goes to one member, the members' counts
//     differing by at most one (as a consumer group's would);
//   - m > p: each partition is shared by ⌈m/p⌉ members, so that every
//     member gets a partition.
//
// It is sticky: a member keeps the partitions it had in the previous
// target while a partition is not shared by more than it should be and
// the member does not hold more than its fair share; the rest go, one
// by one, to the eligible member holding the fewest partitions (ties to
// the smallest member id), which keeps members balanced across topics.

import (
	"slices"
	"sort"
)

// shareAssign returns the target assignment of share group members to
// the partitions of the topics they subscribe to (counts: partitions by
// topic, 0 for a topic that does not exist), keeping prev where the
// balance allows. Deterministic: the same input gives the same output.
func shareAssign(members map[string]*shareMember, counts map[string]int32, prev map[string]tpSet) map[string]tpSet {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	topics := SortedTopics(topicsOf(counts))
	subscribers := map[string][]string{}
	sharing := map[string]int{}
	homogeneous, total := true, 0
	for _, id := range ids {
		homogeneous = homogeneous && slices.Equal(members[id].subscribed, members[ids[0]].subscribed)
	}
	for _, t := range topics {
		if len(ids) > 0 && slices.Contains(members[ids[0]].subscribed, t) {
			total += int(counts[t])
		}
	}
	// fair is what each member may keep: its share of the slots of the
	// topics it subscribes to, rounded up.
	fair := map[string]float64{}
	for _, t := range topics {
		for _, id := range ids {
			if slices.Contains(members[id].subscribed, t) {
				subscribers[t] = append(subscribers[t], id)
			}
		}
		m, p := len(subscribers[t]), int(counts[t])
		if m == 0 {
			continue
		}
		sharing[t] = max(1, (m+p-1)/p)
		if homogeneous {
			sharing[t] = max(1, (m+total-1)/total)
		}
		for _, id := range subscribers[t] {
			fair[id] += float64(p*sharing[t]) / float64(m)
		}
	}
	count := map[topicPartition]int{}
	limit := func(id string) int { return int(fair[id] + 0.999999) }
	// Sticky: previous partitions first, within the limits.
	for _, id := range ids {
		for _, t := range topics {
			if !slices.Contains(subscribers[t], id) {
				continue
			}
			for p := range counts[t] {
				tp := topicPartition{t, p}
				if prev[id][tp] && count[tp] < sharing[t] && len(out[id]) < limit(id) {
					out[id][tp] = true
					count[tp]++
				}
			}
		}
	}
	// Then every partition's missing slots, to the least loaded.
	for _, t := range topics {
		for p := range counts[t] {
			tp := topicPartition{t, p}
			for count[tp] < sharing[t] {
				best := ""
				for _, id := range subscribers[t] {
					if out[id][tp] {
						continue
					}
					if best == "" || len(out[id]) < len(out[best]) {
						best = id
					}
				}
				if best == "" {
					break
				}
				out[best][tp] = true
				count[tp]++
			}
		}
	}
	return out
}
