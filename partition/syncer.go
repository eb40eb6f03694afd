package partition

import (
	"sync"

	"github.com/skeinlog/skein/partition/store"
)

// Syncer is the node-wide group commit: it makes the appends of every
// partition waiting for durability durable together, with one sync of the
// data directory's filesystem (syncfs(2)) for all of them, instead of one
// fsync per partition. A thousand partitions written at once cost one
// journal commit a round, not a thousand.
//
// Each round takes the logs asked for since the last one, records each
// log's end (store.Log.PrepareSync), syncs the filesystem once, and hands
// each log its outcome (CompleteSync) and its caller the answer. A failed
// sync fails every log of the round: which file lost its data is unknown,
// and each partition's failed state reopens and recovers its log from disk.
//
// Concurrency: Sync is safe for concurrent use; rounds run one at a time on
// the Syncer's goroutine, which Close stops.
type Syncer struct {
	syncFS  func() error
	release func()

	mu      sync.Mutex
	pending []syncRequest
	wake    chan struct{} // a value when pending turns non-empty
	done    chan struct{}
	stopped sync.WaitGroup
}

type syncRequest struct {
	log  *store.Log
	done func(err error)
}

// NewSyncer starts a Syncer that syncs the filesystem with syncFS (for the
// OS, unix.Syncfs on a descriptor of the data directory, kept open so that
// a writeback error since it was opened is reported); Close calls release,
// if not nil, once no round runs.
func NewSyncer(syncFS func() error, release func()) *Syncer {
	s := &Syncer{syncFS: syncFS, release: release, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.stopped.Add(1)
	go s.run()
	return s
}

// Sync makes what was appended to l so far durable in the next round and
// then calls done, on the Syncer's goroutine: with nil once the log's
// durable offset covers it, or with the error that failed the log. done
// must not block.
func (s *Syncer) Sync(l *store.Log, done func(err error)) {
	s.mu.Lock()
	s.pending = append(s.pending, syncRequest{l, done})
	first := len(s.pending) == 1
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Close stops the Syncer after the round in progress, if any; requests
// still pending are answered as if synced one by one (store.Log.Sync), so
// that nobody waits for ever.
func (s *Syncer) Close() {
	close(s.done)
	s.stopped.Wait()
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, r := range pending {
		r.done(r.log.Sync())
	}
	if s.release != nil {
		s.release()
	}
}

func (s *Syncer) run() {
	defer s.stopped.Done()
	var round []syncRequest
	var points []store.SyncPoint
	var need []bool
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		round, s.pending = s.pending, round[:0]
		s.mu.Unlock()
		points, need = points[:0], need[:0]
		any := false
		for _, r := range round {
			p, ok := r.log.PrepareSync()
			points, need = append(points, p), append(need, ok)
			any = any || ok
		}
		var err error
		if any {
			err = s.syncFS()
		}
		for i, r := range round {
			var rerr error
			if need[i] {
				rerr = r.log.CompleteSync(points[i], err)
			}
			r.done(rerr)
		}
		clear(round)
	}
}
