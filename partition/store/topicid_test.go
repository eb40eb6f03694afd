package store

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

// TestOpenRecordsTopicID: a new log records the topic id in its directory
// in Kafka's partition.metadata format, durably (it survives a crash right
// after the first write), reopens a directory of the same id, refuses one of another
// id without touching it, and adopts a directory with segments but no
// partition.metadata (an older Skein's).
func TestOpenRecordsTopicID(t *testing.T) {
	mem := vfs.NewCrashableMem()
	a, b := [16]byte{1, 2, 3}, [16]byte{9}
	cfg := Config{FS: mem, Dir: "/data/t-0", TopicID: a, Options: testOptions()}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, logBatch(3, 10, 0))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	data, err := readFile(crashed, filepath.Join(cfg.Dir, PartitionMetadataFile))
	if want := "version: 0\ntopic_id: AQIDAAAAAAAAAAAAAAAAAA\n"; err != nil || string(data) != want {
		t.Fatalf("partition.metadata after a crash: %q, %v; want %q", data, err, want)
	}
	if l, err = Open(cfg); err != nil {
		t.Fatalf("reopening with the same id: %v", err)
	}
	l.Close()

	other := cfg
	other.TopicID = b
	before, _ := mem.List(cfg.Dir)
	_, err = Open(other)
	var mismatch *TopicIDMismatchError
	if !errors.As(err, &mismatch) || mismatch.Found != a || mismatch.Want != b {
		t.Fatalf("opening topic %x's directory as topic %x: %v, want a TopicIDMismatchError", a, b, err)
	}
	if after, _ := mem.List(cfg.Dir); len(after) != len(before) {
		t.Fatalf("the refused directory changed: %v, was %v", after, before)
	}

	// An older Skein's directory: segments, no partition.metadata.
	if err := mem.Remove(filepath.Join(cfg.Dir, PartitionMetadataFile)); err != nil {
		t.Fatal(err)
	}
	l, err = Open(other)
	if err != nil {
		t.Fatalf("adopting a directory without partition.metadata: %v", err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("adopted log ends at %d, want 3", l.LogEndOffset())
	}
	l.Close()
	if id, ok, err := ReadTopicID(mem, cfg.Dir); err != nil || !ok || id != b {
		t.Fatalf("adopted directory records %x (%v, %v), want %x", id, ok, err, b)
	}
}

// TestOpenRewritesATornTopicID: a partition.metadata torn by a crash in a
// directory without segments (a new partition's) is written again; one
// that is not version 0 partition metadata beside segments fails Open
// rather than guess whose records they are.
func TestOpenRewritesATornTopicID(t *testing.T) {
	mem := vfs.NewCrashableMem()
	id := [16]byte{4}
	cfg := Config{FS: mem, Dir: "/data/t-0", TopicID: id, Options: testOptions()}
	if err := mem.MkdirAll(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	torn := func() {
		f, err := mem.Create(filepath.Join(cfg.Dir, PartitionMetadataFile))
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("versi"))
		f.Close()
	}
	torn()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("opening a new directory with a torn partition.metadata: %v", err)
	}
	l.Close()
	if got, ok, err := ReadTopicID(mem, cfg.Dir); err != nil || !ok || got != id {
		t.Fatalf("after Open: %x, %v, %v; want %x", got, ok, err, id)
	}
	torn()
	if _, err := Open(cfg); err == nil {
		t.Fatal("Open took a directory with segments and an unreadable partition.metadata")
	}
}

// TestNewLogMakesNothingUntilWritten: a new log has no directory until
// its first write: opened, checkpointed, closed and opened again, it
// leaves nothing on disk. Its first write makes the directory, with
// partition.metadata; a crash just after it, with any part of what was
// not synced surviving, leaves a directory that opens, holds the record
// or nothing, and records the topic's id.
func TestNewLogMakesNothingUntilWritten(t *testing.T) {
	mem := vfs.NewCrashableMem()
	id := [16]byte{7}
	cfg := Config{FS: mem, Dir: "/data/t-0", TopicID: id, Options: testOptions()}
	for range 2 {
		l, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.Stat(cfg.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a log never written: stat %s: %v, want it absent", cfg.Dir, err)
	}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, logBatch(3, 10, 0))
	for seed := range uint64(20) {
		crashed := mem.CrashClone(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(seed, seed)), KeepUnsyncedProb: 0.5})
		c := cfg
		c.FS = crashed
		r, err := Open(c)
		if err != nil {
			t.Fatalf("seed %d: opening after a crash just after the first write: %v", seed, err)
		}
		if end := r.LogEndOffset(); end != 0 && end != 3 {
			t.Fatalf("seed %d: the log ends at %d after the crash, want 0 or 3", seed, end)
		}
		mustAppend(t, r, logBatch(1, 10, 0))
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := ReadTopicID(crashed, cfg.Dir); err != nil || !ok || got != id {
			t.Fatalf("seed %d: %s records %x (%v, %v), want %x", seed, cfg.Dir, got, ok, err, id)
		}
	}
}

// TestNewLogRecordDurableOnceSynced: a record written to a new log and
// synced survives a crash, even when nothing else was written beside it
// (no leader epoch to record: epoch -1): making the directory synced the
// names of its files.
func TestNewLogRecordDurableOnceSynced(t *testing.T) {
	mem := vfs.NewCrashableMem()
	cfg := Config{FS: mem, Dir: "/data/t-0", TopicID: [16]byte{7}, Options: testOptions()}
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(logBatch(3, 10, 0), -1); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	c := cfg
	c.FS = mem.CrashClone(vfs.CrashOptions{})
	r, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if end := r.LogEndOffset(); end != 3 {
		t.Fatalf("after a crash, the synced log ends at %d, want 3", end)
	}
}
