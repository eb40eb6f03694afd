package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestShareSmoke runs the share group benchmark (-share) on both Skein
// targets with a few thousand records, two partitions, one and three
// consumers, so that `make test` keeps it working: the group config is
// set, the warm-up's record is accepted, every record is delivered,
// accepted and confirmed by a ShareAckCallback, and the table has its
// rows. Nothing is asserted on time. (kafka_share_test.go runs Kafka the
// same way.)
func TestShareSmoke(t *testing.T) {
	skeinBin, _ := binaries(t)
	shareSmoke(t, skeinTarget(skeinBin, "fsync", 0), skeinTarget(skeinBin, "replicated", 0))
}

// shareSmoke runs runShareBench on targets and checks its table.
func shareSmoke(t *testing.T, targets ...target) {
	var out bytes.Buffer
	cfg := shareConfig{
		partitions: []int{2}, consumers: []int{1, 3}, records: 3000,
		maxWait: 500 * time.Millisecond, linger: 5 * time.Millisecond,
		targets: targets, work: t.TempDir(), runTimeout: 2 * time.Minute,
	}
	// A failed run is an error here (its cell in the table says failed).
	if err := runShareBench(&out, cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"### Share groups: 2 partitions, 1 share consumer (3000 records",
		"### Share groups: 2 partitions, 3 share consumers (3000 records",
		"| records/s, first poll to last accept confirmed |", "| ack p99 ms, Ack to callback |", "| broker CPU-s/GB |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
