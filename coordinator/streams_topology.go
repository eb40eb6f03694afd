package coordinator

// A streams group's topology (KIP-1071) and its configuration against the
// cluster's topics, as Kafka 4.2's StreamsTopology and InternalTopicManager
// do it:
//
//   - Every source topic must exist (MISSING_SOURCE_TOPICS otherwise).
//   - A repartition topic without a partition count takes the largest
//     count of the source topics of the subtopologies writing to it,
//     repeated until every one is known (STREAMS_INVALID_TOPOLOGY when a
//     loop or a repartition topic no one writes leaves one unknown).
//   - Copartition groups: repartition topics take the count of the
//     group's external topics, which must agree
//     (INCORRECTLY_PARTITIONED_TOPICS), or the largest among themselves.
//   - A changelog topic has one partition per task of its subtopology.
//   - A subtopology has as many tasks as its largest source topic has
//     partitions.
//   - Internal topics that do not exist are to be created
//     (MISSING_INTERNAL_TOPICS until they are); one that exists with
//     another partition count is INCORRECTLY_PARTITIONED_TOPICS.
//
// The topology is ready, and tasks assigned, only once all of that holds.

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The statuses of a StreamsGroupHeartbeat answer (KIP-1071).
const (
	streamsStatusStaleTopology                int8 = 0
	streamsStatusMissingSourceTopics          int8 = 1
	streamsStatusIncorrectlyPartitionedTopics int8 = 2
	streamsStatusMissingInternalTopics        int8 = 3
	streamsStatusShutdownApplication          int8 = 4
	streamsStatusAssignmentDelayed            int8 = 5
)

// streamsTopology is the topology a streams group's first member
// initialized it with, subtopologies sorted by id.
type streamsTopology struct {
	epoch int32
	subs  []streamsSubtopology
}

type streamsSubtopology struct {
	id                 string
	sourceTopics       []string
	sourceRegex        []string
	changelogs         []streamsTopicInfo
	sinks              []string
	repartitionSources []streamsTopicInfo
	copartition        []streamsCopartitionGroup
}

type streamsCopartitionGroup struct {
	sourceTopics, sourceRegex, repartitionSources []int16
}

type streamsTopicInfo struct {
	name        string
	partitions  int32
	replication int16
	configs     [][2]string
}

// InternalTopic is an internal topic of a streams group (a repartition or
// changelog topic) that the group needs and that does not exist: the
// group coordinator asks transport to create it (Request.CreateTopics),
// as Kafka's broker does after StreamsGroupHeartbeat.
type InternalTopic struct {
	Name       string
	Partitions int32
	// ReplicationFactor is -1 for the broker's default.
	ReplicationFactor int16
	Configs           map[string]string
}

func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	out := &streamsTopology{epoch: t.Epoch}
	infos := func(ts []kmsg.TopicInfo) []streamsTopicInfo {
		var out []streamsTopicInfo
		for _, ti := range ts {
			si := streamsTopicInfo{name: ti.Topic, partitions: ti.NumPartitions, replication: ti.ReplicationFactor}
			for _, c := range ti.Configs {
				si.configs = append(si.configs, [2]string{c.Key, c.Value})
			}
			out = append(out, si)
		}
		return out
	}
	for _, s := range t.Subtopologies {
		ss := streamsSubtopology{id: s.SubtopologyID, sourceTopics: s.SourceTopics, sourceRegex: s.SourceTopicRegex,
			changelogs: infos(s.StateChangelogTopics), sinks: s.RepartitionSinkTopics, repartitionSources: infos(s.RepartitionSourceTopics)}
		for _, c := range s.CopartitionGroups {
			ss.copartition = append(ss.copartition, streamsCopartitionGroup{c.SourceTopics, c.SourceTopicRegex, c.RepartitionSourceTopics})
		}
		out.subs = append(out.subs, ss)
	}
	slices.SortFunc(out.subs, func(a, b streamsSubtopology) int { return strings.Compare(a.id, b.id) })
	return out
}

// equal reports whether two topologies are the same (Kafka compares the
// topology a member joins with to the group's).
func (t *streamsTopology) equal(o *streamsTopology) bool {
	return fmt.Sprint(*t) == fmt.Sprint(*o)
}

// sub returns the subtopology with an id.
func (t *streamsTopology) sub(id string) *streamsSubtopology {
	for i := range t.subs {
		if t.subs[i].id == id {
			return &t.subs[i]
		}
	}
	return nil
}

// requiredTopics are every topic the topology reads or writes, sorted.
func (t *streamsTopology) requiredTopics() []string {
	set := map[string]bool{}
	for _, s := range t.subs {
		for _, n := range s.sourceTopics {
			set[n] = true
		}
		for _, n := range s.sinks {
			set[n] = true
		}
		for _, ti := range s.repartitionSources {
			set[ti.name] = true
		}
		for _, ti := range s.changelogs {
			set[ti.name] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// configuredTopology is a topology configured against the topics as they
// are: the number of tasks of each subtopology when ready, else why not.
type configuredTopology struct {
	hash   int64
	tasks  map[string]int32 // subtopology → number of tasks; nil when the topics are not right
	create []InternalTopic  // internal topics missing
	status int8             // a status, -1 when ready
	detail string
	// invalid is set when the topology cannot be configured at all
	// (STREAMS_INVALID_TOPOLOGY).
	invalid string
}

func (c *configuredTopology) ready() bool { return c != nil && c.status < 0 && c.invalid == "" }

// streamsMetadataHash hashes the ids and partition counts of the topics
// a topology needs, so that any change to them is seen.
func streamsMetadataHash(t *streamsTopology, topics Topics) int64 {
	h := fnv.New64a()
	for _, n := range t.requiredTopics() {
		id, parts, ok := topics.Topic(n)
		if !ok {
			continue
		}
		_, _ = h.Write([]byte(n))
		_, _ = h.Write(id[:])
		_, _ = h.Write(binary.BigEndian.AppendUint32(nil, uint32(parts)))
	}
	return int64(h.Sum64())
}

// configureTopology is Kafka's InternalTopicManager.configureTopics.
func configureTopology(t *streamsTopology, topics Topics, hash int64) *configuredTopology {
	c := &configuredTopology{hash: hash, status: -1}
	var missing []string
	for _, s := range t.subs {
		for _, n := range s.sourceTopics {
			if _, _, ok := topics.Topic(n); !ok {
				missing = append(missing, n)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = slices.Compact(missing)
		c.status, c.detail = streamsStatusMissingSourceTopics, "Source topics "+summarizeTopics(missing)+" are missing."
		return c
	}
	decided := map[string]int32{}
	count := func(topic string) (int32, bool) {
		if _, n, ok := topics.Topic(topic); ok {
			return n, true
		}
		n, ok := decided[topic]
		return n, ok
	}
	if err := decideRepartitionCounts(t, count, decided); err != "" {
		c.invalid = err
		return c
	}
	if status, detail, invalid := enforceCopartitioning(t, count, decided); status >= 0 || invalid != "" {
		c.status, c.detail, c.invalid = status, detail, invalid
		return c
	}
	c.tasks = map[string]int32{}
	for _, s := range t.subs {
		var n int32
		for _, src := range s.sourceTopics {
			k, _ := count(src)
			n = max(n, k)
		}
		for _, ti := range s.repartitionSources {
			k, _ := count(ti.name)
			n = max(n, k)
		}
		if n == 0 {
			c.invalid = "No source topics found for subtopology " + s.id
			return c
		}
		c.tasks[s.id] = n
		for _, ti := range s.changelogs {
			decided[ti.name] = n
		}
	}
	// The internal topics to create, and those of the wrong size.
	want := map[string]InternalTopic{}
	add := func(ti streamsTopicInfo) {
		n := ti.partitions
		if n == 0 {
			n = decided[ti.name]
		}
		it := InternalTopic{Name: ti.name, Partitions: n, ReplicationFactor: -1, Configs: map[string]string{}}
		if ti.replication != 0 {
			it.ReplicationFactor = ti.replication
		}
		for _, kv := range ti.configs {
			it.Configs[kv[0]] = kv[1]
		}
		want[ti.name] = it
	}
	for _, s := range t.subs {
		for _, ti := range s.repartitionSources {
			add(ti)
		}
		for _, ti := range s.changelogs {
			add(ti)
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_, parts, ok := topics.Topic(n)
		switch {
		case !ok:
			c.create = append(c.create, want[n])
		case parts != want[n].Partitions:
			c.status = streamsStatusIncorrectlyPartitionedTopics
			c.detail = fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", n, want[n].Partitions, parts)
			c.tasks, c.create = nil, nil
			return c
		}
	}
	if len(c.create) > 0 {
		var missing []string
		for _, it := range c.create {
			missing = append(missing, it.Name)
		}
		c.status, c.detail = streamsStatusMissingInternalTopics, "Internal topics are missing: "+summarizeTopics(missing)
	}
	return c
}

// decideRepartitionCounts is Kafka's RepartitionTopics.setup: it returns
// why the topology is invalid, "" if it is not.
func decideRepartitionCounts(t *streamsTopology, count func(string) (int32, bool), decided map[string]int32) string {
	for _, s := range t.subs {
		for _, ti := range s.repartitionSources {
			if ti.partitions != 0 {
				decided[ti.name] = ti.partitions
			}
		}
	}
	for {
		needed, progress := false, false
		for _, s := range t.subs {
			for _, sink := range s.sinks {
				if _, ok := decided[sink]; ok {
					continue
				}
				var n int32
				for _, ti := range s.repartitionSources {
					if k, ok := decided[ti.name]; ok {
						n = max(n, k)
					}
				}
				for _, src := range s.sourceTopics {
					if k, ok := count(src); ok {
						n = max(n, k)
					}
				}
				if n == 0 {
					needed = true
					continue
				}
				decided[sink], progress = n, true
			}
		}
		if !needed {
			break
		}
		if !progress {
			return "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
		}
	}
	for _, s := range t.subs {
		for _, ti := range s.repartitionSources {
			if _, ok := decided[ti.name]; !ok {
				return "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
			}
		}
	}
	return ""
}

// enforceCopartitioning is Kafka's CopartitionedTopicsEnforcer over every
// copartition group of the topology.
func enforceCopartitioning(t *streamsTopology, count func(string) (int32, bool), decided map[string]int32) (status int8, detail, invalid string) {
	fixed, flexible := map[string]bool{}, map[string]bool{}
	for _, s := range t.subs {
		for _, ti := range s.repartitionSources {
			if ti.partitions != 0 {
				fixed[ti.name] = true
			} else {
				flexible[ti.name] = true
			}
		}
	}
	for _, s := range t.subs {
		for _, cg := range s.copartition {
			var group []string
			for _, i := range cg.sourceTopics {
				if int(i) < len(s.sourceTopics) {
					group = append(group, s.sourceTopics[i])
				}
			}
			for _, i := range cg.repartitionSources {
				if int(i) < len(s.repartitionSources) {
					group = append(group, s.repartitionSources[i].name)
				}
			}
			if len(group) == 0 {
				continue
			}
			repart, external := map[string]int32{}, map[string]int32{}
			for _, n := range group {
				k, _ := count(n)
				if fixed[n] || flexible[n] {
					repart[n] = k
				} else {
					external[n] = k
				}
			}
			var use int32
			switch {
			case len(external) == 0 && len(fixed) > 0:
				first := int32(-1)
				for n := range fixed {
					k, _ := count(n)
					if first >= 0 && k != first {
						return streamsStatusIncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: [" + javaTreeMap(repart) + "]", ""
					}
					first = k
				}
				use = first
			case len(external) == 0:
				for _, k := range repart {
					use = max(use, k)
				}
				if use == 0 {
					return -1, "", "All topics in the copartition group had undefined partition number"
				}
			default:
				use = -1
				for _, k := range external {
					if use >= 0 && k != use {
						return streamsStatusIncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: [" + javaTreeMap(external) + "]", ""
					}
					use = k
				}
			}
			for n, k := range repart {
				decided[n] = use
				if fixed[n] && k != use {
					return streamsStatusIncorrectlyPartitionedTopics, fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", k, n, use), ""
				}
			}
		}
	}
	return -1, "", ""
}

// summarizeTopics names at most three topics, as Kafka's messages do.
// javaTreeMap prints a map of partition counts as Java prints a TreeMap,
// which Kafka's messages show: {a=2, b=3}.
func javaTreeMap(m map[string]int32) string {
	parts := make([]string, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", n, m[n]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func summarizeTopics(ts []string) string {
	if len(ts) == 0 {
		return "<none>"
	}
	if len(ts) <= 3 {
		return strings.Join(ts, ", ")
	}
	return strings.Join(ts[:3], ", ") + fmt.Sprintf(" and %d additional topics", len(ts)-3)
}
