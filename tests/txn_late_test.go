package tests

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestLateTransactionalProduce: KIP-890's hanging transaction. A
// transactional Produce request held in the network (a proxy between the
// producer and the broker) reaches the broker only after its transaction
// has ended, by the producer's own EndTxn(abort) or by another instance
// of its transactional id re-initialising it (a fence), with or without
// an earlier batch of the same transaction in the partition. The late
// batch must be refused (whatever the error), and nothing may come of it:
// read_committed never reads it, read_uncommitted does not either (it was
// not appended), and the partition's last stable offset reaches its high
// watermark (no transaction left open that nobody will end), also after
// the producer's next transaction, which commits.
//
// Both transaction versions, with hand-made requests: version 1 adds the
// partition with AddPartitionsToTxn v3 and produces with Produce v11, the
// broker then only verifying the batch with the coordinator (KIP-890 part
// 1); version 2 produces with Produce v12+, which adds the partition, and
// ends with EndTxn v5, which bumps the epoch (part 2).
func TestLateTransactionalProduce(t *testing.T) {
	for _, tv := range []struct {
		name string
		v2   bool
	}{{"tv1", false}, {"tv2", true}} {
		t.Run(tv.name, func(t *testing.T) {
			proxy := newHoldProxy(t)
			// Clients reach the broker only through the proxy: it is
			// what the broker advertises.
			b := startBroker(t, func(c *configs.Node) { c.Advertise = proxy.addr() })
			proxy.serve(b.addr())
			var opts []kgo.Opt
			if !tv.v2 {
				opts = append(opts, tv1())
			}
			cl := b.client(opts...)
			for _, sc := range []struct {
				name    string
				earlier bool // a batch of the transaction is in the partition before the late one
				fence   bool // the transaction ends by a new instance's InitProducerId, not by EndTxn(abort)
			}{
				{"abort-first", false, false},
				{"abort-second", true, false},
				{"fence-first", false, true},
				{"fence-second", true, true},
			} {
				t.Run(sc.name, func(t *testing.T) {
					lateTransactionalProduce(t, b, cl, proxy, tv.v2, "late-"+tv.name+"-"+sc.name, sc.earlier, sc.fence)
				})
			}
		})
	}
}

func lateTransactionalProduce(t *testing.T, b *broker, cl *kgo.Client, proxy *holdProxy, v2 bool, id string, earlier, fence bool) {
	ctx := ctxFor(t)
	topic := id
	adm := b.admin()
	created, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, ctx, adm, topic, 1)
	wantVersion := func(what string, got int16, v1, v2min int16) {
		t.Helper()
		if !v2 && got != v1 || v2 && got < v2min {
			t.Fatalf("%s v%d: not the transaction version the test is for", what, got)
		}
	}
	initPID := func() (int64, int16) {
		t.Helper()
		var resp *kmsg.InitProducerIDResponse
		// CONCURRENT_TRANSACTIONS while the coordinator aborts what a
		// fence found open: a client asks again.
		eventually(t, "InitProducerId", func() bool {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
			resp = coordinatorRequest[*kmsg.InitProducerIDResponse](t, ctx, cl, req)
			return resp.ErrorCode != kerr.ConcurrentTransactions.Code
		})
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		return resp.ProducerID, resp.ProducerEpoch
	}
	addPartition := func(pid int64, epoch int16) {
		t.Helper()
		if v2 {
			return // Produce v12+ adds it
		}
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := coordinatorRequest[*kmsg.AddPartitionsToTxnResponse](t, ctx, cl, req)
		wantVersion("AddPartitionsToTxn", resp.Version, 3, 0)
		if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
			t.Fatalf("AddPartitionsToTxn: %v", err)
		}
	}
	produceReq := func(pid int64, epoch int16, seq int32, values ...string) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, created.ID // v13 names topics by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = txnBatch(pid, epoch, seq, values...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	produced := func(resp *kmsg.ProduceResponse) error {
		wantVersion("Produce", resp.Version, 11, 12)
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	endTxn := func(pid int64, epoch int16, commit bool) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		resp := coordinatorRequest[*kmsg.EndTxnResponse](t, ctx, cl, req)
		wantVersion("EndTxn", resp.Version, 4, 5)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("EndTxn(commit %v): %v", commit, err)
		}
		if v2 {
			return resp.ProducerID, resp.ProducerEpoch // bumped
		}
		return pid, epoch
	}

	pid, epoch := initPID()
	addPartition(pid, epoch)
	seq := int32(0)
	var aborted []string
	if earlier {
		resp := request[*kmsg.ProduceResponse](t, ctx, cl, produceReq(pid, epoch, seq, "early-0", "early-1"))
		if err := produced(resp); err != nil {
			t.Fatalf("the earlier batch: %v", err)
		}
		seq += 2
		aborted = []string{"early-0", "early-1"}
	}

	// The late batch: held in the proxy, on its way to the broker.
	h := proxy.arm()
	late := make(chan *kmsg.ProduceResponse, 1)
	lateErr := make(chan error, 1)
	go func() {
		resp, err := produceReq(pid, epoch, seq, "late").RequestWith(ctx, cl.Broker(1))
		if err != nil {
			lateErr <- err
			return
		}
		late <- resp
	}()
	select {
	case <-h.held:
	case err := <-lateErr:
		t.Fatalf("the late Produce: %v", err)
	case <-ctx.Done():
		t.Fatal("the proxy held no Produce request")
	}

	// The transaction ends, its markers are written, and only then the
	// late batch arrives.
	if fence {
		pid, epoch = initPID() // another instance of the transactional id
	} else {
		pid, epoch = endTxn(pid, epoch, false)
	}
	waitStable(t, b, topic)
	close(h.release)
	var resp *kmsg.ProduceResponse
	select {
	case resp = <-late:
	case err := <-lateErr:
		t.Fatalf("the late Produce: %v", err)
	case <-ctx.Done():
		t.Fatal("the late Produce was not answered")
	}
	if err := produced(resp); err == nil {
		t.Fatalf("the late batch of a transaction that ended was appended at %d", resp.Topics[0].Partitions[0].BaseOffset)
	} else {
		t.Logf("the late batch was refused: %v", err)
	}
	waitStable(t, b, topic)

	// The producer goes on: its next transaction commits. A new epoch (a
	// fence, or EndTxn under transaction version 2) starts its sequences
	// again; under version 1 an abort keeps the epoch, and the sequence
	// goes on from the last batch appended (the late one was not).
	if fence || v2 {
		seq = 0
	}
	addPartition(pid, epoch)
	if err := produced(request[*kmsg.ProduceResponse](t, ctx, cl, produceReq(pid, epoch, seq, "next"))); err != nil {
		t.Fatalf("the next transaction's batch: %v", err)
	}
	endTxn(pid, epoch, true)
	waitStable(t, b, topic)
	if got := readIsolated(t, b, topic, true); !sameValues(got, "next") {
		t.Errorf("read_committed: %v, want [next]", got)
	}
	if got := readIsolated(t, b, topic, false); !sameValues(got, slices.Concat(aborted, []string{"next"})...) {
		t.Errorf("read_uncommitted: %v, want %v", got, slices.Concat(aborted, []string{"next"}))
	}
}

// coordinatorRequest sends req to the coordinator of its transactional id,
// which franz-go finds (and asks again on a retriable error), and returns
// the response.
func coordinatorRequest[R kmsg.Response](t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

// txnBatch is an uncompressed transactional RecordBatch v2, made by hand
// as a client makes it.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // AppendTo writes Length as given
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, // transactional
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// holdProxy forwards Kafka connections to a broker, byte for byte. Armed,
// it holds the next Produce request it reads (and, behind it, the rest of
// that connection's requests) until released: a network that delays one
// request.
type holdProxy struct {
	ln     net.Listener
	target string
	next   atomic.Pointer[held]
	closed chan struct{}

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// held is one armed hold: held is closed once a Produce request is held,
// and the test closes release to let it go on.
type held struct {
	held, release chan struct{}
}

func newHoldProxy(t *testing.T) *holdProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln, closed: make(chan struct{})}
	t.Cleanup(p.close)
	return p
}

func (p *holdProxy) addr() string { return p.ln.Addr().String() }

// arm makes the proxy hold the next Produce request.
func (p *holdProxy) arm() *held {
	h := &held{held: make(chan struct{}), release: make(chan struct{})}
	p.next.Store(h)
	return h
}

// serve starts forwarding to target.
func (p *holdProxy) serve(target string) {
	p.target = target
	p.wg.Go(func() {
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.forward(c) })
		}
	})
}

func (p *holdProxy) close() {
	close(p.closed)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// forward relays one client connection.
func (p *holdProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	p.wg.Go(func() { // broker → client
		defer client.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	defer server.Close()
	for { // client → broker
		frame, err := proxyReadFrame(client)
		if err != nil {
			return
		}
		rd := kbin.Reader{Src: frame[4:]}
		if key := rd.Int16(); key == 0 {
			if h := p.next.Swap(nil); h != nil {
				close(h.held)
				select {
				case <-h.release:
				case <-p.closed:
					return
				}
			}
		}
		if _, err := server.Write(frame); err != nil {
			return
		}
	}
}
