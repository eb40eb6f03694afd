package transport

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
)

// topicMetrics count, by topic, the records and bytes clients produce and
// consume on this node (Kafka's BytesInPerSec and BytesOutPerSec, by
// topic):
//
//   - in: the records a Produce appended on the leader, counted by the
//     partition's actor once they are written (partition.Append.Counter):
//     an idempotent producer's retry of a batch already in the log, a
//     refused batch and a follower's replication count nothing;
//   - out: the records a consumer's Fetch or ShareFetch was answered with.
//     Fetch serves whole batches without reading them, so its records are
//     counted by offsets: from the fetch offset (or the first batch's base
//     offset, when after it) to the offset after the last batch. That is
//     each record once for a consumer that reads on from where it stopped;
//     on a compacted topic the offsets compaction emptied count too, and
//     each transaction marker counts one. A follower's fetch counts
//     nothing here (skein_replication_bytes_out_total has it).
//
// Cardinality: a series per topic and counter, removed (DeleteLabelValues)
// at the first scrape after the topic is gone from the node's image.
//
// Hot path: the counters of a topic are made once (prometheus'
// WithLabelValues) and kept in byTopic, so counting is a sync.Map load
// and atomic adds, without allocating.
//
// Concurrency: safe for concurrent use. mu serialises making a topic's
// counters with removing them, so that a topic deleted and created again
// never keeps counters no series shows.
type topicMetrics struct {
	bytesIn, recordsIn, bytesOut, recordsOut *prometheus.CounterVec

	mu      sync.Mutex
	byTopic sync.Map // topic name → *topicCounters
	// image returns the node's image, whose topics the series are pruned
	// to at each scrape; nil until NewAPI sets it.
	image atomic.Pointer[func() *image.Image]
}

// topicCounters are one topic's counters. It is the partition.AppendCounter
// of the topic's produced Appends.
type topicCounters struct {
	bytesIn, recordsIn, bytesOut, recordsOut prometheus.Counter
}

var _ partition.AppendCounter = (*topicCounters)(nil)

func newTopicMetrics() *topicMetrics {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
	}
	return &topicMetrics{
		bytesIn: vec("skein_topic_bytes_in_total",
			"Record bytes produced to a topic and appended by its leaders on this node (batches as stored; an idempotent retry of a batch already in the log and followers' replication count none)."),
		recordsIn: vec("skein_topic_records_in_total",
			"Records produced to a topic and appended by its leaders on this node, counted once per append (idempotent retries of batches already in the log and followers' replication count none)."),
		bytesOut: vec("skein_topic_bytes_out_total",
			"Record bytes of a topic this node served to consumers (Fetch and ShareFetch; followers' fetches are skein_replication_bytes_out_total)."),
		recordsOut: vec("skein_topic_records_out_total",
			"Records of a topic this node served to consumers (Fetch: the offsets from the fetch offset to the end of the batches served, so a compacted topic's emptied offsets and transaction markers count; ShareFetch: the records acquired)."),
	}
}

// counters returns topic's counters, made at its first use.
func (t *topicMetrics) counters(topic string) *topicCounters {
	if c, ok := t.byTopic.Load(topic); ok {
		return c.(*topicCounters)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.byTopic.Load(topic); ok {
		return c.(*topicCounters)
	}
	c := &topicCounters{
		bytesIn: t.bytesIn.WithLabelValues(topic), recordsIn: t.recordsIn.WithLabelValues(topic),
		bytesOut: t.bytesOut.WithLabelValues(topic), recordsOut: t.recordsOut.WithLabelValues(topic),
	}
	t.byTopic.Store(topic, c)
	return c
}

// Appended implements partition.AppendCounter: called by the partition's
// actor for each produced Append it wrote.
func (c *topicCounters) Appended(records, bytes int64) {
	c.recordsIn.Add(float64(records))
	c.bytesIn.Add(float64(bytes))
}

// served counts records and bytes answered to a consumer.
func (c *topicCounters) served(records, bytes int64) {
	c.recordsOut.Add(float64(records))
	c.bytesOut.Add(float64(bytes))
}

// prune removes the series of the topics im does not have.
func (t *topicMetrics) prune(im *image.Image) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byTopic.Range(func(k, _ any) bool {
		topic := k.(string)
		if im.Topic(topic) != nil {
			return true
		}
		t.byTopic.Delete(topic)
		for _, v := range []*prometheus.CounterVec{t.bytesIn, t.recordsIn, t.bytesOut, t.recordsOut} {
			v.DeleteLabelValues(topic)
		}
		return true
	})
}

// Describe implements prometheus.Collector.
func (t *topicMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range []*prometheus.CounterVec{t.bytesIn, t.recordsIn, t.bytesOut, t.recordsOut} {
		v.Describe(ch)
	}
}

// Collect implements prometheus.Collector: the topics gone from the image
// lose their series first.
func (t *topicMetrics) Collect(ch chan<- prometheus.Metric) {
	if f := t.image.Load(); f != nil {
		if im := (*f)(); im != nil {
			t.prune(im)
		}
	}
	for _, v := range []*prometheus.CounterVec{t.bytesIn, t.recordsIn, t.bytesOut, t.recordsOut} {
		v.Collect(ch)
	}
}
