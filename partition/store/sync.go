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
