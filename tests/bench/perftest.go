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
// each timed by the tool itself, the broker's CPU read around each.
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
		if err := createTopic(ctx, b.addr, w.topicName(), w.partitions); err != nil {
			return err
		}
		var line string
		var err error
		res.produce, line, err = perfPhase(ctx, cp, b, dir, "org.apache.kafka.tools.ProducerPerformance",
			"--topic", w.topicName(), "--num-records", strconv.Itoa(w.records), "--record-size", strconv.Itoa(w.valueSize),
			"--throughput", "-1", "--producer-props", "bootstrap.servers="+b.addr, "acks=all",
			"linger.ms="+strconv.FormatInt(w.linger.Milliseconds(), 10))
		if err != nil {
			return err
		}
		if err := parseProducerPerf(line, w, &res); err != nil {
			return err
		}
		res.consume, line, err = perfPhase(ctx, cp, b, dir, "org.apache.kafka.tools.ConsumerPerformance",
			"--bootstrap-server", b.addr, "--topic", w.topicName(), "--num-records", strconv.Itoa(w.records),
			"--timeout", "60000")
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

// perfTable writes one workload's results: a column per target, then the
// ratios of each Skein target to each reference that ran.
func perfTable(out io.Writer, w workload, ts []target, results map[string]*perfResult) {
	rows := []struct {
		label string
		unit  string
		ratio bool
		value func(*perfResult) float64
	}{
		{"produce records/s", "%.0f", true, func(r *perfResult) float64 { return r.produce.recordsPerSec() }},
		{"produce MB/s (values)", "%.1f", true, func(r *perfResult) float64 { return r.produce.mbPerSec() }},
		{"produce avg ms (send to callback)", "%.1f", false, func(r *perfResult) float64 { return r.avgMs }},
		{"produce p50 ms", "%.0f", false, func(r *perfResult) float64 { return r.p50Ms }},
		{"produce p99 ms", "%.0f", false, func(r *perfResult) float64 { return r.p99Ms }},
		{"produce broker CPU-s/GB", "%.2f", true, func(r *perfResult) float64 { return r.produce.brokerCPUPerGB() }},
		{"consume records/s (fetch time)", "%.0f", true, func(r *perfResult) float64 { return r.consume.recordsPerSec() }},
		{"consume broker CPU-s/GB", "%.2f", true, func(r *perfResult) float64 { return r.consume.brokerCPUPerGB() }},
	}
	head := []string{""}
	for _, t := range ts {
		head = append(head, t.name)
	}
	ratios := ratioPairs(head[1:], func(n string) bool { return results[n] != nil })
	fmt.Fprintf(out, "### %s (%d records, kafka-producer-perf-test and kafka-consumer-perf-test, acks=all, linger %v)\n\n", w, w.records, w.linger)
	for _, p := range ratios {
		head = append(head, strings.TrimPrefix(p.skein, "skein-")+"/"+p.ref)
	}
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, r := range rows {
		cells := []string{r.label}
		for _, t := range ts {
			if res := results[t.name]; res != nil {
				cells = append(cells, fmt.Sprintf(r.unit, r.value(res)))
			} else {
				cells = append(cells, "failed")
			}
		}
		for _, p := range ratios {
			if r.ratio {
				cells = append(cells, fmt.Sprintf("%.2f", r.value(results[p.skein])/r.value(results[p.ref])))
			} else {
				cells = append(cells, "")
			}
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}
