package tests

// sarama (github.com/IBM/sarama) as a client: its half of kafkaClient (see
// clients_test.go) and the checks only sarama needs. Every sarama client
// here claims sarama.MaxVersion, the newest Kafka it knows, and so relies
// on our ApiVersions answer to bring each request down to a version Skein
// serves (sarama's restrictApiVersion).

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

// saramaVersion is the Kafka version sarama clients claim.
var saramaVersion = sarama.MaxVersion

// saramaClient is sarama, its SyncProducer, Consumer and Client.
type saramaClient struct{ b *broker }

func (saramaClient) name() string { return "sarama" }

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "skein-tests"
	cfg.Consumer.Return.Errors = true
	// Closing a partition consumer waits for its fetch in flight, which
	// the broker holds up to this long once the consumer is caught up
	// (sarama's default: 500 ms).
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	return cfg
}

func saramaCodec(name string) sarama.CompressionCodec {
	switch name {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

// isSaramaError reports whether err is sarama's form of the Kafka error
// want.
func isSaramaError(err error, want *kerr.Error) bool {
	var ke sarama.KError
	return errors.As(err, &ke) && int16(ke) == want.Code
}

func (s saramaClient) produce(t *testing.T, ctx context.Context, topic string, recs []wireRecord, spec produceSpec) ([]wireRecord, []error) {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.RequiredAcks(spec.acks)
	cfg.Producer.Compression = saramaCodec(spec.codec)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	if spec.acks == -1 {
		// sarama's idempotent producer (InitProducerId, sequences), which
		// it allows with acks=all and one request in flight only.
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	if spec.maxBytes > 0 {
		cfg.Producer.MaxMessageBytes = int(spec.maxBytes)
	}
	p, err := sarama.NewSyncProducer([]string{s.b.addr()}, cfg)
	if err != nil {
		t.Fatalf("sarama: new producer: %v", err)
	}
	defer p.Close()

	msgs := make([]*sarama.ProducerMessage, len(recs))
	index := make(map[*sarama.ProducerMessage]int, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Value: sarama.ByteEncoder(r.Value), Timestamp: r.Timestamp}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(r.Key)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i], index[m] = m, i
	}
	errs := make([]error, len(recs))
	var perr sarama.ProducerErrors
	if err := p.SendMessages(msgs); errors.As(err, &perr) {
		for _, pe := range perr {
			errs[index[pe.Msg]] = pe.Err
		}
	} else if err != nil {
		t.Fatalf("sarama: send: %v", err)
	}
	out := make([]wireRecord, len(recs))
	for i, m := range msgs {
		out[i] = recs[i]
		out[i].Offset, out[i].Timestamp = m.Offset, m.Timestamp
		if spec.acks == 0 {
			out[i].Offset = -1
		}
	}
	return out, errs
}

func (s saramaClient) consume(t *testing.T, ctx context.Context, topic string, partition int32, offset int64, n int) []wireRecord {
	t.Helper()
	c, err := sarama.NewConsumer([]string{s.b.addr()}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama: new consumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("sarama: consume %s/%d from %d: %v", topic, partition, offset, err)
	}
	defer pc.Close()
	var out []wireRecord
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			w := wireRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp, Codec: -1}
			for _, h := range m.Headers {
				w.Headers = append(w.Headers, wireHeader{string(h.Key), h.Value})
			}
			out = append(out, w)
		case err := <-pc.Errors():
			t.Fatalf("sarama: consume %s/%d: %v (after %d records)", topic, partition, err, len(out))
		case <-ctx.Done():
			t.Fatalf("sarama: consume %s/%d: %d records of %d before %v", topic, partition, len(out), n, ctx.Err())
		}
	}
	return out
}

func (s saramaClient) offsetAfter(t *testing.T, _ context.Context, topic string, partition int32, millis int64) int64 {
	t.Helper()
	cl, err := sarama.NewClient([]string{s.b.addr()}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama: new client: %v", err)
	}
	defer cl.Close()
	off, err := cl.GetOffset(topic, partition, millis)
	if err != nil {
		t.Fatalf("sarama: GetOffset(%d): %v", millis, err)
	}
	return off
}

// TestSaramaNegotiatesVersions: a sarama client claiming sarama.MaxVersion
// reads our ApiVersions, then metadata, produce (idempotent, so
// InitProducerId too), fetch and ListOffsets work at the versions it
// settles on. /metrics shows which versions it sent; none is outside what
// we advertise, none was answered UNSUPPORTED_VERSION, and Produce and
// Fetch are at RecordBatch versions.
func TestSaramaNegotiatesVersions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)

	br := sarama.NewBroker(b.addr())
	if err := br.Open(saramaConfig()); err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	av, err := br.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "sarama", ClientSoftwareVersion: "1.61.1"})
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if av.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %v", sarama.KError(av.ErrorCode))
	}
	advertised := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}

	// Auto-created, as Kafka does by default, through sarama's metadata
	// request.
	s := saramaClient{b}
	recs := []wireRecord{{Key: []byte("k"), Value: []byte("v"), Headers: []wireHeader{{"h", []byte("x")}}, Timestamp: msTime(1_700_000_000_000)}}
	var acked []wireRecord
	var errs []error
	eventually(t, "sarama's produce to an auto-created topic", func() bool {
		acked, errs = s.produce(t, ctx, "negotiated", recs, allAcks)
		return errs[0] == nil
	})
	recs[0].Offset = acked[0].Offset
	got := s.consume(t, ctx, "negotiated", 0, 0, 1)
	if d := sameRecord(got[0], recs[0]); d != "" {
		t.Errorf("read back: %s", d)
	}
	if off := s.offsetAfter(t, ctx, "negotiated", 0, 1_700_000_000_000); off != 0 {
		t.Errorf("GetOffset by time: %d, want 0", off)
	}

	mfs := b.metrics()
	sent := map[string][]int{}
	for _, m := range mfs["skein_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		v, _ := strconv.Atoi(labels["version"])
		sent[labels["api"]] = append(sent[labels["api"]], v)
	}
	keys := map[string]int16{"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "ApiVersions": 18, "InitProducerID": 22}
	for api, key := range keys {
		vs := sent[api]
		if len(vs) == 0 {
			t.Errorf("sarama sent no %s request (sent: %v)", api, sent)
			continue
		}
		sort.Ints(vs)
		r, ok := advertised[key]
		for _, v := range vs {
			if !ok || int16(v) < r[0] || int16(v) > r[1] {
				t.Errorf("sarama sent %s v%d; we advertise %v", api, v, r)
			}
		}
		t.Logf("sarama %v sent %s at versions %v (advertised %d-%d)", saramaVersion, api, vs, r[0], r[1])
	}
	if v := sent["Produce"]; len(v) > 0 && v[0] < 3 {
		t.Errorf("sarama produced at v%d, below RecordBatch v2", v[0])
	}
	if v := sent["Fetch"]; len(v) > 0 && v[0] < 4 {
		t.Errorf("sarama fetched at v%d", v[0])
	}
	for _, m := range mfs["skein_request_errors_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "error" && l.GetValue() == "UNSUPPORTED_VERSION" {
				t.Errorf("a request was answered UNSUPPORTED_VERSION: %v", m.GetLabel())
			}
		}
	}
	if t.Failed() {
		t.Logf("sent: %v", sent)
	}
}
