package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	copierOnce sync.Once
	copierErr  error
)

// copierBinary builds tests/bench/copier once for the tests.
func copierBinary(t *testing.T) string {
	bin := filepath.Join(binDir, "copier.bin")
	copierOnce.Do(func() { copierErr = build(bin, "./copier") })
	if copierErr != nil {
		t.Fatal(copierErr)
	}
	return bin
}

// TestExtensionsSmoke runs the extension benchmark (-extensions) on a few
// records, so that `make test` keeps it working: route, mirror and the
// copier process each copy the source topic, and every run's own check
// passes (each target partition ends where its source partition does, once
// the copier has nothing left to write: every record copied exactly once).
// Nothing is asserted on time or CPU.
func TestExtensionsSmoke(t *testing.T) {
	skein, _ := binaries(t)
	var out bytes.Buffer
	c := extensionConfig{
		skein: skein, copier: copierBinary(t), work: t.TempDir(),
		records: 3000, partitions: 6, values: []int{100},
		linger: 5 * time.Millisecond, runTimeout: time.Minute,
	}
	if err := runExtensionBench(&out, c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"| copy records/s |", "| copy total CPU-s/GB |", "route/external", "mirror/external"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "failed") {
		t.Errorf("a run failed:\n%s", out.String())
	}
}
