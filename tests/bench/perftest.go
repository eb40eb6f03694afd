package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/skeinlog/skein/tests/kafkaref"
)

// perfFlags are the flags of the -perftest mode: the same workloads and
// targets as the broker benchmark, driven by Apache Kafka's own load
// generators, kafka-producer-perf-test and kafka-consumer-perf-test (Java,
// kafka-clients), instead of kgo: a second, independent client.
type perfFlags struct {
	on        *bool
	classpath *string
}

func newPerfFlags() perfFlags {
	return perfFlags{
		on: flag.Bool("perftest", false, "drive the targets with Kafka's kafka-producer-perf-test and kafka-consumer-perf-test instead of kgo (-records, -partitions, -values, -targets, -linger as above)"),
		classpath: flag.String("tools-classpath", "",
			"with -perftest: the classpath of Kafka's tools (default: resolve tests/interop/java/pom.xml's with mvn)"),
	}
}

// perfResult is what the two tools reported for one target's run, with the
// broker's CPU over each.
type perfResult struct {
	produce, consume phase
	// The producer tool's latencies, in ms: from send() to its callback.
	avgMs, p50Ms, p99Ms float64
}

// runPerf runs every workload on every target: a fresh broker, topic
// "bench" created with the workload's partitions, then
//
//	kafka-producer-perf-test --num-records N --record-size S --throughput -1
//	  --producer-props bootstrap.servers=ADDR acks=all linger.ms=L
//	kafka-consumer-perf-test --num-records N --timeout 60000
//
// each timed by the tool itself, the broker's CPU read around each. Over
// SASL_SSL, both tools get --command-config client.properties
// (saslSSL.clientProperties).
func runPerf(out io.Writer, f perfFlags, ws []workload, ts []target, work string, keep bool, runTimeout time.Duration) error {
	cp := *f.classpath
	if cp == "" {
		var err error
		if cp, err = kafkaref.Classpath("tests/interop/java"); err != nil {
			return err
		}
	}
	var failed []error
	for _, w := range ws {
		results := make(map[string]*perfResult, len(ts))
		for _, t := range ts {
			fmt.Fprintf(os.Stderr, "%s: %s with Kafka's perf tools ... ", w, t.name)
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			runDir := filepath.Join(work, "perf-"+w.slug(), t.name)
			res, err := perfRun(ctx, cp, t, w, runDir)
			cancel()
			if err != nil {
				fmt.Fprintf(os.Stderr, "failed: %v\n", err)
				failed = append(failed, fmt.Errorf("%s, %s: %w", w, t.name, err))
				continue // keep the directory: it holds the broker's and the tools' logs
			}
			if !keep {
				os.RemoveAll(runDir)
			}
			fmt.Fprintf(os.Stderr, "produce %.0f rec/s, consume %.0f rec/s\n", res.produce.recordsPerSec(), res.consume.recordsPerSec())
			results[t.name] = res
		}
		perfTable(out, w, ts, results)
	}
	fmt.Fprintf(out, "- load average at end: %s\n", loadAverage())
	return errors.Join(failed...)
}

func perfRun(ctx context.Context, cp string, t target, w workload, dir string) (*perfResult, error) {
	var res perfResult
	err := withBroker(t, dir, "", func(b *broker) error {
		if err := createTopic(ctx, b, w.topicName(), w.partitions); err != nil {
			return err
		}
		// Over SASL_SSL both tools read the client's security settings
		// from a properties file.
		var security []string
		if b.sec != nil {
			config := filepath.Join(dir, "client.properties")
			if err := writeProperties(config, b.sec.clientProperties()); err != nil {
				return err
			}
			security = []string{"--command-config", config}
		}
		var line string
		var err error
		res.produce, line, err = perfPhase(ctx, cp, b, dir, "org.apache.kafka.tools.ProducerPerformance", append(security,
			"--topic", w.topicName(), "--num-records", strconv.Itoa(w.records), "--record-size", strconv.Itoa(w.valueSize),
			"--throughput", "-1", "--producer-props", "bootstrap.servers="+b.addr, "acks=all",
			"linger.ms="+strconv.FormatInt(w.linger.Milliseconds(), 10))...)
		if err != nil {
			return err
		}
		if err := parseProducerPerf(line, w, &res); err != nil {
			return err
		}
		res.consume, line, err = perfPhase(ctx, cp, b, dir, "org.apache.kafka.tools.ConsumerPerformance", append(security,
			"--bootstrap-server", b.addr, "--topic", w.topicName(), "--num-records", strconv.Itoa(w.records),
			"--timeout", "60000")...)
		if err != nil {
			return err
		}
		return parseConsumerPerf(line, w, &res)
	})
	return &res, err
}

// perfPhase runs one tool to its end and returns the broker's CPU over it
// and the tool's last line of output.
func perfPhase(ctx context.Context, cp string, b *broker, dir, class string, args ...string) (phase, string, error) {
	var p phase
	cmd := exec.CommandContext(ctx, "java", append([]string{"-Xmx1g", "-cp", cp, class}, args...)...)
	logPath := filepath.Join(dir, filepath.Ext(class)[1:]+".log")
	cpu0, err := b.cpu()
	if err != nil {
		return p, "", err
	}
	outb, err := cmd.Output()
	os.WriteFile(logPath, outb, 0o644)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return p, "", fmt.Errorf("%s: %w", class, err)
	}
	cpu1, err := b.cpu()
	if err != nil {
		return p, "", err
	}
	p.brokerCPU = cpu1 - cpu0
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	return p, lines[len(lines)-1], nil
}

// producerSummary is kafka-producer-perf-test's last line, e.g.
// "2000000 records sent, 512820.5 records/sec (500.80 MB/sec), 12.34 ms avg
// latency, 300.00 ms max latency, 10 ms 50th, 40 ms 95th, 60 ms 99th, 80 ms
// 99.9th."
var producerSummary = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, [\d.]+ ms max latency, (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th`)

func parseProducerPerf(line string, w workload, res *perfResult) error {
	m := producerSummary.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("kafka-producer-perf-test: no summary in %q", line)
	}
	n, _ := strconv.Atoi(m[1])
	if n != w.records {
		return fmt.Errorf("kafka-producer-perf-test: %d records sent, want %d", n, w.records)
	}
	rate, _ := strconv.ParseFloat(m[2], 64)
	res.produce.records = n
	res.produce.bytes = int64(n) * int64(w.valueSize)
	res.produce.elapsed = time.Duration(float64(n) / rate * float64(time.Second))
	res.avgMs, _ = strconv.ParseFloat(m[4], 64)
	res.p50Ms, _ = strconv.ParseFloat(m[5], 64)
	res.p99Ms, _ = strconv.ParseFloat(m[6], 64)
	return nil
}

// parseConsumerPerf reads kafka-consumer-perf-test's data line: start.time,
// end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec. The
// fetch columns leave the group's join out (the tool's own consumer joins a
// group first); those are the ones taken.
func parseConsumerPerf(line string, w workload, res *perfResult) error {
	f := strings.Split(line, ", ")
	if len(f) != 10 {
		return fmt.Errorf("kafka-consumer-perf-test: no data line in %q", line)
	}
	n, err := strconv.Atoi(f[4])
	if err != nil || n < w.records {
		return fmt.Errorf("kafka-consumer-perf-test: %q records consumed, want %d", f[4], w.records)
	}
	fetchMs, err := strconv.ParseFloat(f[7], 64)
	if err != nil || fetchMs <= 0 {
		return fmt.Errorf("kafka-consumer-perf-test: fetch time %q", f[7])
	}
	res.consume.records = n
	res.consume.bytes = int64(n) * int64(w.valueSize)
	res.consume.elapsed = time.Duration(fetchMs * float64(time.Millisecond))
	return nil
}

// perfRows are the lines of a -perftest table.
var perfRows = []row[perfResult]{
	{"produce records/s", func(r *perfResult) float64 { return r.produce.recordsPerSec() }, "%.0f", true},
	{"produce MB/s (values)", func(r *perfResult) float64 { return r.produce.mbPerSec() }, "%.1f", true},
	{"produce avg ms (send to callback)", func(r *perfResult) float64 { return r.avgMs }, "%.1f", false},
	{"produce p50 ms", func(r *perfResult) float64 { return r.p50Ms }, "%.0f", false},
	{"produce p99 ms", func(r *perfResult) float64 { return r.p99Ms }, "%.0f", false},
	{"produce broker CPU-s/GB", func(r *perfResult) float64 { return r.produce.brokerCPUPerGB() }, "%.2f", true},
	{"consume records/s (fetch time)", func(r *perfResult) float64 { return r.consume.recordsPerSec() }, "%.0f", true},
	{"consume broker CPU-s/GB", func(r *perfResult) float64 { return r.consume.brokerCPUPerGB() }, "%.2f", true},
}

// perfTable writes one workload's results (writeTable).
func perfTable(out io.Writer, w workload, ts []target, results map[string]*perfResult) {
	var names []string
	for _, t := range ts {
		names = append(names, t.name)
	}
	writeTable(out, fmt.Sprintf("%s (%d records, kafka-producer-perf-test and kafka-consumer-perf-test, acks=all, linger %v, %s)",
		w, w.records, w.linger, w.protocolName()), names, results, perfRows)
}
