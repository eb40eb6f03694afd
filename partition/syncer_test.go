package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

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
	for range logs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
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
