package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
)

// TestSeveralLogDirs (KIP-858's JBOD): a node with two log dirs in
// data.dir (log.dirs) spreads the partitions of its topics over both (one
// filesystem: equal free space, so the partition count decides); the
// metadata log stays in the first. DescribeLogDirs, through kadm, lists
// both log dirs with the partitions each holds on disk and their sizes;
// after a restart the node finds every partition where it was, and
// franz-go reads what it produced before and after.
func TestSeveralLogDirs(t *testing.T) {
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	b := startBroker(t, func(c *configs.Node) { c.DataDir = dirA + "," + dirB })
	ctx := ctxFor(t)
	adm := b.admin()
	topics := map[string]int32{"jbod-x": 8, "jbod-y": 6}
	for topic, n := range topics {
		mustCreate(t, ctx, adm, topic, n, nil)
	}

	// Where each partition is on disk: in exactly one of the two.
	onDisk := func() map[string][]string {
		t.Helper()
		where := map[string][]string{}
		for topic, n := range topics {
			for p := range n {
				name := topic + "-" + strconv.Itoa(int(p))
				for _, dir := range []string{dirA, dirB} {
					if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.IsDir() {
						where[dir] = append(where[dir], name)
					}
				}
			}
		}
		if len(where[dirA])+len(where[dirB]) != 14 {
			t.Fatalf("partition directories %v: want each of the 14 in one log dir", where)
		}
		return where
	}
	// Every partition gets records: partition p of each topic p+1 of them.
	produceAll := func(round string) {
		t.Helper()
		cl := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for topic, n := range topics {
			for p := range n {
				for i := range int(p) + 1 {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", round, p, i)})
				}
			}
		}
		produce(t, ctx, cl, recs...)
	}
	produceAll("before")
	// A log's directory is made with its first record.
	placed := onDisk()
	if len(placed[dirA]) != 7 || len(placed[dirB]) != 7 {
		t.Errorf("partitions %v: want 7 in each log dir", placed)
	}
	if _, err := os.Stat(filepath.Join(dirA, "__cluster_metadata-0")); err != nil {
		t.Errorf("metadata log not in the first log dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirB, "__cluster_metadata-0")); err == nil {
		t.Errorf("metadata log in the second log dir too")
	}

	// DescribeLogDirs lists both log dirs, each with the partitions on
	// its disk, each partition's size that of its segment file.
	describe := func() {
		t.Helper()
		all, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		dirs := all[1]
		if len(dirs) != 2 {
			t.Fatalf("log dirs %v, want two", slices.Collect(func(yield func(string) bool) {
				for d := range dirs {
					yield(d)
				}
			}))
		}
		for _, dir := range []string{dirA, dirB} {
			d, ok := dirs[dir]
			if !ok || d.Err != nil {
				t.Fatalf("log dir %s: %+v", dir, d)
			}
			if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
				t.Errorf("%s: total %d, usable %d", dir, d.TotalBytes, d.UsableBytes)
			}
			var described []string
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				name := p.Topic + "-" + strconv.Itoa(int(p.Partition))
				described = append(described, name)
				info, err := os.Stat(filepath.Join(dir, name, "00000000000000000000.log"))
				if err != nil || p.Size <= 0 || p.Size != info.Size() || p.OffsetLag != 0 || p.IsFuture {
					t.Errorf("%s in %s described as %+v; its segment file: %v %v", name, dir, p, info, err)
				}
			})
			slices.Sort(described)
			want := slices.Sorted(slices.Values(placed[dir]))
			if !slices.Equal(described, want) {
				t.Errorf("%s described with %v, holds %v", dir, described, want)
			}
		}
	}
	describe()

	b.restart()
	if again := onDisk(); !slices.Equal(slices.Sorted(slices.Values(again[dirA])), slices.Sorted(slices.Values(placed[dirA]))) {
		t.Errorf("after the restart %v, were %v", again, placed)
	}
	adm = b.admin()
	for topic, n := range topics {
		waitLoaded(t, ctx, adm, topic, n)
	}
	produceAll("after")
	describe()
	for topic, n := range topics {
		for p := range n {
			got := consumeFrom(t, ctx, b, topic, p, 0, 2*(int(p)+1))
			for i, r := range got {
				round, j := "before", i
				if i > int(p) {
					round, j = "after", i-int(p)-1
				}
				if want := fmt.Sprintf("%s-%d-%d", round, p, j); string(r.Value) != want || r.Offset != int64(i) {
					t.Errorf("%s/%d offset %d: %q, want %q at %d", topic, p, r.Offset, r.Value, want, i)
				}
			}
		}
	}
}

// TestLogDirsPartitionInTwo: a partition directory in both log dirs stops
// the node at start with an error naming both copies.
func TestLogDirsPartitionInTwo(t *testing.T) {
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	b := startBroker(t, func(c *configs.Node) { c.DataDir = dirA + "," + dirB })
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "twice", 1, nil)
	produce(t, ctx, b.client(kgo.DefaultProduceTopic("twice")), &kgo.Record{Value: []byte("v")})
	b.stop()
	var in, other string
	for _, pair := range [][2]string{{dirA, dirB}, {dirB, dirA}} {
		if _, err := os.Stat(filepath.Join(pair[0], "twice-0")); err == nil {
			in, other = pair[0], pair[1]
		}
	}
	if in == "" {
		t.Fatal("twice-0 in neither log dir")
	}
	if err := os.Mkdir(filepath.Join(other, "twice-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(b.cfg, zerolog.Nop())
	if err == nil {
		stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		n.Stop(stopCtx)
		t.Fatal("the node started with twice-0 in both log dirs")
	}
	for _, dir := range []string{in, other} {
		if want := filepath.Join(dir, "twice-0"); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestLogDirFails: write errors confined to one of two log dirs (the
// chaos disk fault's dir, through the error-injecting vfs) fail that log
// dir's partitions only: a produce to one of them is answered
// KAFKA_STORAGE_ERROR, the other log dir's partitions take records as
// before, the node reports the log dir offline (skein_log_dir_offline,
// DescribeLogDirs' KAFKA_STORAGE_ERROR). Healed, the failed partitions
// recover on their own and the log dir is back online.
func TestLogDirFails(t *testing.T) {
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	b := startBroker(t, func(c *configs.Node) { c.DataDir = dirA + "," + dirB })
	ctx := ctxFor(t)
	adm := b.admin()
	const parts = 4
	mustCreate(t, ctx, adm, "half", parts, nil)
	once := b.client(kgo.DefaultProduceTopic("half"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	produceTo := func(p int32) error {
		return once.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr()
	}
	in := map[string][]int32{}
	for p := range int32(parts) {
		if err := produceTo(p); err != nil {
			t.Fatalf("produce to %d before the fault: %v", p, err)
		}
		for _, dir := range []string{dirA, dirB} {
			if _, err := os.Stat(filepath.Join(dir, "half-"+strconv.Itoa(int(p)))); err == nil {
				in[dir] = append(in[dir], p)
			}
		}
	}
	if len(in[dirA]) != parts/2 || len(in[dirB]) != parts/2 {
		t.Fatalf("partitions by log dir %v, want half in each", in)
	}
	offline := func(dir string) float64 {
		v, ok := metricValue(b.metrics(), "skein_log_dir_offline", map[string]string{"dir": dir})
		if !ok {
			t.Fatalf("no skein_log_dir_offline{dir=%s}", dir)
		}
		return v
	}
	if offline(dirA) != 0 || offline(dirB) != 0 {
		t.Fatal("a log dir offline before the fault")
	}

	if code, out := b.adminDo("POST", "/v1/disk", `{"fail": "writes", "dir": "`+root+`"}`); code != http.StatusBadRequest || !strings.Contains(string(out), "not one of the node's log dirs") {
		t.Fatalf("POST /v1/disk for a dir that is no log dir: %d %s", code, out)
	}
	if code, out := b.adminDo("POST", "/v1/disk", `{"fail": "writes", "for": "5m", "dir": "`+dirB+`"}`); code != http.StatusCreated {
		t.Fatalf("POST /v1/disk: %d %s", code, out)
	}
	for _, p := range in[dirB] {
		if err := produceTo(p); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("produce to %d in the failed log dir: %v, want KAFKA_STORAGE_ERROR", p, err)
		}
	}
	for _, p := range in[dirA] {
		if err := produceTo(p); err != nil {
			t.Fatalf("produce to %d in the working log dir: %v", p, err)
		}
	}
	if offline(dirB) != 1 || offline(dirA) != 0 {
		t.Errorf("skein_log_dir_offline: a %v, b %v; want 0 and 1", offline(dirA), offline(dirB))
	}
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := all[1][dirB]; !errors.Is(d.Err, kerr.KafkaStorageError) || len(d.Topics) != 0 {
		t.Errorf("failed log dir described as %+v, want KAFKA_STORAGE_ERROR and no partitions", d)
	}
	if d := all[1][dirA]; d.Err != nil || len(d.Topics["half"]) != parts/2 {
		t.Errorf("working log dir described as %+v", d)
	}

	if code, out := b.adminDo("DELETE", "/v1/disk", ""); code != http.StatusOK {
		t.Fatalf("DELETE /v1/disk: %d %s", code, out)
	}
	// The failed partitions retry with backoff (from a second): a
	// retrying producer gets through once they recovered.
	retrying := b.client(kgo.DefaultProduceTopic("half"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	for _, p := range in[dirB] {
		produce(t, ctx, retrying, &kgo.Record{Partition: p, Value: []byte("after")})
	}
	eventually(t, "log dir b back online", func() bool { return offline(dirB) == 0 })
}

// TestMetadataLogDir: Kafka's metadata.log.dir puts the metadata log in
// a directory of its own, locked like the log dirs, which then hold
// partitions only; the node restarts from it.
func TestMetadataLogDir(t *testing.T) {
	root := t.TempDir()
	logs, meta := filepath.Join(root, "logs"), filepath.Join(root, "meta")
	b := startBroker(t, func(c *configs.Node) { c.DataDir, c.MetadataLogDir = logs, meta })
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "meta-apart", 1, nil)
	produce(t, ctx, b.client(kgo.DefaultProduceTopic("meta-apart")), &kgo.Record{Value: []byte("v")})
	if _, err := os.Stat(filepath.Join(meta, "__cluster_metadata-0")); err != nil {
		t.Errorf("metadata log not in metadata.log.dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logs, "__cluster_metadata-0")); err == nil {
		t.Error("metadata log in the log dir too")
	}
	if _, err := os.Stat(filepath.Join(meta, ".lock")); err != nil {
		t.Errorf("metadata.log.dir not locked: %v", err)
	}
	b.restart()
	if got := consumeFrom(t, ctx, b, "meta-apart", 0, 0, 1); string(got[0].Value) != "v" {
		t.Errorf("after the restart: %q", got[0].Value)
	}
	all, err := b.admin().DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all[1][logs]; !ok || len(all[1]) != 1 {
		t.Errorf("log dirs described: %v, want %s alone", all[1], logs)
	}
}
