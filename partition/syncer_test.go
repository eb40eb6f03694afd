package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// syncfsOf returns a syncfs(2) of the filesystem holding dir, and a count
// of its calls.
func syncfsOf(t *testing.T, dir string) (func() error, *atomic.Int64) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var calls atomic.Int64
	return func() error {
		calls.Add(1)
		return unix.Syncfs(int(f.Fd()))
	}, &calls
}

// waitSynced waits for n answers of a Syncer, each nil.
func waitSynced(t *testing.T, done <-chan error, n int) {
	t.Helper()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func openLogs(t *testing.T, dir string, n int) []*store.Log {
	t.Helper()
	var logs []*store.Log
	for i := range n {
		l, err := store.Open(store.Config{Dir: filepath.Join(dir, fmt.Sprintf("t-%d", i)), Options: store.DefaultOptions()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs = append(logs, l)
	}
	return logs
}

// TestSyncerCommitsLogsTogether: logs that ask while a round runs are made
// durable together by the next one, with one sync of the filesystem, and
// each is told once its durable offset covers what it had appended.
func TestSyncerCommitsLogsTogether(t *testing.T) {
	dir := t.TempDir()
	syncfs, calls := syncfsOf(t, dir)
	inRound, release := make(chan struct{}), make(chan struct{})
	first := true
	s := NewSyncer(func() error {
		if first {
			first = false
			close(inRound)
			<-release
		}
		return syncfs()
	}, nil)
	defer s.Close()
	logs := openLogs(t, dir, 5)
	for _, l := range logs {
		if _, err := l.Append(batch(t, -1, -1, -1, 3), 0); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, len(logs))
	s.Sync(logs[0], func(err error) { done <- err })
	<-inRound // the first round runs, holding logs[0]
	for _, l := range logs[1:] {
		s.Sync(l, func(err error) { done <- err })
	}
	close(release)
	waitSynced(t, done, len(logs))
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d syncs of the filesystem for two rounds", n)
	}
	for i, l := range logs {
		if l.DurableOffset() != l.LogEndOffset() || l.LogEndOffset() != 3 {
			t.Fatalf("log %d: durable %d, end %d", i, l.DurableOffset(), l.LogEndOffset())
		}
	}
	// Nothing new appended: a request costs no sync.
	s.Sync(logs[0], func(err error) { done <- err })
	if err := <-done; err != nil || calls.Load() != 2 {
		t.Fatalf("an empty round: %v, %d syncs", err, calls.Load())
	}
}

// TestSyncerFailureFailsTheRound: a failed sync of the filesystem fails
// every log that waited in the round, whose appends then fail too.
func TestSyncerFailureFailsTheRound(t *testing.T) {
	dir := t.TempDir()
	eio := errors.New("injected EIO")
	s := NewSyncer(func() error { return eio }, nil)
	defer s.Close()
	logs := openLogs(t, dir, 2)
	done := make(chan error, len(logs))
	for _, l := range logs {
		if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); err != nil {
			t.Fatal(err)
		}
		s.Sync(l, func(err error) { done <- err })
	}
	for range logs {
		if err := <-done; !errors.Is(err, eio) || !errors.Is(err, store.ErrFailed) {
			t.Fatalf("sync: %v, want the log failed by %v", err, eio)
		}
	}
	for _, l := range logs {
		if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); !errors.Is(err, store.ErrFailed) {
			t.Fatalf("append after a failed sync: %v", err)
		}
	}
}

// setAnnounceWait sets how long s's rounds wait for announced writes.
func (s *Syncer) setAnnounceWait(d time.Duration) {
	s.mu.Lock()
	s.announceWait = d
	s.mu.Unlock()
}

// announcingSyncer starts a Syncer over a fresh directory whose rounds
// wait an hour for announced writes, with n logs there, and counts its
// syncs of the filesystem.
func announcingSyncer(t *testing.T, n int) (*Syncer, []*store.Log, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	syncfs, calls := syncfsOf(t, dir)
	s := NewSyncer(syncfs, nil)
	logs := openLogs(t, dir, n)
	t.Cleanup(s.Close) // before the logs close
	s.setAnnounceWait(time.Hour)
	return s, logs, calls
}

// TestSyncerWaitsForAnnouncedWrites: a round whose first request came
// after an announcement waits until every announced write is reported,
// so the logs of one Produce request are synced by one round, not one
// round for the first and another for the rest.
func TestSyncerWaitsForAnnouncedWrites(t *testing.T) {
	s, logs, calls := announcingSyncer(t, 3)
	a := s.Announce(len(logs))
	done := make(chan error, len(logs))
	for _, l := range logs {
		if _, err := l.Append(batch(t, -1, -1, -1, 2), 0); err != nil {
			t.Fatal(err)
		}
		s.Sync(l, func(err error) { done <- err })
		if len(done) != 0 {
			t.Fatal("a round ran before every announced write was reported")
		}
		a.Written()
	}
	waitSynced(t, done, len(logs))
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d syncs of the filesystem for one announced request, want 1", n)
	}
	if st := s.Stats(); st != (SyncStats{Rounds: 1, Logs: 3}) {
		t.Fatalf("stats %+v, want one round of three logs", st)
	}
	for i, l := range logs {
		if l.DurableOffset() != 2 {
			t.Fatalf("log %d: durable %d, want 2", i, l.DurableOffset())
		}
	}
}

// TestSyncerAnnouncementBounds: a round does not wait for a write
// announced after its first request, and waits at most the Syncer's
// announceWait for one that is never reported (its actor stopped); the
// Syncer keeps no announcement it has no use for.
func TestSyncerAnnouncementBounds(t *testing.T) {
	s, logs, _ := announcingSyncer(t, 2)
	for _, l := range logs {
		if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	// Sync first, announce after: the round is not the announcement's.
	s.mu.Lock() // no round may take the request before the announcement is made
	s.pending = append(s.pending, syncRequest{logs[0], func(err error) { done <- err }})
	s.before = s.announces
	s.mu.Unlock()
	s.Announce(1) // never reported
	s.poke()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Announced first and never reported: the round waits its bound.
	s.setAnnounceWait(20 * time.Millisecond)
	s.Announce(1)
	s.Sync(logs[1], func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := logs[1].DurableOffset(); d != 1 {
		t.Fatalf("durable %d after the bounded wait, want 1", d)
	}

	// Announcements reported with no round to wait for them (every
	// Append refused) are not kept.
	for range 1000 {
		s.Announce(1).Written()
	}
	s.mu.Lock()
	kept := len(s.announced)
	s.mu.Unlock()
	if kept > 1 {
		t.Fatalf("%d announcements kept after 1,000 reported ones", kept)
	}
}

// TestSyncerLogAskedTwice: a log asked for twice before a round is synced
// once in it, and both callers are answered.
func TestSyncerLogAskedTwice(t *testing.T) {
	s, logs, calls := announcingSyncer(t, 1)
	l := logs[0]
	a := s.Announce(1) // holds the round until both requests are in
	done := make(chan error, 2)
	for range 2 {
		if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); err != nil {
			t.Fatal(err)
		}
		s.Sync(l, func(err error) { done <- err })
	}
	a.Written()
	waitSynced(t, done, 2)
	if n := calls.Load(); n != 1 || l.DurableOffset() != 2 {
		t.Fatalf("%d syncs, durable %d: want 1 and 2", n, l.DurableOffset())
	}
}

// TestPartitionsReportAnnouncedAppends: a partition reports every
// announced Append to the Syncer, whether it writes it, refuses it or is
// not its leader, so a round that waits for the announcement never waits
// its bound (an hour here): the written Append is answered.
func TestPartitionsReportAnnouncedAppends(t *testing.T) {
	var syncs atomic.Int64
	s := NewSyncer(func() error { syncs.Add(1); return nil }, nil)
	defer s.Close()
	s.setAnnounceWait(time.Hour)
	clk := clock.NewManual(time.UnixMilli(1e12))
	cfg := testConfig(vfs.NewCrashableMem(), clk)
	cfg.Syncer = s
	leader := startTestPartition(t, cfg)
	cfg = testConfig(vfs.NewCrashableMem(), clk)
	cfg.Syncer = s
	cfg.State = State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{0, 1}, ISR: []int32{0, 1}}
	follower := startTestPartition(t, cfg)

	a := s.Announce(3)
	replies := make(chan AppendResult, 3)
	send := func(tp *testPartition, records []byte) {
		tp.sys.Root.Send(tp.pid, &Append{Records: records, Acks: -1, Announced: a, Reply: func(r AppendResult) { replies <- r }})
	}
	send(follower, batch(t, 1, 0, 0, 1))
	send(leader, batch(t, 1, 0, 0, 1))
	send(leader, batch(t, 1, 0, 5, 1)) // a sequence gap: refused
	var errs []*kerr.Error
	for range 3 {
		select {
		case r := <-replies:
			errs = append(errs, r.Err)
		case <-time.After(time.Minute):
			t.Fatalf("answers so far %v: the round waits for an announced Append never reported", errs)
		}
	}
	want := map[*kerr.Error]bool{kerr.NotLeaderForPartition: true, kerr.OutOfOrderSequenceNumber: true, nil: true}
	for _, err := range errs {
		if !want[err] {
			t.Fatalf("answers %v, want NOT_LEADER_OR_FOLLOWER, OUT_OF_ORDER_SEQUENCE_NUMBER and success", errs)
		}
		delete(want, err)
	}
	if syncs.Load() == 0 {
		t.Fatal("the written Append was answered without a sync")
	}
}

// TestSyncerByFilesystem: with log dirs on two filesystems, a round syncs
// only the filesystems its logs are on, and a sync failing on one fails
// that filesystem's logs only (KIP-858: a failed disk takes its own
// partitions offline, not the node's others).
func TestSyncerByFilesystem(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	syncfsA, callsA := syncfsOf(t, root)
	var callsB atomic.Int64
	var failB atomic.Bool
	eio := errors.New("injected EIO")
	s := NewSyncerByFS([]func() error{syncfsA, func() error {
		callsB.Add(1)
		if failB.Load() {
			return eio
		}
		return nil
	}}, func(dir string) int {
		switch filepath.Dir(dir) {
		case a:
			return 0
		case b:
			return 1
		}
		return -1
	}, nil)
	defer s.Close()
	onA, onB := openLogs(t, a, 2), openLogs(t, b, 2)
	appendAll := func() {
		for _, l := range append(append([]*store.Log{}, onA...), onB...) {
			if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAll()
	done := make(chan error, 4)
	for _, l := range onA {
		s.Sync(l, func(err error) { done <- err })
	}
	waitSynced(t, done, 2)
	if callsA.Load() != 1 || callsB.Load() != 0 {
		t.Fatalf("logs on a only: %d syncs of a, %d of b; want 1 and 0", callsA.Load(), callsB.Load())
	}

	for _, l := range onA {
		if _, err := l.Append(batch(t, -1, -1, -1, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	failB.Store(true)
	results := map[*store.Log]chan error{}
	for _, l := range append(append([]*store.Log{}, onA...), onB...) {
		ch := make(chan error, 1)
		results[l] = ch
		s.Sync(l, func(err error) { ch <- err })
	}
	for _, l := range onA {
		if err := <-results[l]; err != nil {
			t.Errorf("a log on a: %v, want it durable whatever b does", err)
		}
	}
	for _, l := range onB {
		if err := <-results[l]; !errors.Is(err, eio) {
			t.Errorf("a log on b: %v, want the injected EIO", err)
		}
	}
	for i, l := range onA {
		if l.DurableOffset() != 2 {
			t.Errorf("log %d on a: durable offset %d, want 2", i, l.DurableOffset())
		}
	}
}
