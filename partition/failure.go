package partition

import (
	"errors"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// The causes of the failed state, as /metrics and /readyz name them.
const (
	CauseDescriptors = "descriptors" // EMFILE, ENFILE: no file descriptor left
	CauseDiskFull    = "disk_full"   // ENOSPC, EDQUOT
	CauseIO          = "io"          // EIO and every other failure of the disk
)

// Causes lists the causes of the failed state.
var Causes = []string{CauseDescriptors, CauseDiskFull, CauseIO}

// Failure says why a partition is in the failed state: its storage failed
// and it answers appends KAFKA_STORAGE_ERROR while it retries.
type Failure struct {
	Cause string // one of Causes
	Err   string // the latest error
	Since time.Time
}

// failure is the actor's failed state.
type failure struct {
	cause    string
	err      error // the first error, then the latest retry's
	since    time.Time
	attempts int       // retries that failed
	retryAt  time.Time // the next retry is due at the first tick after it
}

// retryMax caps the time between two retries of a failed partition.
const retryMax = 30 * time.Second

// scheduleRetry sets the next retry: the tick interval after the first
// failure, doubling with each failed retry, up to retryMax.
func (f *failure) scheduleRetry(now time.Time, tick time.Duration) {
	f.retryAt = now.Add(min(tick<<min(f.attempts, 16), retryMax))
}

// causeOf classifies a storage error.
func causeOf(err error) string {
	switch {
	case vfs.IsOutOfDescriptors(err):
		return CauseDescriptors
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return CauseDiskFull
	}
	return CauseIO
}

// fail puts the partition in the failed state (or keeps it there) after op
// failed with err: the appends waiting for durability are answered
// KAFKA_STORAGE_ERROR, which is retriable and indefinite (they may be in
// the log, and an idempotent retry finds them there), readers keep the
// last view published, and a retry is scheduled. The failure is logged
// once, here, and its end once, in retry.
func (p *partition) fail(op string, err error) {
	now := p.cfg.Clock.Now()
	if p.failure == nil {
		p.failure = &failure{cause: causeOf(err), err: err, since: now}
		p.limited(p.cfg.Logger.Error()).Err(err).Str("op", op).Str("cause", p.failure.cause).
			Msg("partition storage failed: answering KAFKA_STORAGE_ERROR and retrying")
	}
	p.cfg.LogDirs.Failing(Key{Topic: p.cfg.Topic, Partition: p.cfg.Partition}, p.failure.cause, err)
	p.failure.scheduleRetry(now, p.cfg.TickInterval)
	// The failed view is published before the waiting appends hear of
	// the failure, so that whoever they answer sees it.
	p.publish()
	p.answerWaiters(kerr.KafkaStorageError, err.Error())
	p.dropFollowerSyncs()
}

// retry opens the log anew and writes its checkpoint. On success the new
// log, recovered from disk as after a restart, replaces the one that
// failed; on failure the next try waits twice as long, up to retryMax. A cleaner still running on the old
// log is waited for, since it writes files the new one would recover.
func (p *partition) retry() {
	f := p.failure
	if p.compacting {
		return
	}
	l, err := p.openLog()
	if err == nil {
		// Opening may have written nothing: probe that the disk takes a
		// write, a sync and a rename again.
		if err = l.WriteCheckpoint(); err != nil {
			l.Abandon()
		}
	}
	if err != nil {
		f.attempts++
		f.err, f.cause = err, causeOf(err)
		f.scheduleRetry(p.cfg.Clock.Now(), p.cfg.TickInterval)
		p.publish()
		return
	}
	if p.log != nil {
		// NB: never Close: a log that did not fail would write the
		// clean-shutdown marker into the directory the new log now owns.
		p.log.Abandon()
	}
	p.log, p.failure = l, nil
	p.cfg.LogDirs.Working(Key{Topic: p.cfg.Topic, Partition: p.cfg.Partition}, false)
	now := p.cfg.Clock.Now()
	p.lastCheckpoint, p.lastAppend = now, now
	p.limited(p.cfg.Logger.Warn()).Str("cause", f.cause).Dur("after", now.Sub(f.since)).Int("retries", f.attempts+1).
		Msg("partition storage recovered")
	p.assumeRole()
	p.publish()
}

// onCompacted handles the end of a cleaner pass: readers move to the
// cleaned segments; a disk failure fails the partition, and corruption
// turns compaction off until the actor restarts (a rescan cannot clean
// segments below the recovery point, and every pass would meet it again).
func (p *partition) onCompacted(m *compacted) {
	if p.failure != nil || p.log == nil {
		return
	}
	p.publish()
	switch {
	case m.err == nil, errors.Is(m.err, store.ErrClosed):
	case errors.Is(m.err, store.ErrCorrupt):
		p.compactionOff = true
		p.limited(p.cfg.Logger.Error()).Err(m.err).Msg("compaction found corruption: compaction is off for this partition until it restarts")
	default:
		p.fail("compaction", m.err)
	}
}

// limited passes e through the node-wide limiter of failure lines.
func (p *partition) limited(e *zerolog.Event) *zerolog.Event {
	if p.cfg.Failures == nil {
		return e
	}
	return p.cfg.Failures.Event(e)
}
