package tests

// One node per data directory: a second `skein node` on a directory that
// a running node uses is refused at start, names the directory and the
// process that holds it, and touches nothing in it.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// TestDataDirLockedByRunningNode starts a second node on a live node's
// data directory: it must exit non-zero naming the directory and the
// first node's pid, and the first must go on serving what it had.
func TestDataDirLockedByRunningNode(t *testing.T) {
	first := newChildNode(t)
	first.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClientFor(t, first.addr, kgo.DefaultProduceTopic("locked"), kgo.AllowAutoTopicCreation())
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out, code := runSecondNode(t, first.dataDir)
	if code == 0 {
		t.Fatalf("a second node on %s started (exit 0); output:\n%s", first.dataDir, out)
	}
	for _, want := range []string{first.dataDir, "in use", fmt.Sprintf("process %d", first.cmd.Process.Pid)} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q; output:\n%s", want, out)
		}
	}
	if !first.running() {
		t.Fatal("the first node exited")
	}
	// The first node still leads its partitions and serves every record.
	cl.ForceMetadataRefresh()
	consumer := newClientFor(t, first.addr, kgo.ConsumeTopics("locked"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 10 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatalf("after the refused start, reading the first node's records: %v (%d of 10 read)", err, got)
		}
		got += fetches.NumRecords()
	}
}

// TestDataDirLockedLeavesDirectoryUntouched holds the lock of a stopped
// node's data directory, as a running node would, and starts a node on
// it: refused, and every file and directory in it is as it was.
func TestDataDirLockedLeavesDirectoryUntouched(t *testing.T) {
	n := newChildNode(t)
	n.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClientFor(t, n.addr, kgo.DefaultProduceTopic("untouched"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, kgo.StringRecord("kept")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	n.terminate(30 * time.Second)

	lock, err := os.OpenFile(filepath.Join(n.dataDir, ".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the stopped node left its lock held: %v", err)
	}
	before := treeDigest(t, n.dataDir)
	out, code := runSecondNode(t, n.dataDir)
	if code == 0 {
		t.Fatalf("a node on a locked data dir started (exit 0); output:\n%s", out)
	}
	if !strings.Contains(out, n.dataDir) || !strings.Contains(out, "in use") {
		t.Errorf("the refusal does not name the directory; output:\n%s", out)
	}
	if after := treeDigest(t, n.dataDir); after != before {
		t.Errorf("the refused node changed the data directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Once the lock is released, a node starts on the directory.
	lock.Close()
	n.start()
}

// runSecondNode runs `skein node` on dataDir with addresses of its own and
// returns its output and exit code; it must exit within 30 s.
func runSecondNode(t *testing.T, dataDir string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBinary(t), "node", "--data-dir", dataDir,
		"--listen", freeAddr(t), "--admin-listen", freeAddr(t))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the second node neither started nor exited within 30 s; output:\n%s", out)
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// treeDigest lists every entry under dir with its mode, size, modification
// time and, for files, a hash of its content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %v %d %d", rel, info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
