package tests

import (
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestMetricsOperatorsAlertOn (issue 30): what /metrics says of the
// records that went in and out of a topic, of the lag of a classic and a
// KIP-848 consumer group on each partition, and that no series names an
// actor. One node on 127.0.10.1; /metrics scraped over HTTP and parsed
// with expfmt (broker.metrics).
func TestMetricsOperatorsAlertOn(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listen, c.Advertise, c.AdminListen = "127.0.10.1:0", "127.0.10.1:0", "127.0.10.1:0"
		c.OffsetsTopicNumPartitions = 3
		c.GroupConsumerSessionTimeoutMs, c.GroupConsumerMinSessionTimeoutMs = 2000, 1000
		c.GroupConsumerHeartbeatIntervalMs, c.GroupConsumerMinHeartbeatIntervalMs = 200, 100
	})
	ctx := ctxFor(t)
	adm := b.admin()
	const topic, perPartition = "metered-io", 20
	mustCreate(t, ctx, adm, topic, 2, nil)
	mustCreate(t, ctx, adm, "metered-gone", 1, nil)

	// 40 records of 100-byte values, one batch each, and one to a topic
	// deleted after.
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 2 * perPartition {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: noise(100)}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "metered-gone", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Two groups read every record, then commit short of the end:
	// classic at 5 and 20 (lags 15 and 0), KIP-848 at 20 and 12 (lags 0
	// and 8).
	consumed := 0
	for _, g := range []struct {
		name    string
		opts    []kgo.Opt
		commits [2]int64
	}{
		{"lag-classic", nil, [2]int64{5, 20}},
		{"lag-848", []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer())}, [2]int64{20, 12}},
	} {
		c := b.client(append(g.opts, kgo.ConsumerGroup(g.name), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		read := map[int32]int{}
		for read[0]+read[1] < 2*perPartition {
			fs := c.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
			fs.EachRecord(func(r *kgo.Record) { read[r.Partition]++ })
		}
		consumed += read[0] + read[1]
		offs := map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: g.commits[0]}, 1: {Epoch: -1, Offset: g.commits[1]}}}
		var commitErr error
		c.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							commitErr = fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
						}
					}
				}
			}
		})
		if commitErr != nil {
			t.Fatalf("%s: commit: %v", g.name, commitErr)
		}
		c.Close()
	}

	if _, err := adm.DeleteTopic(ctx, "metered-gone"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "metered-gone gone from the node's image", func() bool {
		md, err := adm.Metadata(ctx, "metered-gone")
		return err == nil && md.Topics["metered-gone"].Err != nil
	})

	mfs := b.metrics()
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		v, ok := metricValue(mfs, name, labels)
		if !ok {
			t.Fatalf("no %s%v", name, labels)
		}
		return v
	}
	byTopic := map[string]string{"topic": topic}
	// In: the records appended, and their batches' bytes, which are all
	// the log holds.
	if v := value("skein_topic_records_in_total", byTopic); v != 2*perPartition {
		t.Errorf("skein_topic_records_in_total = %v, want %d", v, 2*perPartition)
	}
	logBytes := value("skein_partition_log_size_bytes", map[string]string{"topic": topic, "partition": "0"}) +
		value("skein_partition_log_size_bytes", map[string]string{"topic": topic, "partition": "1"})
	if v := value("skein_topic_bytes_in_total", byTopic); v != logBytes {
		t.Errorf("skein_topic_bytes_in_total = %v, want the %v bytes of the log", v, logBytes)
	}
	// Out: every record each consumer read, each batch once.
	if v := value("skein_topic_records_out_total", byTopic); v != float64(consumed) {
		t.Errorf("skein_topic_records_out_total = %v, want the %d records consumed", v, consumed)
	}
	if v := value("skein_topic_bytes_out_total", byTopic); v != 2*logBytes {
		t.Errorf("skein_topic_bytes_out_total = %v, want twice the log's %v bytes (two groups read it)", v, logBytes)
	}
	t.Logf("%s: %v records and %v bytes in, %v records and %v bytes out; %d records consumed, the log %v bytes", topic,
		value("skein_topic_records_in_total", byTopic), value("skein_topic_bytes_in_total", byTopic),
		value("skein_topic_records_out_total", byTopic), value("skein_topic_bytes_out_total", byTopic), consumed, logBytes)
	// Lag per group and partition, against the end offsets (20 each).
	for _, want := range []struct {
		group          string
		partition      string
		committed, lag float64
	}{
		{"lag-classic", "0", 5, 15}, {"lag-classic", "1", 20, 0},
		{"lag-848", "0", 20, 0}, {"lag-848", "1", 12, 8},
	} {
		labels := map[string]string{"group": want.group, "topic": topic, "partition": want.partition}
		if v := value("skein_consumer_group_committed_offset", labels); v != want.committed {
			t.Errorf("skein_consumer_group_committed_offset%v = %v, want %v", labels, v, want.committed)
		}
		if v := value("skein_consumer_group_lag", labels); v != want.lag {
			t.Errorf("skein_consumer_group_lag%v = %v, want %v", labels, v, want.lag)
		}
	}
	// Requests by API name; errors only for codes other than 0.
	if v := value("skein_requests_total", map[string]string{"api": "Produce"}); v < 2*perPartition {
		t.Errorf("skein_requests_total{api=Produce} = %v, want at least %d", v, 2*perPartition)
	}
	// Bounded: no series names an actor, none is left of the deleted
	// topic, no error series counts successes.
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "actor", strings.HasPrefix(l.GetValue(), "node/"):
					t.Errorf("%s%s names an actor", name, labelString(m))
				case l.GetName() == "topic" && l.GetValue() == "metered-gone":
					t.Errorf("%s%s: the topic is deleted", name, labelString(m))
				case name == "skein_request_errors_total" && l.GetName() == "error" && (l.GetValue() == "0" || l.GetValue() == "NONE"):
					t.Errorf("%s%s counts successes", name, labelString(m))
				}
			}
		}
	}
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
