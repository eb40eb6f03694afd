package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// Options are the topic configs that shape a log, under Kafka's names. The
// partition layer fills them from configs.Topic; zero values are not
// defaults, use DefaultOptions.
type Options struct {
	SegmentBytes       int64 // segment.bytes: roll when the active segment would pass it
	SegmentMs          int64 // segment.ms: roll when the active segment's first append is this old
	SegmentIndexBytes  int32 // segment.index.bytes: roll when the indexes would pass it
	IndexIntervalBytes int32 // index.interval.bytes: bytes between index entries
	RetentionMs        int64 // retention.ms, -1 for unlimited
	RetentionBytes     int64 // retention.bytes, -1 for unlimited
	Compact            bool  // cleanup.policy contains compact
	Delete             bool  // cleanup.policy contains delete
	DeleteRetentionMs  int64 // delete.retention.ms: how long tombstones outlive cleaning
	MinCompactionLagMs int64 // min.compaction.lag.ms
	FlushMessages      int64 // flush.messages: sync after this many unsynced records
	FlushMs            int64 // flush.ms: sync when the oldest unsynced append is this old
	LogAppendTime      bool  // message.timestamp.type=LogAppendTime
	// FileDeleteDelayMs is how long a deleted segment's files stay open for
	// readers holding an older view (Kafka's file.delete.delay.ms).
	FileDeleteDelayMs int64
}

// DefaultOptions returns Kafka's defaults.
func DefaultOptions() Options {
	return Options{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 3600 * 1000,
		SegmentIndexBytes:  10 << 20,
		IndexIntervalBytes: 4096,
		RetentionMs:        7 * 24 * 3600 * 1000,
		RetentionBytes:     -1,
		Delete:             true,
		DeleteRetentionMs:  24 * 3600 * 1000,
		FlushMessages:      1<<63 - 1,
		FlushMs:            1<<63 - 1,
		FileDeleteDelayMs:  60000,
	}
}

func (o *Options) validate() error {
	switch {
	case o.SegmentBytes < 1:
		return fmt.Errorf("store: segment.bytes %d is not positive", o.SegmentBytes)
	case o.SegmentIndexBytes < 4*timeEntrySize:
		return fmt.Errorf("store: segment.index.bytes %d is too small", o.SegmentIndexBytes)
	case o.IndexIntervalBytes < 0:
		return fmt.Errorf("store: index.interval.bytes %d is negative", o.IndexIntervalBytes)
	}
	return nil
}

// Log is one partition's log in one directory.
//
// Concurrency: every method is safe to call from any goroutine, but the log
// is meant to have one writer (the partition actor) calling Append,
// Truncate, retention and the setters. Sync and SyncTo may be called from
// many goroutines at once: they are group-committed. Readers never call the
// Log: they load View and read through it without locks.
//
// Restart: a Log holds nothing that is not on disk or rebuilt from it by Open.
type Log struct {
	fs    vfs.FS
	dir   string
	clock clock.Clock

	mu     sync.Mutex // guards everything below except what is atomic
	opts   Options
	segs   []*segment // by base offset; the last is active
	closed []segView  // views of segs[:len-1], shared by views until segments change
	leo    int64      // log end offset: the next offset to assign
	lso    int64      // log start offset
	hw     int64      // high watermark, as set by the replica layer
	// lastStable is what the partition layer last gave SetLastStableOffset
	// (math.MaxInt64 before): the last stable offset is
	// lastStableOffset(), this capped by the high watermark.
	lastStable int64
	epochs     epochCache
	failed     error // set when a write or sync failed: the log takes no more writes
	isClosed   bool
	// clean is set from an Open after a clean shutdown until the first
	// change to the segments (prepareWrite): the marker is still on disk
	// and the active segment sealed.
	clean bool
	// unmade says the log's directory is not made yet (make): a new log
	// has no files until it first changes. topicID goes into its
	// partition.metadata then.
	unmade  bool
	topicID [16]byte
	turns   chan struct{}    // Config.Turns
	deleted []deletedSegment // waiting for FileDeleteDelayMs

	checkpointed     checkpoint // what the checkpoint file says (zero before the first write)
	truncations      uint64     // counts truncations, so a sync racing one does not overclaim
	unflushedRecords int64
	oldestUnflushed  time.Time
	// txnWrites counts the aborted-transaction entries written, so that a
	// sync can tell whether one was written while it ran (sync.go).
	txnWrites uint64

	durable atomic.Int64 // every offset below it is synced
	syncMu  sync.Mutex   // one fsync at a time; waiters queue here (group commit)
	view    atomic.Pointer[View]

	staged []stagedSet // given offsets by Stage, waiting for WriteStaged (stage.go)
	iov    [][]byte    // WriteStaged's scratch: the record sets of one write

	cleaner cleanerState // compaction's state between passes (compact.go)
}

type deletedSegment struct {
	seg *segment
	due time.Time
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// AppendResult says where an append landed.
type AppendResult struct {
	BaseOffset     int64 // offset of the first record appended
	LastOffset     int64 // offset of the last record appended
	LogAppendTime  int64 // the broker's timestamp in ms when the topic uses LogAppendTime, else -1
	LogStartOffset int64
}

// Append assigns offsets to a record set of one or more validated batches
// (see ValidateProduced) and appends it as the leader in leaderEpoch: each
// batch's base offset and partition leader epoch are rewritten in place (and
// its timestamp, for LogAppendTime topics), then the bytes are written. The
// caller keeps ownership of records, which the log does not retain.
//
// The records are in the file, not yet durable: wait with SyncTo for that.
// Record sets staged before (Stage) are written with it, ahead of it.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendResult, error) {
	return l.append(records, leaderEpoch, true)
}

// AppendAsFollower appends batches that already carry their offsets, as a
// follower copies them from its leader: offsets must be at or above the log
// end offset and increasing (compaction leaves gaps, so they need not be
// contiguous).
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	return l.append(records, -1, false)
}

func (l *Log) append(records []byte, leaderEpoch int32, assign bool) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res, err := l.stage(records, leaderEpoch, assign)
	if err != nil {
		return AppendResult{}, err
	}
	return res, l.writeStaged()
}

// ReleaseFiles gives the active segment's descriptor back to the descriptor
// cache (see vfs.Cache), and the space it reserved ahead to the filesystem,
// when everything written is durable, so that an idle partition holds
// neither; the next append takes them again. It reports whether it released
// the descriptor.
func (l *Log) ReleaseFiles() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.active()
	if l.isClosed || l.durable.Load() < l.leo {
		return false
	}
	// NB: a give-back that fails keeps the space reserved, for the seal or
	// the close to try again; the descriptor goes all the same. A failed
	// log gives nothing back: its segment's size may count a write that
	// did not finish, and the recovery of its next open trims the file.
	if l.failed == nil {
		_, _ = s.giveBack()
	}
	if !s.pinned {
		return false
	}
	s.unpin()
	return true
}

// writable reports why the log takes no writes, if it does not.
func (l *Log) writable() error {
	switch {
	case l.isClosed:
		return ErrClosed
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// fail marks the log failed after a write or sync error, and returns the
// error to report.
func (l *Log) fail(op string, err error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %s in %s: %w", ErrFailed, op, l.dir, err)
	}
	return l.failed
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// roll seals the active segment and starts a new one at the log end offset.
// Everything before the new segment is synced, directory entry included.
func (l *Log) roll() error {
	old := l.active()
	if err := old.seal(); err != nil {
		return l.fail("seal segment", err)
	}
	if err := old.syncTxnFile(l.fs); err != nil {
		return l.fail("sync aborted-transaction index", err)
	}
	s, err := createSegment(l.fs, l.dir, l.leo, &l.opts)
	if err != nil {
		return l.fail("create segment", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		s.close()
		return l.fail("sync directory", err)
	}
	old.txnNewFile = false // the directory sync covered it
	l.segs = append(l.segs, s)
	l.rebuildClosed()
	l.advanceDurable(s.base)
	return l.writeCheckpoint()
}

// rebuildClosed refreshes the shared views of the sealed segments.
func (l *Log) rebuildClosed() {
	closed := make([]segView, 0, len(l.segs)-1)
	for _, s := range l.segs[:len(l.segs)-1] {
		closed = append(closed, s.view())
	}
	l.closed = closed
}

// publish makes the current state visible to readers.
func (l *Log) publish() {
	l.view.Store(&View{
		closed:           l.closed,
		active:           l.active().view(),
		LogStartOffset:   l.lso,
		LogEndOffset:     l.leo,
		HighWatermark:    l.hw,
		LastStableOffset: l.lastStableOffset(),
		epochs:           l.epochs.entries,
	})
}

// View returns the newest published view. It never blocks.
func (l *Log) View() *View { return l.view.Load() }

// LogEndOffset returns the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.View().LogEndOffset }

// LogStartOffset returns the first offset still in the log.
func (l *Log) LogStartOffset() int64 { return l.View().LogStartOffset }

// HighWatermark returns the high watermark last set.
func (l *Log) HighWatermark() int64 { return l.View().HighWatermark }

// SetHighWatermark records the high watermark the replica layer computed and
// publishes it to readers. It is clamped to the log end offset. It reaches
// the disk with the next checkpoint.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if hw > l.leo {
		hw = l.leo
	}
	if hw < l.lso {
		hw = l.lso
	}
	l.hw = hw
	l.publish()
}

// LastStableOffset returns the last stable offset: see
// SetLastStableOffset.
func (l *Log) LastStableOffset() int64 { return l.View().LastStableOffset }

// SetLastStableOffset records the first offset of the oldest unfinished
// transaction, as the partition layer computes it, and publishes the last
// stable offset (Kafka's LSO) to readers: min(o, high watermark), clamped
// to at least the log start offset. Pass math.MaxInt64 (or any offset at
// or above the log end) when no transaction is unfinished: the last stable
// offset is then the high watermark, as it is from Open until the first
// call, and it follows the high watermark as it moves without another
// call. The partition may pass Kafka's LSO, already capped by the high
// watermark of the moment, but must then call again when the high
// watermark moves: the capped value holds until it does.
//
// It is not persisted: the partition layer computes it again after Open.
// Compaction cleans only below it (compact.go).
func (l *Log) SetLastStableOffset(o int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastStable = o
	l.publish()
}

// lastStableOffset is the last stable offset in force. The caller holds
// l.mu.
func (l *Log) lastStableOffset() int64 {
	return max(l.lso, min(l.lastStable, l.hw))
}

// Options returns the options in force.
func (l *Log) Options() Options {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts
}

// SetOptions changes the topic configs in force, as AlterConfigs does; they
// apply from the next append, roll or retention run.
func (l *Log) SetOptions(o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	l.mu.Lock()
	l.opts = o
	l.mu.Unlock()
	return nil
}

// Segments returns the number of segments and the bytes they hold.
func (l *Log) Segments() (n int, size int64) {
	v := l.View()
	for _, s := range v.closed {
		size += s.size
	}
	return len(v.closed) + 1, size + v.active.size
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }
