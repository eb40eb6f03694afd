//go:build kafkadiff

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/tests/kafkaref"
)

// These need Java and Maven, so they are built with the kafkadiff tag and
// run by tests/diff/run.sh, with Kafka's classpath in KAFKAREF_CLASSPATH (or
// resolved here with mvn).

// kafkaClasspath is the broker's classpath for the kafka target.
func kafkaClasspath(t *testing.T) string {
	if cp := os.Getenv("KAFKAREF_CLASSPATH"); cp != "" {
		return cp
	}
	cp, err := kafkaref.Classpath("../kafkaref")
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestKafkaSmoke runs the kafka target (Apache Kafka from tests/kafkaref)
// through both phases beside skein-fsync, as TestSmoke runs the others.
func TestKafkaSmoke(t *testing.T) {
	skeinBin, _ := binaries(t)
	smoke(t, nil, skeinTarget(skeinBin, "fsync", 0), kafkaTarget(kafkaClasspath(t)))("fsync/kafka")
}

// TestKafkaSmokeSASLSSL runs -security sasl_ssl's kafka target beside
// skein-fsync's: Kafka with a SASL_SSL listener from the same PEM files and
// JAAS line as Skein, the kgo clients over it. (tests/diff/run.sh's -run
// TestKafkaSmoke matches it.)
func TestKafkaSmokeSASLSSL(t *testing.T) {
	skeinBin, _ := binaries(t)
	sec, err := newSASLSSL(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	smoke(t, sec, skeinTargetOver(sec, skeinBin, "fsync", 0), kafkaTargetOver(sec, kafkaClasspath(t)))("fsync/kafka")
}

// TestPerfSmoke runs the -perftest mode (Kafka's producer and consumer perf
// tools as the load) on a few records against skein-fsync and Kafka: both
// tools' summaries parse, and the table compares the two.
func TestPerfSmoke(t *testing.T) {
	perfSmoke(t, nil)
}

// TestPerfSmokeSASLSSL is TestPerfSmoke with -security sasl_ssl: both tools
// over the SASL_SSL listeners, their settings in client.properties.
func TestPerfSmokeSASLSSL(t *testing.T) {
	sec, err := newSASLSSL(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	perfSmoke(t, sec)
}

// perfSmoke runs -perftest on 20,000 records against skein-fsync and
// Kafka, the clients over sec (nil: PLAINTEXT).
func perfSmoke(t *testing.T, sec *saslSSL) {
	skeinBin, _ := binaries(t)
	tools, err := kafkaref.Classpath("../interop/java")
	if err != nil {
		t.Fatal(err)
	}
	ws := []workload{{partitions: 3, valueSize: 1024, records: 20000, linger: 5 * time.Millisecond, protocol: sec.protocol()}}
	ts := []target{skeinTargetOver(sec, skeinBin, "fsync", 0), kafkaTargetOver(sec, kafkaClasspath(t))}
	var out bytes.Buffer
	f := perfFlags{classpath: &tools}
	if err := runPerf(&out, f, ws, ts, t.TempDir(), false, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"linger 5ms, " + sec.protocol() + ")", "| produce records/s |", "| consume broker CPU-s/GB |", "fsync/kafka"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "failed") {
		t.Errorf("a run failed:\n%s", out.String())
	}
}
