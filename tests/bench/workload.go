package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// workload is one shape of load: records of valueSize random bytes, no key,
// spread evenly over partitions.
type workload struct {
	partitions int
	valueSize  int
	records    int
	linger     time.Duration
	topic      string // default: topic ("bench")
	// keepGoing makes produce count records that fail and carry on, until
	// every record has its answer or the context ends, instead of stopping
	// at the first failure.
	keepGoing bool
	// protocol is the security protocol of the listener the clients use,
	// as the table's heading names it (saslSSL.protocol): "" is PLAINTEXT.
	protocol string
}

// protocolName is w.protocol, PLAINTEXT when unset.
func (w workload) protocolName() string {
	if w.protocol == "" {
		return "PLAINTEXT"
	}
	return w.protocol
}

func (w workload) topicName() string {
	if w.topic == "" {
		return topic
	}
	return w.topic
}

func (w workload) String() string {
	return fmt.Sprintf("%d partition%s, %s values", w.partitions, plural(w.partitions), sizeName(w.valueSize))
}

// slug names the workload in file names.
func (w workload) slug() string { return fmt.Sprintf("%dp-%db", w.partitions, w.valueSize) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d-byte", n)
}

// phase is what one phase (produce or consume) measured.
type phase struct {
	records   int
	bytes     int64 // value bytes only: what CPU per GB and MB/s are of
	elapsed   time.Duration
	brokerCPU time.Duration // the broker process's utime+stime over the phase
	clientCPU time.Duration // this process's, over the phase
}

func (p phase) recordsPerSec() float64 { return float64(p.records) / p.elapsed.Seconds() }
func (p phase) mbPerSec() float64      { return float64(p.bytes) / 1e6 / p.elapsed.Seconds() }
func (p phase) brokerCPUPerGB() float64 {
	return p.brokerCPU.Seconds() / (float64(p.bytes) / 1e9)
}
func (p phase) clientCPUPerGB() float64 {
	return p.clientCPU.Seconds() / (float64(p.bytes) / 1e9)
}

// result is one target's run of one workload.
type result struct {
	produce, consume phase
	// recordLatency is per record, from the Produce call (which blocks
	// while kgo's buffer of MaxBufferedRecords is full) to its promise.
	recordLatency percentiles
	// requestLatency is per Produce request, from the start of its write to
	// the end of reading its response (kgo's BrokerE2E.DurationE2E).
	requestLatency percentiles
	batches        int64 // record batches produced
	requests       int   // Produce requests sent
	// What became of the records when the produce phase ended: acknowledged,
	// failed (their promise had an error), sent but unanswered, never sent.
	// Only a phase that returns no error has every record acknowledged.
	acked, failed, unanswered, unsent int
	// tls is the TLS version and cipher suite a Go client negotiates with
	// the broker's SASL_SSL listener ("" over PLAINTEXT).
	tls string
}

// topic is the one topic of every run of the broker benchmark; each run has a
// fresh broker.
const topic = "bench"

// createTopic creates the topic name on b with replication factor 1. The
// broker answers once it hosts every partition or after the request's
// timeout: nine tenths of what is left of ctx's deadline, so that its
// answer comes before the deadline (kadm's default without one).
func createTopic(ctx context.Context, b *broker, name string, partitions int) error {
	cl, err := kgo.NewClient(b.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if d, ok := ctx.Deadline(); ok {
		adm.SetTimeoutMillis(int32(min(time.Until(d).Milliseconds()*9/10, math.MaxInt32)))
	}
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, name)
	if err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("creating %s: %w", name, resp.Err)
	}
	return nil
}

// produceHooks counts batches and collects Produce request latencies.
type produceHooks struct {
	batches atomic.Int64
	mu      sync.Mutex
	reqs    []time.Duration
}

func (h *produceHooks) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	h.batches.Add(1)
}

func (h *produceHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != 0 || e2e.Err() != nil { // 0: Produce
		return
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, e2e.DurationE2E())
	h.mu.Unlock()
}

// slot is a record and its start time, recycled once its promise has run so
// that the client's allocation rate stays out of the broker's way on a
// shared machine. kgo holds at most MaxBufferedRecords records, so at most
// that many slots exist.
type slot struct {
	rec     kgo.Record
	start   time.Time
	promise func(*kgo.Record, error)
}

// produce writes w.records records to b and measures the phase. It stops at
// the first record that fails unless w.keepGoing; either way the result
// says what became of every record (acked, failed, unanswered, unsent), and
// an error is returned unless every record was acknowledged.
func produce(ctx context.Context, b *broker, w workload) (result, error) {
	res := result{unsent: w.records}
	hooks := new(produceHooks)
	cl, err := kgo.NewClient(b.clientOpts(
		kgo.DefaultProduceTopic(w.topicName()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(w.linger),
		// NB: random values do not compress; sending them uncompressed
		// keeps snappy (kgo's default) from costing client CPU for nothing.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// Record i goes to partition i mod partitions, so every partition
		// gets the same share and the consume phase can check each count.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithHooks(hooks),
	)...)
	if err != nil {
		return res, err
	}
	defer cl.Close() // fails the records it still buffers, if any
	// Connect, load metadata and get a producer id before the clock starts.
	if err := cl.Ping(ctx); err != nil {
		return res, fmt.Errorf("ping: %w", err)
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return res, fmt.Errorf("producer id: %w", err)
	}

	value := make([]byte, w.valueSize)
	rand.Read(value)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		lat       = make([]time.Duration, w.records)
		latN      atomic.Int64 // acknowledged
		failedN   atomic.Int64
		finished  atomic.Int64
		allDone   = make(chan struct{})
		failMu    sync.Mutex
		failure   error // the first record's error
		free      = make(chan *slot, 1<<16)
		attempted int
	)
	fail := func(err error) {
		failedN.Add(1)
		failMu.Lock()
		defer failMu.Unlock()
		if failure == nil {
			failure = err
			if !w.keepGoing {
				cancel()
			}
		}
	}
	newSlot := func() *slot {
		s := new(slot)
		s.promise = func(_ *kgo.Record, err error) {
			if err != nil {
				fail(fmt.Errorf("produce: %w", err))
			} else {
				lat[latN.Add(1)-1] = time.Since(s.start)
			}
			select {
			case free <- s:
			default:
			}
			if finished.Add(1) == int64(w.records) {
				close(allDone)
			}
		}
		return s
	}

	cpu0, err := b.cpu()
	if err != nil {
		return res, err
	}
	self0 := selfCPU()
	start := time.Now()
	for ; attempted < w.records && ctx.Err() == nil; attempted++ {
		var s *slot
		select {
		case s = <-free:
		default:
			s = newSlot()
		}
		s.rec = kgo.Record{Value: value, Partition: int32(attempted % w.partitions)}
		s.start = time.Now()
		cl.Produce(ctx, &s.rec, s.promise)
	}
	select {
	case <-allDone:
	case <-ctx.Done():
	}
	elapsed := time.Since(start)
	self1 := selfCPU()
	cpu1, err := b.cpu()
	acked, failed := int(latN.Load()), int(failedN.Load())
	res.acked, res.failed = acked, failed
	res.unanswered = max(0, attempted-acked-failed)
	res.unsent = w.records - attempted
	res.produce = phase{ // of the records acknowledged: all, unless it failed
		records:   acked,
		bytes:     int64(acked) * int64(w.valueSize),
		elapsed:   elapsed,
		brokerCPU: cpu1 - cpu0,
		clientCPU: self1 - self0,
	}
	res.recordLatency = percentilesOf(lat[:acked])
	hooks.mu.Lock()
	res.requestLatency = percentilesOf(hooks.reqs)
	res.requests = len(hooks.reqs)
	hooks.mu.Unlock()
	res.batches = hooks.batches.Load()
	if err != nil {
		return res, err
	}
	failMu.Lock()
	defer failMu.Unlock()
	switch {
	case failure != nil && w.keepGoing:
		return res, fmt.Errorf("%d of %d records failed, the first with %w", failed, w.records, failure)
	case failure != nil:
		return res, failure
	case acked != w.records:
		return res, ctx.Err()
	}
	return res, nil
}

// consume reads every record from the start of each partition with a
// direct (groupless) consumer and measures the phase. It checks what it
// reads: offsets without gaps or repeats, every value of the workload's
// size, each partition's share of the records.
func consume(ctx context.Context, b *broker, w workload) (phase, error) {
	var p phase
	offsets := make(map[int32]kgo.Offset, w.partitions)
	for i := range w.partitions {
		offsets[int32(i)] = kgo.NewOffset().AtStart()
	}
	next := make([]int64, w.partitions)

	cpu0, err := b.cpu()
	if err != nil {
		return p, err
	}
	self0 := selfCPU()
	start := time.Now()
	cl, err := kgo.NewClient(b.clientOpts(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topicName(): offsets}),
	)...)
	if err != nil {
		return p, err
	}
	defer cl.Close()
	var n int
	var bad error
	for n < w.records && bad == nil {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return p, err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return p, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case bad != nil:
			case r.Partition < 0 || int(r.Partition) >= w.partitions:
				bad = fmt.Errorf("record from partition %d of %d", r.Partition, w.partitions)
			case r.Offset != next[r.Partition]:
				bad = fmt.Errorf("partition %d: offset %d where %d was next", r.Partition, r.Offset, next[r.Partition])
			case len(r.Value) != w.valueSize:
				bad = fmt.Errorf("partition %d offset %d: %d-byte value, want %d", r.Partition, r.Offset, len(r.Value), w.valueSize)
			default:
				next[r.Partition]++
				n++
			}
		})
	}
	elapsed := time.Since(start)
	self1 := selfCPU()
	cpu1, err := b.cpu()
	if err != nil {
		return p, err
	}
	if bad != nil {
		return p, bad
	}
	for i, got := range next {
		want := int64(w.records / w.partitions)
		if i < w.records%w.partitions {
			want++
		}
		if got != want {
			return p, fmt.Errorf("partition %d: read %d records, produced %d", i, got, want)
		}
	}
	return phase{
		records:   n,
		bytes:     int64(n) * int64(w.valueSize),
		elapsed:   elapsed,
		brokerCPU: cpu1 - cpu0,
		clientCPU: self1 - self0,
	}, nil
}

// run starts t, runs w's produce and consume phases against it and stops it.
func run(ctx context.Context, t target, w workload, dir, profile string) (result, error) {
	var res result
	err := withBroker(t, dir, profile, func(b *broker) error {
		if err := createTopic(ctx, b, w.topicName(), w.partitions); err != nil {
			return err
		}
		var err error
		if res, err = produce(ctx, b, w); err != nil {
			return err
		}
		if res.consume, err = consume(ctx, b, w); err != nil {
			return err
		}
		if b.sec != nil {
			res.tls, err = b.sec.handshake(ctx, b.addr)
		}
		return err
	})
	return res, err
}

// withBroker starts t with its data under dir, calls f with it and stops it.
// An error names the broker's log.
func withBroker(t target, dir, profile string, f func(*broker) error) error {
	b, err := t.start(dir, profile)
	if err != nil {
		return err
	}
	err = f(b)
	if stopErr := b.stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stopping %s: %w", t.name, stopErr)
	}
	if err != nil {
		return errors.Join(err, fmt.Errorf("broker log: %s", b.logName()))
	}
	return nil
}
