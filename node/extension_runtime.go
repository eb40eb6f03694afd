package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/extension"
	// The kinds Skein ships register themselves.
	_ "github.com/skeinlog/skein/extension/library"
)

// extensionClient is what the node's extension actors ask of the cluster
// through Kafka's protocol: their positions, which are a consumer group's
// committed offsets (so that Kafka's tools show an instance's lag), and
// what a target partition holds of their output (DescribeProducers). It is
// a franz-go client of the node's own listener, made on first use; the
// records themselves go through the partitions' appends actors.
//
// Concurrency: safe for concurrent use.
type extensionClient struct {
	n    *Node
	once sync.Once
	cl   *kgo.Client
	adm  *kadm.Client
	err  error
}

// seed is the address of the node's own inter-broker Kafka listener.
func (e *extensionClient) seed() string {
	ep := e.n.kafka.endpoints()[0]
	host, port := ep.Host, ep.Port
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func (e *extensionClient) client() (*kadm.Client, error) {
	e.once.Do(func() {
		e.cl, e.err = kgo.NewClient(kgo.SeedBrokers(e.seed()), kgo.ClientID("skein-extensions"), kgo.MetadataMinAge(250*time.Millisecond))
		if e.err == nil {
			e.adm = kadm.NewClient(e.cl)
		}
	})
	return e.adm, e.err
}

func (e *extensionClient) close() {
	if e.cl != nil {
		e.cl.Close()
	}
}

func (e *extensionClient) Fetch(ctx context.Context, group, topic string, p int32) (int64, string, bool, error) {
	adm, err := e.client()
	if err != nil {
		return 0, "", false, err
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, "", false, err
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.At < 0 {
		return 0, "", false, nil
	}
	if o.Err != nil {
		return 0, "", false, o.Err
	}
	return o.At, o.Metadata, true, nil
}

func (e *extensionClient) Commit(ctx context.Context, group, topic string, p int32, offset int64, metadata string) error {
	adm, err := e.client()
	if err != nil {
		return err
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: p, At: offset, LeaderEpoch: -1, Metadata: metadata})
	res, err := adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return err
	}
	return res.Error()
}

// Read reads a partition to its high watermark as a read_committed
// reader would see it, but to the end whatever transactions are open: it
// reads uncommitted with the control records, applies a transaction's
// records at its commit marker, drops them at its abort marker, and drops
// those of a transaction still open at the end.
func (e *extensionClient) Read(ctx context.Context, topic string, p int32, fn func(key, value []byte, headers []extension.Header)) error {
	adm, err := e.client()
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	end, ok := ends.Lookup(topic, p)
	switch {
	case !ok:
		return fmt.Errorf("no end offset for %s-%d", topic, p)
	case end.Err != nil:
		return end.Err
	case end.Offset == 0:
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seed()), kgo.ClientID("skein-extensions"), kgo.MetadataMinAge(250*time.Millisecond), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	apply := func(r *kgo.Record) {
		hs := make([]extension.Header, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = extension.Header{Key: h.Key, Value: h.Value}
		}
		fn(r.Key, r.Value, hs)
	}
	open := map[int64][]*kgo.Record{} // by producer id: an open transaction's records
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done {
				return
			}
			done = r.Offset+1 >= end.Offset
			switch {
			case r.Attrs.IsControl():
				// The marker's key: version, then type (1 commit).
				if len(r.Key) >= 4 && r.Key[3] == 1 {
					for _, x := range open[r.ProducerID] {
						apply(x)
					}
				}
				delete(open, r.ProducerID)
			case r.Attrs.IsTransactional():
				open[r.ProducerID] = append(open[r.ProducerID], r)
			default:
				apply(r)
			}
		})
		if done {
			return nil
		}
	}
}

func (e *extensionClient) LastSequence(ctx context.Context, topic string, p int32, producerID int64) (int32, bool, error) {
	adm, err := e.client()
	if err != nil {
		return 0, false, err
	}
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		return 0, false, err
	}
	dp, ok := described[topic].Partitions[p]
	if !ok {
		return 0, false, fmt.Errorf("no answer for %s-%d", topic, p)
	}
	if dp.Err != nil {
		return 0, false, dp.Err
	}
	for _, s := range dp.ActiveProducers {
		if s.ProducerID == producerID {
			return s.LastSequence, true, nil
		}
	}
	return 0, false, nil
}

// extensionCluster is extension.Cluster on this node.
type extensionCluster struct{ n *Node }

func (c extensionCluster) Partitions(topic string) int32 {
	if t := c.n.image.Load().Topic(topic); t != nil {
		return int32(len(t.Partitions))
	}
	return 0
}

func (c extensionCluster) CreateTopic(name string, partitions int32, configs map[string]string) error {
	cmd := &controller.CreateTopics{Topics: []controller.NewTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: -1, Configs: configs}}}
	res, err := actors.Ask(c.n.sys, c.n.children.Load().controller, cmd, 30*time.Second)
	if err != nil {
		return err
	}
	r := res.(*controller.CreateTopicsResult).Topics[0]
	if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s: %s: %s", name, r.Err.Message, r.Message)
	}
	return nil
}

func (c extensionCluster) Producer(id int64) (extension.Producer, bool) {
	pc, ok := c.n.producerClients.Lookup(id)
	return extension.Producer{ClientID: pc.ClientID, Address: pc.Address}, ok
}

func (c extensionCluster) Bootstrap() []string { return []string{c.n.extClient.seed()} }

// highWatermark returns a hosted partition's high watermark.
func (n *Node) highWatermark(topic string, p int32) (int64, bool) {
	h := n.registry.Get(topic, p)
	if h == nil {
		return 0, false
	}
	if v := h.View(); v != nil && v.Log != nil {
		return v.Log.HighWatermark, true
	}
	return 0, false
}

// extensionProducerID takes a producer id for an extension's output.
func (n *Node) extensionProducerID() (int64, error) {
	id, err := n.producerIDs.take()
	if err != nil {
		return -1, err
	}
	return id, nil
}

var _ extension.Positions = (*extensionClient)(nil)

// extensionCollector reports the extension instances' work on this node.
type extensionCollector struct{ rt *extension.Runtime }

var (
	extProcessedDesc = prometheus.NewDesc("skein_extension_records_processed_total",
		"Source records an extension instance processed on this node.", []string{"instance", "kind"}, nil)
	extEmittedDesc = prometheus.NewDesc("skein_extension_records_emitted_total",
		"Records an extension instance wrote from this node.", []string{"instance", "kind"}, nil)
	extSkippedDesc = prometheus.NewDesc("skein_extension_records_skipped_total",
		"Output records an extension instance did not write again after a restart or a failover, because their target had them.", []string{"instance", "kind"}, nil)
	extRestartsDesc = prometheus.NewDesc("skein_extension_restarts_total",
		"Restarts of an extension instance's actors on this node, whatever failed.", []string{"instance", "kind"}, nil)
	extLagDesc = prometheus.NewDesc("skein_extension_lag",
		"Source records an extension instance has not processed yet, over the source partitions this node leads.", []string{"instance", "kind"}, nil)
	extPartitionsDesc = prometheus.NewDesc("skein_extension_partitions",
		"Source partitions an extension instance processes on this node, by state (loading, running, waiting, parked).", []string{"instance", "kind", "state"}, nil)
)

func (c extensionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{extProcessedDesc, extEmittedDesc, extSkippedDesc, extRestartsDesc, extLagDesc, extPartitionsDesc} {
		ch <- d
	}
}

func (c extensionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.rt.Totals() {
		for d, v := range map[*prometheus.Desc]int64{extProcessedDesc: t.Processed, extEmittedDesc: t.Emitted, extSkippedDesc: t.Skipped, extRestartsDesc: t.Restarts} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), t.Instance, t.Kind)
		}
	}
	type key struct{ instance, kind, state string }
	lag, states := map[[2]string]int64{}, map[key]int{}
	for _, s := range c.rt.Statuses() {
		lag[[2]string{s.Instance, s.Kind}] += s.Lag
		states[key{s.Instance, s.Kind, s.State}]++
	}
	for k, v := range lag {
		ch <- prometheus.MustNewConstMetric(extLagDesc, prometheus.GaugeValue, float64(v), k[0], k[1])
	}
	for k, v := range states {
		ch <- prometheus.MustNewConstMetric(extPartitionsDesc, prometheus.GaugeValue, float64(v), k.instance, k.kind, k.state)
	}
}
