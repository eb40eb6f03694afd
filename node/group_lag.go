package node

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinlog/skein/coordinator"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/partition"
)

// Consumer lag on /metrics, exported by each group's coordinator: the node
// that leads the group's __consumer_offsets partition.
//
// At each scrape, groupLagCollector takes the committed offsets from the
// index of each __consumer_offsets partition this node leads
// (coordinator.Directory.CommittedOffsets: what the groups' actors
// committed, durable; the index is built at its first use, as ListGroups
// builds it) and each committed partition's end offset, its high
// watermark, as kafka-consumer-groups takes it (ListOffsets latest,
// read_uncommitted). The lag is the end offset minus the committed
// offset, never below 0 (a commit past the high watermark, before a
// truncation or while a new leader's high watermark catches up).
//
// Where the end offset comes from:
//   - a partition this node leads: its published view, read without a
//     message, exact;
//   - any other: the partitions' leaders, asked with one ListOffsets per
//     leader through the node's own Kafka client (extensionClient: kadm's
//     ListEndOffsets), at most once every endOffsetsMaxAge and for at most
//     endOffsetsTimeout, so that a scrape never waits longer; until an
//     answer comes (a leader down, a secured listener the client may not
//     use), the partition's lag is left out, its committed offset not.
//
// NB: not a follower's own view of the high watermark, which would need no
// request: a follower learns it with its next fetch, so that it lags the
// leader's by up to a fetch's wait, and a node need not host the
// partitions its groups consume at all.
type groupLagCollector struct {
	n    *Node
	ends *remoteEnds
}

var (
	groupCommittedDesc = prometheus.NewDesc("skein_consumer_group_committed_offset",
		"The offset a consumer group (classic or consumer protocol) committed for a partition, exported by the group's coordinator.",
		[]string{"group", "topic", "partition"}, nil)
	groupLagDesc = prometheus.NewDesc("skein_consumer_group_lag",
		"A consumer group's lag on a partition: the partition's high watermark (as kafka-consumer-groups takes it) minus the group's committed offset, never below 0; exported by the group's coordinator.",
		[]string{"group", "topic", "partition"}, nil)
)

const (
	// endOffsetsMaxAge is how old the end offsets of partitions led
	// elsewhere may be before a scrape asks their leaders again.
	endOffsetsMaxAge = 5 * time.Second
	// endOffsetsTimeout bounds how long a scrape waits for them.
	endOffsetsTimeout = 2 * time.Second
)

func newGroupLagCollector(n *Node) groupLagCollector {
	return groupLagCollector{n: n, ends: &remoteEnds{log: logging.NewLimiter(1, time.Minute)}}
}

func (c groupLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- groupCommittedDesc
	ch <- groupLagDesc
}

func (c groupLagCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	im := n.image.Load()
	if im == nil || n.groups == nil {
		return
	}
	var committed []coordinator.CommittedOffset
	for _, h := range n.registry.All() {
		if h.Topic != partition.OffsetsTopic {
			continue
		}
		if v := h.View(); v == nil || v.Log == nil || v.LeaderEpoch < 0 {
			continue // not led here: another node's groups
		}
		offs, err := n.groups.CommittedOffsets(h)
		if err != nil {
			continue // loading: its groups have no coordinator yet
		}
		committed = append(committed, offs...)
	}
	if len(committed) == 0 {
		return
	}
	ends := map[topicPartition]int64{}
	var elsewhere map[topicPartition]bool
	for _, o := range committed {
		tp := topicPartition{o.Topic, o.Partition}
		if _, ok := ends[tp]; ok || elsewhere[tp] {
			continue
		}
		if t := im.Topic(o.Topic); t == nil || int(o.Partition) >= len(t.Partitions) {
			continue // deleted: its offsets' tombstones are on their way
		}
		if h := n.registry.Get(o.Topic, o.Partition); h != nil {
			if v := h.View(); v != nil && v.Log != nil && v.LeaderEpoch >= 0 {
				ends[tp] = v.Log.HighWatermark
				continue
			}
		}
		if elsewhere == nil {
			elsewhere = map[topicPartition]bool{}
		}
		elsewhere[tp] = true
	}
	if len(elsewhere) > 0 {
		c.ends.get(n, elsewhere, ends)
	}
	for _, o := range committed {
		if t := im.Topic(o.Topic); t == nil || int(o.Partition) >= len(t.Partitions) {
			continue
		}
		p := strconv.Itoa(int(o.Partition))
		ch <- prometheus.MustNewConstMetric(groupCommittedDesc, prometheus.GaugeValue, float64(o.Offset), o.Group, o.Topic, p)
		if end, ok := ends[topicPartition{o.Topic, o.Partition}]; ok {
			ch <- prometheus.MustNewConstMetric(groupLagDesc, prometheus.GaugeValue, float64(max(end-o.Offset, 0)), o.Group, o.Topic, p)
		}
	}
}

type topicPartition struct {
	topic     string
	partition int32
}

// remoteEnds caches the end offsets of partitions led by other nodes.
//
// Concurrency: scrapes may run at once; mu makes them ask one at a time,
// and the later ones find the answer cached.
type remoteEnds struct {
	log *logging.Limiter // failures to ask, once a minute

	mu   sync.Mutex
	at   time.Time // when ends was asked for
	ends map[topicPartition]int64
}

// get adds to into the end offsets of want: cached if asked for less than
// endOffsetsMaxAge ago and all there, else asked of their leaders (within
// endOffsetsTimeout). A partition with no answer is left out.
func (r *remoteEnds) get(n *Node, want map[topicPartition]bool, into map[topicPartition]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fresh := time.Since(r.at) < endOffsetsMaxAge
	for tp := range want {
		if _, ok := r.ends[tp]; !ok {
			fresh = false
		}
	}
	if !fresh {
		r.ask(n, want)
	}
	for tp := range want {
		if end, ok := r.ends[tp]; ok {
			into[tp] = end
		}
	}
}

// ask replaces the cache with the end offsets of want's partitions.
// Called with r.mu held.
func (r *remoteEnds) ask(n *Node, want map[topicPartition]bool) {
	r.at = time.Now()
	if !n.serving.Load() {
		// NB: not before the Kafka listener serves, whom the client
		// would dial, nor once Stop began: Stop closes the client before
		// the admin listener, and one made after would never close.
		return
	}
	adm, err := n.extClient.client()
	if err != nil {
		r.log.Event(n.log.Warn()).Err(err).Msg("consumer lag: no client to ask other nodes for end offsets")
		return
	}
	topics := map[string]bool{}
	for tp := range want {
		topics[tp.topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), endOffsetsTimeout)
	defer cancel()
	listed, err := adm.ListEndOffsets(ctx, names...)
	ends := map[topicPartition]int64{}
	// NB: kadm answers what it could alongside an error; a partition with
	// an error of its own is left out.
	for tp := range want {
		if o, ok := listed.Lookup(tp.topic, tp.partition); ok && o.Err == nil {
			ends[tp] = o.Offset
		} else if err == nil && ok {
			err = o.Err
		}
	}
	if err != nil {
		r.log.Event(n.log.Warn()).Err(err).Msg("consumer lag: asking other nodes for end offsets")
	}
	r.ends = ends
}
