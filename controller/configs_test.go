package controller

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/vfs"
)

// TestAlterBrokerConfigs: dynamic broker configs, cluster-wide (resource
// name "") and per broker, are validated as Kafka does, stored in the
// image, and survive a restart.
func TestAlterBrokerConfigs(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	v := func(s string) *string { return &s }
	set := func(name, value string) ConfigOp { return ConfigOp{Name: name, Op: OpSet, Value: v(value)} }
	broker := func(name string, ops ...ConfigOp) ConfigResource {
		return ConfigResource{Type: image.ResourceBroker, Name: name, Ops: ops}
	}
	alter := func(incremental, validateOnly bool, rs ...ConfigResource) []ConfigResult {
		t.Helper()
		return h.ask(&AlterConfigs{Incremental: incremental, ValidateOnly: validateOnly, Resources: rs}).(*AlterConfigsResult).Resources
	}

	res := alter(true, false,
		broker("", set("log.retention.ms", "60000"), ConfigOp{Name: "log.cleanup.policy", Op: OpAppend, Value: v("compact")}),
		broker("01", set("message.max.bytes", "2048")),
		broker("abc", set("message.max.bytes", "1")),
	)
	want := []*kerr.Error{nil, nil, kerr.InvalidRequest}
	for i, r := range res {
		if r.Err != want[i] {
			t.Errorf("resource %d (%q): %v %s, want %v", i, r.Name, r.Err, r.Message, want[i])
		}
	}
	im := h.latest.Load()
	if im.BrokerConfigs["log.retention.ms"] != "60000" || im.BrokerConfigs["log.cleanup.policy"] != "delete,compact" {
		t.Errorf("cluster-wide configs %v", im.BrokerConfigs)
	}
	if im.PerBrokerConfigs[1]["message.max.bytes"] != "2048" {
		t.Errorf("per-broker configs %v", im.PerBrokerConfigs)
	}

	for _, tc := range []struct {
		name string
		op   ConfigOp
		want *kerr.Error
	}{
		{"static key", set("num.partitions", "3"), kerr.InvalidRequest},
		{"static alias", set("log.retention.hours", "1"), kerr.InvalidRequest},
		{"unknown key", set("no.such.config", "1"), kerr.InvalidConfig},
		{"topic name", set("retention.ms", "1"), kerr.InvalidConfig},
		// A bad broker value is an invalid request in Kafka 4.2, as
		// tests/diff found; a bad topic value an invalid config.
		{"bad value", set("log.retention.ms", "soon"), kerr.InvalidRequest},
		{"zero retention", set("log.retention.ms", "0"), kerr.InvalidRequest},
		{"append to a non-list", ConfigOp{Name: "message.max.bytes", Op: OpAppend, Value: v("1")}, kerr.InvalidConfig},
		{"null value", ConfigOp{Name: "message.max.bytes", Op: OpSet}, kerr.InvalidRequest},
		{"unknown op", ConfigOp{Name: "message.max.bytes", Op: 9, Value: v("1")}, kerr.InvalidRequest},
	} {
		if r := alter(true, false, broker("", tc.op))[0]; r.Err != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, r.Err, r.Message, tc.want)
		}
	}
	if r := alter(true, false, broker("", set("message.max.bytes", "1"), set("message.max.bytes", "2")))[0]; r.Err != kerr.InvalidRequest {
		t.Errorf("duplicate keys: %v", r.Err)
	}
	if r := alter(true, false, broker(""), broker(""))[0]; r.Err != kerr.InvalidRequest {
		t.Errorf("duplicate resources: %v", r.Err)
	}
	if r := alter(true, true, broker("", set("message.max.bytes", "10")))[0]; r.Err != nil {
		t.Errorf("validate only: %v", r.Err)
	}
	if got := h.latest.Load().BrokerConfigs["message.max.bytes"]; got != "" {
		t.Errorf("validate only stored message.max.bytes=%s", got)
	}
	if got := h.latest.Load(); got.BrokerConfigs["log.retention.ms"] != "60000" {
		t.Errorf("a refused change altered the configs: %v", got.BrokerConfigs)
	}

	// Deleting the last per-broker config drops the broker's entry; a
	// non-incremental AlterConfigs replaces the whole set.
	alter(true, false, broker("1", ConfigOp{Name: "message.max.bytes", Op: OpDelete}))
	if _, ok := h.latest.Load().PerBrokerConfigs[1]; ok {
		t.Errorf("per-broker configs after deleting the last: %v", h.latest.Load().PerBrokerConfigs)
	}
	if r := alter(false, false, broker("", set("log.segment.bytes", "1048576")))[0]; r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	if got := h.latest.Load().BrokerConfigs; len(got) != 1 || got["log.segment.bytes"] != "1048576" {
		t.Errorf("after AlterConfigs: %v", got)
	}
	alter(true, false, broker("1", set("min.insync.replicas", "2")))

	h.stop()
	h.spawn()
	h.ask(&AllocateProducerIDs{}) // a round trip: start has published by now
	im = h.latest.Load()
	if im.BrokerConfigs["log.segment.bytes"] != "1048576" || im.PerBrokerConfigs[1]["min.insync.replicas"] != "2" {
		t.Errorf("after restart: %v %v", im.BrokerConfigs, im.PerBrokerConfigs)
	}
}

// TestAlterGroupConfigs: KIP-848 and share group configs, on any group id but "",
// within the node's bounds, stored in the image, deleted to nothing, and
// surviving a restart.
func TestAlterGroupConfigs(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	v := func(s string) *string { return &s }
	group := func(name string, ops ...ConfigOp) ConfigResource {
		return ConfigResource{Type: image.ResourceGroup, Name: name, Ops: ops}
	}
	alter := func(rs ...ConfigResource) []ConfigResult {
		t.Helper()
		return h.ask(&AlterConfigs{Incremental: true, Resources: rs}).(*AlterConfigsResult).Resources
	}
	res := alter(
		group("readers", ConfigOp{Name: "consumer.session.timeout.ms", Op: OpSet, Value: v("50000")}),
		group("", ConfigOp{Name: "consumer.session.timeout.ms", Op: OpSet, Value: v("50000")}),
		group("slow", ConfigOp{Name: "consumer.session.timeout.ms", Op: OpSet, Value: v("90000")}),
		group("odd", ConfigOp{Name: "share.session.timeout.ms", Op: OpSet, Value: v("90000")}), // above group.share.max.session.timeout.ms
		group("brief", ConfigOp{Name: "consumer.heartbeat.interval.ms", Op: OpSet, Value: v("6000")}),
	)
	want := []*kerr.Error{nil, kerr.InvalidRequest, kerr.InvalidConfig, kerr.InvalidConfig, nil}
	for i, r := range res {
		if r.Err != want[i] {
			t.Errorf("resource %d (%q): %v %s, want %v", i, r.Name, r.Err, r.Message, want[i])
		}
	}
	alter(group("brief", ConfigOp{Name: "consumer.heartbeat.interval.ms", Op: OpDelete}))
	im := h.latest.Load()
	if len(im.GroupConfigs) != 1 || im.GroupConfigs["readers"]["consumer.session.timeout.ms"] != "50000" {
		t.Errorf("group configs %v", im.GroupConfigs)
	}
	h.stop()
	h.spawn()
	h.ask(&AllocateProducerIDs{}) // a round trip: start has published by now
	if got := h.latest.Load().GroupConfigs; got["readers"]["consumer.session.timeout.ms"] != "50000" {
		t.Errorf("after restart: %v", got)
	}
}

// TestCreatePartitionsAssignments: new partitions keep the topic's
// replication factor.
func TestCreatePartitionsAssignments(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	h.ask(&CreateTopics{Topics: []NewTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}})
	res := h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 3, Assignments: [][]int32{{1}}}}}).(*CreatePartitionsResult)
	if res.Topics[0].Err != kerr.InvalidReplicaAssignment {
		t.Errorf("too few assignments: %v", res.Topics[0].Err)
	}
	res = h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: math.MaxInt32}}}).(*CreatePartitionsResult)
	if res.Topics[0].Err != kerr.InvalidPartitions {
		t.Errorf("2^31-1 partitions: %v", res.Topics[0].Err)
	}
	ct := h.ask(&CreateTopics{Topics: []NewTopic{{Name: "huge", NumPartitions: math.MaxInt32, ReplicationFactor: 1}}}).(*CreateTopicsResult)
	if ct.Topics[0].Err != kerr.InvalidPartitions {
		t.Errorf("a topic of 2^31-1 partitions: %v", ct.Topics[0].Err)
	}
	res = h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 2, Assignments: [][]int32{{7}}}}}).(*CreatePartitionsResult)
	if res.Topics[0].Err != kerr.InvalidReplicaAssignment {
		t.Errorf("unknown broker: %v", res.Topics[0].Err)
	}
	res = h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 2, Assignments: [][]int32{{1}}}}, ValidateOnly: true}).(*CreatePartitionsResult)
	if res.Topics[0].Err != nil || len(h.latest.Load().Topic("t").Partitions) != 1 {
		t.Errorf("validate only: %v, %d partitions", res.Topics[0].Err, len(h.latest.Load().Topic("t").Partitions))
	}
	res = h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 2, Assignments: [][]int32{{1}}}}}).(*CreatePartitionsResult)
	if res.Topics[0].Err != nil || len(h.latest.Load().Topic("t").Partitions) != 2 {
		t.Errorf("with an assignment: %v", res.Topics[0].Err)
	}
}
