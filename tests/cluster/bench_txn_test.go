package cluster

// A benchmark of transactional produce on three `skein node` processes: a
// topic of 6 partitions with replication factor 3 (min.insync.replicas 2),
// producers writing transactions of 1,000 records, each committed, against
// the same producers writing the same batches without transactions (each
// batch flushed) on the same cluster, in the same run. It runs only with
// -bench, without -race:
//
//	go test -run '^$' -bench TransactionalProduce -benchtime 1x ./tests/cluster/
//
// Its nodes are on 127.0.0.141, .142 and .143, a set no other test or
// benchmark of this package takes (the tests' sets are .11-.13, .31-.33,
// .41-.43, .101-.103, .121-.123, .131-.133 and .151-.153 to .191-.193;
// the other benchmarks' .21-.23 to .91-.93), so it runs beside them; two
// runs of it at once do not. With PROFDIR=dir the nodes write CPU
// profiles there (node1.prof, ...), stopped gracefully at the end of each
// sub-benchmark (so the last sub-benchmark's profiles are what is left).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/tests/procstat"
)

// txnBenchHost is node i's address in the transaction benchmark.
func txnBenchHost(i int) string { return fmt.Sprintf("127.0.0.14%d", i) }

const (
	txnBenchRecords    = 1000 // records per transaction
	txnBenchPartitions = 6
	// txnBenchMin is the fewest batches a timed phase writes, however
	// long they take: enough for a p99 of the commit latency.
	txnBenchMin = 100
)

// BenchmarkTransactionalProduce reports, per durability, record size and
// number of producers, for the same load without transactions (plain-*)
// and with (txn-*): records/s and MB/s committed, the commit latency p50
// and p99 (per batch, from Flush to the return of EndTransaction; Flush
// alone without transactions), EndTransaction alone (txn-end-*), the
// transactions that failed and were aborted (txn-failed), the three
// nodes' CPU per GB, and txn/plain, the ratio of records/s.
//
// Each producer is a franz-go client (acks=all, linger 5 ms, uncompressed
// random values; a transactional id of its own with transactions) writing
// batches of 1,000 records, record j to partition j mod 6, one batch after
// the other, for benchProduceFor and at least txnBenchMin batches in all.
// Each sub-benchmark has a cluster of its own; plain and txn write topics
// of their own on it, plain first. Two batches per producer (the first
// transactions: kgo uses KIP-890 part 2 from the one after the first
// EndTxn) are written off the clock; what was committed is read back
// read_committed and counted, off the clock.
func BenchmarkTransactionalProduce(b *testing.B) {
	for _, durability := range []string{"fsync", "replicated"} {
		for _, size := range []int{1024, 100} {
			for _, producers := range []int{1, 4} {
				b.Run(fmt.Sprintf("durability=%s/size=%d/producers=%d", durability, size, producers), func(b *testing.B) {
					benchTransactionalProduce(b, durability, size, producers)
				})
			}
		}
	}
}

func benchTransactionalProduce(b *testing.B, durability string, size, producers int) {
	c := newTxnBenchCluster(b, "--set", "durability="+durability)
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	cpu := func() time.Duration {
		var sum time.Duration
		for i := 1; i <= numNodes; i++ {
			d, err := procstat.CPU(c.nodes[i].cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			sum += d
		}
		return sum
	}
	value := make([]byte, size)
	rand.Read(value)

	b.ResetTimer()
	var plainRate float64
	for _, transactional := range []bool{false, true} {
		prefix := "plain-"
		if transactional {
			prefix = "txn-"
		}
		topic := benchTopic(prefix + "produce")
		minISR := "2"
		if res, err := adm.CreateTopic(ctx, txnBenchPartitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || res.Err != nil {
			b.Fatalf("create: %v %v", err, res.Err)
		}
		clients := make([]*kgo.Client, producers)
		for i := range clients {
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.RecordPartitioner(kgo.ManualPartitioner())}
			if transactional {
				opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%d", topic, i)))
			}
			clients[i] = c.client([]int{1, 2, 3}, opts...)
		}
		var committed, failed int
		var firstFailure error
		for _, cl := range clients {
			for range 2 {
				t, err := txnBenchBatch(ctx, cl, transactional, value)
				if err != nil {
					b.Fatalf("warm-up: %v", err)
				}
				if t.failed == nil {
					committed++
				}
			}
		}

		var (
			mu            sync.Mutex
			commits, ends []time.Duration
			errs          []error
			wg            sync.WaitGroup
			batches       int
		)
		cpu0, start := cpu(), time.Now()
		for _, cl := range clients {
			wg.Go(func() {
				for {
					mu.Lock()
					more := (time.Since(start) < benchProduceFor || batches < txnBenchMin) && len(errs) == 0
					batches++
					mu.Unlock()
					if !more {
						return
					}
					t, err := txnBenchBatch(ctx, cl, transactional, value)
					mu.Lock()
					switch {
					case err != nil:
						errs = append(errs, err)
					case t.failed != nil:
						failed++
						if firstFailure == nil {
							firstFailure = t.failed
						}
					default:
						commits = append(commits, t.commit)
						ends = append(ends, t.end)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed, spent := time.Since(start), cpu()-cpu0
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		if firstFailure != nil {
			b.Logf("%s: %d of %d transactions failed and were aborted, the first with: %v", topic, failed, failed+len(commits), firstFailure)
		}
		records := len(commits) * txnBenchRecords
		bytes := float64(records * size)
		rate := float64(records) / elapsed.Seconds()
		slices.Sort(commits)
		b.ReportMetric(bytes/elapsed.Seconds()/1e6, prefix+"MB/s")
		b.ReportMetric(rate, prefix+"records/s")
		b.ReportMetric(benchMs(benchPercentile(commits, 0.5)), prefix+"p50-ms")
		b.ReportMetric(benchMs(benchPercentile(commits, 0.99)), prefix+"p99-ms")
		b.ReportMetric(spent.Seconds()/(bytes/1e9), prefix+"cpu-s/GB")
		if transactional {
			slices.Sort(ends)
			b.ReportMetric(benchMs(benchPercentile(ends, 0.5)), "txn-end-p50-ms")
			b.ReportMetric(benchMs(benchPercentile(ends, 0.99)), "txn-end-p99-ms")
			b.ReportMetric(float64(failed), "txn-failed")
			b.ReportMetric(rate/plainRate, "txn/plain")
		} else {
			plainRate = rate
		}
		txnBenchVerify(b, ctx, c, topic, size, committed+len(commits))
	}
	b.StopTimer()
	if os.Getenv("PROFDIR") != "" {
		for i := 1; i <= numNodes; i++ {
			c.stop(i) // the profiles are written as the nodes stop
		}
	}
}

// newTxnBenchCluster is the harness's cluster on txnBenchHost's
// addresses, its nodes given flags; it fails at once if one of the
// addresses is taken.
func newTxnBenchCluster(tb testing.TB, flags ...string) *cluster {
	tb.Helper()
	if raceEnabled {
		tb.Skip("the nodes are race-instrumented under -race: run the benchmarks without it")
	}
	for i := 1; i <= numNodes; i++ {
		for _, port := range []int{kafkaPort, clusterPort, adminPort} {
			ln, err := net.Listen("tcp", net.JoinHostPort(txnBenchHost(i), strconv.Itoa(port)))
			if err != nil {
				tb.Fatalf("%v: is another run of this benchmark going on?", err)
			}
			ln.Close()
		}
	}
	c := newClusterIn(tb, layout{host: txnBenchHost, flags: flags,
		nodeFlags: func(i int) []string {
			if d := os.Getenv("PROFDIR"); d != "" {
				return []string{"--cpuprofile", fmt.Sprintf("%s/node%d.prof", d, i)}
			}
			return nil
		}})
	tb.Cleanup(func() {
		for i := 1; i <= numNodes; i++ {
			if d := benchLogDigest(c.nodes[i].logPath); d != "" {
				tb.Logf("node %d logged (%d runs):\n%s", i, c.nodes[i].runs, d)
			}
		}
	})
	return c
}

// txnBenchTimes is what one batch took, or why it failed.
type txnBenchTimes struct {
	commit, end time.Duration // Flush and EndTransaction; EndTransaction
	failed      error         // a record or the commit failed; aborted
}

// txnBenchBatch writes one batch of txnBenchRecords records through cl, a
// transaction committed if transactional, else records flushed. A
// transaction whose record or commit fails is aborted (TryAbort) and
// t.failed says why; the error is for what ends the benchmark.
func txnBenchBatch(ctx context.Context, cl *kgo.Client, transactional bool, value []byte) (t txnBenchTimes, err error) {
	if transactional {
		if err := cl.BeginTransaction(); err != nil {
			return t, err
		}
	}
	var mu sync.Mutex
	var failure error
	promise := func(_ *kgo.Record, err error) {
		mu.Lock()
		if err != nil && failure == nil {
			failure = err
		}
		mu.Unlock()
	}
	recs := make([]kgo.Record, txnBenchRecords)
	for j := range recs {
		recs[j] = kgo.Record{Value: value, Partition: int32(j % txnBenchPartitions)}
		cl.Produce(ctx, &recs[j], promise)
	}
	flushStart := time.Now()
	if err := cl.Flush(ctx); err != nil {
		return t, err
	}
	mu.Lock()
	failed := failure
	mu.Unlock()
	if !transactional {
		t.commit = time.Since(flushStart)
		if failed != nil {
			return t, fmt.Errorf("produce: %w", failed)
		}
		return t, nil
	}
	endStart := time.Now()
	if failed != nil {
		failed = fmt.Errorf("produce: %w", failed)
	} else if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		failed = fmt.Errorf("commit: %w", err)
	} else {
		t.end, t.commit = time.Since(endStart), time.Since(flushStart)
		return t, nil
	}
	t.failed = failed
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return t, fmt.Errorf("abort after %w: %w", failed, err)
	}
	return t, nil
}

// txnBenchVerify reads topic read_committed and checks that it holds the
// records of batches batches, each partition its share, every value of
// size bytes.
func txnBenchVerify(b *testing.B, ctx context.Context, c *cluster, topic string, size, batches int) {
	b.Helper()
	want := make([]int, txnBenchPartitions)
	for j := range txnBenchRecords {
		want[j%txnBenchPartitions] += batches
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(1), c.addr(2), c.addr(3)), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	got := make([]int, txnBenchPartitions)
	for n := 0; n < batches*txnBenchRecords; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("%s read_committed: %d of %d records read: %v", topic, n, batches*txnBenchRecords, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			b.Fatalf("%s: fetch: %v", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != size {
				b.Fatalf("%s-%d offset %d: %d-byte value, want %d", topic, r.Partition, r.Offset, len(r.Value), size)
			}
			got[r.Partition]++
			n++
		})
	}
	if !slices.Equal(got, want) {
		b.Fatalf("%s: read_committed per partition %v, committed %v", topic, got, want)
	}
}
