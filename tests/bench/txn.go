package main

// The transaction benchmark (-txn): transactional produce against the same
// load without transactions, on each target.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnWorkload is one shape of the transaction benchmark: producers
// clients, each with a transactional id of its own when transactional, each
// writing batches of perTxn records in turn until transactions batches are
// written in all. Record j of a batch goes to partition j mod partitions.
//
// A transactional batch is BeginTransaction, perTxn Produce calls, Flush
// and EndTransaction(TryCommit); without transactions the same client
// (idempotent, acks=all) does the Produce calls and the Flush only, so the
// two differ by the transaction protocol alone: the verification of each
// partition's first batch (KIP-890), EndTxn and its markers.
type txnWorkload struct {
	partitions    int
	valueSize     int
	perTxn        int // records per transaction (or per flushed batch)
	transactions  int // in all, over the producers
	producers     int
	linger        time.Duration
	transactional bool
}

func (w txnWorkload) mode() string {
	if w.transactional {
		return "txn"
	}
	return "plain"
}

func (w txnWorkload) String() string {
	return fmt.Sprintf("%d partition%s, %s values, %d producer%s, %d records per transaction",
		w.partitions, plural(w.partitions), sizeName(w.valueSize), w.producers, plural(w.producers), w.perTxn)
}

func (w txnWorkload) slug() string {
	return fmt.Sprintf("txn-%dp-%db-%dc-%s", w.partitions, w.valueSize, w.producers, w.mode())
}

// txnResult is one run of a txnWorkload against one target.
type txnResult struct {
	produce phase
	// commit is per transaction, from the start of Flush to the return of
	// EndTransaction: the wait for the transaction's records to be
	// acknowledged and then for the commit. Without transactions, Flush
	// alone.
	commit percentiles
	// end is EndTransaction alone (kgo's EndTransaction does not flush):
	// the EndTxn round trip, including any CONCURRENT_TRANSACTIONS backoff.
	end percentiles
	// requests counts the requests answered by API key, over the timed
	// phase.
	requests map[int16]int
	batches  int64 // record batches produced
	// committed and failed count the timed phase's transactions (batches
	// without transactions); warmCommitted, the warm-up's committed.
	committed, failed, warmCommitted int
	firstFailure                     error
}

// requestCounter counts the requests answered without a transport error,
// by API key, and the record batches written.
type requestCounter struct {
	mu      sync.Mutex
	byKey   map[int16]int
	batches atomic.Int64
}

func (h *requestCounter) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		return
	}
	h.mu.Lock()
	h.byKey[key]++
	h.mu.Unlock()
}

func (h *requestCounter) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	h.batches.Add(1)
}

func (h *requestCounter) snapshot() map[int16]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[int16]int, len(h.byKey))
	for k, v := range h.byKey {
		m[k] = v
	}
	return m
}

// produceTxn runs w against b. Each producer's connections, producer id
// (InitProducerId, and with it the transaction coordinator) and two
// batches of perTxn records are done before the clock starts: under
// transaction version 2 kgo uses KIP-890 part 2 only from the transaction
// after the first EndTxn tells it the broker supports it.
//
// A transaction whose records or commit fail is aborted (as an application
// would: TryAbort, which bumps the producer's epoch) and counted in
// failed; the next one goes on. Only an abort that fails ends the run.
func produceTxn(ctx context.Context, b *broker, w txnWorkload) (txnResult, error) {
	var res txnResult
	value := make([]byte, w.valueSize)
	rand.Read(value)
	hooks := &requestCounter{byKey: map[int16]int{}}
	clients := make([]*kgo.Client, w.producers)
	for i := range clients {
		opts := []kgo.Opt{
			kgo.SeedBrokers(b.addr),
			kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(w.linger),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.WithHooks(hooks),
		}
		if w.transactional {
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", i)))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return res, err
		}
		defer cl.Close()
		clients[i] = cl
	}
	for _, cl := range clients {
		for range warmUpBatches {
			t, err := txnBatch(ctx, cl, w, value)
			if err != nil {
				return res, fmt.Errorf("warm-up: %w", err)
			}
			if t.failed == nil {
				res.warmCommitted++
			}
		}
	}

	hooks.mu.Lock()
	clear(hooks.byKey)
	hooks.mu.Unlock()
	hooks.batches.Store(0)
	var (
		next    atomic.Int64 // transactions started
		mu      sync.Mutex
		commits []time.Duration
		ends    []time.Duration
		errs    []error
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0, err := b.cpu()
	if err != nil {
		return res, err
	}
	self0 := selfCPU()
	start := time.Now()
	for _, cl := range clients {
		wg.Go(func() {
			for int(next.Add(1)) <= w.transactions {
				t, err := txnBatch(ctx, cl, w, value)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
					mu.Unlock()
					cancel()
					return
				case t.failed != nil:
					res.failed++
					if res.firstFailure == nil {
						res.firstFailure = t.failed
					}
				default:
					res.committed++
					commits = append(commits, t.commit)
					ends = append(ends, t.end)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	self1 := selfCPU()
	cpu1, err := b.cpu()
	if err != nil {
		return res, err
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	records := res.committed * w.perTxn
	res.produce = phase{
		records:   records,
		bytes:     int64(records) * int64(w.valueSize),
		elapsed:   elapsed,
		brokerCPU: cpu1 - cpu0,
		clientCPU: self1 - self0,
	}
	res.commit = percentilesOf(commits)
	res.end = percentilesOf(ends)
	res.requests = hooks.snapshot()
	res.batches = hooks.batches.Load()
	return res, nil
}

// warmUpBatches is how many batches each producer writes off the clock.
const warmUpBatches = 2

// txnTimes is what one batch took, or why it failed.
type txnTimes struct {
	commit time.Duration // Flush and EndTransaction
	end    time.Duration // EndTransaction
	failed error         // the batch's records or its commit failed; aborted
}

// txnBatch writes one batch of w.perTxn records through cl: a transaction
// committed if w.transactional, else records flushed. If a record or the
// commit fails, the transaction is aborted and t.failed says why; without
// transactions a failed record fails the run. The error is for what ends
// the run: a failed abort, a failed flush, the context.
func txnBatch(ctx context.Context, cl *kgo.Client, w txnWorkload, value []byte) (t txnTimes, err error) {
	if w.transactional {
		if err := cl.BeginTransaction(); err != nil {
			return t, fmt.Errorf("begin: %w", err)
		}
	}
	var (
		failMu  sync.Mutex
		failure error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failMu.Lock()
			if failure == nil {
				failure = err
			}
			failMu.Unlock()
		}
	}
	recs := make([]kgo.Record, w.perTxn)
	for j := range recs {
		recs[j] = kgo.Record{Value: value, Partition: int32(j % w.partitions)}
		cl.Produce(ctx, &recs[j], promise)
	}
	flushStart := time.Now()
	if err := cl.Flush(ctx); err != nil {
		return t, fmt.Errorf("flush: %w", err)
	}
	failMu.Lock()
	failed := failure
	failMu.Unlock()
	if !w.transactional {
		t.commit = time.Since(flushStart)
		if failed != nil {
			return t, fmt.Errorf("produce: %w", failed)
		}
		return t, nil
	}
	endStart := time.Now()
	if failed == nil {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			failed = fmt.Errorf("commit: %w", err)
		} else {
			t.end = time.Since(endStart)
			t.commit = time.Since(flushStart)
			return t, nil
		}
	} else {
		failed = fmt.Errorf("produce: %w", failed)
	}
	t.failed = failed
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return t, fmt.Errorf("abort after %w: %w", failed, err)
	}
	return t, nil
}

// verifyTxn reads the topic read_committed and checks that it holds the
// records of every batch committed (the warm-up's too) and nothing of
// those aborted: each partition its share, at increasing offsets (markers
// take offsets of their own), every value of the workload's size.
func verifyTxn(ctx context.Context, b *broker, w txnWorkload, res txnResult) error {
	batches := res.committed + res.warmCommitted
	want := make([]int, w.partitions)
	for j := range w.perTxn {
		want[j%w.partitions] += batches
	}
	total := batches * w.perTxn
	offsets := make(map[int32]kgo.Offset, w.partitions)
	for i := range w.partitions {
		offsets[int32(i)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	got := make([]int, w.partitions)
	last := make([]int64, w.partitions)
	for i := range last {
		last[i] = -1
	}
	var n int
	var bad error
	for n < total && bad == nil {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read_committed: %d of %d records read: %w", n, total, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case bad != nil:
			case r.Partition < 0 || int(r.Partition) >= w.partitions:
				bad = fmt.Errorf("record from partition %d of %d", r.Partition, w.partitions)
			case r.Offset <= last[r.Partition]:
				bad = fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, last[r.Partition])
			case len(r.Value) != w.valueSize:
				bad = fmt.Errorf("partition %d offset %d: %d-byte value, want %d", r.Partition, r.Offset, len(r.Value), w.valueSize)
			default:
				last[r.Partition] = r.Offset
				got[r.Partition]++
				n++
			}
		})
	}
	if bad != nil {
		return bad
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("partition %d: read %d records committed, wrote %d", i, got[i], want[i])
		}
	}
	return nil
}

// runTxn starts t, creates the topic, runs w and checks what it wrote.
func runTxn(ctx context.Context, t target, w txnWorkload, dir, profile string) (txnResult, error) {
	var res txnResult
	err := withBroker(t, dir, profile, func(b *broker) error {
		if err := createTopic(ctx, b, topic, w.partitions); err != nil {
			return err
		}
		var err error
		if res, err = produceTxn(ctx, b, w); err != nil {
			return err
		}
		return verifyTxn(ctx, b, w, res)
	})
	return res, err
}

// txnConfig is the transaction benchmark's part of the command line.
type txnConfig struct {
	partitions, values, producers []int
	perTxn, transactions          int
	linger                        time.Duration
	targets                       []target
	work, profileDir              string
	keep                          bool
	runTimeout                    time.Duration
}

// runTxnBench runs, for every workload, each target without and then with
// transactions, each run against a fresh broker, and writes a table per
// workload.
func runTxnBench(out io.Writer, cfg txnConfig) error {
	var failed []error
	for _, p := range cfg.partitions {
		for _, s := range cfg.values {
			for _, c := range cfg.producers {
				w := txnWorkload{partitions: p, valueSize: s, perTxn: cfg.perTxn, transactions: cfg.transactions, producers: c, linger: cfg.linger}
				results := map[string]*txnResult{}
				var names []string
				for _, t := range cfg.targets {
					for _, transactional := range []bool{false, true} {
						w.transactional = transactional
						name := t.name + " " + w.mode()
						names = append(names, name)
						runDir := filepath.Join(cfg.work, w.slug(), t.name)
						profile := ""
						if cfg.profileDir != "" && strings.HasPrefix(t.name, "skein") {
							profile = filepath.Join(cfg.profileDir, t.name+"-"+w.slug()+".pprof")
						}
						fmt.Fprintf(os.Stderr, "%s: %s ... ", w, name)
						ctx, cancel := context.WithTimeout(context.Background(), cfg.runTimeout)
						res, err := runTxn(ctx, t, w, runDir, profile)
						cancel()
						if err != nil {
							fmt.Fprintf(os.Stderr, "failed: %v\n", err)
							failed = append(failed, fmt.Errorf("%s, %s: %w", w, name, err))
							continue
						}
						fmt.Fprintf(os.Stderr, "%.0f rec/s %.1f MB/s, commit p50 %.1f ms p99 %.1f ms, %d failed (load %s)\n",
							res.produce.recordsPerSec(), res.produce.mbPerSec(), ms(res.commit.p50), ms(res.commit.p99), res.failed, loadAverage())
						if res.firstFailure != nil {
							fmt.Fprintf(os.Stderr, "  first failure: %v\n", res.firstFailure)
						}
						results[name] = &res
						if !cfg.keep {
							os.RemoveAll(runDir)
						}
					}
				}
				w.transactional = true
				txnTable(out, w, names, results)
			}
		}
	}
	fmt.Fprintf(out, "- load average at end: %s\n", loadAverage())
	return errors.Join(failed...)
}

// txnTable writes one row per run: the target and mode, what the run
// measured, the transactional run's records/s over the same target's
// plain run, and over kfake's transactional run. records/s and MB/s count
// the batches committed; the latencies are theirs; failed counts the
// transactions aborted after a failure.
func txnTable(out io.Writer, w txnWorkload, names []string, results map[string]*txnResult) {
	fmt.Fprintf(out, "### Transactions: %s (%d transactions, acks=all, linger %v)\n\n", w, w.transactions, w.linger)
	fmt.Fprintln(out, "| target | mode | records/s | MB/s | commit p50 ms | commit p99 ms | EndTxn p50 ms | EndTxn p99 ms | failed | Produce req/txn | EndTxn req/txn | records/batch | broker CPU-s/GB | txn/plain | txn/kfake txn |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	kfakeTxn := results["kfake txn"]
	for _, name := range names {
		target, mode, _ := strings.Cut(name, " ")
		r := results[name]
		if r == nil {
			fmt.Fprintf(out, "| %s | %s | run failed ||||||||||||\n", target, mode)
			continue
		}
		perTxn := func(key int16) string {
			return fmt.Sprintf("%.2f", float64(r.requests[key])/float64(w.transactions))
		}
		endP50, endP99, endReqs := "", "", ""
		if mode == "txn" {
			endP50, endP99 = fmt.Sprintf("%.2f", ms(r.end.p50)), fmt.Sprintf("%.2f", ms(r.end.p99))
			endReqs = perTxn(int16(kmsg.EndTxn))
		}
		ratio, vsKfake := "", ""
		if plain := results[target+" plain"]; mode == "txn" && plain != nil {
			ratio = fmt.Sprintf("%.2f", r.produce.recordsPerSec()/plain.produce.recordsPerSec())
		}
		if mode == "txn" && kfakeTxn != nil && target != "kfake" {
			vsKfake = fmt.Sprintf("%.2f", r.produce.recordsPerSec()/kfakeTxn.produce.recordsPerSec())
		}
		fmt.Fprintf(out, "| %s | %s | %.0f | %.1f | %.2f | %.2f | %s | %s | %d | %s | %s | %.0f | %.2f | %s | %s |\n",
			target, mode, r.produce.recordsPerSec(), r.produce.mbPerSec(), ms(r.commit.p50), ms(r.commit.p99),
			endP50, endP99, r.failed, perTxn(int16(kmsg.Produce)), endReqs,
			float64(r.produce.records)/float64(max(1, r.batches)), r.produce.brokerCPUPerGB(), ratio, vsKfake)
	}
	fmt.Fprintln(out)
}
