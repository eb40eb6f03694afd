// Command bench measures a Skein node against franz-go's kfake and Apache
// Kafka with franz-go (kgo) as the client, each broker in a process of its
// own so that its CPU time can be read from /proc/<pid>/stat around each
// phase.
//
//	go run ./tests/bench [flags]     (or: make bench-broker BENCHFLAGS=...)
//
// For every workload (partition count × value size) it runs each target in
// turn, Skein and the references alternating, each against a fresh broker:
//
//  1. start the broker (skein node on loopback ports with a fresh data
//     directory, tests/bench/kfake, or Apache Kafka as tests/kafkaref runs
//     it, its jars resolved by mvn) and create topic "bench" with the
//     workload's partitions, replication factor 1;
//  2. produce: one kgo producer with acks=all, linger 5 ms, no compression
//     and idempotence on (kgo's default), record i to partition
//     i mod partitions, as fast as kgo's buffer allows;
//  3. consume: one groupless kgo consumer reads every partition from the
//     start until it has every record, checking offsets and sizes;
//  4. stop the broker with SIGTERM.
//
// It prints a Markdown table per workload with the targets side by side and
// Skein/kfake and Skein/Kafka ratios. MB and GB are 10^6 and 10^9 bytes of
// record values (keys, headers and framing not counted); CPU-s/GB is the
// broker's (or this client's) user+system CPU seconds over the phase per GB
// of values. Produce
// latency is given two ways: per record, from the Produce call (which blocks
// while kgo's buffer of MaxBufferedRecords is full, so it includes queueing
// in the client) to its promise; and per Produce request, from the start of
// its write to the end of reading its response.
//
// The binaries are built into the work directory first (go build), so the
// broker is never a `go run` wrapper whose CPU would be the wrong process's.
// With -cpuprofile-dir, every Skein run writes a CPU profile of the whole
// broker process through skein node's hidden --cpuprofile flag.
//
// With -security sasl_ssl the clients produce and consume over SASL_SSL
// (security.go): a throwaway CA and broker certificate are made at start
// and written as PEM files into the work directory; Skein (from a
// properties file, --config) and Kafka each get a SASL_SSL listener with
// those files and SASL/PLAIN beside their PLAINTEXT one, and the kgo
// clients (or, with -perftest, Kafka's tools) connect to it with TLS and
// the bench user. kfake, which has no TLS or SASL, is left out.
//
// With -scale it runs the scale benchmark instead (scale.go): 10,000
// partitions on one Skein node under an open-file limit of 20,000 (create,
// memory per idle partition, restart until every partition serves, produce
// to 1,000 of them at once), then produce cost with 1, 100 and 1,000
// partitions written at once. It fails (exit status 1) only if a record is
// not acknowledged, a phase times out or a node fails; figures are reported,
// never judged.
//
// With -txn it runs the transaction benchmark instead (txn.go): producers
// with transactional ids writing transactions of -txn-records records
// (1,000), committed, against the same producers flushing the same batches
// without transactions; records/s and the commit latency (Flush plus
// EndTransaction) per target, each run checked by a read_committed reader.
//
// With -extensions it runs the extension benchmark instead (extensions.go):
// on one Skein node, a topic filled by the produce phase is copied by a
// route and by a mirror extension inside the broker, and by a
// consume-produce process outside it (tests/bench/copier); records/s and
// CPU per GB of each copy, a fresh node for each, every copy checked exact.
//
// With -share it runs the share group benchmark instead (share.go): for
// each partition count and -share-consumers count, -share-records records
// of 1 KiB produced, then consumed by share consumers (KIP-932, kgo's
// ShareGroup) that accept every record; records/s, acknowledgement latency
// (from the Ack calls to the ShareAckCallback) and broker CPU per GB, on
// skein-fsync, skein-replicated and Apache Kafka unless -targets says
// otherwise.
//
// With -recovery it runs the recovery benchmark instead (recovery.go): for
// each fault kind, `skein chaos run`'s scenario of that name against a
// fresh local cluster, each fault's time to recover reported as p50, p99
// and max.
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
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/skeinlog/skein/tests/kafkaref"
)

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var (
		records    = flag.Int("records", 2_000_000, "records per workload (the reported table uses 2000000)")
		partitions = flag.String("partitions", "1,6", "comma-separated partition counts")
		values     = flag.String("values", "100,1024", "comma-separated value sizes in bytes")
		targets    = flag.String("targets", "skein-fsync,kfake,skein-replicated,kafka", "comma-separated targets in run order: skein-fsync, skein-replicated, kfake, kafka")
		linger     = flag.Duration("linger", 5*time.Millisecond, "producer linger (kgo.ProducerLinger)")
		dir        = flag.String("dir", "", "work directory for binaries, data and logs (default: a new temporary directory, removed at the end)")
		keep       = flag.Bool("keep", false, "keep each run's data directory and log")
		skeinBin   = flag.String("skein-bin", "", "use this skein binary instead of building ./cmd/skein")
		kfakeBin   = flag.String("kfake-bin", "", "use this kfake binary instead of building ./tests/bench/kfake")
		kafkaCP    = flag.String("kafka-classpath", "", "run Apache Kafka from this classpath instead of resolving tests/kafkaref/pom.xml's with mvn")
		profileDir = flag.String("cpuprofile-dir", "", "write a CPU profile of every Skein run to DIR/<target>-<workload>.pprof")
		outFile    = flag.String("out", "", "also write the tables to this file")
		runTimeout = flag.Duration("run-timeout", 15*time.Minute, "bound on one target's run of one workload")
		txnOn      = flag.Bool("txn", false, "run the transaction benchmark (txn.go) instead: -partitions, -values, -targets, -linger as above")
		txns       = flag.Int("txns", 200, "with -txn: transactions per run, over all producers (not counting the two warm-up transactions of each producer)")
		txnRecords = flag.Int("txn-records", 1000, "with -txn: records per transaction")
		producers  = flag.String("producers", "1,4", "with -txn: comma-separated producer counts, each producer a client with a transactional id of its own")
		security   = flag.String("security", securityPlaintext, "the listener the clients produce and consume over: plaintext, or sasl_ssl (TLS with a throwaway CA and SASL/PLAIN; kfake, which has neither, is left out); for the broker benchmark and -perftest")
	)
	scale := newScaleFlags()
	recovery := newRecoveryFlags()
	extensions := newExtensionFlags()
	perf := newPerfFlags()
	groups := newGroupsFlags()
	share := newShareFlags()
	flag.Parse()
	if *share.on && !flagSet("targets") {
		*targets = shareTargets
	}
	if *records < 1 {
		return errors.New("-records must be at least 1")
	}
	parts, err := ints(*partitions)
	if err != nil {
		return fmt.Errorf("-partitions: %w", err)
	}
	sizes, err := ints(*values)
	if err != nil {
		return fmt.Errorf("-values: %w", err)
	}
	sc, err := scale.config()
	if err != nil {
		return err
	}
	switch *security {
	case securityPlaintext:
	case securitySASLSSL:
		if *scale.on || *recovery.on || *groups.on || *extensions.on || *txnOn || *share.on {
			return errors.New("-security sasl_ssl: only the broker benchmark and -perftest run over SASL_SSL")
		}
	default:
		return fmt.Errorf("-security %q: plaintext or sasl_ssl", *security)
	}

	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "skein-bench-"); err != nil {
			return err
		}
		if !*keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	out := io.Writer(os.Stdout)
	if *outFile != "" {
		f, err := os.Create(*outFile)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	if *scale.on {
		if *skeinBin == "" {
			if *skeinBin, err = buildSkein(work); err != nil {
				return err
			}
		}
		sc.bin, sc.work, sc.keep, sc.linger = *skeinBin, work, *keep, *linger
		header(out, "Scale benchmark")
		return runScale(out, sc)
	}
	if *recovery.on {
		if *skeinBin == "" {
			if *skeinBin, err = buildSkein(work); err != nil {
				return err
			}
		}
		header(out, "Recovery benchmark")
		return runRecovery(out, recovery, *skeinBin, work)
	}
	if *groups.on {
		gc, err := groups.config(work)
		if err != nil {
			return err
		}
		header(out, "Group coordinator failover benchmark")
		return runGroups(out, gc)
	}
	if *extensions.on {
		return runExtensions(out, extensions, *skeinBin, work, *profileDir, *keep, *linger, *runTimeout)
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return err
		}
	}

	var sec *saslSSL
	var notes []string // said under the header
	if *security == securitySASLSSL {
		if sec, err = newSASLSSL(work); err != nil {
			return fmt.Errorf("-security sasl_ssl: %w", err)
		}
		notes = append(notes, "security: the clients produce and consume over each broker's SASL_SSL listener "+
			"(TLS, a throwaway CA's ECDSA P-256 certificate for 127.0.0.1 as PEM files; SASL/PLAIN); PLAINTEXT is the inter-broker listener")
	}
	var ts []target
	for _, name := range strings.Split(*targets, ",") {
		switch name = strings.TrimSpace(name); name {
		case "skein-fsync", "skein-replicated":
			if *skeinBin == "" {
				if *skeinBin, err = buildSkein(work); err != nil {
					return err
				}
			}
			ts = append(ts, skeinTargetOver(sec, *skeinBin, strings.TrimPrefix(name, "skein-"), 0))
		case "kfake":
			if sec != nil {
				notes = append(notes, "kfake left out: it serves neither TLS nor SASL")
				fmt.Fprintln(os.Stderr, "bench: kfake left out of -security sasl_ssl: it serves neither TLS nor SASL")
				continue
			}
			if *kfakeBin == "" {
				*kfakeBin = filepath.Join(work, "kfake")
				if err := build(*kfakeBin, "./tests/bench/kfake"); err != nil {
					return err
				}
			}
			ts = append(ts, kfakeTarget(*kfakeBin))
		case "kafka":
			if *kafkaCP == "" {
				if *kafkaCP, err = kafkaref.Classpath("tests/kafkaref"); err != nil {
					return err
				}
			}
			ts = append(ts, kafkaTargetOver(sec, *kafkaCP))
		default:
			return fmt.Errorf("-targets: unknown target %q", name)
		}
	}
	if len(ts) == 0 {
		return errors.New("-targets: no target left to run")
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}

	if *txnOn {
		if *txns < 1 || *txnRecords < 1 {
			return errors.New("-txns and -txn-records must be at least 1")
		}
		ps, err := ints(*producers)
		if err != nil {
			return fmt.Errorf("-producers: %w", err)
		}
		header(out, "Transaction benchmark")
		return runTxnBench(out, txnConfig{
			partitions: parts, values: sizes, producers: ps,
			perTxn: *txnRecords, transactions: *txns, linger: *linger,
			targets: ts, work: work, profileDir: *profileDir, keep: *keep, runTimeout: *runTimeout,
		})
	}

	if *share.on {
		cfg, err := share.config(parts, *linger)
		if err != nil {
			return err
		}
		cfg.targets, cfg.work, cfg.profileDir, cfg.keep, cfg.runTimeout = ts, work, *profileDir, *keep, *runTimeout
		header(out, "Share group benchmark", shareNotes(cfg)...)
		return runShareBench(out, cfg)
	}

	var ws []workload
	for _, p := range parts {
		for _, s := range sizes {
			ws = append(ws, workload{partitions: p, valueSize: s, records: *records, linger: *linger, protocol: sec.protocol()})
		}
	}
	if *perf.on {
		header(out, "Broker benchmark with Kafka's perf tools", notes...)
		return runPerf(out, perf, ws, ts, work, *keep, *runTimeout)
	}

	header(out, "Broker benchmark", notes...)
	var failed []error
	for _, w := range ws {
		results := make(map[string]*result, len(ts))
		for _, t := range ts {
			runDir := filepath.Join(work, w.slug(), t.name)
			profile := ""
			if *profileDir != "" && strings.HasPrefix(t.name, "skein") {
				profile = filepath.Join(*profileDir, t.name+"-"+w.slug()+".pprof")
			}
			fmt.Fprintf(os.Stderr, "%s: %s ... ", w, t.name)
			ctx, cancel := context.WithTimeout(context.Background(), *runTimeout)
			res, err := run(ctx, t, w, runDir, profile)
			cancel()
			if err != nil {
				fmt.Fprintf(os.Stderr, "failed: %v\n", err)
				failed = append(failed, fmt.Errorf("%s, %s: %w", w, t.name, err))
				continue // keep the directory: it holds the broker's log
			}
			fmt.Fprintf(os.Stderr, "produce %.0f rec/s %.1f MB/s, consume %.0f rec/s (load %s)\n",
				res.produce.recordsPerSec(), res.produce.mbPerSec(), res.consume.recordsPerSec(), loadAverage())
			results[t.name] = &res
			if !*keep {
				os.RemoveAll(runDir)
			}
		}
		table(out, w, names, results)
	}
	fmt.Fprintf(out, "- load average at end: %s\n", loadAverage())
	return errors.Join(failed...)
}

// header starts the output: what ran, where, on which commit, and notes
// on what ran, a list item each.
func header(out io.Writer, title string, notes ...string) {
	fmt.Fprintf(out, "## %s\n\n", title)
	fmt.Fprintf(out, "- command: `go run ./tests/bench %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(out, "- %s, %d CPUs, %s; commit %s\n", runtime.Version(), runtime.NumCPU(), cpuModel(), commit())
	for _, n := range notes {
		fmt.Fprintf(out, "- %s\n", n)
	}
	fmt.Fprintf(out, "- load average at start: %s\n\n", loadAverage())
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// buildSkein builds ./cmd/skein into the work directory.
func buildSkein(work string) (string, error) {
	bin := filepath.Join(work, "skein")
	return bin, build(bin, "./cmd/skein")
}

// build compiles the package pkg of this module into bin.
func build(bin, pkg string) error {
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, fmt.Errorf("%d: must be at least 1", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// commit names the source tree benchmarked: HEAD, marked when the tree has
// changes.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
