package store

import (
	"errors"
	"io/fs"
	"time"
)

// Durability. The log end offset moves when bytes are written; the durable
// offset moves when they are synced. A broker under `durability: fsync`
// acknowledges only what is durable.
//
// SyncTo is a group commit: one fsync covers every append made before it
// started, and every caller waiting for any of those appends returns when it
// ends. Callers queue on syncMu while an fsync runs; the first to get it
// syncs everything written so far, and those behind it find their offsets
// already durable and return at once.
//
// Aborted-transaction entries (txnindex.go) ride along: a sync that makes
// a marker durable makes its entry durable too. The durable offset never
// passes the marker of an entry that is not synced: a sync also syncs the
// .txnindex written to before it started (only then: no extra fsync
// otherwise), and an entry written while it ran is synced before the sync
// moves the durable offset (under Log.mu: rare, and short). An entry added
// for a marker already durable is synced by AddAbortedTxn itself.

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
	txnGen, txnDirty, txnNew := l.txnWrites, s.txnDirty, s.txnNewFile
	l.mu.Unlock()

	err := s.log.Sync()
	if err == nil && txnDirty {
		err = syncFile(l.fs, s.path(txnIndexSuffix))
	}
	if err == nil && txnNew {
		err = syncDir(l.fs, l.dir)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && !(gen != l.truncations && errors.Is(err, fs.ErrNotExist)) {
		// (A truncation may remove the .txnindex: the next sync will
		// tell, as below.)
		return l.fail("sync", err)
	}
	if gen != l.truncations {
		// A truncation ran during the fsync: what is at those offsets now
		// may not be what was synced. The next sync will tell.
		return nil
	}
	if err := l.txnsSynced(s, txnGen, txnDirty, txnNew); err != nil {
		return err
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
	txn uint64 // Log.txnWrites when the point was taken
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
	return SyncPoint{End: l.leo, gen: l.truncations, txn: l.txnWrites}, true
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
	// The filesystem sync covered the active segment's .txnindex and its
	// directory entry, as written when the point was taken.
	s := l.active()
	if err := l.txnsSynced(s, p.txn, s.txnDirty, s.txnNewFile); err != nil {
		return err
	}
	l.advanceDurable(p.End)
	if l.leo == p.End {
		l.unflushedRecords = 0
	}
	return nil
}

// txnsSynced records that a sync covered the .txnindex of segment s as it
// was when txnGen entries had been written: its dirty and new-file marks,
// as they were then, are cleared. If entries were written since, the sync
// may not have covered them, and the durable offset is about to pass
// their markers: the active segment's .txnindex is synced now (sealed
// segments' entries are synced as they are written). The caller holds
// l.mu.
func (l *Log) txnsSynced(s *segment, txnGen uint64, dirty, newFile bool) error {
	if l.txnWrites != txnGen {
		if err := l.active().syncTxns(l.fs); err != nil {
			return l.fail("sync aborted-transaction index", err)
		}
		return nil
	}
	// No entry was written since: the marks are as they were, or a roll
	// or truncation cleared them.
	if dirty {
		s.txnDirty = false
	}
	if newFile {
		s.txnNewFile = false
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
