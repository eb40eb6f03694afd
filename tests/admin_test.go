package tests

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin APIs of issue 3 through kadm (and raw kmsg requests where kadm
// has no helper): DeleteTopics, CreatePartitions, DeleteRecords,
// OffsetForLeaderEpoch, DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs, DescribeCluster, DescribeLogDirs.

// eventually polls cond until it holds or a minute passes: the fallback
// for conditions no event announces to a client (retention running on the
// partition's own tick, a partition loading after its topic was created, a
// metric counted when an actor gets to it).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noise returns n bytes that do not compress, so that a batch's size on the
// wire is what the test means it to be whatever codec the client picks.
func noise(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n)})
	r.Read(b)
	return b
}

func produce(t *testing.T, ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) kgo.ProduceResults {
	t.Helper()
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return res
}

// request sends a raw request to broker 1, the node under test.
func request[R kmsg.Response](t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

// startOffset returns a partition's log start offset, or -1 while the
// partition cannot answer (still loading).
func startOffset(ctx context.Context, adm *kadm.Client, topic string, p int32) int64 {
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.Err != nil {
		return -1
	}
	return o.Offset
}

// consumeFrom reads n records of one partition from offset.
func consumeFrom(t *testing.T, ctx context.Context, b *broker, topic string, p int32, offset int64, n int) []*kgo.Record {
	t.Helper()
	c := b.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}))
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s/%d: %v", topic, p, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// mustCreate creates a topic and waits until its partitions have loaded:
// CreateTopics answers once the topic is committed, and a client whose
// first produce meets a partition still loading waits for its next
// metadata refresh (kgo: 5 s), which would only slow the tests down.
func mustCreate(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, partitions int32, cfg map[string]*string) {
	t.Helper()
	if _, err := adm.CreateTopic(ctx, partitions, 1, cfg, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLoaded(t, ctx, adm, topic, partitions)
}

// waitLoaded waits until the first n partitions of topic answer ListOffsets.
func waitLoaded(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, n int32) {
	t.Helper()
	for p := range n {
		eventually(t, fmt.Sprintf("%s/%d to load", topic, p), func() bool { return startOffset(ctx, adm, topic, p) >= 0 })
	}
}

// TestDeleteTopicsAndRecreate: a deleted topic is gone; created again under
// the same name it starts empty; deleting by topic id (v6) works; bad
// requests get Kafka's codes.
func TestDeleteTopicsAndRecreate(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "life", 2, nil)
	p := b.client(kgo.DefaultProduceTopic("life"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, ctx, p, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("old-%d", i))})
	}

	resp, err := adm.DeleteTopic(ctx, "life")
	if err != nil || resp.Err != nil {
		t.Fatalf("delete: %v %v", err, resp.Err)
	}
	// NB: metadata through fresh clients, since kgo answers a Metadata
	// request from what it learnt lately.
	if md, err := b.admin().Metadata(ctx, "life"); err != nil || md.Topics["life"].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("metadata after delete: %v %+v", err, md.Topics["life"])
	}
	again, err := adm.DeleteTopics(ctx, "life")
	if err != nil || !errors.Is(again["life"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting again: %v %+v", err, again)
	}

	// Created again: empty, and a new record takes offset 0 in each partition.
	mustCreate(t, ctx, adm, "life", 2, nil)
	p2 := b.client(kgo.DefaultProduceTopic("life"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for part := range int32(2) {
		res := produce(t, ctx, p2, &kgo.Record{Partition: part, Value: []byte("new")})
		if res[0].Record.Offset != 0 {
			t.Errorf("partition %d of the recreated topic: first record at offset %d", part, res[0].Record.Offset)
		}
		got := consumeFrom(t, ctx, b, "life", part, 0, 1)
		if got[0].Offset != 0 || string(got[0].Value) != "new" {
			t.Errorf("partition %d of the recreated topic starts with %q at %d", part, got[0].Value, got[0].Offset)
		}
	}
	eventually(t, "the old partitions' directories to be removed", func() bool {
		matches, _ := filepath.Glob(filepath.Join(b.cfg.DataDir, "life-*-delete"))
		return len(matches) == 0
	})

	// By topic id (v6), with the errors of a bad request.
	md, err := b.admin().Metadata(ctx, "life")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["life"].ID
	cl := b.client()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = id
	unknownID := kmsg.NewDeleteTopicsRequestTopic()
	unknownID.TopicID = [16]byte{1, 2, 3}
	both := kmsg.NewDeleteTopicsRequestTopic()
	both.Topic, both.TopicID = kmsg.StringPtr("x"), [16]byte{9}
	neither := kmsg.NewDeleteTopicsRequestTopic()
	twice := kmsg.NewDeleteTopicsRequestTopic()
	twice.Topic = kmsg.StringPtr("twice")
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, unknownID, both, neither, twice, twice}
	dr := request[*kmsg.DeleteTopicsResponse](t, ctx, cl, req)
	want := []int16{0, kerr.UnknownTopicID.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	if len(dr.Topics) != len(want) {
		t.Fatalf("%d answers to %d topics", len(dr.Topics), len(want))
	}
	for i, rt := range dr.Topics {
		if rt.ErrorCode != want[i] {
			t.Errorf("topic %d: code %d, want %d", i, rt.ErrorCode, want[i])
		}
	}
	if dr.Topics[0].Topic == nil || *dr.Topics[0].Topic != "life" || dr.Topics[0].TopicID != id {
		t.Errorf("delete by id answered %+v", dr.Topics[0])
	}
	if md, _ := b.admin().Metadata(ctx, "life"); md.Topics["life"].Err != kerr.UnknownTopicOrPartition {
		t.Errorf("topic deleted by id still there: %+v; answered %+v", md.Topics["life"], dr.Topics)
	}
}

// TestCreatePartitions: new partitions take records; validate-only adds
// none; lowering the count and unknown topics are refused.
func TestCreatePartitions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "grow", 1, nil)

	if r, err := adm.ValidateCreatePartitions(ctx, 5, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("validate only: %v %+v", err, r)
	}
	r, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || r["grow"].Err != nil {
		t.Fatalf("create partitions: %v %+v", err, r)
	}
	md, err := b.admin().Metadata(ctx, "grow")
	if err != nil || len(md.Topics["grow"].Partitions) != 3 {
		t.Fatalf("after adding 2 (validate-only added none): %v %d partitions", err, len(md.Topics["grow"].Partitions))
	}
	if r, err := adm.UpdatePartitions(ctx, 2, "grow"); err != nil || !errors.Is(r["grow"].Err, kerr.InvalidPartitions) {
		t.Errorf("lowering the count: %v %+v", err, r)
	}

	// Unknown topics and a topic named twice: raw, since kadm checks
	// metadata first.
	req := kmsg.NewPtrCreatePartitionsRequest()
	for _, name := range []string{"nope", "grow", "grow", "huge"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, 10
		req.Topics = append(req.Topics, rt)
	}
	req.Topics[3].Count = math.MaxInt32
	mustCreate(t, ctx, adm, "huge", 1, nil)
	cr := request[*kmsg.CreatePartitionsResponse](t, ctx, b.client(), req)
	// The topic named twice is answered once, as Kafka answers it.
	codes := map[string][]int16{}
	for _, rt := range cr.Topics {
		codes[rt.Topic] = append(codes[rt.Topic], rt.ErrorCode)
	}
	want := map[string][]int16{"nope": {kerr.UnknownTopicOrPartition.Code}, "grow": {kerr.InvalidRequest.Code}, "huge": {kerr.InvalidPartitions.Code}}
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("error codes by topic: %v, want %v", codes, want)
	}

	// A fresh client sees three partitions; the new one takes records.
	waitLoaded(t, ctx, adm, "grow", 3)
	p := b.client(kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := produce(t, ctx, p, &kgo.Record{Partition: 2, Value: []byte("in the new partition")})
	if res[0].Record.Partition != 2 || res[0].Record.Offset != 0 {
		t.Fatalf("produced to %d at %d", res[0].Record.Partition, res[0].Record.Offset)
	}
	got := consumeFrom(t, ctx, b, "grow", 2, 0, 1)
	if string(got[0].Value) != "in the new partition" {
		t.Fatalf("consumed %q", got[0].Value)
	}
}

// TestDeleteRecords: the low watermark moves, consumers start there, and an
// offset past the high watermark is refused.
func TestDeleteRecords(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "trim", 1, nil)
	p := b.client(kgo.DefaultProduceTopic("trim"))
	for i := range 10 {
		produce(t, ctx, p, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 4})
	r, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := r.Lookup("trim", 0); d.Err != nil || d.LowWatermark != 4 {
		t.Fatalf("delete records to 4: %+v", d)
	}
	if got := startOffset(ctx, adm, "trim", 0); got != 4 {
		t.Fatalf("log start offset %d, want 4", got)
	}
	c := b.client(kgo.ConsumeTopics("trim"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := c.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 4 || string(recs[0].Value) != "4" {
		t.Fatalf("consuming from the start: %v", recs)
	}

	// Below the low watermark: nothing changes.
	offs = nil
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 2})
	r, err = adm.DeleteRecords(ctx, offs)
	if d, _ := r.Lookup("trim", 0); err != nil || d.Err != nil || d.LowWatermark != 4 {
		t.Fatalf("delete records below the low watermark: %v %+v", err, d)
	}

	// Raw, for the codes kadm folds away: past the high watermark, -1 (the
	// high watermark), an unknown topic.
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "trim"
	for _, off := range []int64{11, -7, 0} {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = off
		rt.Partitions = append(rt.Partitions, rp)
	}
	rt.Partitions[2].Partition = 5 // no such partition
	unknown := kmsg.NewDeleteRecordsRequestTopic()
	unknown.Topic = "nope"
	unknown.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{kmsg.NewDeleteRecordsRequestTopicPartition()}
	req.Topics = []kmsg.DeleteRecordsRequestTopic{rt, unknown}
	dr := request[*kmsg.DeleteRecordsResponse](t, ctx, b.client(), req)
	for i, want := range []*kerr.Error{kerr.OffsetOutOfRange, kerr.OffsetOutOfRange, kerr.UnknownTopicOrPartition} {
		if got := dr.Topics[0].Partitions[i]; got.ErrorCode != want.Code || got.LowWatermark != -1 {
			t.Errorf("partition %d offset %d: code %d low watermark %d, want %v", rt.Partitions[i].Partition, rt.Partitions[i].Offset, got.ErrorCode, got.LowWatermark, want)
		}
	}
	if got := dr.Topics[1].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: code %d", got)
	}

	offs = nil
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: -1})
	r, err = adm.DeleteRecords(ctx, offs)
	if d, _ := r.Lookup("trim", 0); err != nil || d.Err != nil || d.LowWatermark != 10 {
		t.Fatalf("delete records to the high watermark: %v %+v", err, d)
	}
	b.restart()
	adm = b.admin()
	waitLoaded(t, ctx, adm, "trim", 1)
	if got := startOffset(ctx, adm, "trim", 0); got != 10 {
		t.Fatalf("log start offset after restart: %d, want 10", got)
	}
}

// TestOffsetForLeaderEpoch: the end offset of the current epoch is the log
// end; epochs newer than the leader's are refused (KIP-320).
func TestOffsetForLeaderEpoch(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "epochs", 1, nil)
	p := b.client(kgo.DefaultProduceTopic("epochs"))
	for i := range 7 {
		produce(t, ctx, p, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	var req kadm.OffsetForLeaderEpochRequest
	req.Add("epochs", 0, 0)
	res, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := res["epochs"][0]; got.Err != nil || got.LeaderEpoch != 0 || got.EndOffset != 7 {
		t.Fatalf("epoch 0: %+v", got)
	}

	raw := kmsg.NewPtrOffsetForLeaderEpochRequest()
	raw.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "epochs"
	for _, current := range []int32{-1, 0, 5, -1} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, 0
		rt.Partitions = append(rt.Partitions, rp)
	}
	rt.Partitions[3].Partition = 9 // no such partition
	unknown := kmsg.NewOffsetForLeaderEpochRequestTopic()
	unknown.Topic = "nope"
	unknown.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{kmsg.NewOffsetForLeaderEpochRequestTopicPartition()}
	raw.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt, unknown}
	resp := request[*kmsg.OffsetForLeaderEpochResponse](t, ctx, b.client(), raw)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].EndOffset != 7 || ps[1].ErrorCode != 0 || ps[1].EndOffset != 7 {
		t.Errorf("current epoch unknown or 0: %+v", ps[:2])
	}
	if ps[2].ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("current epoch 5 (newer than ours): code %d", ps[2].ErrorCode)
	}
	if ps[3].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 9 of a topic of one: code %d", ps[3].ErrorCode)
	}
	if got := resp.Topics[1].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: code %d", got)
	}
}

// configOf returns one config of a described resource.
func configOf(t *testing.T, rcs kadm.ResourceConfigs, resource, key string) kadm.Config {
	t.Helper()
	rc, err := rcs.On(resource, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %q: %v %v %s", resource, err, rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("%q has no config %s", resource, key)
	return kadm.Config{}
}

type synonym struct {
	name, value string
	source      kmsg.ConfigSource
}

func checkConfig(t *testing.T, c kadm.Config, value string, source kmsg.ConfigSource, synonyms ...synonym) {
	t.Helper()
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s = %s (%v), want %s (%v)", c.Key, c.MaybeValue(), c.Source, value, source)
	}
	var got []synonym
	for _, s := range c.Synonyms {
		got = append(got, synonym{s.Key, *s.Value, s.Source})
	}
	if fmt.Sprint(got) != fmt.Sprint(synonyms) {
		t.Errorf("%s synonyms %v, want %v", c.Key, got, synonyms)
	}
}

// TestTopicConfigs: topic configs are described with sources and synonyms,
// changed incrementally and wholesale, take effect at once (a lowered
// max.message.bytes refuses a larger batch) and survive a restart.
func TestTopicConfigs(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "cfg", 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")})

	rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, configOf(t, rcs, "cfg", "retention.ms"), "3600000", kmsg.ConfigSourceDynamicTopicConfig,
		synonym{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
		synonym{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})
	checkConfig(t, configOf(t, rcs, "cfg", "segment.bytes"), "1073741824", kmsg.ConfigSourceDefaultConfig,
		synonym{"log.segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig})

	// Incremental changes: set, append to a list, delete.
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("200")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "cfg"); err != nil {
		t.Fatal(err)
	}
	rcs, err = adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, configOf(t, rcs, "cfg", "max.message.bytes"), "200", kmsg.ConfigSourceDynamicTopicConfig,
		synonym{"max.message.bytes", "200", kmsg.ConfigSourceDynamicTopicConfig},
		synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	// Appended to the default "delete": the list in that order, as Kafka
	// shows it.
	checkConfig(t, configOf(t, rcs, "cfg", "cleanup.policy"), "delete,compact", kmsg.ConfigSourceDynamicTopicConfig,
		synonym{"cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig},
		synonym{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig})
	checkConfig(t, configOf(t, rcs, "cfg", "retention.ms"), "604800000", kmsg.ConfigSourceDefaultConfig,
		synonym{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})

	// In force at once: a batch above 200 bytes is refused, a small keyed
	// one (the topic is compacted now) is taken.
	checkTooLarge := func(cl *kgo.Client) {
		t.Helper()
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Key: []byte("k"), Value: noise(1000)})
		if err := res.FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
			t.Errorf("a 1 KB record with max.message.bytes=200: %v, want MESSAGE_TOO_LARGE", err)
		}
		produce(t, ctx, cl, &kgo.Record{Topic: "cfg", Key: []byte("k"), Value: []byte("small")})
	}
	checkTooLarge(b.client())
	if res := b.client().ProduceSync(ctx, &kgo.Record{Topic: "cfg", Value: []byte("no key")}); !errors.Is(res.FirstErr(), kerr.InvalidRecord) {
		t.Errorf("a keyless record on the compacted topic: %v, want INVALID_RECORD", res.FirstErr())
	}

	// Subtract from the list, then AlterConfigs (not incremental) replaces
	// the whole set.
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "cfg"); err != nil || r[0].Err != nil {
		t.Fatalf("subtract: %v %+v", err, r)
	}
	if v := describeValue(t, ctx, adm, "cfg", "cleanup.policy"); v != "delete" {
		t.Errorf("cleanup.policy after subtracting compact: %s", v)
	}
	if r, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{
		{Name: "max.message.bytes", Value: kadm.StringPtr("300")},
		{Name: "segment.ms", Value: kadm.StringPtr("60000")},
	}, "cfg"); err != nil || r[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %+v", err, r)
	}
	rcs, _ = adm.DescribeTopicConfigs(ctx, "cfg")
	checkConfig(t, configOf(t, rcs, "cfg", "segment.ms"), "60000", kmsg.ConfigSourceDynamicTopicConfig,
		synonym{"segment.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig},
		synonym{"log.roll.hours", "168", kmsg.ConfigSourceDefaultConfig})
	if c := configOf(t, rcs, "cfg", "cleanup.policy"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("cleanup.policy after AlterConfigs without it: %+v", c)
	}

	// Still described and in force after a restart.
	b.restart()
	adm = b.admin()
	waitLoaded(t, ctx, adm, "cfg", 1)
	if v := describeValue(t, ctx, adm, "cfg", "max.message.bytes"); v != "300" {
		t.Errorf("max.message.bytes after restart: %s", v)
	}
	checkTooLarge(b.client())

	// Bad input: Kafka's codes, nothing changed.
	bad := func(what string, want *kerr.Error, cfgs ...kadm.AlterConfig) {
		t.Helper()
		r, err := adm.AlterTopicConfigs(ctx, cfgs, "cfg")
		if err != nil || len(r) != 1 || !errors.Is(r[0].Err, want) {
			t.Errorf("%s: %v %+v, want %v", what, err, r, want)
		}
	}
	bad("a bad value", kerr.InvalidConfig, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("soon")})
	bad("an unknown config", kerr.InvalidConfig, kadm.AlterConfig{Name: "no.such.config", Value: kadm.StringPtr("1")})
	bad("appending to a non-list", kerr.InvalidConfig, kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")})
	bad("a config named twice", kerr.InvalidRequest,
		kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("1")}, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("2")})
	if v := describeValue(t, ctx, adm, "cfg", "max.message.bytes"); v != "300" {
		t.Errorf("max.message.bytes after refused changes: %s", v)
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1")}}, "nope"); err != nil || !errors.Is(r[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v %+v", err, r)
	}
	if r, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1")}}, "cfg"); err != nil || r[0].Err != nil {
		t.Errorf("validate only: %v %+v", err, r)
	}
	if v := describeValue(t, ctx, adm, "cfg", "max.message.bytes"); v != "300" {
		t.Errorf("max.message.bytes after a validate-only change: %s", v)
	}

	// Raw requests for what kadm does not send: a resource named twice,
	// unsupported resource types, describing unknown and illegal topics,
	// config types and documentation (v3+), a ConfigNames filter.
	cl := b.client()
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBrokerLogger} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, "cfg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		rr.Configs = append(rr.Configs, c)
		inc.Resources = append(inc.Resources, rr)
	}
	ir := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, cl, inc)
	for i, r := range ir.Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("IncrementalAlterConfigs resource %d: code %d, want INVALID_REQUEST", i, r.ErrorCode)
		}
	}

	desc := kmsg.NewPtrDescribeConfigsRequest()
	desc.IncludeDocumentation = true
	for _, name := range []string{"cfg", "nope", "bad/name"} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		if name == "cfg" {
			rr.ConfigNames = []string{"retention.ms", "cleanup.policy", "min.insync.replicas"}
		}
		desc.Resources = append(desc.Resources, rr)
	}
	dr := request[*kmsg.DescribeConfigsResponse](t, ctx, cl, desc)
	if dr.Version < 3 {
		t.Fatalf("DescribeConfigs v%d, want v3+", dr.Version)
	}
	if got := dr.Resources[0]; got.ErrorCode != 0 || len(got.Configs) != 3 {
		t.Fatalf("filtered describe: %+v", got)
	}
	types := map[string]kmsg.ConfigType{}
	for _, c := range dr.Resources[0].Configs {
		types[c.Name] = c.ConfigType
		if c.Documentation == nil || *c.Documentation == "" || c.ReadOnly || len(c.ConfigSynonyms) != 0 {
			t.Errorf("%s: documentation %v, read-only %v, synonyms %v (not asked for)", c.Name, c.Documentation, c.ReadOnly, c.ConfigSynonyms)
		}
	}
	if types["retention.ms"] != kmsg.ConfigTypeLong || types["cleanup.policy"] != kmsg.ConfigTypeList || types["min.insync.replicas"] != kmsg.ConfigTypeInt {
		t.Errorf("config types %v", types)
	}
	if got := dr.Resources[1].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("describing an unknown topic: code %d", got)
	}
	if got := dr.Resources[2].ErrorCode; got != kerr.InvalidTopicException.Code {
		t.Errorf("describing an illegal topic name: code %d", got)
	}
}

func describeValue(t *testing.T, ctx context.Context, adm *kadm.Client, topic, key string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	c := configOf(t, rcs, topic, key)
	return c.MaybeValue()
}

// TestBrokerConfigs: dynamic broker configs, cluster-wide (resource "")
// and for this broker (its id), are described with Kafka's sources, reach
// every topic without an override of its own at once, and survive a
// restart; static settings cannot be changed.
func TestBrokerConfigs(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "plain", 1, nil)
	mustCreate(t, ctx, adm, "own", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("100000")})

	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, configOf(t, rcs, "1", "num.partitions"), "1", kmsg.ConfigSourceDefaultConfig,
		synonym{"num.partitions", "1", kmsg.ConfigSourceDefaultConfig})
	if c := configOf(t, rcs, "1", "data.dir"); c.Source != kmsg.ConfigSourceStaticBrokerConfig || c.MaybeValue() != b.cfg.DataDir {
		t.Errorf("data.dir: %+v", c)
	}
	if rcs, err := adm.DescribeBrokerConfigs(ctx); err != nil || len(rcs) != 1 || len(rcs[0].Configs) != 0 {
		t.Errorf("cluster-wide configs before any change: %v %+v", err, rcs)
	}

	// Cluster-wide: every broker.
	if r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "message.max.bytes", Value: kadm.StringPtr("300")},
		{Name: "log.retention.ms", Value: kadm.StringPtr("86400000")},
	}); err != nil || r[0].Err != nil {
		t.Fatalf("alter cluster-wide: %v %+v", err, r)
	}
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs[0].Configs) != 2 {
		t.Errorf("cluster-wide configs: %+v", rcs[0].Configs)
	}
	checkConfig(t, configOf(t, rcs, "", "message.max.bytes"), "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		synonym{"message.max.bytes", "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	rcs, _ = adm.DescribeTopicConfigs(ctx, "plain", "own")
	checkConfig(t, configOf(t, rcs, "plain", "max.message.bytes"), "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		synonym{"message.max.bytes", "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	checkConfig(t, configOf(t, rcs, "plain", "retention.ms"), "86400000", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		synonym{"log.retention.ms", "86400000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})
	if c := configOf(t, rcs, "own", "max.message.bytes"); c.MaybeValue() != "100000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("a topic's own config lost to the broker's: %+v", c)
	}
	big := noise(1000)
	cl := b.client()
	if res := cl.ProduceSync(ctx, &kgo.Record{Topic: "plain", Value: big}); !errors.Is(res.FirstErr(), kerr.MessageTooLarge) {
		t.Errorf("1 KB to a topic under message.max.bytes=300: %v, want MESSAGE_TOO_LARGE", res.FirstErr())
	}
	produce(t, ctx, cl, &kgo.Record{Topic: "own", Value: big})

	// This broker's own config wins over the cluster-wide one.
	if r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: kadm.StringPtr("5000")}}, 1); err != nil || r[0].Err != nil {
		t.Fatalf("alter broker 1: %v %+v", err, r)
	}
	checkBroker := func() {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkConfig(t, configOf(t, rcs, "1", "message.max.bytes"), "5000", kmsg.ConfigSourceDynamicBrokerConfig,
			synonym{"message.max.bytes", "5000", kmsg.ConfigSourceDynamicBrokerConfig},
			synonym{"message.max.bytes", "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
			synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
		rcs, _ = adm.DescribeTopicConfigs(ctx, "plain")
		checkConfig(t, configOf(t, rcs, "plain", "max.message.bytes"), "5000", kmsg.ConfigSourceDynamicBrokerConfig,
			synonym{"message.max.bytes", "5000", kmsg.ConfigSourceDynamicBrokerConfig},
			synonym{"message.max.bytes", "300", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
			synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
		produce(t, ctx, b.client(), &kgo.Record{Topic: "plain", Value: big})
		if res := b.client().ProduceSync(ctx, &kgo.Record{Topic: "plain", Value: noise(6000)}); !errors.Is(res.FirstErr(), kerr.MessageTooLarge) {
			t.Errorf("6 KB under message.max.bytes=5000: %v, want MESSAGE_TOO_LARGE", res.FirstErr())
		}
	}
	checkBroker()
	b.restart()
	adm = b.admin()
	waitLoaded(t, ctx, adm, "plain", 1)
	checkBroker()

	// Read-only and refused settings; the config types and read-only flags
	// of a raw v4 describe.
	bad := func(what string, want *kerr.Error, cfg kadm.AlterConfig) {
		t.Helper()
		r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{cfg})
		if err != nil || !errors.Is(r[0].Err, want) {
			t.Errorf("%s: %v %+v, want %v", what, err, r, want)
		}
	}
	bad("a static setting", kerr.InvalidRequest, kadm.AlterConfig{Name: "num.partitions", Value: kadm.StringPtr("3")})
	bad("an unknown setting", kerr.InvalidConfig, kadm.AlterConfig{Name: "no.such.config", Value: kadm.StringPtr("3")})
	// A bad value of a broker config is an invalid request, as Kafka 4.2
	// answers it (tests/diff); a topic config's an invalid config.
	bad("a bad value", kerr.InvalidRequest, kadm.AlterConfig{Name: "log.retention.ms", Value: kadm.StringPtr("0")})

	raw := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"7", "one"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "message.max.bytes", kmsg.StringPtr("1")
		rr.Configs = append(rr.Configs, c)
		raw.Resources = append(raw.Resources, rr)
	}
	for i, r := range request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, b.client(), raw).Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("altering broker %q at broker 1: code %d, want INVALID_REQUEST", raw.Resources[i].ResourceName, r.ErrorCode)
		}
	}
	desc := kmsg.NewPtrDescribeConfigsRequest()
	desc.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	desc.Resources = append(desc.Resources, rr)
	rr.ResourceName = "7"
	desc.Resources = append(desc.Resources, rr)
	dr := request[*kmsg.DescribeConfigsResponse](t, ctx, b.client(), desc)
	seen := 0
	for _, c := range dr.Resources[0].Configs {
		switch c.Name {
		case "log.retention.ms":
			seen++
			if c.ReadOnly || c.ConfigType != kmsg.ConfigTypeLong || c.Documentation == nil {
				t.Errorf("log.retention.ms: %+v", c)
			}
		case "num.partitions":
			seen++
			if !c.ReadOnly || c.ConfigType != kmsg.ConfigTypeInt || c.Documentation == nil {
				t.Errorf("num.partitions: %+v", c)
			}
		case "auto.create.topics.enable":
			seen++
			if !c.ReadOnly || c.ConfigType != kmsg.ConfigTypeBoolean {
				t.Errorf("auto.create.topics.enable: %+v", c)
			}
		}
	}
	if seen != 3 {
		t.Errorf("broker 1 described without some settings: %+v", dr.Resources[0].Configs)
	}
	if dr.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describing broker 7 at broker 1: code %d", dr.Resources[1].ErrorCode)
	}

	// Deleting the per-broker config falls back to the cluster-wide one.
	if r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}, 1); err != nil || r[0].Err != nil {
		t.Fatalf("delete broker 1's message.max.bytes: %v %+v", err, r)
	}
	if v := describeValue(t, ctx, adm, "plain", "max.message.bytes"); v != "300" {
		t.Errorf("max.message.bytes after deleting the per-broker value: %s", v)
	}

	// AlterConfigs (not incremental) replaces the cluster-wide set.
	if r, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.roll.ms", Value: kadm.StringPtr("3600000")}}); err != nil || r[0].Err != nil {
		t.Fatalf("AlterConfigs on the cluster-wide configs: %v %+v", err, r)
	}
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	if err != nil || len(rcs) != 1 || len(rcs[0].Configs) != 1 || rcs[0].Configs[0].Key != "log.roll.ms" {
		t.Fatalf("cluster-wide configs after AlterConfigs: %v %+v", err, rcs)
	}
	rcs, _ = adm.DescribeTopicConfigs(ctx, "plain")
	checkConfig(t, configOf(t, rcs, "plain", "max.message.bytes"), "1048588", kmsg.ConfigSourceDefaultConfig,
		synonym{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	checkConfig(t, configOf(t, rcs, "plain", "segment.ms"), "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		synonym{"log.roll.ms", "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		synonym{"log.roll.hours", "168", kmsg.ConfigSourceDefaultConfig})
	produce(t, ctx, b.client(), &kgo.Record{Topic: "plain", Value: noise(6000)})
}

// TestRetentionChangedAtRunTime: lowering retention.ms (on a topic, and
// log.retention.ms for every broker) deletes the old segments on the
// partitions' next retention run, and the log start offset moves.
func TestRetentionChangedAtRunTime(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	// Tiny segments: each batch rolls a new one.
	small := map[string]*string{"segment.bytes": kadm.StringPtr("100")}
	mustCreate(t, ctx, adm, "by-topic", 1, small)
	mustCreate(t, ctx, adm, "by-broker", 1, small)
	cl := b.client(kgo.ProducerLinger(0))
	old := time.Now().Add(-2 * time.Hour)
	for _, topic := range []string{"by-topic", "by-broker"} {
		for i := range 5 {
			produce(t, ctx, cl, &kgo.Record{Topic: topic, Value: append([]byte{byte('a' + i)}, noise(200)...), Timestamp: old})
		}
	}
	for _, topic := range []string{"by-topic", "by-broker"} {
		if got := startOffset(ctx, adm, topic, 0); got != 0 {
			t.Fatalf("%s starts at %d before retention changed", topic, got)
		}
	}

	// One hour: the records, two hours old, are past it. Retention keeps
	// the active segment, which holds the last record.
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, "by-topic"); err != nil || r[0].Err != nil {
		t.Fatalf("alter by-topic: %v %+v", err, r)
	}
	eventually(t, "by-topic's old segments to be deleted", func() bool { return startOffset(ctx, adm, "by-topic", 0) == 4 })
	if got := startOffset(ctx, adm, "by-broker", 0); got != 0 {
		t.Fatalf("by-broker, not altered, starts at %d", got)
	}
	if r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kadm.StringPtr("3600000")}}); err != nil || r[0].Err != nil {
		t.Fatalf("alter log.retention.ms: %v %+v", err, r)
	}
	eventually(t, "by-broker's old segments to be deleted", func() bool { return startOffset(ctx, adm, "by-broker", 0) == 4 })
	got := consumeFrom(t, ctx, b, "by-broker", 0, 4, 1)
	if got[0].Offset != 4 || got[0].Value[0] != 'e' {
		t.Fatalf("by-broker after retention: %d %q", got[0].Offset, got[0].Value[:1])
	}

	b.restart()
	adm = b.admin()
	for _, topic := range []string{"by-topic", "by-broker"} {
		waitLoaded(t, ctx, adm, topic, 1)
		if got := startOffset(ctx, adm, topic, 0); got != 4 {
			t.Errorf("%s starts at %d after restart", topic, got)
		}
	}
	if v := describeValue(t, ctx, adm, "by-broker", "retention.ms"); v != "3600000" {
		t.Errorf("by-broker retention.ms after restart: %s", v)
	}
}

// TestDescribeLogDirs: one log dir, data.dir, with each hosted partition's
// size, which grows as records arrive; v4 gives the volume's sizes.
func TestDescribeLogDirs(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "dirs", 2, nil)
	sizes := func() map[int32]int64 {
		t.Helper()
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dirs := all[1]
		if len(dirs) != 1 {
			t.Fatalf("log dirs %+v, want one", dirs)
		}
		want, _ := filepath.Abs(b.cfg.DataDir)
		d, ok := dirs[want]
		if !ok || d.Err != nil {
			t.Fatalf("log dirs %+v, want %s", dirs, want)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Errorf("volume sizes: total %d, usable %d", d.TotalBytes, d.UsableBytes)
		}
		out := map[int32]int64{}
		for p, dp := range d.Topics["dirs"] {
			out[p] = dp.Size
		}
		return out
	}
	before := sizes()
	p := b.client(kgo.DefaultProduceTopic("dirs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for range 20 {
		produce(t, ctx, p, &kgo.Record{Partition: 0, Value: noise(500)})
	}
	after := sizes()
	if after[0] < before[0]+20*500 || after[1] != before[1] {
		t.Errorf("sizes %v after 10 KB to partition 0, were %v", after, before)
	}
	if info, err := os.Stat(filepath.Join(b.cfg.DataDir, "dirs-0", "00000000000000000000.log")); err != nil || info.Size() != after[0] {
		t.Errorf("partition 0 described at %d bytes; its segment file: %v %v", after[0], info, err)
	}

	// Named partitions only; one the node does not host is left out.
	only, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"dirs": {1: {}, 7: {}}})
	if err != nil || len(only) != 1 {
		t.Fatal(only, err)
	}
	for _, d := range only {
		if len(d.Topics["dirs"]) != 1 || d.Topics["dirs"][1].Size != after[1] {
			t.Errorf("described %+v, want partition 1 only", d.Topics)
		}
	}
}

// TestDescribeCluster: the cluster id and brokers, as Metadata gives them;
// asking a broker for controllers is MISMATCHED_ENDPOINT_TYPE (KIP-919).
func TestDescribeCluster(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	cl := b.client()
	md, err := b.admin().BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	resp := request[*kmsg.DescribeClusterResponse](t, ctx, cl, req)
	if resp.Version != 2 || resp.ErrorCode != 0 || resp.ClusterID != md.Cluster || resp.ControllerID != 1 {
		t.Fatalf("DescribeCluster v%d: %+v", resp.Version, resp)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != b.addr() {
		t.Fatalf("brokers %+v, want node 1 at %s", resp.Brokers, b.addr())
	}
	req.EndpointType = 2
	if resp := request[*kmsg.DescribeClusterResponse](t, ctx, cl, req); resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Errorf("controllers from a broker: code %d", resp.ErrorCode)
	}
}

// TestConfigSurvivesPartitionRestart: a partition actor that panics after a
// config change restarts with the changed config, not the one it was
// first hosted with.
func TestConfigSurvivesPartitionRestart(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "sticky", 1, nil)
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("200")}}, "sticky"); err != nil || r[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, r)
	}
	const name = "node/1/partitions/sticky-0"
	b.injectFault(`{"actor": "` + name + `", "kind": "panic", "message": "tick"}`)
	eventually(t, name+" to restart", func() bool {
		a := b.actors()[name]
		return a != nil && a.Restarts >= 1
	})
	waitLoaded(t, ctx, adm, "sticky", 1)
	res := b.client().ProduceSync(ctx, &kgo.Record{Topic: "sticky", Value: noise(1000)})
	if err := res.FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("1 KB after the restart under max.message.bytes=200: %v, want MESSAGE_TOO_LARGE", err)
	}
}
