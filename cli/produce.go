package cli

// skein produce: lines of stdin as records, on kgo.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
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
			"idempotent, so a retried batch is never written twice.",
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
			if partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			} else if partition != -1 {
				return usageError(fmt.Sprintf("-p %d: want a partition number, or -1 for the partitioner", partition))
			}
			opts = append(opts,
				kgo.DefaultProduceTopic(topic),
				// As the Java producer does, let the broker create a missing
				// topic when its auto.create.topics.enable says so.
				kgo.AllowAutoTopicCreation(),
				// NB: bound each record, not the whole input: stdin may be a
				// stream that never ends.
				kgo.RecordDeliveryTimeout(flags.timeout),
				kgo.ProduceRequestTimeout(flags.timeout),
			)
			cl, err := flags.connect(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			defer cl.Close()
			p := &producer{cl: cl, topic: topic, verbose: verbose, out: stdout}
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

// producer produces lines and keeps the outcome of their promises.
type producer struct {
	cl      *kgo.Client
	topic   string
	verbose bool
	out     io.Writer

	mu       sync.Mutex // promises run on kgo's goroutines
	failed   int
	produced int
	first    error
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
			_ = p.cl.Flush(ctx)
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first != nil {
		return fmt.Errorf("%d of %d records failed; the first: produce to %s: %w", p.failed, p.failed+p.produced, p.topic, p.first)
	}
	return nil
}

func (p *producer) promise(rec *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		if p.first == nil {
			p.first = err
		}
		return
	}
	p.produced++
	if p.verbose {
		fmt.Fprintf(p.out, "%s partition %d offset %d\n", rec.Topic, rec.Partition, rec.Offset)
	}
}
