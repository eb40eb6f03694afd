package tests

// sarama's transactions (issue 10): its transactional producer, its
// consume-transform-produce (AddMessageToTxn, AddOffsetsToTxn: KIP-447's
// TxnOffsetCommit with the member's generation) and its ReadCommitted
// consumer, which drops aborted batches itself from the fetch response's
// aborted transactions. sarama claims saramaVersion (sarama.MaxVersion),
// and adds partitions and offsets to its transactions itself (transaction
// version 1: Produce v10, AddPartitionsToTxn v3, EndTxn v3,
// TxnOffsetCommit v3).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saramaTxnConfig is the configuration of a sarama transactional producer:
// idempotent, acks=all and one request in flight, as sarama requires, and
// the partition each message names.
func saramaTxnConfig(id string) *sarama.Config {
	cfg := saramaConfig()
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	return cfg
}

// saramaReader is a sarama consumer reading every partition of a topic
// from the start, with an isolation level, until closed.
type saramaReader struct {
	t        *testing.T
	b        *broker
	consumer sarama.Consumer
	pcs      []sarama.PartitionConsumer
	done     sync.WaitGroup

	mu   sync.Mutex
	seen []string         // values, in the order read
	last map[int32]string // partition → the value read last
	errs []error
}

func startSaramaReader(t *testing.T, b *broker, topic string, partitions int32, level sarama.IsolationLevel) *saramaReader {
	t.Helper()
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = level
	c, err := sarama.NewConsumer([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("sarama: new consumer: %v", err)
	}
	r := &saramaReader{t: t, b: b, consumer: c, last: map[int32]string{}}
	for p := range partitions {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama: consume %s/%d: %v", topic, p, err)
		}
		r.pcs = append(r.pcs, pc)
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			for m := range pc.Messages() {
				r.mu.Lock()
				r.seen = append(r.seen, string(m.Value))
				r.last[m.Partition] = string(m.Value)
				r.mu.Unlock()
			}
		}()
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			for err := range pc.Errors() {
				r.mu.Lock()
				r.errs = append(r.errs, err)
				r.mu.Unlock()
			}
		}()
	}
	t.Cleanup(r.close)
	return r
}

func (r *saramaReader) close() {
	if r.consumer == nil {
		return
	}
	// sarama: a Consumer closes after its PartitionConsumers.
	for _, pc := range r.pcs {
		pc.AsyncClose()
	}
	r.done.Wait()
	if err := r.consumer.Close(); err != nil {
		r.t.Errorf("sarama: close consumer: %v", err)
	}
	r.consumer = nil
}

func (r *saramaReader) values() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		r.t.Fatalf("sarama consumer: %v", r.errs)
	}
	return slices.Clone(r.seen)
}

// caughtUp waits until the reader has read every value of want, then
// for five more Fetch requests to reach the broker (the reader's, as it
// polls at the end of the log), and fails unless it read exactly want.
func (r *saramaReader) caughtUp(what string, want []string) {
	r.t.Helper()
	eventually(r.t, what+": every record", func() bool {
		got := map[string]bool{}
		for _, v := range r.values() {
			got[v] = true
		}
		for _, v := range want {
			if !got[v] {
				return false
			}
		}
		return true
	})
	after := r.b.requests("Fetch") + 5
	eventually(r.t, what+": five more fetches", func() bool { return r.b.requests("Fetch") >= after })
	if got := r.values(); !sameValues(got, want...) {
		r.t.Fatalf("%s: read %v, want %v", what, got, want)
	}
}

// endsWith waits until the reader's last record of each partition is
// end-P: the records it read before are all it will ever read of them.
func (r *saramaReader) endsWith(partitions int32) []string {
	r.t.Helper()
	eventually(r.t, "every partition's end-P record", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for p := range partitions {
			if r.last[p] != fmt.Sprintf("end-%d", p) {
				return false
			}
		}
		return true
	})
	return r.values()
}

// requests is the count of requests to api the broker has answered, of
// every version (skein_requests_total).
func (b *broker) requests(api string) float64 {
	var n float64
	for _, m := range b.metrics()["skein_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "api" && l.GetValue() == api {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// saramaCopier is a sarama ConsumerGroup member that hands every message
// it is given to the test, and marks none: the group's offsets are only
// the ones the transactions commit.
type saramaCopier struct {
	msgs chan *sarama.ConsumerMessage

	mu   sync.Mutex
	sess sarama.ConsumerGroupSession
}

func (c *saramaCopier) Setup(s sarama.ConsumerGroupSession) error {
	c.mu.Lock()
	c.sess = s
	c.mu.Unlock()
	return nil
}

func (c *saramaCopier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *saramaCopier) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case c.msgs <- m:
			case <-s.Context().Done():
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// metadata is the group metadata of the member's session, for KIP-447's
// checks of TxnOffsetCommit.
func (c *saramaCopier) metadata(group string) *sarama.ConsumerGroupMetadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sarama.NewConsumerGroupMetadataFromSession(c.sess, group, nil)
}

// TestSaramaTransactions: sarama's transactional producer commits some
// transactions and aborts others, on two partitions; a ReadCommitted
// sarama consumer, reading throughout, reads exactly the committed records
// and stops before a transaction in progress until it commits, while a
// ReadUncommitted one reads every record. A second producer with the same
// transactional id fences the first, whose open transaction is aborted.
// Then consume-transform-produce: a sarama ConsumerGroup member reads an
// input topic and the producer copies it, with the member's offsets added
// to the transaction (AddMessageToTxn, AddOffsetsToTxn): aborted once,
// refused once at the commit for another generation than the group's
// (KIP-447: ILLEGAL_GENERATION) and aborted, then committed, after which
// the group's offsets (OffsetFetch, through sarama's ClusterAdmin) are the
// ones the transaction committed. The last transaction writes an end-P
// record to each partition: the consumers that read it have read all
// they ever will, exactly the committed records (ReadCommitted) or every
// record (ReadUncommitted).
func TestSaramaTransactions(t *testing.T) {
	const partitions, input = 2, 20
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	in, out, group := "sarama-txn-in", "sarama-txn-out", "sarama-txn-copier"
	mustCreate(t, ctx, adm, in, partitions, nil)
	mustCreate(t, ctx, adm, out, partitions, nil)
	produceN(t, b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), in, 0, input)

	newProducer := func(id string) sarama.SyncProducer {
		t.Helper()
		p, err := sarama.NewSyncProducer([]string{b.addr()}, saramaTxnConfig(id))
		if err != nil {
			t.Fatalf("sarama: new transactional producer: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	p := newProducer("sarama-tx")
	reader := startSaramaReader(t, b, out, partitions, sarama.ReadCommitted)

	// committed and all are the values written to out: committed ones,
	// and every one.
	var committed, all []string
	n := 0
	// send sends values, alternating partitions, and returns them.
	send := func(p sarama.SyncProducer, values ...string) []string {
		t.Helper()
		msgs := make([]*sarama.ProducerMessage, len(values))
		for i, v := range values {
			msgs[i] = &sarama.ProducerMessage{Topic: out, Partition: int32(n % partitions), Value: sarama.StringEncoder(v)}
			n++
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("sarama: send %v: %v", values, err)
		}
		all = append(all, values...)
		return values
	}
	begin := func(p sarama.SyncProducer) {
		t.Helper()
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("sarama: begin: %v", err)
		}
	}
	end := func(p sarama.SyncProducer, commit bool, values []string) {
		t.Helper()
		if commit {
			if err := p.CommitTxn(); err != nil {
				t.Fatalf("sarama: commit: %v", err)
			}
			committed = append(committed, values...)
		} else if err := p.AbortTxn(); err != nil {
			t.Fatalf("sarama: abort: %v", err)
		}
	}
	values := func(prefix string, n int) []string {
		var vs []string
		for i := range n {
			vs = append(vs, fmt.Sprintf("%s-%d", prefix, i))
		}
		return vs
	}

	begin(p)
	end(p, true, send(p, values("c1", 6)...))
	begin(p)
	end(p, false, send(p, values("a1", 6)...))
	begin(p)
	end(p, true, send(p, values("c2", 6)...))
	reader.caughtUp("committed, aborted, committed", committed)

	// A transaction in progress: the reader stops at its first record.
	begin(p)
	open := send(p, values("o", 4)...)
	reader.caughtUp("a transaction open", committed)
	end(p, true, open)
	reader.caughtUp("the open transaction committed", committed)

	// Fencing: a second producer with the same transactional id
	// (InitProducerId) aborts the first one's transaction and bumps the
	// epoch; the first can no longer commit.
	begin(p)
	send(p, values("z", 4)...)
	p2 := newProducer("sarama-tx")
	if err := p.CommitTxn(); !errors.Is(err, sarama.ErrProducerFenced) && !errors.Is(err, sarama.ErrInvalidProducerEpoch) {
		t.Fatalf("sarama: the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if s := p.TxnStatus(); s&sarama.ProducerTxnFlagFatalError == 0 {
		t.Errorf("the fenced producer's transaction status %v, want a fatal error", s)
	}
	reader.caughtUp("the fenced producer's transaction", committed)

	// Consume-transform-produce.
	copier := &saramaCopier{msgs: make(chan *sarama.ConsumerMessage, input)}
	gcfg := saramaConfig()
	gcfg.Consumer.IsolationLevel = sarama.ReadCommitted
	gcfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	gcfg.Consumer.Offsets.AutoCommit.Enable = false
	gcfg.Consumer.Group.Session.Timeout = 3 * time.Second
	gcfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{b.addr()}, group, gcfg)
	if err != nil {
		t.Fatalf("sarama: new consumer group: %v", err)
	}
	gctx, stop := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for gctx.Err() == nil {
			if err := cg.Consume(gctx, []string{in}, copier); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Logf("sarama: consume: %v", err)
			}
		}
	}()
	var closeOnce sync.Once
	closeGroup := func() {
		closeOnce.Do(func() {
			stop()
			<-consumed
			if err := cg.Close(); err != nil {
				t.Errorf("sarama: close consumer group: %v", err)
			}
		})
	}
	defer closeGroup()
	var msgs []*sarama.ConsumerMessage
	for len(msgs) < input {
		select {
		case m := <-copier.msgs:
			msgs = append(msgs, m)
		case <-ctx.Done():
			t.Fatalf("sarama: %d records of %s consumed", len(msgs), in)
		}
	}
	copies := func(msgs []*sarama.ConsumerMessage) []string {
		var vs []string
		for _, m := range msgs {
			vs = append(vs, "copy-"+string(m.Value))
		}
		return vs
	}
	// next is the offset after msgs in each partition.
	next := func(msgs []*sarama.ConsumerMessage) map[string][]*sarama.PartitionOffsetMetadata {
		at := map[int32]int64{}
		for _, m := range msgs {
			at[m.Partition] = max(at[m.Partition], m.Offset+1)
		}
		var offs []*sarama.PartitionOffsetMetadata
		for _, p := range slices.Sorted(maps.Keys(at)) {
			offs = append(offs, &sarama.PartitionOffsetMetadata{Partition: p, Offset: at[p]})
		}
		return map[string][]*sarama.PartitionOffsetMetadata{in: offs}
	}
	saramaAdmin, err := sarama.NewClusterAdmin([]string{b.addr()}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama: new cluster admin: %v", err)
	}
	defer saramaAdmin.Close()
	groupOffsets := func() map[int32]int64 {
		t.Helper()
		res, err := saramaAdmin.ListConsumerGroupOffsets(group, map[string][]int32{in: {0, 1}})
		if err != nil {
			t.Fatalf("sarama: OffsetFetch: %v", err)
		}
		got := map[int32]int64{}
		for p, block := range res.Blocks[in] {
			if !errors.Is(block.Err, sarama.ErrNoError) {
				t.Fatalf("sarama: OffsetFetch %s/%d: %v", in, p, block.Err)
			}
			got[p] = block.Offset
		}
		return got
	}

	// Aborted, the offsets of half the input added message by message.
	// NB: sarama sends a transaction's offsets (AddOffsetsToTxn,
	// TxnOffsetCommit) when it commits, never when it aborts.
	begin(p2)
	half := msgs[:input/2]
	copied := send(p2, copies(half)...)
	for _, m := range half {
		if err := p2.AddMessageToTxnWithGroupMetadata(m, copier.metadata(group), nil); err != nil {
			t.Fatalf("sarama: AddMessageToTxn %s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
	}
	end(p2, false, copied)
	if got, want := groupOffsets(), map[int32]int64{0: -1, 1: -1}; !maps.Equal(got, want) {
		t.Fatalf("the group's offsets after the aborted transaction: %v, want %v", got, want)
	}

	// KIP-447: offsets of a member of another generation than the
	// group's are refused at the commit (ILLEGAL_GENERATION), and the
	// transaction must abort: its records and the offsets' partition of
	// __consumer_offsets (AddOffsetsToTxn) get abort markers.
	begin(p2)
	send(p2, copies(half)...)
	stale := copier.metadata(group)
	stale.GenerationID++
	if err := p2.AddOffsetsToTxnWithGroupMetadata(next(msgs), stale); err != nil {
		t.Fatalf("sarama: AddOffsetsToTxn: %v", err)
	}
	if err := p2.CommitTxn(); !errors.Is(err, sarama.ErrIllegalGeneration) {
		t.Fatalf("sarama: commit with offsets of generation %d: %v, want ILLEGAL_GENERATION", stale.GenerationID, err)
	}
	if s := p2.TxnStatus(); s&sarama.ProducerTxnFlagAbortableError == 0 {
		t.Fatalf("transaction status %v after ILLEGAL_GENERATION, want abortable", s)
	}
	end(p2, false, nil)
	if got, want := groupOffsets(), map[int32]int64{0: -1, 1: -1}; !maps.Equal(got, want) {
		t.Fatalf("the group's offsets after the refused commit: %v, want %v", got, want)
	}

	// Committed: every record copied, the offsets after them.
	begin(p2)
	copied = send(p2, copies(msgs)...)
	if err := p2.AddOffsetsToTxnWithGroupMetadata(next(msgs), copier.metadata(group)); err != nil {
		t.Fatalf("sarama: AddOffsetsToTxn: %v", err)
	}
	end(p2, true, copied)
	// EndTxn answers once the commit is decided; the offsets are the
	// group's once its marker is written.
	want := map[int32]int64{}
	for _, offs := range next(msgs) {
		for _, o := range offs {
			want[o.Partition] = o.Offset
		}
	}
	if want[0]+want[1] != input {
		t.Fatalf("offsets after the input %v, want %d records in all", want, input)
	}
	eventually(t, "the group's offsets to be the ones committed", func() bool { return maps.Equal(groupOffsets(), want) })
	closeGroup()
	if got := groupOffsets(); !maps.Equal(got, want) {
		t.Fatalf("the group's offsets once its member left: %v, want %v", got, want)
	}

	// The last transaction ends each partition with end-P: a reader that
	// read it has read everything it ever will before it.
	begin(p2)
	end(p2, true, send(p2, "end-0", "end-1"))
	if got := reader.endsWith(partitions); !sameValues(got, committed...) {
		t.Fatalf("ReadCommitted: read %v, want %v", got, committed)
	}
	uncommitted := startSaramaReader(t, b, out, partitions, sarama.ReadUncommitted)
	if got := uncommitted.endsWith(partitions); !sameValues(got, all...) {
		t.Fatalf("ReadUncommitted: read %v, want %v", got, all)
	}
	logTxnVersions(t, b)
}

// logTxnVersions logs the versions the broker saw for the APIs of
// transactions (from skein_requests_total), and fails if none was sent for
// one of them.
func logTxnVersions(t *testing.T, b *broker) {
	t.Helper()
	sent := map[string][]string{}
	for _, m := range b.metrics()["skein_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		sent[labels["api"]] = append(sent[labels["api"]], labels["version"])
	}
	var line []string
	for _, api := range []string{"FindCoordinator", "InitProducerID", "AddPartitionsToTxn", "Produce", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "Fetch", "OffsetFetch"} {
		vs := sent[api]
		if len(vs) == 0 {
			t.Errorf("no %s request was sent", api)
			continue
		}
		slices.Sort(vs)
		line = append(line, fmt.Sprintf("%s %v", api, vs))
	}
	t.Logf("transaction API versions sent: %s", strings.Join(line, ", "))
}

// TestSaramaOffsetFetchRequireStable: KIP-447's OffsetFetch RequireStable
// (v7+), sent by sarama at v7 and v8. While a transaction's offsets wait
// for its marker, a partition with one answers UNSTABLE_OFFSET_COMMIT, and
// without RequireStable the offset committed before; once the transaction
// commits, its offset. The transaction is franz-go's raw requests
// (InitProducerId, AddOffsetsToTxn, TxnOffsetCommit, EndTxn): sarama sends
// a transaction's offsets only as it commits, leaving no time to ask.
func TestSaramaOffsetFetchRequireStable(t *testing.T) {
	b := groupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group, id := "sarama-stable", "sarama-stable-group", "sarama-stable-tx"
	mustCreate(t, ctx, adm, topic, 2, nil)
	var plain kadm.Offsets
	plain.AddOffset(topic, 0, 1, -1)
	plain.AddOffset(topic, 1, 1, -1)
	if err := adm.CommitAllOffsets(ctx, group, plain); err != nil {
		t.Fatalf("commit: %v", err)
	}

	cl := b.client()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	ir, err := init.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(ir.ErrorCode)
	}
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, ir.ProducerID, ir.ProducerEpoch, group
	ar, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(ar.ErrorCode)
	}
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.ProducerID, commit.ProducerEpoch, commit.Group = id, ir.ProducerID, ir.ProducerEpoch, group
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 5
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	for _, rt := range cr.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("TxnOffsetCommit %s/%d: %v", rt.Topic, rp.Partition, err)
			}
		}
	}

	sc, err := sarama.NewClient([]string{b.addr()}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama: new client: %v", err)
	}
	defer sc.Close()
	coordinator, err := sc.Coordinator(group)
	if err != nil {
		t.Fatalf("sarama: coordinator of %s: %v", group, err)
	}
	// fetch is partition → "offset error-code" as sarama's OffsetFetch at
	// version reads it.
	fetch := func(version int16, stable bool) map[int32]string {
		t.Helper()
		req := &sarama.OffsetFetchRequest{Version: version, ConsumerGroup: group, RequireStable: stable}
		if version >= 8 {
			req = sarama.NewOffsetFetchRequest(saramaVersion, group, nil)
			req.RequireStable = stable
			req.AddGroupPartition(group, topic, 0)
			req.AddGroupPartition(group, topic, 1)
		} else {
			req.AddPartition(topic, 0)
			req.AddPartition(topic, 1)
		}
		resp, err := coordinator.FetchOffset(req)
		if err != nil {
			t.Fatalf("sarama: OffsetFetch v%d: %v", version, err)
		}
		got := map[int32]string{}
		for p := range int32(2) {
			if blk := resp.GetBlock(topic, p); blk != nil {
				got[p] = fmt.Sprintf("%d %d", blk.Offset, blk.Err)
			}
		}
		return got
	}
	unstable := map[int32]string{0: fmt.Sprintf("-1 %d", sarama.ErrUnstableOffsetCommit), 1: "1 0"}
	before := map[int32]string{0: "1 0", 1: "1 0"}
	for _, v := range []int16{7, 8} {
		if got := fetch(v, true); !maps.Equal(got, unstable) {
			t.Errorf("OffsetFetch v%d RequireStable with the transaction open: %v, want %v", v, got, unstable)
		}
		if got := fetch(v, false); !maps.Equal(got, before) {
			t.Errorf("OffsetFetch v%d with the transaction open: %v, want %v", v, got, before)
		}
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	er, err := end.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(er.ErrorCode)
	}
	if err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	after := map[int32]string{0: "5 0", 1: "1 0"}
	eventually(t, "the transaction's offset", func() bool { return maps.Equal(fetch(8, true), after) })
	if got := fetch(7, false); !maps.Equal(got, after) {
		t.Errorf("OffsetFetch v7 after the commit: %v, want %v", got, after)
	}
}
