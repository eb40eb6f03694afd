package tests

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// Idempotent producers (issue 3, item 5) with unmodified clients: franz-go
// enables idempotence by default, so every test here runs KIP-98 end to
// end. The producers stop on any data-loss error (OUT_OF_ORDER_SEQUENCE_NUMBER,
// UNKNOWN_PRODUCER_ID) instead of silently resetting their producer id, so
// such an error fails the test.

// batchID names an idempotent batch: a retry carries the same one.
type batchID struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// lossyProxy forwards Kafka connections to a broker, byte for byte. Armed,
// it drops the response to the next Produce request it forwards and closes
// that connection, as a network failing just after the broker appended: the
// client cannot know the outcome and must send the batch again.
type lossyProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	// lost gets the batches of the request whose response was dropped.
	lost chan []batchID

	mu    sync.Mutex
	sent  map[batchID]int // Produce batches forwarded, with how many times
	conns []net.Conn
	wg    sync.WaitGroup
}

func newLossyProxy(t *testing.T) *lossyProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, lost: make(chan []batchID, 1), sent: map[batchID]int{}}
	t.Cleanup(p.close)
	return p
}

func (p *lossyProxy) addr() string { return p.ln.Addr().String() }

// serve starts forwarding to target.
func (p *lossyProxy) serve(target string) {
	p.target = target
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

func (p *lossyProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *lossyProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, cs...)
	p.mu.Unlock()
}

// forward relays one client connection. Responses come back in request
// order, each naming its request's correlation id, which is how a Produce
// response is told from the others.
func (p *lossyProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, server)
	type request struct {
		key     int16
		batches []batchID
	}
	var mu sync.Mutex
	inFlight := map[int32]request{}
	p.wg.Add(1)
	go func() { // client → broker
		defer p.wg.Done()
		defer server.Close()
		for {
			frame, err := proxyReadFrame(client)
			if err != nil {
				return
			}
			key, corr, batches := proxyParseRequest(frame)
			mu.Lock()
			inFlight[corr] = request{key, batches}
			mu.Unlock()
			if key == 0 {
				p.mu.Lock()
				for _, b := range batches {
					p.sent[b]++
				}
				p.mu.Unlock()
			}
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	defer client.Close()
	for { // broker → client
		frame, err := proxyReadFrame(server)
		if err != nil || len(frame) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		mu.Lock()
		req := inFlight[corr]
		delete(inFlight, corr)
		mu.Unlock()
		if req.key == 0 && p.armed.CompareAndSwap(true, false) {
			p.lost <- req.batches
			server.Close()
			return
		}
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

// proxyReadFrame reads one size-prefixed Kafka frame, prefix included.
func proxyReadFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// proxyParseRequest returns a request frame's key and correlation id and, for a
// Produce request, the idempotent batches it carries.
func proxyParseRequest(frame []byte) (int16, int32, []batchID) {
	rd := kbin.Reader{Src: frame[4:]}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	rd.NullableString() // client id
	if key != 0 || !rd.Ok() {
		return key, corr, nil
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return key, corr, nil
	}
	var out []batchID
	for _, t := range req.Topics {
		for _, pr := range t.Partitions {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(pr.Records); err == nil && b.ProducerID >= 0 {
				out = append(out, batchID{b.ProducerID, b.ProducerEpoch, b.FirstSequence})
			}
		}
	}
	return key, corr, out
}

// produceValues produces values from..to-1 as "<prefix>NNNN" and waits for
// every acknowledgement; any error fails the test.
func produceValues(t *testing.T, ctx context.Context, cl *kgo.Client, prefix string, from, to int) {
	t.Helper()
	var failed atomic.Pointer[error]
	for i := from; i < to; i++ {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s%04d", prefix, i)}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := failed.Load(); err != nil {
		t.Fatalf("produce: %v", *err)
	}
}

// checkExactlyOnce reads the one-partition topic and checks that it holds
// exactly the n values produced, each once, at offsets 0..n-1.
func checkExactlyOnce(t *testing.T, ctx context.Context, b *broker, topic, prefix string, n int) {
	t.Helper()
	ends, err := b.admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != int64(n) {
		t.Fatalf("%s log end offset %+v, want %d: records were duplicated or lost", topic, o, n)
	}
	seen := map[string]bool{}
	for i, r := range consumeFrom(t, ctx, b, topic, 0, 0, n) {
		v := string(r.Value)
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d: offsets not contiguous", i, r.Offset)
		}
		if seen[v] {
			t.Fatalf("%s at offset %d is a duplicate", v, r.Offset)
		}
		seen[v] = true
	}
	for i := range n {
		if v := fmt.Sprintf("%s%04d", prefix, i); !seen[v] {
			t.Fatalf("%s missing", v)
		}
	}
}

// TestIdempotentRetryAfterLostResponse: a Produce response lost with its
// connection makes franz-go send the same batches again (same producer id,
// epoch and sequence); the broker answers them with their original offsets
// instead of appending them twice.
func TestIdempotentRetryAfterLostResponse(t *testing.T) {
	proxy := newLossyProxy(t)
	// Clients reach the broker only through the proxy: it is what the
	// broker advertises.
	b := startBroker(t, func(c *configs.Node) { c.Advertise = proxy.addr() })
	proxy.serve(b.addr())
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "lossy", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(proxy.addr()), kgo.DefaultProduceTopic("lossy"), kgo.StopProducerOnDataLossDetected())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	produceValues(t, ctx, cl, "v", 0, 100)
	proxy.armed.Store(true)
	produceValues(t, ctx, cl, "v", 100, 200)
	var lost []batchID
	select {
	case lost = <-proxy.lost:
	case <-ctx.Done():
		t.Fatal("no Produce response was dropped")
	}
	if len(lost) == 0 {
		t.Fatal("the dropped Produce request held no idempotent batch")
	}
	produceValues(t, ctx, cl, "v", 200, 300)

	proxy.mu.Lock()
	for _, id := range lost {
		if n := proxy.sent[id]; n < 2 {
			t.Errorf("batch %+v whose response was lost was sent %d times, want a retry", id, n)
		}
	}
	proxy.mu.Unlock()
	checkExactlyOnce(t, ctx, b, "lossy", "v", 300)
}

// TestIdempotentProducerAcrossRestarts: a producer goes on with its
// producer id and sequences across a graceful broker restart (the state
// comes back from the snapshot taken at the stop) and across a restart of
// the partition's actor after a panic that follows an append (the state is
// rebuilt from the snapshot and the log after it; the append's answer is
// REQUEST_TIMED_OUT and its retry a duplicate): no OUT_OF_ORDER error, no
// duplicate.
func TestIdempotentProducerAcrossRestarts(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "resume", 1, nil)
	cl := b.client(kgo.DefaultProduceTopic("resume"), kgo.StopProducerOnDataLossDetected())

	produceValues(t, ctx, cl, "r", 0, 100)
	// Records in flight across the stop are retried after the restart;
	// whichever of them the broker had appended are duplicates then.
	for i := 100; i < 200; i++ {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%04d", i)}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce across the restart: %v", err)
			}
		})
	}
	b.restart()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	const actor = "node/1/partitions/resume-0"
	b.injectFault(`{"actor": "` + actor + `", "kind": "panic", "message": "Append", "after": true}`)
	produceValues(t, ctx, cl, "r", 200, 300)
	code, body := b.adminDo("GET", "/v1/faults", "")
	var faults struct{ Faults []json.RawMessage }
	if code != http.StatusOK || json.Unmarshal(body, &faults) != nil || len(faults.Faults) != 0 {
		t.Fatalf("the injected panic did not fire: %d %s", code, body)
	}
	if a := b.actors()[actor]; a == nil || a.Restarts < 1 {
		t.Fatalf("%s did not restart: %+v", actor, a)
	}
	produceValues(t, ctx, cl, "r", 300, 400)
	checkExactlyOnce(t, ctx, b, "resume", "r", 400)
}

// seqBatch is an uncompressed RecordBatch v2 of an idempotent producer,
// made by hand as a client makes it.
func seqBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // AppendTo writes Length as given
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestIdempotentSequenceErrorsRaw sends hand-made batches and checks each
// answer against Kafka 4.x's: a duplicate gets its original offset, a
// sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
// INVALID_PRODUCER_EPOCH, a new epoch not starting at 0
// OUT_OF_ORDER_SEQUENCE_NUMBER, an unknown producer id any sequence
// (KIP-360: never UNKNOWN_PRODUCER_ID). Refused batches append nothing.
func TestIdempotentSequenceErrorsRaw(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "raw")
	if err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, ctx, adm, "raw", 1)
	cl := b.client()
	initPID := func() int64 {
		resp := request[*kmsg.InitProducerIDResponse](t, ctx, cl, kmsg.NewPtrInitProducerIDRequest())
		if resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp.ProducerID
	}
	send := func(records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "raw", created.ID // v13 names topics by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.ProduceResponse](t, ctx, cl, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("produce response %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	ok := func(what string, records []byte, offset int64) {
		t.Helper()
		if p := send(records); p.ErrorCode != 0 || p.BaseOffset != offset {
			t.Fatalf("%s: base offset %d, %v; want base offset %d", what, p.BaseOffset, kerr.ErrorForCode(p.ErrorCode), offset)
		}
	}
	refused := func(what string, records []byte, want *kerr.Error) {
		t.Helper()
		p := send(records)
		if err := kerr.ErrorForCode(p.ErrorCode); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
		if p.ErrorMessage == nil || *p.ErrorMessage == "" {
			t.Errorf("%s: no error message", what)
		}
	}

	pid := initPID()
	ok("first batch", seqBatch(pid, 0, 0, "a", "b"), 0)
	ok("its retry", seqBatch(pid, 0, 0, "a", "b"), 0)
	refused("a gap", seqBatch(pid, 0, 3, "d"), kerr.OutOfOrderSequenceNumber)
	ok("the next sequence", seqBatch(pid, 0, 2, "c"), 2)
	ok("a new epoch from 0", seqBatch(pid, 1, 0, "e"), 3)
	refused("the old epoch", seqBatch(pid, 0, 3, "d"), kerr.InvalidProducerEpoch)
	refused("a new epoch not from 0", seqBatch(pid, 2, 5, "f"), kerr.OutOfOrderSequenceNumber)
	ok("an unknown producer id at any sequence", seqBatch(initPID(), 0, 1000, "g"), 4)
	checkExactlyOnceValues(t, ctx, b, "raw", []string{"a", "b", "c", "e", "g"})
}

// checkExactlyOnceValues checks the one-partition topic holds exactly
// values, in order.
func checkExactlyOnceValues(t *testing.T, ctx context.Context, b *broker, topic string, values []string) {
	t.Helper()
	ends, err := b.admin().ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != int64(len(values)) {
		t.Fatalf("%s log end offset %d, want %d", topic, o.Offset, len(values))
	}
	for i, r := range consumeFrom(t, ctx, b, topic, 0, 0, len(values)) {
		if string(r.Value) != values[i] || r.Offset != int64(i) {
			t.Fatalf("offset %d: %q, want %q at %d", r.Offset, r.Value, values[i], i)
		}
	}
}
