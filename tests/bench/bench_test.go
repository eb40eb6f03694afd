package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skeinlog/skein/tests/procstat"
)

// binDir holds the binaries the tests build once (see binaries).
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "skein-bench-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// binaries builds skein and kfake once for all the tests and returns their
// paths.
func binaries(t *testing.T) (skein, kfake string) {
	skein, kfake = filepath.Join(binDir, "skein.bin"), filepath.Join(binDir, "kfake.bin")
	buildOnce.Do(func() {
		// The test runs in tests/bench; the packages are built from the
		// module root, where `go run ./tests/bench` runs.
		buildErr = errors.Join(build(skein, "../../cmd/skein"), build(kfake, "./kfake"))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return skein, kfake
}

// TestSmoke runs every target through both phases with a few records, the
// way the benchmark does, so that `make test` keeps the program working:
// both brokers start as processes and announce their address, the consume
// phase's checks pass, the CPU readings move, and a Skein run writes a CPU
// profile through the hidden --cpuprofile flag. (kafka_test.go does the
// same for Apache Kafka, where Java and Maven are at hand.)
func TestSmoke(t *testing.T) {
	skeinBin, kfakeBin := binaries(t)
	dir := smoke(t, nil, skeinTarget(skeinBin, "fsync", 0), kfakeTarget(kfakeBin), skeinTarget(skeinBin, "replicated", 0))(
		"fsync/kfake", "replicated/kfake")
	if st, err := os.Stat(filepath.Join(dir, "fsync.pprof")); err != nil || st.Size() == 0 {
		t.Errorf("no CPU profile from skein node --cpuprofile: %v", err)
	}
}

// TestSASLSSLSmoke runs skein-fsync as -security sasl_ssl does, so that
// `make test` keeps the TLS and SASL path working end to end without Java:
// the certificates made at start, the node started from its properties
// file with a SASL_SSL listener beside PLAINTEXT, its address read from
// the `node started` line, both phases' clients over TLS with SASL/PLAIN.
// (kafka_test.go runs Kafka the same way.)
func TestSASLSSLSmoke(t *testing.T) {
	skeinBin, _ := binaries(t)
	sec, err := newSASLSSL(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	smoke(t, sec, skeinTargetOver(sec, skeinBin, "fsync", 0))()
}

// smoke runs targets on 20,000 records, the clients over sec (nil:
// PLAINTEXT), checks each run's figures, and returns a function that
// checks the table has the given ratio columns and returns the directory
// of the runs (skein-fsync's profile is there).
func smoke(t *testing.T, sec *saslSSL, targets ...target) func(columns ...string) string {
	dir := t.TempDir()
	w := workload{partitions: 3, valueSize: 1024, records: 20000, linger: 5 * time.Millisecond, protocol: sec.protocol()}
	results := make(map[string]*result)
	var names []string
	for _, tg := range targets {
		profile := ""
		if tg.name == "skein-fsync" {
			profile = filepath.Join(dir, "fsync.pprof")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := run(ctx, tg, w, filepath.Join(dir, tg.name), profile)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		if res.produce.records != w.records || res.consume.records != w.records {
			t.Errorf("%s: produced %d and consumed %d records, want %d", tg.name, res.produce.records, res.consume.records, w.records)
		}
		if res.recordLatency.n != w.records || res.requests == 0 || res.batches == 0 {
			t.Errorf("%s: %d record latencies, %d requests, %d batches", tg.name, res.recordLatency.n, res.requests, res.batches)
		}
		if res.produce.brokerCPU <= 0 {
			t.Errorf("%s: the broker used no CPU producing 20 MB", tg.name)
		}
		if (res.tls != "") != (sec != nil) {
			t.Errorf("%s: TLS %q over %s", tg.name, res.tls, sec.protocol())
		}
		results[tg.name] = &res
		names = append(names, tg.name)
	}
	return func(columns ...string) string {
		var out bytes.Buffer
		table(&out, w, names, results)
		heading := fmt.Sprintf("linger 5ms, %s)", sec.protocol())
		for _, want := range append([]string{heading, "| produce records/s |"}, columns...) {
			if !strings.Contains(out.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, out.String())
			}
		}
		return dir
	}
}

func TestProcCPU(t *testing.T) {
	// Burn some CPU so that a tick has passed, then compare /proc with
	// getrusage for this very process: they count the same time.
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	proc, err := procstat.CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self := selfCPU()
	if proc <= 0 || proc > self+2*procstat.ClockTick {
		t.Errorf("/proc says %v, getrusage %v", proc, self)
	}
}

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p := percentilesOf(d)
	if p.n != 100 || p.p50 != 50*time.Millisecond || p.p99 != 99*time.Millisecond {
		t.Errorf("got %+v", p)
	}
	if p := percentilesOf(nil); p != (percentiles{}) {
		t.Errorf("empty: %+v", p)
	}
}

func TestAddressLines(t *testing.T) {
	if a, ok := skeinAddr(`{"level":"info","listen":"127.0.0.1:4000","message":"node started"}`); !ok || a != "127.0.0.1:4000" {
		t.Errorf("skein: %q %v", a, ok)
	}
	if _, ok := skeinAddr(`{"level":"info","message":"effective configuration","listen":"127.0.0.1:0"}`); ok {
		t.Error("skein: took the configuration's listen address")
	}
	started := `{"level":"info","listen":"127.0.0.1:4000","listeners":"PLAINTEXT://127.0.0.1:4000,SASL_SSL://127.0.0.1:4001","message":"node started"}`
	if a, ok := skeinListener("SASL_SSL")(started); !ok || a != "127.0.0.1:4001" {
		t.Errorf("skein SASL_SSL: %q %v", a, ok)
	}
	if a, ok := skeinListener("SSL")(started); ok {
		t.Errorf("skein SSL: took %q from a line without an SSL listener", a)
	}
	if a, ok := kfakeAddr("listening on 127.0.0.1:5000"); !ok || a != "127.0.0.1:5000" {
		t.Errorf("kfake: %q %v", a, ok)
	}
}

// TestTxnSmoke runs the transaction benchmark (-txn) on every target with a
// few small transactions, both modes, so that `make test` keeps it working:
// the transactions commit, the read_committed check passes, the table has
// its rows.
func TestTxnSmoke(t *testing.T) {
	dir := t.TempDir()
	skeinBin, kfakeBin := binaries(t)
	var out bytes.Buffer
	cfg := txnConfig{
		partitions: []int{2}, values: []int{100}, producers: []int{2},
		perTxn: 100, transactions: 6, linger: 5 * time.Millisecond,
		targets: []target{skeinTarget(skeinBin, "fsync", 0), kfakeTarget(kfakeBin), skeinTarget(skeinBin, "replicated", 0)},
		work:    dir, runTimeout: 2 * time.Minute,
	}
	if err := runTxnBench(&out, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| skein-fsync | plain |", "| skein-fsync | txn |", "| kfake | txn |", "| skein-replicated | txn |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "run failed") {
		t.Errorf("a run failed:\n%s", out.String())
	}
}
