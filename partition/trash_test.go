package partition

import (
	"fmt"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// eventually polls cond every few milliseconds for at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSupervisor starts a partitions supervisor on fs with a Trash of
// /data, stopped at the end of the test.
func startSupervisor(t *testing.T, fs vfs.FS) (*actor.ActorSystem, *Registry, *actor.PID) {
	sys := actors.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	reg, trash := NewRegistry(), NewTrash(fs, fs, []string{"/data"}, zerolog.Nop())
	t.Cleanup(trash.Close)
	sup, err := sys.Root.SpawnNamed(SupervisorProps(SupervisorConfig{Registry: reg, FS: fs, Logger: zerolog.Nop(), Trash: trash},
		actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), "partitions")
	if err != nil {
		t.Fatal(err)
	}
	return sys, reg, sup
}

// TestHostingNeverServesAnotherTopicsDirectory: a partition directory left
// by a deleted topic (its node stopped before deleting it) is found when a
// topic of the same name is hosted: the new partition starts empty, and
// the old directory is renamed to its deleted name and removed in the
// background. (Before partition.metadata, the new topic served the old
// records.)
func TestHostingNeverServesAnotherTopicsDirectory(t *testing.T) {
	fs := vfs.NewCrashableMem()
	old, recreated := image.TopicID{1}, image.TopicID{2}
	dir := Dir("/data", "t", 0)
	l, err := store.Open(store.Config{FS: fs, Dir: dir, TopicID: old, Options: store.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch(t, -1, -1, -1, 5), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	sys, reg, sup := startSupervisor(t, fs)
	cfg := testConfig(fs, clock.Real)
	cfg.Dir, cfg.TopicID = dir, recreated
	sys.Root.Send(sup, &Host{Config: cfg})
	done := make(chan struct{})
	defer close(done)
	h := reg.WaitReady("t", 0, done)
	if v := h.View(); v.Log == nil || v.Failure != nil || v.Log.LogEndOffset != 0 {
		t.Fatalf("the recreated topic's partition: %+v, want an empty log", v)
	}
	// (A new log makes its directory at its first write.)
	if id, ok, err := store.ReadTopicID(fs, dir); err != nil || (ok && id != recreated) {
		t.Fatalf("%s records %x (%v, %v), want the new topic's id or none", dir, id, ok, err)
	}
	gone := fmt.Sprintf("%s.%x%s", dir, old[:], DeletedDirSuffix)
	eventually(t, gone+" removed", func() bool {
		_, err := fs.Stat(gone)
		return err != nil
	})
}

// TestTrashResumesAfterClose: the deleted directories a stopped
// node left are removed by the next Trash, and Close returns at once with
// removals still queued, which the next start finishes.
func TestTrashResumesAfterClose(t *testing.T) {
	fs := vfs.NewCrashableMem()
	const dirs = 200
	for i := range dirs {
		dir := Dir("/data", "t", int32(i))
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Create(path.Join(dir, "00000000000000000000.log")); err != nil {
			t.Fatal(err)
		}
	}
	first := NewTrash(fs, fs, []string{"/data"}, zerolog.Nop())
	for i := range dirs {
		if err := first.Delete(Dir("/data", "t", int32(i)), image.TopicID{7}); err != nil {
			t.Fatal(err)
		}
	}
	first.Close() // stops with removals queued, or not: either way nothing is live
	names, _ := fs.List("/data")
	for _, n := range names {
		if n[len(n)-len(DeletedDirSuffix):] != DeletedDirSuffix {
			t.Fatalf("%s was not renamed out of the way", n)
		}
	}
	second := NewTrash(fs, fs, []string{"/data"}, zerolog.Nop())
	defer second.Close()
	eventually(t, "every deleted directory removed", func() bool {
		names, _ := fs.List("/data")
		return len(names) == 0
	})
}

// written is a supervisor hosting t/0, whose log holds a batch, on a
// filesystem that counts the syncs, writes and creates made once counting
// is set.
type written struct {
	mem      *vfs.MemFS
	counting atomic.Bool
	touched  atomic.Int64
	sys      *actor.ActorSystem
	reg      *Registry
	sup      *actor.PID
	cfg      Config
	h        *Handle
}

func startWritten(t *testing.T) *written {
	w := &written{mem: vfs.NewCrashableMem()}
	fs := vfs.NewErrorFS(w.mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if w.counting.Load() && (op == vfs.OpSync || op == vfs.OpWrite || op == vfs.OpCreate) {
			w.touched.Add(1)
		}
		return nil
	}))
	w.sys, w.reg, w.sup = startSupervisor(t, fs)
	w.cfg = testConfig(fs, clock.Real)
	w.cfg.Dir, w.cfg.TopicID = Dir("/data", "t", 0), image.TopicID{1}
	w.sys.Root.Send(w.sup, &Host{Config: w.cfg})
	done := make(chan struct{})
	defer close(done)
	w.h = w.reg.WaitReady("t", 0, done)
	res := make(chan AppendResult, 1)
	w.sys.Root.Send(w.h.PID, &Append{Records: batch(t, 1, 0, 0, 3), Acks: -1, Reply: func(r AppendResult) { res <- r }})
	if r := <-res; r.Err != nil {
		t.Fatalf("append: %v", r.Err)
	}
	return w
}

// TestDeletedPartitionClosesWithoutSyncing: a partition unhosted because
// its topic was deleted closes its log without a sync or a write (no
// checkpoint, no producer snapshot, no clean-shutdown marker): its
// directory goes next, and a deletion of 100,000 partitions synced each
// one.
func TestDeletedPartitionClosesWithoutSyncing(t *testing.T) {
	w := startWritten(t)
	sys, sup, cfg := w.sys, w.sup, w.cfg
	counting, touched, mem := &w.counting, &w.touched, w.mem
	counting.Store(true)
	sys.Root.Send(sup, &Unhost{Topic: "t", TopicID: cfg.TopicID, Delete: true})
	eventually(t, "the deleted partition's directory removed", func() bool {
		names, _ := mem.List("/data")
		return len(names) == 0
	})
	if n := touched.Load(); n > 0 {
		t.Fatalf("closing a deleted partition wrote or synced %d times", n)
	}
}

// TestStopDoesNotWaitForPartitionsStillToOpen: a supervisor stopped while
// more partitions are to open their logs than may at once stops without
// opening the rest (it waited for every one: a node stopped just after
// creating 10,000 partitions took 13 s).
func TestStopDoesNotWaitForPartitionsStillToOpen(t *testing.T) {
	mem := vfs.NewCrashableMem()
	slow := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync {
			time.Sleep(20 * time.Millisecond) // a disk's fsync
		}
		return nil
	}))
	sys, reg, sup := startSupervisor(t, slow)
	const partitions = 3 * openTurns
	for i := range int32(partitions) {
		cfg := testConfig(slow, clock.Real)
		cfg.Partition, cfg.Dir, cfg.TopicID = i, Dir("/data", "t", i), image.TopicID{1}
		sys.Root.Send(sup, &Host{Config: cfg})
	}
	eventually(t, "every partition's actor spawned", func() bool { return len(reg.All()) == partitions })
	if err := sys.Root.StopFuture(sup).Wait(); err != nil {
		t.Fatal(err)
	}
	names, _ := mem.List("/data")
	if len(names) >= partitions {
		t.Fatalf("the supervisor stopped after all %d partitions had opened their logs", len(names))
	}
	t.Logf("%d of %d partitions opened before the stop", len(names), partitions)
}

// TestStopAfterDeletingClosesWithoutSyncing: a partition marked deleted
// (Registry.Deleting, as the metadata actor does before its Unhost) whose
// supervisor stops before the Unhost came closes its log without a sync
// or a write: a SIGTERM during a 2,000-partition deletion synced every
// partition the supervisor had not unhosted yet (6.8 s of a 10 s stop).
func TestStopAfterDeletingClosesWithoutSyncing(t *testing.T) {
	w := startWritten(t)
	sys, reg, sup, cfg, h := w.sys, w.reg, w.sup, w.cfg, w.h
	counting, touched := &w.counting, &w.touched
	reg.Deleting("t", 0, image.TopicID{2}) // another topic's: no effect
	if h.deleted.Load() {
		t.Fatal("Deleting marked the partition of another topic id")
	}
	counting.Store(true)
	reg.Deleting("t", 0, cfg.TopicID)
	if err := sys.Root.StopFuture(sup).Wait(); err != nil {
		t.Fatal(err)
	}
	if n := touched.Load(); n > 0 {
		t.Fatalf("closing a partition marked deleted wrote or synced %d times", n)
	}
}
