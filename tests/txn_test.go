package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Transactions (issue 10) with unmodified clients, on one node.

// tv1 caps a franz-go client below KIP-890's transaction version 2
// (Produce v12, EndTxn v5, TxnOffsetCommit v5), so that it adds partitions
// and offsets to its transactions itself, as older clients do.
func tv1() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11) // Produce
	v.SetMaxKeyVersion(26, 4) // EndTxn
	v.SetMaxKeyVersion(28, 4) // TxnOffsetCommit
	v.SetMaxKeyVersion(24, 3) // AddPartitionsToTxn
	return kgo.MaxVersions(v)
}

// readIsolated reads a topic from the start to its end as of now, with the
// isolation level given, and returns the values.
func readIsolated(t *testing.T, b *broker, topic string, committed bool) []string {
	t.Helper()
	var out []string
	for _, r := range readRecords(t, b, topic, committed) {
		if !r.Attrs.IsControl() {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// readRecords reads a topic from the start to its end as of now (its last
// stable offsets for read_committed), with the isolation level given, and
// returns its records, markers included, in order within each partition.
func readRecords(t *testing.T, b *broker, topic string, committed bool) []*kgo.Record {
	t.Helper()
	ctx := ctxFor(t)
	adm := b.admin()
	level := kgo.ReadUncommitted()
	var ends kadm.ListedOffsets
	var err error
	if committed {
		level = kgo.ReadCommitted()
		ends, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	// Markers take offsets, often a partition's last: the consumer keeps
	// them so that it sees where each partition ends.
	cl := b.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords())
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("poll: %v (still reading %v)", err, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

// TestTransactionsCommitAndAbort: a transactional producer's committed
// records are read by read_committed consumers, its aborted ones are not
// (read_uncommitted sees both), and records of a transaction in progress
// are invisible to read_committed until it commits: the last stable offset
// holds at its first record. Both transaction versions.
func TestTransactionsCommitAndAbort(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{{"tv2", nil}, {"tv1", []kgo.Opt{tv1()}}} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t)
			ctx := ctxFor(t)
			topic := "txn-" + tc.name
			if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			p := b.client(append(tc.opts, kgo.TransactionalID("tx-"+tc.name), kgo.DefaultProduceTopic(topic))...)
			txn := func(commit bool, values ...string) {
				t.Helper()
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for _, v := range values {
					if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
						t.Fatalf("produce %s: %v", v, err)
					}
				}
				if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("end transaction: %v", err)
				}
			}
			txn(true, "c1", "c2", "c3")
			txn(false, "a1", "a2")
			txn(true, "c4")

			// A transaction in progress: read_committed stops before it.
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"o1", "o2"} {
				if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if got := readIsolated(t, b, topic, true); !sameValues(got, "c1", "c2", "c3", "c4") {
				t.Fatalf("read_committed with a transaction open: %v", got)
			}
			if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			// EndTxn answers once the commit is decided; its markers
			// follow.
			waitStable(t, b, topic)
			if got := readIsolated(t, b, topic, true); !sameValues(got, "c1", "c2", "c3", "c4", "o1", "o2") {
				t.Fatalf("read_committed: %v", got)
			}
			if got := readIsolated(t, b, topic, false); !sameValues(got, "c1", "c2", "c3", "a1", "a2", "c4", "o1", "o2") {
				t.Fatalf("read_uncommitted: %v", got)
			}
		})
	}
}

// waitStable waits until no transaction is open on topic: its last
// stable offsets reach its high watermarks.
func waitStable(t *testing.T, b *broker, topic string) {
	t.Helper()
	ctx := ctxFor(t)
	adm := b.admin()
	for {
		stable, err1 := adm.ListCommittedOffsets(ctx, topic)
		end, err2 := adm.ListEndOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			t.Fatalf("offsets: %v %v", err1, err2)
		}
		open := false
		end.Each(func(o kadm.ListedOffset) {
			if s, _ := stable.Lookup(topic, o.Partition); s.Offset != o.Offset {
				open = true
			}
		})
		if !open {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("a transaction stays open on %s: last stable offsets %v, high watermarks %v", topic, stable, end)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sameValues reports whether got holds exactly want, in any order (the
// records of two partitions interleave).
func sameValues(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	n := map[string]int{}
	for _, v := range got {
		n[v]++
	}
	for _, v := range want {
		if n[v]--; n[v] < 0 {
			return false
		}
	}
	return true
}

// TestGroupTransactSessionCopy: franz-go's exactly-once pipeline
// (GroupTransactSession: consume, produce, commit offsets in one
// transaction) copies an input topic to an output topic with two copiers,
// one of which leaves half way (a rebalance moves its partitions, whose
// offsets its transactions committed): every input record is in the output
// exactly once, and a read_committed reader running meanwhile never reads a
// record twice. Both transaction versions.
func TestGroupTransactSessionCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{{"tv2", nil}, {"tv1", []kgo.Opt{tv1()}}} {
		t.Run(tc.name, func(t *testing.T) {
			const records = 3000
			b := startBroker(t)
			ctx := ctxFor(t)
			in, out := "copy-in-"+tc.name, "copy-out-"+tc.name
			if _, err := b.admin().CreateTopics(ctx, 3, 1, nil, in, out); err != nil {
				t.Fatal(err)
			}
			seed := b.client(kgo.DefaultProduceTopic(in))
			for i := range records {
				seed.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))}, nil)
			}
			if err := seed.Flush(ctx); err != nil {
				t.Fatal(err)
			}

			// The reader: read_committed, from the start, counting.
			seen := map[string]int{}
			var mu sync.Mutex
			reader := b.client(kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			readerDone := make(chan error, 1)
			go func() {
				for {
					fs := reader.PollFetches(ctx)
					if err := fs.Err(); err != nil {
						readerDone <- err
						return
					}
					mu.Lock()
					fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
					n := len(seen)
					mu.Unlock()
					if n == records {
						readerDone <- nil
						return
					}
				}
			}()

			copier := func(id string, stop <-chan struct{}) error {
				sess, err := kgo.NewGroupTransactSession(append(tc.opts, kgo.SeedBrokers(b.addr()),
					kgo.TransactionalID(id), kgo.DefaultProduceTopic(out),
					kgo.ConsumerGroup("copiers-"+tc.name), kgo.ConsumeTopics(in),
					kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
					kgo.FetchMaxPartitionBytes(16<<10))...)
				if err != nil {
					return err
				}
				defer sess.Close()
				for {
					select {
					case <-stop:
						return nil
					default:
					}
					pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
					fs := sess.PollFetches(pctx)
					cancel()
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if fs.Empty() {
						continue
					}
					if err := sess.Begin(); err != nil {
						return err
					}
					e := kgo.AbortingFirstErrPromise(sess.Client())
					fs.EachRecord(func(r *kgo.Record) {
						sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, e.Promise())
					})
					if _, err := sess.End(ctx, kgo.TransactionEndTry(e.Err() == nil)); err != nil {
						return err
					}
				}
			}
			stopA, stopB := make(chan struct{}), make(chan struct{})
			errs := make(chan error, 2)
			go func() { errs <- copier("copier-a-"+tc.name, stopA) }()
			go func() { errs <- copier("copier-b-"+tc.name, stopB) }()
			// Copier b leaves once a third of the records is through.
			var readErr error
			read := false
		wait:
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= records/3 {
					break
				}
				select {
				case readErr = <-readerDone:
					read = true
					break wait
				case err := <-errs:
					t.Fatalf("copier: %v", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			close(stopB)
			if err := <-errs; err != nil {
				t.Fatalf("copier: %v", err)
			}
			if !read {
				readErr = <-readerDone
			}
			if readErr != nil {
				t.Fatalf("reader: %v (read %d of %d)", readErr, len(seen), records)
			}
			close(stopA)
			if err := <-errs; err != nil {
				t.Fatalf("copier: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for v, n := range seen {
				if n != 1 {
					t.Errorf("record %s read %d times", v, n)
				}
			}
			for i := range records {
				if seen[fmt.Sprint(i)] == 0 {
					t.Errorf("record %d never copied", i)
				}
			}
			// The group's offsets, committed in the transactions, are at
			// the input's end once the last markers are in.
			ends, err := b.admin().ListEndOffsets(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for {
				offs, err := b.admin().FetchOffsets(ctx, "copiers-"+tc.name)
				if err != nil {
					t.Fatal(err)
				}
				behind := false
				ends.Each(func(e kadm.ListedOffset) {
					if o, ok := offs.Lookup(in, e.Partition); !ok || o.At != e.Offset {
						behind = true
					}
				})
				if !behind {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("committed offsets %v, want the input's end %v", offs, ends)
				case <-time.After(10 * time.Millisecond):
				}
			}
			// Everything read_uncommitted holds beyond that was aborted.
			all := readIsolated(t, b, out, false)
			if len(all) < records {
				t.Fatalf("read_uncommitted %d records, fewer than the %d committed", len(all), records)
			}
		})
	}
}

// TestTransactionTimeoutAndAdmin: a transaction its producer leaves open
// is aborted by its coordinator after transaction.timeout.ms, so the last
// stable offset moves on (no hanging transaction) and the producer is
// fenced; meanwhile Kafka's admin APIs describe it (DescribeTransactions,
// ListTransactions, DescribeProducers) and /metrics counts it.
func TestTransactionTimeoutAndAdmin(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const topic = "txn-timeout"
	adm := b.admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.TransactionalID("slow"), kgo.TransactionTimeout(2*time.Second), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("never committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	described, err := adm.DescribeTransactions(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["slow"]
	if !ok || d.Err != nil || d.State != "Ongoing" || d.TimeoutMillis != 2000 || len(d.Topics[topic]) != 1 {
		t.Fatalf("DescribeTransactions: %+v", described)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["slow"]; !ok || l.ProducerID != d.ProducerID || l.State != "Ongoing" {
		t.Fatalf("ListTransactions: %+v", listed)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	producers.EachProducer(func(s kadm.DescribedProducer) {
		if s.ProducerID == d.ProducerID && s.CurrentTxnStartOffset == 0 {
			found = true
		}
	})
	if !found {
		t.Fatalf("DescribeProducers: no producer %d with a transaction from offset 0: %+v", d.ProducerID, producers)
	}
	if v, _ := metricValue(b.metrics(), "skein_transactions_ongoing", nil); v != 1 {
		t.Fatalf("skein_transactions_ongoing %v, want 1", v)
	}

	// The coordinator aborts it; read_committed never sees the record.
	waitStable(t, b, topic)
	if got := readIsolated(t, b, topic, true); len(got) != 0 {
		t.Fatalf("read_committed: %v", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the producer of a timed out transaction committed it")
	}
	// The markers (which moved the LSO) are written before the coordinator
	// records the abort as complete, and that is when it is counted.
	for name, want := range map[string]float64{"skein_transactions_ongoing": 0, "skein_transactions_timed_out_total": 1, "skein_transactions_aborted_total": 1} {
		eventually(t, fmt.Sprintf("%s %v", name, want), func() bool {
			v, _ := metricValue(b.metrics(), name, nil)
			return v == want
		})
	}
}

// TestCompactionOfTransactions: on a compacted topic, the cleaner removes
// the records of aborted transactions (a read_uncommitted consumer no
// longer sees them) without letting them displace the committed values of
// their keys (read_committed still reads every key's last committed value),
// and drops markers once their transactions' records are gone and
// delete.retention.ms has passed.
func TestCompactionOfTransactions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const topic = "compacted-txn"
	policy, seg, retention := "compact", "2048", "100"
	if _, err := b.admin().CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &policy, "segment.bytes": &seg,
		"delete.retention.ms": &retention}, topic); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.TransactionalID("compactor"), kgo.DefaultProduceTopic(topic))
	const keys, rounds = 10, 30
	txn := func(commit bool, value func(k int) string) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint("k", k)), Value: []byte(value(k))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	for r := range rounds {
		txn(true, func(k int) string { return fmt.Sprintf("c%d-%d", k, r) })
		txn(false, func(k int) string { return fmt.Sprintf("a%d-%d", k, r) })
	}
	waitStable(t, b, topic)

	// count reads the topic with control records: data records, aborted
	// ones among them, and markers.
	count := func() (data, aborted, markers int) {
		for _, r := range readRecords(t, b, topic, false) {
			switch {
			case r.Attrs.IsControl():
				markers++
			case r.Value[0] == 'a':
				aborted++
				data++
			default:
				data++
			}
		}
		return data, aborted, markers
	}
	eventually(t, "the cleaner to remove aborted records and their markers", func() bool {
		_, aborted, markers := count()
		return aborted < keys*rounds/2 && markers < rounds
	})
	last := map[string]string{}
	for _, r := range readRecords(t, b, topic, true) {
		if !r.Attrs.IsControl() {
			last[string(r.Key)] = string(r.Value)
		}
	}
	for k := range keys {
		if got, want := last[fmt.Sprint("k", k)], fmt.Sprintf("c%d-%d", k, rounds-1); got != want {
			t.Errorf("key k%d: last committed value %q, want %q", k, got, want)
		}
	}
}

// TestTransactionalIDFencing: a second producer with the same
// transactional id fences the first (KIP-98): its InitProducerId aborts the
// first's open transaction, whose records read_committed never shows, and
// the first can no longer commit; the second's transactions commit.
func TestTransactionalIDFencing(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const topic = "txn-fencing"
	if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	zombie := b.client(kgo.TransactionalID("app"), kgo.DefaultProduceTopic(topic))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := b.client(kgo.TransactionalID("app"), kgo.DefaultProduceTopic(topic))
	if err := fresh.BeginTransaction(); err != nil { // InitProducerId first
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("fresh")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	zerr := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie again")}).FirstErr()
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil && zerr == nil {
		t.Fatal("the fenced producer committed")
	}
	waitStable(t, b, topic)
	if got := readIsolated(t, b, topic, true); !sameValues(got, "fresh") {
		t.Fatalf("read_committed: %v, want only the second producer's record", got)
	}
}

// TestAbortHangingTransaction: an operator ends a transaction that holds a
// partition's last stable offset back as Kafka's tools do (kafka-transactions
// abort: the producer from DescribeProducers, a marker with WriteTxnMarkers),
// and read_committed consumers move on without its records.
func TestAbortHangingTransaction(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const topic = "txn-hanging"
	adm := b.admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.TransactionalID("stuck"), kgo.TransactionTimeout(10*time.Minute), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("stuck")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var marker kadm.TxnMarkers
	producers.EachProducer(func(s kadm.DescribedProducer) {
		if s.CurrentTxnStartOffset >= 0 {
			marker = kadm.TxnMarkers{ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch, CoordinatorEpoch: max(s.CoordinatorEpoch, 0),
				Topics: kadm.TopicsSet{topic: {0: {}}}}
		}
	})
	if marker.Topics == nil {
		t.Fatalf("DescribeProducers shows no transaction in progress: %+v", producers)
	}
	res, err := adm.WriteTxnMarkers(ctx, marker)
	if err != nil {
		t.Fatal(err)
	}
	res.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
		if r.Err != nil {
			t.Fatalf("WriteTxnMarkers %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	waitStable(t, b, topic)
	if got := readIsolated(t, b, topic, true); len(got) != 0 {
		t.Fatalf("read_committed after the abort: %v", got)
	}
}
