package main

// The share group benchmark (-share): share consumers (KIP-932) accepting
// every record of a topic filled beforehand, on each target, against a
// fresh broker each time (issue 29).
//
// One run of a shareWorkload against a target:
//
//  1. start the broker, create topic "bench" with the workload's
//     partitions, and set share.auto.offset.reset=earliest on share group
//     "bench-share" (IncrementalAlterConfigs, resource type GROUP), so that
//     the group starts at the records already there;
//  2. warm up (warmShare): another share group accepts one record of
//     another topic, so that the broker's first-share-group work
//     (creating __share_group_state) is done off the clock;
//  3. produce the workload's records as the broker benchmark does (record i
//     to partition i mod partitions, acks=all), off the clock;
//  4. create the share consumers (kgo.ShareGroup), then start the clock and
//     let each poll and accept (Record.Ack(AckAccept)) every record it is
//     given, until every record has been accepted: a ShareAckCallback
//     reported success for its partition's acknowledgements;
//  5. stop the clock, read the broker's CPU, close the consumers (each
//     leaves the group) and stop the broker.
//
// The consumers are kgo clients with MaxConcurrentFetches(0): a ShareFetch
// is sent only while PollFetches waits, so the acknowledgements of one
// poll's records, made before the next poll, all ride on the next poll's
// ShareFetch (or, if the consumer did not poll for a second, on kgo's
// standalone ShareAcknowledge). That lets each acknowledgement be matched
// with the callback that confirms it (shareClient says how). NB: a broker
// answers a ShareFetch's acknowledgements in its response, which waits
// for records up to MaxWaitMs (kgo caps it at 500 ms when the request
// carries acknowledgements); so the acknowledgement latency includes that
// wait whenever the consumer's next ShareFetch finds no record to acquire:
// at the end of a run, and with more consumers than records to hand out.
import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type shareFlags struct {
	on        *bool
	records   *int
	consumers *string
	maxWait   *time.Duration
}

func newShareFlags() shareFlags {
	return shareFlags{
		on: flag.Bool("share", false, "run the share group benchmark (share.go) instead: share consumers accepting every record of a topic; "+
			"-partitions, -targets (default skein-fsync,skein-replicated,kafka), -linger as above"),
		records:   flag.Int("share-records", 300_000, "with -share: records of 1 KiB produced, then consumed, per run"),
		consumers: flag.String("share-consumers", "1,4,16", "with -share: comma-separated share consumer counts, each consumer a client of its own"),
		maxWait:   flag.Duration("share-max-wait", 500*time.Millisecond, "with -share: the consumers' ShareFetch MaxWaitMs (kgo.FetchMaxWait; 500ms is the Java consumer's fetch.max.wait.ms)"),
	}
}

// shareTargets are the targets of -share when -targets is not given.
const shareTargets = "skein-fsync,skein-replicated,kafka"

// shareGroup is the share group every run's consumers join.
const shareGroup = "bench-share"

// shareValueSize is the size of every record's value.
const shareValueSize = 1024

// shareWorkload is one shape of the share group benchmark.
type shareWorkload struct {
	partitions int
	consumers  int
	records    int
	maxWait    time.Duration // ShareFetch MaxWaitMs
	linger     time.Duration // the produce phase's
}

func (w shareWorkload) String() string {
	return fmt.Sprintf("%d partition%s, %d share consumer%s", w.partitions, plural(w.partitions), w.consumers, plural(w.consumers))
}

func (w shareWorkload) slug() string {
	return fmt.Sprintf("share-%dp-%dc", w.partitions, w.consumers)
}

// perPartition is how many records partition p holds after the produce
// phase (record i went to partition i mod partitions).
func (w shareWorkload) perPartition(p int) int {
	n := w.records / w.partitions
	if p < w.records%w.partitions {
		n++
	}
	return n
}

// shareResult is one run of a shareWorkload against one target.
type shareResult struct {
	// consume is the timed phase: from the consumers' first PollFetches
	// to the ShareAckCallback that confirmed the last record's
	// acceptance. Its records and bytes are the workload's, each counted
	// once.
	consume phase
	// firstRecord is from the first PollFetches to the first record
	// returned to any consumer: joining the group, the assignment, the
	// first ShareFetch.
	firstRecord time.Duration
	// ack is per accepted record, from the end of the Record.Ack calls for
	// its poll's records (made right after PollFetches returned them) to
	// the start of the ShareAckCallback that reported its partition's
	// acknowledgements successful.
	ack percentiles
	// deliveries counts records returned by PollFetches, a redelivery
	// again; ackErrors, acknowledgements reported failed.
	deliveries, ackErrors int
	// shareFetches and shareAcks count the ShareFetch and ShareAcknowledge
	// requests answered over the timed phase, all consumers together.
	shareFetches, shareAcks int
}

// shareRows are the rows of a share workload's table.
var shareRows = []row[shareResult]{
	{"records/s, first poll to last accept confirmed", func(r *shareResult) float64 { return r.consume.recordsPerSec() }, "%.0f", true},
	{"MB/s (values)", func(r *shareResult) float64 { return r.consume.mbPerSec() }, "%.1f", true},
	{"records/s, first record to last accept confirmed", func(r *shareResult) float64 {
		return float64(r.consume.records) / (r.consume.elapsed - r.firstRecord).Seconds()
	}, "%.0f", true},
	{"first record ms (join, assignment, first ShareFetch)", func(r *shareResult) float64 { return ms(r.firstRecord) }, "%.0f", false},
	{"ack p50 ms, Ack to callback", func(r *shareResult) float64 { return ms(r.ack.p50) }, "%.2f", false},
	{"ack p99 ms, Ack to callback", func(r *shareResult) float64 { return ms(r.ack.p99) }, "%.2f", false},
	{"broker CPU-s/GB", func(r *shareResult) float64 { return r.consume.brokerCPUPerGB() }, "%.2f", true},
	{"client CPU-s/GB", func(r *shareResult) float64 { return r.consume.clientCPUPerGB() }, "%.2f", false},
	{"records per ShareFetch", func(r *shareResult) float64 { return float64(r.deliveries) / float64(max(1, r.shareFetches)) }, "%.0f", false},
	{"ShareAcknowledge requests", func(r *shareResult) float64 { return float64(r.shareAcks) }, "%.0f", false},
	{"deliveries per record", func(r *shareResult) float64 { return float64(r.deliveries) / float64(r.consume.records) }, "%.3f", false},
	{"acks failed", func(r *shareResult) float64 { return float64(r.ackErrors) }, "%.0f", false},
}

// shareConfig is the share group benchmark's part of the command line.
type shareConfig struct {
	partitions, consumers []int
	records               int
	maxWait, linger       time.Duration
	targets               []target
	work, profileDir      string
	keep                  bool
	runTimeout            time.Duration
}

// config checks the flags and returns the run they ask for, with what
// mainErr has already made of the shared flags.
func (f shareFlags) config(partitions []int, linger time.Duration) (shareConfig, error) {
	c := shareConfig{partitions: partitions, records: *f.records, maxWait: *f.maxWait, linger: linger}
	if c.records < 1 {
		return c, errors.New("-share-records must be at least 1")
	}
	if c.maxWait <= 0 {
		return c, errors.New("-share-max-wait must be positive")
	}
	var err error
	if c.consumers, err = ints(*f.consumers); err != nil {
		return c, fmt.Errorf("-share-consumers: %w", err)
	}
	return c, nil
}

// shareNotes say under the header what the tables measure.
func shareNotes(cfg shareConfig) []string {
	return []string{
		fmt.Sprintf("each run: a fresh broker, topic %q, %d records of 1 KiB produced first (acks=all), then the share consumers of group %q "+
			"(share.auto.offset.reset=earliest; kgo clients, MaxConcurrentFetches(0), ShareFetch max wait %v) accept every record", topic, cfg.records, shareGroup, cfg.maxWait),
		"records/s: from the consumers' first PollFetches (joining the group included; the broker's first share group warmed up before) " +
			"to the ShareAckCallback that confirmed the last record's acceptance; also from the first record returned",
		"ack: per record, from the end of the Record.Ack calls for its poll's records to the ShareAckCallback reporting its partition's acknowledgements; " +
			"they ride on the consumer's next ShareFetch, whose answer waits for records up to the max wait (kgo caps it at 500 ms then)",
		"broker CPU-s/GB: the broker process's user+system CPU over the same span, per GB (10^9 bytes) of values accepted",
	}
}

// runShareBench runs, for every partition count and consumer count, each
// target in turn against a fresh broker, and writes a table per workload.
func runShareBench(out io.Writer, cfg shareConfig) error {
	var failed []error
	for _, p := range cfg.partitions {
		for _, c := range cfg.consumers {
			w := shareWorkload{partitions: p, consumers: c, records: cfg.records, maxWait: cfg.maxWait, linger: cfg.linger}
			results := map[string]*shareResult{}
			var names []string
			for _, t := range cfg.targets {
				names = append(names, t.name)
				runDir := filepath.Join(cfg.work, w.slug(), t.name)
				profile := ""
				if cfg.profileDir != "" && strings.HasPrefix(t.name, "skein") {
					profile = filepath.Join(cfg.profileDir, t.name+"-"+w.slug()+".pprof")
				}
				fmt.Fprintf(os.Stderr, "%s: %s ... ", w, t.name)
				ctx, cancel := context.WithTimeout(context.Background(), cfg.runTimeout)
				res, err := runShare(ctx, t, w, runDir, profile)
				cancel()
				if err != nil {
					fmt.Fprintf(os.Stderr, "failed: %v\n", err)
					failed = append(failed, fmt.Errorf("%s, %s: %w", w, t.name, err))
					continue // keep the directory: it holds the broker's log
				}
				fmt.Fprintf(os.Stderr, "%.0f rec/s, ack p50 %.2f ms p99 %.2f ms, %.2f broker CPU-s/GB, %d deliveries, %d acks failed (load %s)\n",
					res.consume.recordsPerSec(), ms(res.ack.p50), ms(res.ack.p99), res.consume.brokerCPUPerGB(), res.deliveries, res.ackErrors, loadAverage())
				results[t.name] = &res
				if !cfg.keep {
					os.RemoveAll(runDir)
				}
			}
			title := fmt.Sprintf("Share groups: %s (%d records of 1 KiB, ShareFetch max wait %v)", w, w.records, w.maxWait)
			writeTable(out, title, names, results, shareRows)
		}
	}
	fmt.Fprintf(out, "- load average at end: %s\n", loadAverage())
	return errors.Join(failed...)
}

// runShare starts t, fills the topic, consumes it with w's share consumers
// and stops t.
func runShare(ctx context.Context, t target, w shareWorkload, dir, profile string) (shareResult, error) {
	var res shareResult
	err := withBroker(t, dir, profile, func(b *broker) error {
		if err := createTopic(ctx, b, topic, w.partitions); err != nil {
			return err
		}
		if err := setShareAutoOffsetReset(ctx, b, shareGroup); err != nil {
			return err
		}
		if err := warmShare(ctx, b); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		pw := workload{partitions: w.partitions, valueSize: shareValueSize, records: w.records, linger: w.linger}
		if _, err := produce(ctx, b, pw); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		var err error
		res, err = consumeShare(ctx, b, w)
		return err
	})
	return res, err
}

// warmShare has one share consumer of another group accept one record of
// another topic, so that what a broker does once, at its first share
// group, is done before the clock starts: Kafka creates
// __share_group_state (50 partitions by default) and loads its share
// coordinators, seconds on this machine, and Skein creates its
// __share_group_state too.
func warmShare(ctx context.Context, b *broker) error {
	const warmTopic, warmGroup = "bench-warm-up", "bench-warm-up"
	if err := createTopic(ctx, b, warmTopic, 1); err != nil {
		return err
	}
	if err := setShareAutoOffsetReset(ctx, b, warmGroup); err != nil {
		return err
	}
	p, err := kgo.NewClient(b.clientOpts(kgo.DefaultProduceTopic(warmTopic))...)
	if err != nil {
		return err
	}
	err = p.ProduceSync(ctx, kgo.StringRecord("warm-up")).FirstErr()
	p.Close()
	if err != nil {
		return err
	}
	acked := make(chan error, 1)
	cl, err := kgo.NewClient(b.clientOpts(
		kgo.ShareGroup(warmGroup),
		kgo.ConsumeTopics(warmTopic),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			select {
			case acked <- rs.Error():
			default:
			}
		}),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fs.Err0(); err != nil {
			return err
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
	cl.MarkAcks(kgo.AckAccept)
	if err := cl.FlushAcks(ctx); err != nil {
		return err
	}
	select {
	case err := <-acked:
		return err
	default:
		return errors.New("the acknowledgement was flushed, but no callback reported it")
	}
}

// setShareAutoOffsetReset sets share.auto.offset.reset=earliest on group
// (IncrementalAlterConfigs, resource type GROUP): without it a share group
// starts at the end of each partition and gets none of the records
// produced before it.
func setShareAutoOffsetReset(ctx context.Context, b *broker, group string) error {
	cl, err := kgo.NewClient(b.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("share.auto.offset.reset on group %s: %w", group, err)
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("share.auto.offset.reset on group %s: %d resources in the answer", group, len(resp.Resources))
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return fmt.Errorf("share.auto.offset.reset on group %s: %w", group, err)
	}
	return nil
}

// consumeShare runs w's share consumers against b until every record is
// accepted, and measures the phase.
func consumeShare(ctx context.Context, b *broker, w shareWorkload) (shareResult, error) {
	var res shareResult
	l := newShareLedger(w)
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	clients := make([]*shareClient, w.consumers)
	defer func() { closeShareClients(clients) }()
	for i := range clients {
		c := &shareClient{ledger: l, pending: map[int32][]ackBatch{}}
		cl, err := kgo.NewClient(b.clientOpts(
			kgo.ShareGroup(shareGroup),
			kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(w.maxWait),
			// NB: with no fetch buffered ahead of the poll, every
			// ShareFetch is built after the previous poll's records were
			// acknowledged; shareClient's attribution rests on it.
			kgo.MaxConcurrentFetches(0),
			kgo.ShareAckCallback(c.acknowledged),
			kgo.WithHooks(c),
		)...)
		if err != nil {
			return res, err
		}
		c.cl = cl
		clients[i] = c
	}

	cpu0, err := b.cpu()
	if err != nil {
		return res, err
	}
	self0 := selfCPU()
	start := time.Now()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		errs  []error
	)
	for _, c := range clients {
		wg.Go(func() {
			if err := c.consume(pollCtx); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
				stop()
			}
		})
	}
	select {
	case <-l.done:
	case <-pollCtx.Done():
	}
	cpu1, cpuErr := b.cpu()
	self1 := selfCPU()
	stop()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	if cpuErr != nil {
		return res, cpuErr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count < w.records {
		return res, fmt.Errorf("%d of %d records accepted (%d delivered, %d acks failed): %w",
			l.count, w.records, l.deliveries, l.ackErrors, ctx.Err())
	}
	res.consume = phase{
		records:   w.records,
		bytes:     int64(w.records) * shareValueSize,
		elapsed:   l.end.Sub(start),
		brokerCPU: cpu1 - cpu0,
		clientCPU: self1 - self0,
	}
	res.firstRecord = l.first.Sub(start)
	res.ack = percentilesOf(l.latencies)
	res.deliveries, res.ackErrors = l.deliveries, l.ackErrors
	for _, c := range clients {
		c.mu.Lock()
		res.shareFetches += c.shareFetches
		res.shareAcks += c.shareAcks
		c.mu.Unlock()
	}
	return res, nil
}

// closeShareClients closes the consumers at once (each leaves the group,
// which may take a round trip or a fetch's max wait).
func closeShareClients(clients []*shareClient) {
	var wg sync.WaitGroup
	for _, c := range clients {
		if c != nil {
			wg.Go(c.cl.Close)
		}
	}
	wg.Wait()
}

// shareLedger is what every consumer of a run has done, by record.
type shareLedger struct {
	w    shareWorkload
	done chan struct{} // closed once every record is accepted

	mu         sync.Mutex
	accepted   [][]bool // by partition and offset
	count      int      // records accepted, each once
	deliveries int
	ackErrors  int
	latencies  []time.Duration // one per acknowledgement confirmed
	first, end time.Time       // the first delivery; the last record's acceptance
}

func newShareLedger(w shareWorkload) *shareLedger {
	l := &shareLedger{w: w, done: make(chan struct{}), accepted: make([][]bool, w.partitions),
		latencies: make([]time.Duration, 0, w.records)}
	for p := range l.accepted {
		l.accepted[p] = make([]bool, w.perPartition(p))
	}
	return l
}

// delivered checks one poll's records and counts them: every one from the
// topic's partitions, at an offset the produce phase wrote, with a value
// of the workload's size.
func (l *shareLedger) delivered(rs []*kgo.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first.IsZero() && len(rs) > 0 {
		l.first = time.Now()
	}
	for _, r := range rs {
		switch {
		case r.Topic != topic || r.Partition < 0 || int(r.Partition) >= len(l.accepted):
			return fmt.Errorf("record from %s[%d]", r.Topic, r.Partition)
		case r.Offset < 0 || r.Offset >= int64(len(l.accepted[r.Partition])):
			return fmt.Errorf("partition %d: offset %d, produced %d records", r.Partition, r.Offset, len(l.accepted[r.Partition]))
		case len(r.Value) != shareValueSize:
			return fmt.Errorf("partition %d offset %d: %d-byte value, want %d", r.Partition, r.Offset, len(r.Value), shareValueSize)
		}
	}
	l.deliveries += len(rs)
	return nil
}

// confirmed records the outcome of partition's acknowledgements in
// batches, reported at now: err nil, each record accepted.
func (l *shareLedger) confirmed(now time.Time, partition int32, batches []ackBatch, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range batches {
		if err != nil {
			l.ackErrors += len(b.offsets)
			continue
		}
		lat := now.Sub(b.at)
		for _, o := range b.offsets {
			l.latencies = append(l.latencies, lat)
			if !l.accepted[partition][o] {
				l.accepted[partition][o] = true
				l.count++
			}
		}
	}
	if l.count == l.w.records && l.end.IsZero() {
		l.end = now
		close(l.done)
	}
}

// ackBatch is one poll's acknowledgements of one partition's records.
type ackBatch struct {
	at      time.Time // when the Record.Ack calls of the poll were done
	offsets []int64
}

// shareClient is one share consumer and the acknowledgements it is
// waiting to hear about.
//
// Which acknowledgements a ShareAckCallback confirms: the callback names
// only partitions, once per ShareFetch or ShareAcknowledge that carried
// acknowledgements. kgo sends one such request at a time per broker, and
// each carries every acknowledgement made before it was built. So a
// callback for partition p confirms the batches of p acknowledged before
// the request was built; the OnBrokerE2E hook gives the latest answered
// request's enqueue time (the end of its read less its end-to-end
// duration), just after it was built, and the callback confirms p's
// batches acknowledged before that. With MaxConcurrentFetches(0) a
// ShareFetch is built only inside PollFetches, and a consumer acknowledges
// a poll's records before it polls again, so no acknowledgement is made
// while a request is being built. The exception is kgo's standalone
// ShareAcknowledge, sent a second after an acknowledgement if the consumer
// has not polled since: it is built during a consumer's Ack calls only if
// those take over a second for one poll, and then the batches acknowledged
// while it was built wait for a later callback of their partition (their
// latency overstated, or the run ending at its -run-timeout if none
// comes).
type shareClient struct {
	cl     *kgo.Client
	ledger *shareLedger

	mu      sync.Mutex
	pending map[int32][]ackBatch // by partition, in acknowledgement order
	// sent is when the latest ShareFetch or ShareAcknowledge answered
	// (or failed) was enqueued.
	sent                    time.Time
	shareFetches, shareAcks int // answered without error
}

// consume polls and accepts every record until ctx ends. It returns an
// error for a fetch error or a record that fails the ledger's checks.
func (c *shareClient) consume(ctx context.Context) error {
	var rs []*kgo.Record
	for {
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("share fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		rs = rs[:0]
		fs.EachRecord(func(r *kgo.Record) { rs = append(rs, r) })
		if len(rs) == 0 {
			continue
		}
		if err := c.ledger.delivered(rs); err != nil {
			return err
		}
		for _, r := range rs {
			r.Ack(kgo.AckAccept)
		}
		at := time.Now()
		c.mu.Lock()
		for i := 0; i < len(rs); {
			p := rs[i].Partition
			b := ackBatch{at: at}
			for ; i < len(rs) && rs[i].Partition == p; i++ {
				b.offsets = append(b.offsets, rs[i].Offset)
			}
			c.pending[p] = append(c.pending[p], b)
		}
		c.mu.Unlock()
	}
}

// OnBrokerE2E keeps the enqueue time of the latest ShareFetch or
// ShareAcknowledge answered, and counts those answered without error.
func (c *shareClient) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != int16(kmsg.ShareFetch) && key != int16(kmsg.ShareAcknowledge) {
		return
	}
	sent := time.Now().Add(-e2e.DurationE2E())
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.sent) {
		c.sent = sent
	}
	if e2e.Err() != nil {
		return
	}
	if key == int16(kmsg.ShareFetch) {
		c.shareFetches++
	} else {
		c.shareAcks++
	}
}

// acknowledged is the ShareAckCallback: each result confirms (or fails)
// the batches of its partition acknowledged before the latest request
// answered was built.
func (c *shareClient) acknowledged(_ *kgo.Client, rs kgo.ShareAckResults) {
	now := time.Now()
	type outcome struct {
		partition int32
		batches   []ackBatch
		err       error
	}
	var outcomes []outcome
	c.mu.Lock()
	for _, r := range rs {
		q := c.pending[r.Partition]
		i := 0
		for i < len(q) && q[i].at.Before(c.sent) {
			i++
		}
		if r.Topic != topic || i == 0 {
			continue
		}
		outcomes = append(outcomes, outcome{r.Partition, q[:i:i], r.Err})
		c.pending[r.Partition] = q[i:]
	}
	c.mu.Unlock()
	for _, o := range outcomes {
		c.ledger.confirmed(now, o.partition, o.batches, o.err)
	}
}
