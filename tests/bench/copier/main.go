// Command copier is the extension benchmark's copy done outside the broker
// (tests/bench, -extensions): a franz-go client that reads a topic from its
// start, groupless, and produces every record to the same partition of
// another topic, the way a consume-produce process (MirrorMaker, a Kafka
// Streams or Connect task) does, as a process of its own so that its CPU
// time can be read from /proc/<pid>/stat.
//
//	copier -brokers HOST:PORT -from in -to out2 -partitions 6 -records N
//
// Its protocol on stdin and stdout, so that the benchmark times the copy and
// not the set-up:
//
//  1. it connects, loads metadata and takes its producer id, then prints
//     "ready";
//  2. it waits for a line "go" on stdin, then consumes and produces until N
//     records are acknowledged, and prints "copied N";
//  3. it exits when stdin ends (0), or at the first error (1, the error on
//     stderr).
//
// The producer is kgo's default, idempotent with acks=all, with
// ManualPartitioner (a record keeps its partition), the -linger given (5 ms)
// and no compression, as the benchmark's own producer; key, value, headers
// and timestamp are kept.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "copier:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		brokers    = flag.String("brokers", "", "seed broker, host:port")
		from       = flag.String("from", "in", "topic to read from its start")
		to         = flag.String("to", "out2", "topic to write, partition by partition")
		partitions = flag.Int("partitions", 6, "partitions of -from (and of -to)")
		records    = flag.Int("records", 0, "records to copy; the copier stops once as many are acknowledged")
		linger     = flag.Duration("linger", 5*time.Millisecond, "producer linger (kgo.ProducerLinger)")
	)
	flag.Parse()
	if *brokers == "" || *records < 1 || *partitions < 1 {
		return errors.New("-brokers, -records and -partitions are required")
	}

	// One client both reads and writes; it consumes nothing until the
	// partitions are added after "go".
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(*brokers),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(*linger),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	fmt.Println("ready")

	stdin := bufio.NewScanner(os.Stdin)
	if !stdin.Scan() || stdin.Text() != "go" {
		return errors.New("stdin ended before go")
	}
	// NB: stdin's end stops the copier at any point, so that a benchmark
	// that gives up leaves no process behind.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	offsets := make(map[int32]kgo.Offset, *partitions)
	for p := range *partitions {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{*from: offsets})

	var (
		acked   atomic.Int64
		failure atomic.Pointer[error]
		done    = make(chan struct{})
	)
	want := int64(*records)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			if failure.CompareAndSwap(nil, &err) {
				cancel()
			}
			return
		}
		if acked.Add(1) == want {
			close(done)
		}
	}
	read := int64(0)
	for read < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if read == want {
				return
			}
			read++
			cl.Produce(ctx, &kgo.Record{Topic: *to, Partition: r.Partition, Key: r.Key, Value: r.Value,
				Headers: r.Headers, Timestamp: r.Timestamp}, promise)
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	if err := failure.Load(); err != nil {
		return fmt.Errorf("produce: %w", *err)
	}
	if acked.Load() != want {
		return fmt.Errorf("stopped with %d of %d records acknowledged", acked.Load(), want)
	}
	fmt.Printf("copied %d\n", want)
	<-ctx.Done() // stdin's end
	return nil
}
