package store

import "time"

// Durability. The log end offset moves when bytes are written; the durable
// offset moves when they are synced. A broker under `durability: fsync`
// acknowledges only what is durable.
//
// SyncTo is a group commit: one fsync covers every append made before it
// started, and every caller waiting for any of those appends returns when it
// ends. Callers queue on syncMu while an fsync runs; the first to get it
// syncs everything written so far, and those behind it find their offsets
// already durable and return at once.

// DurableOffset returns the offset below which everything is synced.
func (l *Log) DurableOffset() int64 { return l.durable.Load() }

// Sync makes everything appended so far durable.
func (l *Log) Sync() error {
	l.mu.Lock()
	leo := l.leo
	l.mu.Unlock()
	return l.SyncTo(leo)
}

// SyncTo returns once every offset below offset is durable, syncing if no
// sync already covers it. An error means the offsets may not be durable: the
// log is then failed and takes no more writes.
func (l *Log) SyncTo(offset int64) error {
	if l.durable.Load() >= offset {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.durable.Load() >= offset {
		return nil
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return err
	}
	// Offsets below leo were written by calls that returned before now, to
	// the active segment or to sealed ones, which seal synced.
	s, leo, gen := l.active(), l.leo, l.truncations
	l.mu.Unlock()

	err := s.log.Sync()

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.fail("sync", err)
	}
	if gen != l.truncations {
		// A truncation ran during the fsync: what is at those offsets now
		// may not be what was synced. The next sync will tell.
		return nil
	}
	l.advanceDurable(leo)
	if l.leo == leo {
		l.unflushedRecords = 0
	}
	return nil
}

// SyncPoint is what a sync of the whole filesystem covers of a log: every
// offset below End, if no truncation intervened. Logs that share a
// filesystem are made durable together (one syncfs(2) for all the
// partitions of a node) by taking their points with PrepareSync, syncing the
// filesystem once, and handing each point back to CompleteSync.
type SyncPoint struct {
	End int64 // the log end offset when the point was taken
	gen uint64
}

// PrepareSync returns the point a filesystem sync starting now would make
// durable, and false when there is nothing to sync or the log takes no
// writes (the caller then skips it).
func (l *Log) PrepareSync() (SyncPoint, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writable() != nil || l.durable.Load() >= l.leo {
		return SyncPoint{}, false
	}
	// Offsets below leo were written by calls that returned before now:
	// a sync that starts after this covers them.
	return SyncPoint{End: l.leo, gen: l.truncations}, true
}

// CompleteSync records the outcome of a filesystem sync that started after
// PrepareSync returned p: the offsets below p.End are durable, or, on an
// error, the log fails (as a failed fsync fails it) and the error is
// returned.
func (l *Log) CompleteSync(p SyncPoint, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.fail("sync the filesystem", err)
	}
	if p.gen != l.truncations {
		return nil // a truncation ran meanwhile: the next sync will tell
	}
	l.advanceDurable(p.End)
	if l.leo == p.End {
		l.unflushedRecords = 0
	}
	return nil
}

// advanceDurable raises the durable offset to offset if it is higher.
func (l *Log) advanceDurable(offset int64) {
	for {
		cur := l.durable.Load()
		if offset <= cur || l.durable.CompareAndSwap(cur, offset) {
			return
		}
	}
}

// FlushDue reports whether flush.messages or flush.ms call for a sync now,
// as Kafka's flush policy does under `durability: replicated`.
func (l *Log) FlushDue() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unflushedRecords == 0 {
		return false
	}
	return l.unflushedRecords >= l.opts.FlushMessages ||
		(l.opts.FlushMs < int64(1<<63-1)/int64(time.Millisecond) &&
			l.clock.Now().Sub(l.oldestUnflushed) >= time.Duration(l.opts.FlushMs)*time.Millisecond)
}
