package partition

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

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
// each log its outcome (CompleteSync) and its callers the answer. A failed
// sync fails every log of the round: which file lost its data is unknown,
// and each partition's failed state reopens and recovers its log from disk.
//
// A round waits for the writes announced before its first request
// (Announce): a Produce request names its partitions before their actors
// write, and without the wait the first of them to write would start a
// round alone and the rest would need another: with six partitions a
// request, 1,550 rounds per GB of 100-byte records without, 680 with. A
// round costs about 0.1 ms of CPU whatever it carries (a bare loop of
// writes and syncfs here). The wait is bounded (defaultAnnounceWait): an
// announced write that never comes (its actor stopped) delays one round,
// not all.
//
// A node whose log dirs are on several filesystems syncs, in a round,
// each filesystem that a log of the round is on (NewSyncerByFS), and each
// log hears its own filesystem's outcome.
//
// Concurrency: Sync, Announce and Announced.Written are safe for concurrent
// use; rounds run one at a time on the Syncer's goroutine, which Close
// stops.
type Syncer struct {
	// syncs sync one filesystem each; fsOf gives the index in syncs of a
	// log's directory, -1 for every filesystem.
	syncs   []func() error
	fsOf    func(dir string) int
	release func()

	mu      sync.Mutex
	pending []syncRequest
	// announced holds, oldest first, the announcements not yet written
	// (and written ones behind them); announces counts them all, and
	// before is its value when pending last turned non-empty: the next
	// round waits for the announcements up to it.
	announced []*Announced
	announces uint64
	before    uint64
	// announceWait bounds how long a round waits for announced writes
	// (defaultAnnounceWait).
	announceWait time.Duration
	wake         chan struct{} // a value when pending turns non-empty or an announcement is written

	rounds, logs atomic.Uint64 // SyncStats
	done         chan struct{}
	stopped      sync.WaitGroup
}

// defaultAnnounceWait is a Syncer's announceWait: long enough for a
// Produce request's partitions to be written behind one another on a busy
// node, short enough that a write that never comes costs little.
const defaultAnnounceWait = 5 * time.Millisecond

type syncRequest struct {
	log  *store.Log
	done func(err error)
}

// Announced is a set of writes announced to a Syncer: a round whose first
// request came after it waits until each is written (Written), or until
// the Syncer's announceWait has passed since it was made.
type Announced struct {
	s    *Syncer
	seq  uint64
	at   time.Time
	left atomic.Int32
}

// NewSyncer starts a Syncer that syncs the filesystem with syncFS (for the
// OS, unix.Syncfs on a descriptor of the data directory, kept open so that
// a writeback error since it was opened is reported); Close calls release,
// if not nil, once no round runs.
func NewSyncer(syncFS func() error, release func()) *Syncer {
	return NewSyncerByFS([]func() error{syncFS}, func(string) int { return 0 }, release)
}

// NewSyncerByFS starts a Syncer over several filesystems (a node's log
// dirs on several disks): syncs[i] syncs the i-th, and fsOf gives the
// filesystem of a log's directory (store.Log.Dir), or -1 for all of them.
// A round syncs only the filesystems its logs are on, and each log hears
// its own filesystem's outcome, so that a disk whose sync fails fails its
// own logs and no other's.
func NewSyncerByFS(syncs []func() error, fsOf func(dir string) int, release func()) *Syncer {
	s := &Syncer{syncs: syncs, fsOf: fsOf, release: release, announceWait: defaultAnnounceWait, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.stopped.Add(1)
	go s.run()
	return s
}

// Sync makes what was appended to l so far durable in the next round and
// then calls done, on the Syncer's goroutine: with nil once the log's
// durable offset covers it, or with the error that failed the log. done
// must not block. A log asked for twice before a round is synced once in
// it, and both dones are called.
func (s *Syncer) Sync(l *store.Log, done func(err error)) {
	s.mu.Lock()
	s.pending = append(s.pending, syncRequest{l, done})
	first := len(s.pending) == 1
	if first {
		s.before = s.announces
	}
	s.mu.Unlock()
	if first {
		s.poke()
	}
}

// Announce tells the Syncer that n writes whose logs will ask for a sync
// are on their way: a round starting before they are written waits for
// them. Each must be reported with Written once its log has asked (or
// it needs no sync).
func (s *Syncer) Announce(n int) *Announced {
	a := &Announced{s: s, at: time.Now()}
	a.left.Store(int32(n))
	s.mu.Lock()
	s.prune(a.at)
	s.announces++
	a.seq = s.announces
	s.announced = append(s.announced, a)
	s.mu.Unlock()
	return a
}

// Written reports one of the announced writes done: its log has asked for
// its sync, or it needs none. A nil Announced is no announcement.
func (a *Announced) Written() {
	if a != nil && a.left.Add(-1) == 0 {
		a.s.poke()
	}
}

// SyncStats counts a Syncer's work since it started.
type SyncStats struct {
	Rounds uint64 // syncs of the filesystem
	Logs   uint64 // logs those made durable, each counted once a round
}

// Stats returns what the Syncer has done so far.
func (s *Syncer) Stats() SyncStats {
	return SyncStats{Rounds: s.rounds.Load(), Logs: s.logs.Load()}
}

func (s *Syncer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
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

// prune drops from the front of the queue the announcements written, or
// waited for long enough, so that it holds only what a round may still
// wait for (and what is behind that). The caller holds s.mu.
func (s *Syncer) prune(now time.Time) {
	for len(s.announced) > 0 {
		a := s.announced[0]
		if a.left.Load() > 0 && now.Sub(a.at) < s.announceWait {
			return
		}
		s.announced[0] = nil
		s.announced = s.announced[1:]
	}
}

// awaiting returns how long the next round still waits for an
// announcement made before its first request; 0: it starts now. The
// caller holds s.mu.
func (s *Syncer) awaiting(now time.Time) time.Duration {
	s.prune(now)
	if len(s.announced) == 0 || s.announced[0].seq > s.before {
		return 0
	}
	return s.announceWait - now.Sub(s.announced[0].at)
}

// roundLog is a log in a round: the point its sync covers, whether it
// needed one, and the outcome.
type roundLog struct {
	log   *store.Log
	point store.SyncPoint
	need  bool
	err   error
}

// syncRound syncs the filesystems of the logs that need it, each once,
// and completes each log's sync with its filesystem's outcome.
func (s *Syncer) syncRound(logs []roundLog) {
	const unsynced, all = -2, -1
	needs := make([]bool, len(s.syncs))
	errs := make([]error, len(s.syncs))
	fs := make([]int, len(logs))
	for i := range logs {
		fs[i] = unsynced
		if !logs[i].need {
			continue
		}
		fs[i] = all
		if len(s.syncs) == 1 {
			fs[i] = 0
		} else if f := s.fsOf(logs[i].log.Dir()); f >= 0 && f < len(s.syncs) {
			fs[i] = f
		}
		if fs[i] == all {
			for j := range needs {
				needs[j] = true
			}
		} else {
			needs[fs[i]] = true
		}
	}
	for j, need := range needs {
		if need {
			errs[j] = s.syncs[j]()
		}
	}
	for i := range logs {
		l := &logs[i]
		if !l.need {
			continue
		}
		err := errors.Join(errs...)
		if fs[i] >= 0 {
			err = errs[fs[i]]
		}
		l.err = l.log.CompleteSync(l.point, err)
	}
}

func (s *Syncer) run() {
	defer s.stopped.Done()
	var (
		round   []syncRequest
		logs    []roundLog
		at      []int // round[i]'s log is logs[at[i]]
		index   = map[*store.Log]int{}
		timer   = time.NewTimer(time.Hour)
		timeout <-chan time.Time
	)
	timer.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		case <-timeout:
		}
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.mu.Unlock()
			continue
		}
		if wait := s.awaiting(time.Now()); wait > 0 {
			s.mu.Unlock()
			timer.Reset(wait)
			timeout = timer.C
			continue
		}
		round, s.pending = s.pending, round[:0]
		s.mu.Unlock()
		timer.Stop()
		timeout = nil

		// One point per log, however often it asked.
		logs, at = logs[:0], at[:0]
		needed := 0
		for _, r := range round {
			i, ok := index[r.log]
			if !ok {
				p, need := r.log.PrepareSync()
				i = len(logs)
				index[r.log] = i
				logs = append(logs, roundLog{log: r.log, point: p, need: need})
				if need {
					needed++
				}
			}
			at = append(at, i)
		}
		if needed > 0 {
			s.syncRound(logs)
			s.rounds.Add(1)
			s.logs.Add(uint64(needed))
		}
		for i, r := range round {
			r.done(logs[at[i]].err)
		}
		clear(round)
		clear(logs)
		clear(index)
	}
}
