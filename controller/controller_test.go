package controller

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

type harness struct {
	t      *testing.T
	sys    *actor.ActorSystem
	pid    *actor.PID
	cfg    Config
	latest atomic.Pointer[image.Image]
}

func newHarness(t *testing.T, fs vfs.FS) *harness {
	h := &harness{t: t, sys: actors.NewSystem(zerolog.Nop())}
	h.cfg = Config{
		NodeID: 1, Broker: image.Broker{ID: 1, Host: "127.0.0.1", Port: 9092},
		Dir: "/data/__cluster_metadata-0", FS: fs, Clock: clock.Real,
		Node: configs.Default(), Logger: zerolog.Nop(),
		Publish: func(im *image.Image) { h.latest.Store(im) },
		// A refused registration would wait out the session: a test
		// that waits for one fails instead.
		SessionTimeout: time.Hour,
	}
	h.spawn()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) spawn() {
	h.cfg.Incarnation++
	pid, err := h.sys.Root.SpawnNamed(Props(h.cfg), "controller")
	if err != nil {
		h.t.Fatal(err)
	}
	h.pid = pid
}

func (h *harness) stop() {
	if h.pid != nil {
		h.sys.Root.StopFuture(h.pid).Wait()
		h.pid = nil
	}
}

func (h *harness) ask(m any) any {
	h.t.Helper()
	res, err := actors.Ask(h.sys, h.pid, m, 10*time.Second)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func TestCreateTopicsValidationAndRestart(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := newHarness(t, fs)
	res := h.ask(&CreateTopics{Topics: []NewTopic{
		{Name: "orders", NumPartitions: 3, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "defaults", NumPartitions: -1, ReplicationFactor: -1},
		{Name: "bad/name", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "zero", NumPartitions: 0, ReplicationFactor: 1},
		{Name: "rf", NumPartitions: 1, ReplicationFactor: 3},
		{Name: "cfg", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "soon"}},
		{Name: "my.topic", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "my_topic", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "twice", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "twice", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "__cluster_metadata", NumPartitions: 1, ReplicationFactor: 1},
	}}).(*CreateTopicsResult)
	want := []*kerr.Error{nil, nil, kerr.InvalidTopicException, kerr.InvalidPartitions, kerr.InvalidReplicationFactor, kerr.InvalidConfig, nil, kerr.InvalidTopicException, kerr.InvalidRequest, kerr.InvalidRequest, kerr.InvalidRequest}
	for i, r := range res.Topics {
		if r.Err != want[i] {
			t.Errorf("%s: got %v (%s), want %v", r.Name, r.Err, r.Message, want[i])
		}
	}
	again := h.ask(&CreateTopics{Topics: []NewTopic{{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}}}).(*CreateTopicsResult)
	if again.Topics[0].Err != kerr.TopicAlreadyExists {
		t.Fatalf("creating orders again: %v", again.Topics[0].Err)
	}
	im := h.latest.Load()
	if got := len(im.Topic("orders").Partitions); got != 3 {
		t.Fatalf("orders has %d partitions", got)
	}
	if im.Topic("defaults") == nil || len(im.Topic("defaults").Partitions) != 1 {
		t.Fatal("topic with num.partitions default not created")
	}
	id := im.Topic("orders").ID

	// Everything is in the metadata log: a restart replays it.
	h.stop()
	h.latest.Store(nil)
	h.spawn()
	h.ask(&AllocateProducerIDs{}) // a round trip: start has published by now
	im = h.latest.Load()
	if im.Topic("orders") == nil || im.Topic("orders").ID != id || im.Topic("orders").Configs["cleanup.policy"] != "compact" {
		t.Fatalf("after restart: %+v", im.Topic("orders"))
	}
	if im.Brokers[1].Port != 9092 || im.ClusterID == "" {
		t.Fatalf("broker registration lost: %+v %q", im.Brokers, im.ClusterID)
	}
	// The restarted node registers its new incarnation at once: its old
	// one is not taken for another live node with its id.
	deadline := time.Now().Add(30 * time.Second)
	for h.latest.Load().Brokers[1].Incarnation != h.cfg.Incarnation {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node's incarnation %d is not registered: %+v", h.cfg.Incarnation, h.latest.Load().Brokers[1])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProducerIDBlocksNeverReused(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := newHarness(t, fs)
	a := h.ask(&AllocateProducerIDs{}).(*AllocateProducerIDsResult)
	b := h.ask(&AllocateProducerIDs{}).(*AllocateProducerIDsResult)
	h.stop()
	// A crash keeps what was synced: every block was synced before it was
	// handed out.
	h.cfg.FS = fs.CrashClone(vfs.CrashOptions{})
	h.spawn()
	c := h.ask(&AllocateProducerIDs{}).(*AllocateProducerIDsResult)
	if a.Err != nil || b.First < a.First+a.Size || c.First < b.First+b.Size {
		t.Fatalf("blocks overlap: %+v %+v %+v", a, b, c)
	}
}

func TestAlterConfigsAndPartitions(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	h.ask(&CreateTopics{Topics: []NewTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}})
	v := func(s string) *string { return &s }
	res := h.ask(&AlterConfigs{Incremental: true, Resources: []ConfigResource{
		{Type: image.ResourceTopic, Name: "t", Ops: []ConfigOp{{Name: "retention.ms", Op: OpSet, Value: v("1000")}, {Name: "cleanup.policy", Op: OpAppend, Value: v("compact")}}},
		{Type: image.ResourceTopic, Name: "missing", Ops: []ConfigOp{{Name: "retention.ms", Op: OpSet, Value: v("1")}}},
	}}).(*AlterConfigsResult)
	if res.Resources[0].Err != nil || res.Resources[1].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("%+v", res.Resources)
	}
	res = h.ask(&AlterConfigs{Incremental: true, Resources: []ConfigResource{
		{Type: image.ResourceTopic, Name: "t", Ops: []ConfigOp{{Name: "retention.ms", Op: OpAppend, Value: v("1")}}},
	}}).(*AlterConfigsResult)
	if res.Resources[0].Err != kerr.InvalidConfig {
		t.Fatalf("append to a non-list: %+v", res.Resources)
	}
	cfg := h.latest.Load().Topic("t").Configs
	if cfg["retention.ms"] != "1000" || cfg["cleanup.policy"] != "delete,compact" {
		t.Fatalf("configs %v", cfg)
	}
	// A non-incremental AlterConfigs replaces the set.
	h.ask(&AlterConfigs{Resources: []ConfigResource{{Type: image.ResourceTopic, Name: "t", Ops: []ConfigOp{{Name: "segment.ms", Value: v("5000")}}}}})
	if cfg := h.latest.Load().Topic("t").Configs; len(cfg) != 1 || cfg["segment.ms"] != "5000" {
		t.Fatalf("configs after AlterConfigs: %v", cfg)
	}
	pr := h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 4}, {Name: "u", Count: 2}, {Name: "u", Count: 3}}}).(*CreatePartitionsResult)
	if pr.Topics[0].Err != nil || pr.Topics[1].Err != kerr.InvalidRequest || pr.Topics[2].Err != kerr.InvalidRequest {
		t.Fatalf("%+v", pr.Topics)
	}
	pr = h.ask(&CreatePartitions{Topics: []PartitionCount{{Name: "t", Count: 2}}}).(*CreatePartitionsResult)
	if pr.Topics[0].Err != kerr.InvalidPartitions {
		t.Fatalf("%+v", pr.Topics)
	}
	if n := len(h.latest.Load().Topic("t").Partitions); n != 4 {
		t.Fatalf("%d partitions", n)
	}
	dr := h.ask(&DeleteTopics{Names: []string{"t", "nope"}}).(*DeleteTopicsResult)
	if dr.Topics[0].Err != nil || dr.Topics[1].Err != kerr.UnknownTopicOrPartition || h.latest.Load().Topic("t") != nil {
		t.Fatalf("%+v", dr.Topics)
	}
}
