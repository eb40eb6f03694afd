package cli

// skein produce: lines of stdin as records, on kgo.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newProduceCommand(environ []string, stdin io.Reader, stdout io.Writer) *cobra.Command {
	var (
		flags       clientFlags
		keySep      string
		headers     []string
		acks        string
		compression string
		partition   int32
		verbose     bool
		delivery    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce the lines of stdin as records",
		Long: "Produce each line of stdin (without its newline) as one record; an empty\n" +
			"line is an empty record. With -k SEP, the part of a line before the first SEP\n" +
			"is the key and the rest the value (a line without SEP has no key). -H adds a\n" +
			"header to every record. Records go to -p's partition, or else by key hash\n" +
			"(murmur2, as the Java client does) and sticky batches for keyless records.\n\n" +
			"The topic is created if the broker's auto.create.topics.enable allows it.\n" +
			"Nothing is printed on success unless -v, which prints each record's\n" +
			"partition and offset; the first failure is printed with its Kafka error and\n" +
			"the exit code is 1. With --acks all (the default) the producer is\n" +
			"idempotent, so a retried batch is never written twice.\n\n" +
			"A record not acknowledged within --delivery-timeout (Kafka's\n" +
			"delivery.timeout.ms, retries included) fails, and the command says what it\n" +
			"last heard from the partition's leader: NOT_ENOUGH_REPLICAS with the\n" +
			"in-sync replicas and min.insync.replicas, REQUEST_TIMED_OUT when the\n" +
			"in-sync replicas did not acknowledge within --timeout (the broker's wait\n" +
			"for acknowledgements, as request.timeout.ms). A record given up on while a\n" +
			"request for it was in flight may have been written.",
		Example: "  printf 'k1:v1\\nk2:v2\\n' | skein produce orders -k : -H source=cli --compression zstd",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			var hdrs []kgo.RecordHeader
			for _, h := range headers {
				k, v, ok := strings.Cut(h, "=")
				if !ok || k == "" {
					return usageError(fmt.Sprintf("header %q: want key=value", h))
				}
				hdrs = append(hdrs, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
			opts, err := producerOpts(acks, compression)
			if err != nil {
				return err
			}
			if delivery <= 0 {
				return usageError("--delivery-timeout must be positive")
			}
			if partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			} else if partition != -1 {
				return usageError(fmt.Sprintf("-p %d: want a partition number, or -1 for the partitioner", partition))
			}
			errs := &batchErrors{}
			opts = append(opts,
				kgo.DefaultProduceTopic(topic),
				// As the Java producer does, let the broker create a missing
				// topic when its auto.create.topics.enable says so.
				kgo.AllowAutoTopicCreation(),
				// NB: bound each record, not the whole input: stdin may be a
				// stream that never ends.
				kgo.RecordDeliveryTimeout(delivery),
				kgo.ProduceRequestTimeout(flags.timeout),
				// NB: without this, kgo never fails a record whose request
				// went unanswered (the broker may have written it), and
				// waits for an answer that may never come: the command
				// would hang. Kafka's producer gives up on such a record at
				// delivery.timeout.ms too.
				kgo.AllowIdempotentProduceCancellation(),
				kgo.WithLogger(errs),
			)
			cl, err := flags.connect(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			p := &producer{cl: cl, flags: &flags, topic: topic, delivery: delivery, verbose: verbose, out: stdout, errs: errs}
			return p.run(cmd.Context(), stdin, []byte(keySep), hdrs, partition)
		},
	}
	flags.register(cmd, environ)
	cmd.Flags().StringVarP(&keySep, "key-separator", "k", "", "split each line at the first SEP into key and value")
	cmd.Flags().StringArrayVarP(&headers, "header", "H", nil, "header key=value added to every record (repeatable)")
	cmd.Flags().StringVar(&acks, "acks", "all", "acknowledgement: 0 (none), 1 (leader), all (in-sync replicas; idempotent)")
	cmd.Flags().StringVarP(&compression, "compression", "z", "none", "batch compression: none, gzip, snappy, lz4, zstd")
	cmd.Flags().Int32VarP(&partition, "partition", "p", -1, "partition to produce to (-1: by key, or sticky)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print each record's partition and offset")
	cmd.Flags().DurationVar(&delivery, "delivery-timeout", defaultDeliveryTimeout, "bound on each record's delivery, retries included (Kafka's delivery.timeout.ms)")
	return cmd
}

// producerOpts maps --acks and --compression to kgo options.
func producerOpts(acks, compression string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		// NB: kgo's idempotent producer requires acks=all, as Kafka's does.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, usageError(fmt.Sprintf("--acks %q: want 0, 1 or all", acks))
	}
	var codec kgo.CompressionCodec
	switch compression {
	case "none":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, usageError(fmt.Sprintf("--compression %q: want none, gzip, snappy, lz4 or zstd", compression))
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

// defaultDeliveryTimeout is Kafka's delivery.timeout.ms.
const defaultDeliveryTimeout = 2 * time.Minute

// producer produces lines and keeps the outcome of their promises.
type producer struct {
	cl       *kgo.Client
	flags    *clientFlags
	topic    string
	delivery time.Duration // --delivery-timeout
	verbose  bool
	out      io.Writer

	mu       sync.Mutex // promises run on kgo's goroutines
	failed   int
	produced int
	first    error
	firstRec *kgo.Record // the record of first
	errs     *batchErrors
}

// run reads in to EOF, producing a record per line, then waits for every
// record's outcome.
func (p *producer) run(ctx context.Context, in io.Reader, sep []byte, hdrs []kgo.RecordHeader, partition int32) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 || err == nil {
			line = bytes.TrimSuffix(line, []byte("\n"))
			rec := &kgo.Record{Value: line, Headers: hdrs, Partition: partition}
			if len(sep) > 0 {
				if k, v, ok := bytes.Cut(line, sep); ok {
					rec.Key, rec.Value = k, v
				}
			}
			p.cl.Produce(ctx, rec, p.promise)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Wait for what was read before saying stdin failed.
			p.flush(ctx)
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	p.flush(ctx)
	p.mu.Lock()
	first, rec, failed, produced := p.first, p.firstRec, p.failed, p.produced
	p.mu.Unlock()
	if first == nil {
		return nil
	}
	to := p.topic
	if rec != nil && rec.Partition >= 0 {
		to = fmt.Sprintf("%s-%d", rec.Topic, rec.Partition)
	}
	return fmt.Errorf("%d of %d records failed; the first: produce to %s: %w", failed, failed+produced, to, p.explain(ctx, rec, first))
}

// flush waits for every record's outcome. kgo checks a record's delivery
// timeout only before it sends a request and when an answer comes, so the
// last request may end up to its own bound (twice --timeout: the broker's
// wait and kgo's slack) after it; past that, the records still buffered
// are failed with the client's close.
func (p *producer) flush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, p.delivery+2*p.flags.timeout)
	defer cancel()
	if p.cl.Flush(ctx) != nil {
		p.cl.Close()
	}
}

// explain says why a record failed: for a delivery timeout, how long it
// was tried and what the partition's leader answered last; for an error
// of the leader's acknowledgements, the partition's in-sync replicas and
// min.insync.replicas as the cluster now describes them.
func (p *producer) explain(ctx context.Context, rec *kgo.Record, err error) error {
	cause, gaveUp := err, false
	switch {
	case errors.Is(err, kgo.ErrRecordTimeout):
		gaveUp = true
		// kgo joins the last error of a record waiting for its topic's
		// metadata ("%w, last err: %w"); a batch's last error is only
		// logged (batchErrors).
		if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) == 2 {
			cause = j.Unwrap()[1]
			break
		}
		last, from, ok := p.errs.last(rec.Partition)
		if !ok {
			return fmt.Errorf("gave up after %v (--delivery-timeout): no answer from the partition's leader", p.delivery)
		}
		if rec.Partition >= 0 && (strings.HasPrefix(last, "NOT_ENOUGH_REPLICAS") || strings.HasPrefix(last, "REQUEST_TIMED_OUT")) {
			last += " (" + p.partitionState(ctx, rec.Topic, rec.Partition, from) + ")"
		}
		return fmt.Errorf("gave up after %v (--delivery-timeout): %s", p.delivery, last)
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("gave up after %v (--delivery-timeout, and --timeout twice for the request in flight): no answer from the partition's leader", p.delivery+2*p.flags.timeout)
	}
	var ke *kerr.Error
	if rec != nil && rec.Partition >= 0 && errors.As(cause, &ke) &&
		(ke == kerr.NotEnoughReplicas || ke == kerr.NotEnoughReplicasAfterAppend || ke == kerr.RequestTimedOut) {
		cause = fmt.Errorf("%w (%s)", cause, p.partitionState(ctx, rec.Topic, rec.Partition, -1))
	}
	if errors.Is(cause, os.ErrDeadlineExceeded) {
		cause = fmt.Errorf("%w (no answer within --timeout %v)", cause, p.flags.timeout)
	}
	// NB: kgo's errProducerIDLoadFail is not exported; its message is.
	if strings.HasPrefix(cause.Error(), "unable to initialize a producer ID") {
		cause = fmt.Errorf("gave up waiting for a producer id (InitProducerId: with --acks all the producer is idempotent, "+
			"and a broker with no ids left takes a block of them from the active controller): %w", cause)
	}
	if gaveUp {
		return fmt.Errorf("gave up after %v (--delivery-timeout): %w", p.delivery, cause)
	}
	return cause
}

// partitionState describes a partition's replicas as the cluster's
// metadata has them now: "the leader of t-0 is 1, in-sync replicas [1] of
// [1,2,3], min.insync.replicas 2", or less when the metadata cannot be had
// within --timeout. It asks broker from, the one that answered the last
// produce, when known (-1 otherwise: any broker): in a degraded cluster
// the metadata still lists dead brokers, and a request that may go to any
// broker can spend --timeout dialling them.
func (p *producer) partitionState(ctx context.Context, topic string, partition int32, from int32) string {
	ctx, cancel := p.flags.requestContext(ctx)
	defer cancel()
	var req kmsg.Requestor = p.cl
	if from >= 0 {
		req = p.cl.Broker(int(from))
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, req)
	if err != nil {
		return "the partition's state is unknown: " + err.Error()
	}
	var pd *kmsg.MetadataResponseTopicPartition
	for i := range mresp.Topics {
		for j := range mresp.Topics[i].Partitions {
			if t := &mresp.Topics[i]; t.Topic != nil && *t.Topic == topic && t.Partitions[j].Partition == partition {
				pd = &t.Partitions[j]
			}
		}
	}
	if pd == nil {
		return "the partition is not in the metadata"
	}
	state := fmt.Sprintf("the leader of %s-%d is %d, in-sync replicas %s of %s", topic, partition, pd.Leader, int32List(pd.ISR), int32List(pd.Replicas))
	creq := kmsg.NewPtrDescribeConfigsRequest()
	cr := kmsg.NewDescribeConfigsRequestResource()
	cr.ResourceType, cr.ResourceName, cr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{"min.insync.replicas"}
	creq.Resources = append(creq.Resources, cr)
	if cresp, err := creq.RequestWith(ctx, req); err == nil {
		for _, r := range cresp.Resources {
			for _, kv := range r.Configs {
				if r.ErrorCode == 0 && kv.Name == "min.insync.replicas" && kv.Value != nil {
					state += ", min.insync.replicas " + *kv.Value
				}
			}
		}
	}
	return state
}

// batchErrors keeps, from kgo's log, the last error each partition's
// produce requests were answered with, and the last request that failed
// as a whole, each with the broker: kgo retries those until the delivery
// timeout and then fails the records with ErrRecordTimeout alone. Kafka's
// Java producer logs them too ("Got error produce response ... retrying").
//
// NB: what is parsed is kgo's debug log of produce answers ("produced",
// with broker and to: "t[0{retrying@-1,1(NOT_ENOUGH_REPLICAS: ...)}, ]")
// and of failed requests ("produce request failed..."); TestDegradedCluster
// (tests/cluster) and TestProduceGivesUpOnSilentBroker fail if they change.
type batchErrors struct {
	mu      sync.Mutex // kgo logs from its goroutines
	errs    map[int32]string
	from    map[int32]int32 // the broker that answered errs[p]
	request string          // the last failed request: "to broker 3 failed: unable to dial: ..."
}

// answered matches one partition's failed answer in "to".
var answered = regexp.MustCompile(`(\d+)\{(?:retrying|err|fatal|resetting)@-?\d+,\d+\(([A-Z_]+)[:)]`)

func (*batchErrors) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (b *batchErrors) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	produced := msg == "produced"
	if !produced && !strings.HasPrefix(msg, "produce request failed") {
		return
	}
	var broker, to string
	var err error
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch keyvals[i] {
		case "broker":
			broker = fmt.Sprint(keyvals[i+1])
		case "to":
			to = fmt.Sprint(keyvals[i+1])
		case "err":
			err, _ = keyvals[i+1].(error)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !produced {
		if err != nil {
			b.request = fmt.Sprintf("to broker %s failed: %v", broker, err)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				b.request = fmt.Sprintf("to broker %s was not answered in time: %v", broker, err)
			}
		}
		return
	}
	for _, m := range answered.FindAllStringSubmatch(to, -1) {
		p, _ := strconv.ParseInt(m[1], 10, 32)
		if b.errs == nil {
			b.errs = map[int32]string{}
		}
		b.errs[int32(p)] = m[2] + " from broker " + broker
		if b.from == nil {
			b.from = map[int32]int32{}
		}
		id, err := strconv.ParseInt(broker, 10, 32)
		if err != nil {
			id = -1
		}
		b.from[int32(p)] = int32(id)
	}
}

// last returns what is known of why the record of partition p was not
// acknowledged: the last error its partition was answered with and the
// broker that answered it, or else the last request that failed (broker
// -1).
func (b *batchErrors) last(p int32) (string, int32, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.errs[p]; ok {
		return e, b.from[p], true
	}
	if b.request != "" {
		return "no answer; the last request " + b.request, -1, true
	}
	return "", -1, false
}

func (p *producer) promise(rec *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		if p.first == nil {
			p.first, p.firstRec = err, rec
		}
		return
	}
	p.produced++
	if p.verbose {
		fmt.Fprintf(p.out, "%s partition %d offset %d\n", rec.Topic, rec.Partition, rec.Offset)
	}
}
