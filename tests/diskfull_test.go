package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/internal/needroot"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at
// the end of the test. It needs root, as CI has.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	needroot.Require(t, "mounting a tmpfs")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs (the disk-full test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file at path until the filesystem is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{64 << 10, 4 << 10, 512} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDiskFull: a `skein node` child process whose data directory is a
// small tmpfs that the test fills up. Produces are answered
// KAFKA_STORAGE_ERROR (a client that does not retry sees it), consumers
// keep reading every acknowledged record, the node stays up and its admin
// listener says why it is not ready; once space is freed, writes resume by
// themselves and a retrying idempotent producer's records all land.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, 32<<20)
	node := newChildNode(t)
	node.dataDir = filepath.Join(mnt, "data")
	node.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClientFor(t, node.addr))
	mustCreate(t, ctx, adm, "full", 1, nil)

	// A client that does not retry, so that it sees the broker's answer.
	once := newClientFor(t, node.addr, kgo.DefaultProduceTopic("full"), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.ProducerLinger(0))
	value := bytes.Repeat([]byte("x"), 1000)
	seq := 0
	produceOne := func() error {
		r := &kgo.Record{Key: []byte(strconv.Itoa(seq)), Value: value}
		err := once.ProduceSync(ctx, r).FirstErr()
		if err == nil {
			seq++
		}
		return err
	}
	for range 100 {
		if err := produceOne(); err != nil {
			t.Fatalf("produce before the disk is full: %v", err)
		}
	}
	filler := filepath.Join(mnt, "filler")
	fill(t, filler)

	// Produce until the partition's writes hit the full disk (the page
	// of the segment being written may still take a record or two).
	var err error
	for range 50 {
		if err = produceOne(); err != nil {
			break
		}
	}
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to a full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	acked := seq
	t.Logf("%d records acknowledged, then %v", acked, err)
	if err := produceOne(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce again: %v, want KAFKA_STORAGE_ERROR", err)
	}

	// Consumers read everything acknowledged, the disk still full.
	readKeys(t, ctx, node.addr, "full", acked)
	if code, body := httpGet(t, "http://"+node.admin+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d %s", code, body)
	}
	if code, body := httpGet(t, "http://"+node.admin+"/readyz"); code != http.StatusServiceUnavailable || !bytes.Contains([]byte(body), []byte("disk_full")) {
		t.Fatalf("/readyz = %d %q, want 503 naming disk_full", code, body)
	}
	if !node.running() {
		t.Fatal("the node exited")
	}
	if v := childMetric(t, node, "skein_partitions_failed", map[string]string{"cause": "disk_full"}); v != 1 {
		t.Fatalf("skein_partitions_failed{cause=disk_full} = %v, want 1", v)
	}
	if v := childMetric(t, node, "skein_log_lines_suppressed_total", nil); v != 0 {
		t.Fatalf("skein_log_lines_suppressed_total = %v with one partition failed, want 0", v)
	}

	// Space freed: a retrying producer's records land, the partition
	// having recovered by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	retrying := newClientFor(t, node.addr, kgo.DefaultProduceTopic("full"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	for range 50 {
		r := &kgo.Record{Key: []byte(strconv.Itoa(seq)), Value: value}
		if err := retrying.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce after space was freed: %v", err)
		}
		seq++
	}
	readKeys(t, ctx, node.addr, "full", seq)
	if code, body := httpGet(t, "http://"+node.admin+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after recovery = %d %s", code, body)
	}
	logs, err := os.ReadFile(node.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]int{"partition storage failed": 1, "partition storage recovered": 1, "panic": 0} {
		if n := bytes.Count(logs, []byte(line)); n != want {
			t.Errorf("the node logged %q %d times, want %d", line, n, want)
		}
	}
}

// childMetric returns the value of a sample of a child node's /metrics.
func childMetric(t *testing.T, node *childNode, name string, labels map[string]string) float64 {
	t.Helper()
	code, body := httpGet(t, "http://"+node.admin+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := metricValue(mfs, name, labels)
	if !ok {
		t.Fatalf("/metrics has no %s%v", name, labels)
	}
	return v
}

// readKeys reads partition 0 of topic from the start and checks that it
// holds exactly the records keyed 0 to n-1, in order.
func readKeys(t *testing.T, ctx context.Context, addr, topic string, n int) {
	t.Helper()
	cl := newClientFor(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d of %d records: %v", got, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != strconv.Itoa(got) || r.Offset != int64(got) {
				t.Fatalf("record %d: key %q at offset %d", got, r.Key, r.Offset)
			}
			got++
		})
	}
}
