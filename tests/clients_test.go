package tests

// The client matrix of issue 3: franz-go and sarama, each as producer and
// as consumer, through one small interface (kafkaClient), so that every
// check runs with both clients and every record one client writes is read
// back by the other too. Round trips with keys, headers and timestamps,
// LogAppendTime topics, the four compression codecs, acks 0, 1 and all,
// the max.message.bytes boundary, ListOffsets by time, keyless records on
// compacted topics, and a batch with a bad CRC.
//
// The sarama half of the interface, and the tests only sarama needs, are in
// sarama_test.go.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireRecord is a record as these tests compare it, whichever client wrote
// or read it.
type wireRecord struct {
	Partition int32
	Offset    int64 // -1 where the producer is not told (acks=0)
	Key       []byte
	Value     []byte
	Headers   []wireHeader
	Timestamp time.Time // millisecond precision, as Kafka keeps it
	// Read back only, and only by franz-go, which exposes a batch's
	// attributes: the codec of the batch the record came in (0 none,
	// 1 gzip, 2 snappy, 3 lz4, 4 zstd) and whether the timestamp is the
	// broker's (LogAppendTime). -1 and false where unknown.
	Codec         int8
	LogAppendTime bool
}

type wireHeader struct {
	Key   string
	Value []byte
}

// produceSpec is how a kafkaClient produces.
type produceSpec struct {
	acks  int16  // Kafka's: -1 all, 0 none, 1 leader
	codec string // none, gzip, snappy, lz4, zstd
	// maxBytes, when set, raises the client's own limit on a batch's size
	// so that the broker, not the client, decides what is too large.
	maxBytes int32
}

var allAcks = produceSpec{acks: -1, codec: "none"}

// codecs are the compression codecs Kafka defines, by their attribute
// number.
var codecs = []struct {
	name string
	id   int8
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// kafkaClient is a Kafka client library under test. Each call opens its
// own connections and closes them before returning.
type kafkaClient interface {
	name() string
	// produce writes recs, each to its Partition of topic, waits for every
	// answer, and returns each record as acknowledged (offset, and the
	// timestamp the broker answered on LogAppendTime topics) and each
	// record's error, in the order of recs.
	produce(t *testing.T, ctx context.Context, topic string, recs []wireRecord, s produceSpec) ([]wireRecord, []error)
	// consume reads n records of one partition from offset.
	consume(t *testing.T, ctx context.Context, topic string, partition int32, offset int64, n int) []wireRecord
	// offsetAfter lists the first offset whose timestamp is at or after
	// millis, as ListOffsets by timestamp answers it.
	offsetAfter(t *testing.T, ctx context.Context, topic string, partition int32, millis int64) int64
}

// bothClients returns the clients under test against b.
func bothClients(b *broker) []kafkaClient {
	return []kafkaClient{franzClient{b}, saramaClient{b}}
}

// franzClient is franz-go (kgo, kadm).
type franzClient struct{ b *broker }

func (franzClient) name() string { return "franz-go" }

func (f franzClient) newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(f.b.addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func (f franzClient) produce(t *testing.T, ctx context.Context, topic string, recs []wireRecord, s produceSpec) ([]wireRecord, []error) {
	t.Helper()
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(franzCodec(s.codec)),
	}
	switch s.acks {
	case 0:
		// NB: idempotence, kgo's default, requires acks=all.
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if s.maxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(s.maxBytes))
	}
	cl := f.newClient(t, opts...)
	defer cl.Close()

	krecs := make([]*kgo.Record, len(recs))
	index := make(map[*kgo.Record]int, len(recs))
	for i, r := range recs {
		kr := &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krecs[i], index[kr] = kr, i
	}
	out := make([]wireRecord, len(recs))
	errs := make([]error, len(recs))
	for _, res := range cl.ProduceSync(ctx, krecs...) {
		i := index[res.Record]
		out[i], errs[i] = fromFranz(res.Record), res.Err
		if s.acks == 0 {
			out[i].Offset = -1
		}
	}
	return out, errs
}

func fromFranz(r *kgo.Record) wireRecord {
	w := wireRecord{
		Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
		Codec: int8(r.Attrs.CompressionType()), LogAppendTime: r.Attrs.TimestampType() == 1,
	}
	for _, h := range r.Headers {
		w.Headers = append(w.Headers, wireHeader{h.Key, h.Value})
	}
	return w
}

func (f franzClient) consume(t *testing.T, ctx context.Context, topic string, partition int32, offset int64, n int) []wireRecord {
	t.Helper()
	cl := f.newClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}))
	defer cl.Close()
	var out []wireRecord
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go: consume %s/%d: %v (after %d records)", topic, partition, err, len(out))
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fromFranz(r)) })
	}
	if len(out) > n {
		t.Fatalf("franz-go: %s/%d from %d: %d records, want %d", topic, partition, offset, len(out), n)
	}
	return out
}

func (f franzClient) offsetAfter(t *testing.T, ctx context.Context, topic string, partition int32, millis int64) int64 {
	t.Helper()
	cl := f.newClient(t)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, millis, topic)
	if err != nil {
		t.Fatalf("franz-go: ListOffsetsAfterMilli(%d): %v", millis, err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok || o.Err != nil {
		t.Fatalf("franz-go: ListOffsetsAfterMilli(%d): %s/%d: %+v", millis, topic, partition, o)
	}
	return o.Offset
}

// sameRecord reports how got, read back, differs from want, as produced
// and acknowledged; "" if it does not. Offsets are compared only where
// the producer was told one.
func sameRecord(got, want wireRecord) string {
	var diffs []string
	if want.Offset >= 0 && got.Offset != want.Offset {
		diffs = append(diffs, fmt.Sprintf("offset %d, want %d", got.Offset, want.Offset))
	}
	if got.Partition != want.Partition {
		diffs = append(diffs, fmt.Sprintf("partition %d, want %d", got.Partition, want.Partition))
	}
	if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) {
		diffs = append(diffs, fmt.Sprintf("key %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.Key, want.Key == nil))
	}
	if !bytes.Equal(got.Value, want.Value) {
		diffs = append(diffs, fmt.Sprintf("value %.40q, want %.40q", got.Value, want.Value))
	}
	if !got.Timestamp.Equal(want.Timestamp) {
		diffs = append(diffs, fmt.Sprintf("timestamp %v, want %v", got.Timestamp.UTC(), want.Timestamp.UTC()))
	}
	if len(got.Headers) != len(want.Headers) {
		diffs = append(diffs, fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers))
	} else {
		for i := range got.Headers {
			if got.Headers[i].Key != want.Headers[i].Key || !bytes.Equal(got.Headers[i].Value, want.Headers[i].Value) {
				diffs = append(diffs, fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers))
				break
			}
		}
	}
	return strings.Join(diffs, "; ")
}

// checkReadBack consumes what was produced to each partition, from
// offset 0, with every client and compares it record by record.
func checkReadBack(t *testing.T, ctx context.Context, b *broker, topic string, produced []wireRecord) {
	t.Helper()
	byPartition := map[int32][]wireRecord{}
	for _, r := range produced {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	for _, c := range bothClients(b) {
		for p, want := range byPartition {
			got := c.consume(t, ctx, topic, p, 0, len(want))
			for i := range want {
				if d := sameRecord(got[i], want[i]); d != "" {
					t.Errorf("%s read %s/%d record %d: %s", c.name(), topic, p, i, d)
				}
			}
		}
	}
}

// msTime is a fixed time with millisecond precision: Kafka keeps no more.
func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// TestClientsRoundTrip: each client produces records with keys (a null
// one among them), several headers (a repeated key, an empty value) and
// explicit CreateTime timestamps (out of order too), acks=all
// (idempotent, the default of franz-go; sarama's idempotent producer);
// both clients then read back the same keys, values, headers and
// timestamps at the offsets the producer was given.
func TestClientsRoundTrip(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "roundtrip", 2, nil)
	base := int64(1_700_000_000_123)
	var all []wireRecord
	for ci, c := range bothClients(b) {
		var recs []wireRecord
		for i := range 40 {
			r := wireRecord{
				Partition: int32(ci),
				Key:       []byte(fmt.Sprintf("key-%d", i%7)),
				Value:     []byte(fmt.Sprintf("%s value %d", c.name(), i)),
				Headers: []wireHeader{
					{"trace", []byte(fmt.Sprint(i))},
					{"trace", []byte("again")},
					{"empty", []byte{}},
				},
				// Timestamps go back in time every fifth record: Kafka
				// keeps what the producer sent, in any order.
				Timestamp: msTime(base + int64(i)*1001 - int64(i%5)*3000),
			}
			if i == 3 {
				r.Key = nil
			}
			recs = append(recs, r)
		}
		acked, errs := c.produce(t, ctx, "roundtrip", recs, allAcks)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: produce record %d: %v", c.name(), i, err)
			}
			if acked[i].Offset != int64(i) {
				t.Errorf("%s: record %d acknowledged at offset %d", c.name(), i, acked[i].Offset)
			}
			recs[i].Offset = acked[i].Offset
		}
		all = append(all, recs...)
	}
	checkReadBack(t, ctx, b, "roundtrip", all)
}

// TestLogAppendTime: on a topic created with
// message.timestamp.type=LogAppendTime the broker stamps each batch with
// its own clock when it appends it. Each client produces records stamped
// 2001; both clients read back the broker's time, which lies between the
// test's clock readings before and after the produce, not the producer's
// (franz-go also sees the batch's LogAppendTime attribute). The Produce
// response carries the same time: sarama hands it to the producer, and a
// raw Produce checks it too, because kgo drops it.
func TestLogAppendTime(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "appendtime", 2, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")})
	old := msTime(978_307_200_000) // 2001-01-01
	for ci, c := range bothClients(b) {
		recs := []wireRecord{
			{Partition: int32(ci), Key: []byte("a"), Value: []byte("one"), Timestamp: old},
			{Partition: int32(ci), Key: []byte("b"), Value: []byte("two"), Timestamp: old},
		}
		before := time.Now().Truncate(time.Millisecond)
		acked, errs := c.produce(t, ctx, "appendtime", recs, allAcks)
		after := time.Now()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: produce: %v", c.name(), err)
			}
		}
		// The broker's time for each record, as the first reader saw it
		// (the records may have gone in separate batches).
		stamped := make([]time.Time, len(recs))
		for _, reader := range bothClients(b) {
			got := reader.consume(t, ctx, "appendtime", int32(ci), 0, len(recs))
			for i, g := range got {
				if g.Timestamp.Before(before) || g.Timestamp.After(after) {
					t.Errorf("%s read %s's record %d with timestamp %v, not the broker's time between %v and %v",
						reader.name(), c.name(), i, g.Timestamp, before, after)
				}
				if stamped[i].IsZero() {
					stamped[i] = g.Timestamp
				} else if !g.Timestamp.Equal(stamped[i]) {
					t.Errorf("%s read %s's record %d with timestamp %v, another reader %v", reader.name(), c.name(), i, g.Timestamp, stamped[i])
				}
				if _, isFranz := reader.(franzClient); isFranz && !g.LogAppendTime {
					t.Errorf("franz-go read %s's record %d without the LogAppendTime attribute", c.name(), i)
				}
			}
		}
		if _, isFranz := c.(franzClient); !isFranz {
			for i := range acked {
				if !acked[i].Timestamp.Equal(stamped[i]) {
					t.Errorf("%s: record %d: the producer was told timestamp %v, the log has %v", c.name(), i, acked[i].Timestamp, stamped[i])
				}
			}
		}
	}

	raw := dialRaw(t, b.addr())
	before := time.Now().Truncate(time.Millisecond)
	batch := rawBatch(kmsg.Record{Key: []byte("raw"), Value: []byte("raw")})
	resp := rawProducePartition(t, raw, "appendtime", batch)
	if resp.ErrorCode != 0 {
		t.Fatalf("raw produce: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.LogAppendTime < before.UnixMilli() || resp.LogAppendTime > time.Now().UnixMilli() {
		t.Errorf("Produce response LogAppendTime %d, not the broker's time", resp.LogAppendTime)
	}
	got := (franzClient{b}).consume(t, ctx, "appendtime", 0, resp.BaseOffset, 1)
	if got[0].Timestamp.UnixMilli() != resp.LogAppendTime {
		t.Errorf("raw record read back with timestamp %d, the response said %d", got[0].Timestamp.UnixMilli(), resp.LogAppendTime)
	}
}

// TestCompressionCodecs: each client produces with each of gzip, snappy,
// lz4 and zstd (a partition for each pair); both clients read every
// partition back. The broker stores batches as sent, so franz-go, which
// sees a batch's attributes, must find each producer's codec on what it
// reads.
func TestCompressionCodecs(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	clients := bothClients(b)
	mustCreate(t, ctx, b.admin(), "codecs", int32(len(clients)*len(codecs)), nil)
	var all []wireRecord
	for ci, c := range clients {
		for ki, codec := range codecs {
			p := int32(ci*len(codecs) + ki)
			var recs []wireRecord
			for i := range 30 {
				recs = append(recs, wireRecord{
					Partition: p,
					Key:       []byte(fmt.Sprintf("k%d", i)),
					// Repetitive, so that every codec really compresses.
					Value:     bytes.Repeat([]byte(fmt.Sprintf("%s/%s record %d ", c.name(), codec.name, i)), 20),
					Headers:   []wireHeader{{"codec", []byte(codec.name)}},
					Timestamp: msTime(1_700_000_000_000 + int64(i)),
				})
			}
			acked, errs := c.produce(t, ctx, "codecs", recs, produceSpec{acks: -1, codec: codec.name})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s %s: produce record %d: %v", c.name(), codec.name, i, err)
				}
				recs[i].Offset = acked[i].Offset
			}
			all = append(all, recs...)
			for _, r := range (franzClient{b}).consume(t, ctx, "codecs", p, 0, len(recs)) {
				if r.Codec != codec.id {
					t.Errorf("%s %s: offset %d came in a batch with codec %d, want %d", c.name(), codec.name, r.Offset, r.Codec, codec.id)
					break
				}
			}
		}
	}
	checkReadBack(t, ctx, b, "codecs", all)
}

// TestAcks: each client produces with acks 0, 1 and all (-1), a
// partition for each; every record is read back in order. With acks=0 the
// producer learns nothing, so the test waits for the records to arrive.
func TestAcks(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	clients := bothClients(b)
	acksList := []int16{0, 1, -1}
	mustCreate(t, ctx, b.admin(), "acks", int32(len(clients)*len(acksList)), nil)
	var all []wireRecord
	for ci, c := range clients {
		for ai, acks := range acksList {
			p := int32(ci*len(acksList) + ai)
			var recs []wireRecord
			for i := range 50 {
				recs = append(recs, wireRecord{
					Partition: p, Key: []byte(fmt.Sprint(i)),
					Value:     []byte(fmt.Sprintf("%s acks=%d record %d", c.name(), acks, i)),
					Timestamp: msTime(1_700_000_000_000 + int64(i)),
				})
			}
			acked, errs := c.produce(t, ctx, "acks", recs, produceSpec{acks: acks, codec: "none"})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s acks=%d: produce record %d: %v", c.name(), acks, i, err)
				}
				if acks != 0 && acked[i].Offset != int64(i) {
					t.Errorf("%s acks=%d: record %d acknowledged at offset %d", c.name(), acks, i, acked[i].Offset)
				}
				recs[i].Offset = acked[i].Offset
			}
			all = append(all, recs...)
		}
	}
	// consume waits for the records, so the acks=0 ones need no other
	// wait: they arrive or the test times out.
	checkReadBack(t, ctx, b, "acks", all)
}

// batchBytes is the size of a RecordBatch v2 holding one record with an
// n-byte value, no key and no headers, as every client encodes it: the
// 61-byte batch header, then the record's length and body (attributes,
// timestamp delta 0, offset delta 0, key length -1, value length, value,
// header count 0), its integers as zigzag varints.
func batchBytes(n int) int {
	varint := func(v int) int { return len(binary.AppendVarint(nil, int64(v))) }
	body := 1 + varint(0) + varint(0) + varint(-1) + varint(n) + n + varint(0)
	return 61 + varint(body) + body
}

// valueFor returns the length of a value whose one-record batch is
// exactly limit bytes, and one byte more with a value a byte longer.
func valueFor(t *testing.T, limit int) int {
	for n := limit; n > 0; n-- {
		if batchBytes(n) == limit && batchBytes(n+1) == limit+1 {
			return n
		}
	}
	t.Fatalf("no value fills a batch of %d bytes", limit)
	return 0
}

// produceErrors returns the broker's count of an error code on Produce,
// across versions, from /metrics.
func produceErrors(b *broker, code string) float64 {
	var sum float64
	for _, m := range b.metrics()["skein_request_errors_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["api"] == "Produce" && labels["error"] == code {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestMessageTooLarge: a batch of exactly max.message.bytes is accepted
// and one a byte larger is refused with MESSAGE_TOO_LARGE and not
// appended, with each client, at the broker's default (message.max.bytes,
// 1048588) and at a topic's own max.message.bytes. The clients' own limits
// are raised above the broker's, so the broker is what refuses, as its
// error count in /metrics confirms.
func TestMessageTooLarge(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "big-default", 2, nil)
	mustCreate(t, ctx, adm, "big-topic", 2, map[string]*string{"max.message.bytes": kadm.StringPtr("10000")})
	for _, tc := range []struct {
		topic string
		limit int
	}{{"big-default", 1048588}, {"big-topic", 10000}} {
		n := valueFor(t, tc.limit)
		for ci, c := range bothClients(b) {
			p := int32(ci)
			spec := produceSpec{acks: -1, codec: "none", maxBytes: 4 << 20}
			fits := wireRecord{Partition: p, Value: noise(n), Timestamp: msTime(1_700_000_000_000)}
			acked, errs := c.produce(t, ctx, tc.topic, []wireRecord{fits}, spec)
			if errs[0] != nil {
				t.Fatalf("%s: a batch of exactly %d bytes to %s: %v", c.name(), tc.limit, tc.topic, errs[0])
			}
			fits.Offset = acked[0].Offset

			refusedBefore := produceErrors(b, "MESSAGE_TOO_LARGE")
			over := wireRecord{Partition: p, Value: noise(n + 1), Timestamp: msTime(1_700_000_000_001)}
			_, errs = c.produce(t, ctx, tc.topic, []wireRecord{over}, spec)
			if !errors.Is(errs[0], kerr.MessageTooLarge) && !isSaramaError(errs[0], kerr.MessageTooLarge) {
				t.Errorf("%s: a batch of %d bytes to %s (limit %d): %v, want MESSAGE_TOO_LARGE", c.name(), tc.limit+1, tc.topic, tc.limit, errs[0])
			}
			if got := produceErrors(b, "MESSAGE_TOO_LARGE"); got != refusedBefore+1 {
				t.Errorf("%s: the broker refused %v batches as too large, want 1", c.name(), got-refusedBefore)
			}

			// Only the batch that fits is in the log: a record after the
			// refused one lands right after it.
			next := wireRecord{Partition: p, Value: []byte("next"), Timestamp: msTime(1_700_000_000_002)}
			acked, errs = c.produce(t, ctx, tc.topic, []wireRecord{next}, spec)
			if errs[0] != nil {
				t.Fatalf("%s: produce after the refused batch: %v", c.name(), errs[0])
			}
			if acked[0].Offset != fits.Offset+1 {
				t.Errorf("%s: the record after the refused batch is at offset %d, want %d", c.name(), acked[0].Offset, fits.Offset+1)
			}
			next.Offset = acked[0].Offset
			got := (franzClient{b}).consume(t, ctx, tc.topic, p, 0, 2)
			for i, want := range []wireRecord{fits, next} {
				if d := sameRecord(got[i], want); d != "" {
					t.Errorf("%s: %s/%d offset %d: %s", c.name(), tc.topic, p, i, d)
				}
			}
		}
	}
}

// TestListOffsetsByTime: records with known timestamps (in separate
// batches, one going back in time), then ListOffsets by timestamp through
// kadm.ListOffsetsAfterMilli and sarama's GetOffset: each lands on the
// first offset whose timestamp is at or after the one asked (Kafka's
// rule: the earliest offset, not the nearest timestamp), and a time after
// every record gives the end offset (kadm) or -1 (sarama, which passes
// Kafka's answer through).
func TestListOffsetsByTime(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "bytime", 1, nil)
	base := int64(1_700_000_000_000)
	// Offsets 0-5; offset 4 goes back to base+1500.
	stamps := []int64{base, base + 1000, base + 2000, base + 3000, base + 1500, base + 5000}
	var recs []wireRecord
	for i, ms := range stamps {
		recs = append(recs, wireRecord{Value: []byte(fmt.Sprint(i)), Timestamp: msTime(ms)})
	}
	// One record a batch, so that the lookup has batches to search.
	for i := range recs {
		if _, errs := (franzClient{b}).produce(t, ctx, "bytime", recs[i:i+1], allAcks); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	for _, tc := range []struct {
		millis int64
		want   int64
	}{
		{0, 0},
		{base, 0},
		{base + 1, 1},
		{base + 1000, 1},
		{base + 1200, 2},
		{base + 1600, 2},
		{base + 2500, 3},
		{base + 3000, 3},
		{base + 3001, 5}, // offset 4 is older than asked
		{base + 5000, 5},
	} {
		for _, c := range bothClients(b) {
			if got := c.offsetAfter(t, ctx, "bytime", 0, tc.millis); got != tc.want {
				t.Errorf("%s: offset at or after %d ms: %d, want %d", c.name(), tc.millis-base, got, tc.want)
			}
		}
	}
	if got := (franzClient{b}).offsetAfter(t, ctx, "bytime", 0, base+5001); got != int64(len(stamps)) {
		t.Errorf("franz-go: after every record: %d, want the end offset %d", got, len(stamps))
	}
	if got := (saramaClient{b}).offsetAfter(t, ctx, "bytime", 0, base+5001); got != -1 {
		t.Errorf("sarama: after every record: %d, want -1", got)
	}
}

// TestKeylessRecordsOnCompactedTopic: a compacted topic keeps the newest
// record per key, so Kafka refuses a record without one with
// INVALID_RECORD. Each client's keyless record is refused and keyed ones
// are taken; a raw batch mixing a keyed and a keyless record is refused
// whole, and nothing of it is appended.
func TestKeylessRecordsOnCompactedTopic(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "compacted", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	var next int64
	for _, c := range bothClients(b) {
		_, errs := c.produce(t, ctx, "compacted", []wireRecord{{Value: []byte("no key"), Timestamp: time.Now()}}, allAcks)
		if !errors.Is(errs[0], kerr.InvalidRecord) && !isSaramaError(errs[0], kerr.InvalidRecord) {
			t.Errorf("%s: keyless record on a compacted topic: %v, want INVALID_RECORD", c.name(), errs[0])
		}
		acked, errs := c.produce(t, ctx, "compacted", []wireRecord{{Key: []byte("k"), Value: []byte("keyed"), Timestamp: time.Now()}}, allAcks)
		if errs[0] != nil {
			t.Fatalf("%s: keyed record on a compacted topic: %v", c.name(), errs[0])
		}
		if acked[0].Offset != next {
			t.Errorf("%s: keyed record at offset %d, want %d", c.name(), acked[0].Offset, next)
		}
		next++
	}

	raw := dialRaw(t, b.addr())
	batch := rawBatch(
		kmsg.Record{Key: []byte("k"), Value: []byte("keyed")},
		kmsg.Record{Value: []byte("keyless")},
	)
	resp := rawProducePartition(t, raw, "compacted", batch)
	if resp.ErrorCode != kerr.InvalidRecord.Code {
		t.Errorf("raw batch with a keyless record: %v, want INVALID_RECORD", kerr.ErrorForCode(resp.ErrorCode))
	}
	// Produce v8+ says which record: the second (relative offset 1).
	if len(resp.ErrorRecords) != 1 || resp.ErrorRecords[0].RelativeOffset != 1 {
		t.Errorf("per-record errors %+v, want one for relative offset 1", resp.ErrorRecords)
	}
	if end := endOffset(t, ctx, b, "compacted"); end != next {
		t.Errorf("log end offset %d after the refused batch, want %d", end, next)
	}
}

// TestCorruptBatch: a batch whose CRC does not match its bytes is refused
// with CORRUPT_MESSAGE and not appended, and the connection goes on
// serving: a good batch sent after it on the same connection is appended
// at offset 0. The requests are built by hand (kmsg), as no client sends
// a bad CRC.
func TestCorruptBatch(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "crc", 1, nil)
	raw := dialRaw(t, b.addr())

	batch := rawBatch(kmsg.Record{Key: []byte("k"), Value: []byte("a value the CRC covers")})
	bad := bytes.Clone(batch)
	bad[len(bad)-10] ^= 0xff // a byte of the value, inside the CRC's range
	if code := rawProduce(t, raw, "crc", bad); code != kerr.CorruptMessage.Code {
		t.Errorf("a batch with a bad CRC: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(code))
	}
	if end := endOffset(t, ctx, b, "crc"); end != 0 {
		t.Errorf("log end offset %d after the corrupt batch, want 0", end)
	}
	if code := rawProduce(t, raw, "crc", batch); code != 0 {
		t.Fatalf("the good batch after it: %v", kerr.ErrorForCode(code))
	}
	got := (franzClient{b}).consume(t, ctx, "crc", 0, 0, 1)
	if string(got[0].Value) != "a value the CRC covers" || got[0].Offset != 0 {
		t.Errorf("read back %+v", got[0])
	}
}

// rawBatch encodes recs as one uncompressed RecordBatch v2 with a correct
// CRC-32C, without a producer id (-1), stamped now.
func rawBatch(recs ...kmsg.Record) []byte {
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{
		FirstOffset: 0, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)),
	}
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.Length = 0
		body := r.AppendTo(nil)
		// AppendTo writes Length as given: write it again with the
		// body's real length (less the varint itself).
		r.Length = int32(len(body) - len(binary.AppendVarint(nil, 0)))
		rb.Records = append(rb.Records, r.AppendTo(nil)...)
	}
	b := rb.AppendTo(nil)
	// BatchLength counts from after itself (offset 12); the CRC covers
	// from Attributes (offset 21) to the end (Kafka's RecordBatch format).
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32c(b[21:]))
	return b
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// rawProduce sends one batch to partition 0 of topic as Produce v9 with
// acks=all and returns the partition's error code.
func rawProduce(t *testing.T, raw *rawClient, topic string, batch []byte) int16 {
	t.Helper()
	return rawProducePartition(t, raw, topic, batch).ErrorCode
}

// rawProducePartition is rawProduce returning the partition's whole answer.
func rawProducePartition(t *testing.T, raw *rawClient, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	const version = 9
	corr := raw.send(req, version)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	raw.recv(corr, resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// endOffset returns partition 0's log end offset (high watermark).
func endOffset(t *testing.T, ctx context.Context, b *broker, topic string) int64 {
	t.Helper()
	return endOffsetAt(t, ctx, b.addr(), topic)
}
