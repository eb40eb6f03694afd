package console

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Counters are the produce and consume counters of every topic, summed
// over the nodes that answered: the console's charts difference two of
// them. The node reads them from each node's per-topic metrics
// (skein_topic_bytes_in_total and its siblings).
type Counters struct {
	Topics map[string]TopicCounters
	// Nodes are the nodes whose counters are in the sums; Missing those
	// asked that did not answer in time.
	Nodes, Missing []int32
}

// TopicCounters are one topic's counters, as Prometheus counts them.
type TopicCounters struct {
	BytesIn, BytesOut, RecordsIn, RecordsOut float64
}

type topicsJSON struct {
	Topics  []*topicJSON `json:"topics"`
	Brokers countersJSON `json:"brokers"`
	// SizesError says why sizes are -1: DescribeLogDirs failed (it needs
	// DESCRIBE on the cluster).
	SizesError string `json:"sizes_error,omitempty"`
}

// countersJSON are the cluster's totals of the topic counters and which
// nodes they come from.
type countersJSON struct {
	AtMs         int64   `json:"at_ms"`
	Nodes        []int32 `json:"nodes"`
	MissingNodes []int32 `json:"missing_nodes"`
	countsJSON
}

type countsJSON struct {
	BytesInTotal    float64 `json:"bytes_in_total"`
	BytesOutTotal   float64 `json:"bytes_out_total"`
	RecordsInTotal  float64 `json:"records_in_total"`
	RecordsOutTotal float64 `json:"records_out_total"`
}

func (c *countsJSON) add(t TopicCounters) {
	c.BytesInTotal += t.BytesIn
	c.BytesOutTotal += t.BytesOut
	c.RecordsInTotal += t.RecordsIn
	c.RecordsOutTotal += t.RecordsOut
}

type topicJSON struct {
	Name       string           `json:"name"`
	ID         string           `json:"id"`
	Internal   bool             `json:"internal"`
	Partitions []*partitionJSON `json:"partitions"`
	// SizeBytes sums the leaders' sizes, -1 when unknown.
	SizeBytes int64 `json:"size_bytes"`
	// Records sums end_offset - start_offset.
	Records int64 `json:"records"`
	countsJSON
	Configs []configJSON `json:"configs,omitempty"`
	Error   string       `json:"error,omitempty"`
}

type partitionJSON struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	Offline         bool    `json:"offline"`
	UnderReplicated bool    `json:"under_replicated"`
	// StartOffset and EndOffset (the high watermark) are -1 when unknown.
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	// SizeBytes is the leader replica's, -1 when unknown.
	SizeBytes int64  `json:"size_bytes"`
	Error     string `json:"error,omitempty"`
}

type configJSON struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive"`
}

// topics is GET /ui/api/topics.
func (a *api) topics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	counters := a.counters(ctx)
	details, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	out := a.describeTopics(ctx, adm, details, <-counters)
	writeJSON(w, http.StatusOK, out)
}

// topic is GET /ui/api/topics/{topic}: one topic, with its configs.
func (a *api) topic(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	name := r.PathValue("topic")
	counters := a.counters(ctx)
	details, err := adm.ListTopicsWithInternal(ctx, name)
	if _, ok := oneTopic(w, details, err, name); !ok {
		return
	}
	out := a.describeTopics(ctx, adm, details, <-counters)
	t := out.Topics[0]
	t.Configs = []configJSON{}
	rcs, err := adm.DescribeTopicConfigs(ctx, name)
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	if err != nil {
		t.Error = "configs: " + errName(err)
	} else {
		for _, c := range rcs[0].Configs {
			src := strings.ToLower(strings.TrimSuffix(c.Source.String(), "_CONFIG"))
			t.Configs = append(t.Configs, configJSON{Name: c.Key, Value: c.Value, Source: src, Sensitive: c.Sensitive})
		}
	}
	writeJSON(w, http.StatusOK, struct {
		*topicJSON
		Brokers    countersJSON `json:"brokers"`
		SizesError string       `json:"sizes_error,omitempty"`
	}{t, out.Brokers, out.SizesError})
}

// counters asks the node for the cluster's topic counters in the
// background.
func (a *api) counters(ctx context.Context) <-chan Counters {
	ch := make(chan Counters, 1)
	if a.cfg.TopicCounters == nil {
		ch <- Counters{}
		return ch
	}
	go func() { ch <- a.cfg.TopicCounters(ctx) }()
	return ch
}

// describeTopics fills the topics of details with their offsets, sizes
// and counters: the start and end offsets (ListOffsets) and the log
// directories (DescribeLogDirs) are asked at once.
func (a *api) describeTopics(ctx context.Context, adm *kadm.Client, details kadm.TopicDetails, counters Counters) topicsJSON {
	names := details.Names()
	var (
		wg           sync.WaitGroup
		starts, ends kadm.ListedOffsets
		dirs         kadm.DescribedAllLogDirs
		dirsErr      error
	)
	out := topicsJSON{Topics: []*topicJSON{}}
	if len(names) > 0 {
		wg.Add(3)
		// NB: a partition whose offsets are not listed shows -1 and its
		// error; ListOffsets' errors are the partitions'.
		go func() { defer wg.Done(); starts, _ = adm.ListStartOffsets(ctx, names...) }()
		go func() { defer wg.Done(); ends, _ = adm.ListEndOffsets(ctx, names...) }()
		go func() {
			defer wg.Done()
			set := kadm.TopicsSet{}
			for _, d := range details {
				for p := range d.Partitions {
					set.Add(d.Topic, p)
				}
			}
			dirs, dirsErr = adm.DescribeAllLogDirs(ctx, set)
		}()
		wg.Wait()
	}
	if dirsErr != nil {
		out.SizesError = errName(dirsErr)
	}
	out.Brokers = countersJSON{AtMs: time.Now().UnixMilli(), Nodes: nonNil(counters.Nodes), MissingNodes: nonNil(counters.Missing)}
	for _, d := range details.Sorted() {
		t := &topicJSON{Name: d.Topic, ID: d.ID.String(), Internal: d.IsInternal, Partitions: []*partitionJSON{}, SizeBytes: 0}
		if d.Err != nil {
			t.Error = errName(d.Err)
		}
		c := counters.Topics[d.Topic]
		t.countsJSON.add(c)
		out.Brokers.add(c)
		for _, p := range d.Partitions.Sorted() {
			pj := &partitionJSON{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: nonNil(p.OfflineReplicas),
				StartOffset: -1, EndOffset: -1, SizeBytes: -1}
			pj.Offline = p.Leader < 0
			pj.UnderReplicated = len(p.ISR) < len(p.Replicas)
			if p.Err != nil {
				pj.Error = errName(p.Err)
			}
			if o, ok := starts.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
				pj.StartOffset = o.Offset
			} else if ok && pj.Error == "" {
				pj.Error = errName(o.Err)
			}
			if o, ok := ends.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
				pj.EndOffset = o.Offset
			} else if ok && pj.Error == "" {
				pj.Error = errName(o.Err)
			}
			if pj.StartOffset >= 0 && pj.EndOffset >= pj.StartOffset {
				t.Records += pj.EndOffset - pj.StartOffset
			}
			if _, ok := dirs[p.Leader]; ok && dirsErr == nil {
				// A partition never written to has no directory to list.
				pj.SizeBytes = 0
				for _, dir := range dirs[p.Leader] {
					if dp, ok := dir.Topics[d.Topic][p.Partition]; ok && !dp.IsFuture {
						pj.SizeBytes = dp.Size
					}
				}
			}
			if pj.SizeBytes < 0 || t.SizeBytes < 0 {
				t.SizeBytes = -1
			} else {
				t.SizeBytes += pj.SizeBytes
			}
			t.Partitions = append(t.Partitions, pj)
		}
		out.Topics = append(out.Topics, t)
	}
	return out
}

// nonNil makes a nil slice an empty one, which JSON writes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}
