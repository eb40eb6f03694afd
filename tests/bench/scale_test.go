package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestScaleSmoke runs scale mode on 200 partitions with a few records, so
// that `make test` keeps it working: the node starts under the open-file
// limit, the topics are created, the node restarts and serves them, and
// every produce phase has every record acknowledged. Nothing is asserted on
// time or memory.
func TestScaleSmoke(t *testing.T) {
	skein, _ := binaries(t)
	c := scaleConfig{
		bin: skein, work: t.TempDir(), linger: 5 * time.Millisecond,
		nofile: 4096, partitions: 200, hot: 50, hotRecords: 20, value: 1024,
		series: []int{1, 10}, seriesRecords: 2000, durability: "fsync",
		settle: 100 * time.Millisecond, serveTimeout: time.Minute, produceTimeout: time.Minute,
	}
	var out bytes.Buffer
	if err := runScale(&out, c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []string{
		"| create: every partition serves |",
		"| restart (from process start): every partition serves |",
		"| scale-hot: end offsets | 20 records in each partition, as produced |",
		"| records acknowledged | 1000 of 1000 | 2000 of 2000 | 2000 of 2000 |",
		"KiB per partition above the node without topics",
		"**PASS**",
	}
	if _, err := exec.LookPath("prlimit"); err == nil {
		want = append(want, "| open-file limit of the node (soft/hard) | 4096/4096 |")
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestScaleFailure checks that a produce phase that cannot finish is
// reported as a failure with its records counted, not as figures: with a
// produce timeout too short for 200,000 records, runScale fails and says
// how many were acknowledged.
func TestScaleFailure(t *testing.T) {
	skein, _ := binaries(t)
	c := scaleConfig{
		bin: skein, work: t.TempDir(), linger: 5 * time.Millisecond,
		partitions: 4, hot: 4, hotRecords: 1, value: 1024,
		series: []int{2}, seriesRecords: 200_000, durability: "fsync",
		serveTimeout: time.Minute, produceTimeout: time.Millisecond,
	}
	var out bytes.Buffer
	err := runScale(&out, c)
	if err == nil {
		t.Fatalf("no failure:\n%s", out.String())
	}
	for _, w := range []string{"**FAIL**", "records acknowledged", "timed out after 1ms"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}
