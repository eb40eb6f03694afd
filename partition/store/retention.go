package store

import "fmt"

// Retention deletes whole segments, oldest first, never the active one and
// never one that holds offsets at or above the high watermark (followers may
// not have them yet). A segment goes when:
//
//   - it lies wholly below the log start offset (DeleteRecords moved it), or,
//     for cleanup.policy=delete,
//   - its largest timestamp is older than retention.ms, or
//   - the log would still be larger than retention.bytes without it.
//
// Deleting stops at the first segment that stays, as Kafka's does, so the
// log remains one contiguous range.

// ApplyRetention deletes the segments that retention allows and returns how
// many it deleted. It also removes the files of segments retired earlier
// whose file delete delay has passed.
func (l *Log) ApplyRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	now := l.clock.Now()
	defer l.collectDeleted(now)
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	n := 0
	for n < len(l.segs)-1 {
		s, next := l.segs[n], l.segs[n+1]
		if next.base > l.hw {
			break
		}
		byStart := next.base <= l.lso
		byTime := l.opts.Delete && l.opts.RetentionMs >= 0 && s.maxTimestamp >= 0 &&
			now.UnixMilli()-s.maxTimestamp > l.opts.RetentionMs
		bySize := l.opts.Delete && l.opts.RetentionBytes >= 0 && total-s.size >= l.opts.RetentionBytes
		if !byStart && !byTime && !bySize {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		return 0, nil
	}
	return n, l.deleteFirst(n)
}

// deleteFirst retires the first n segments and moves the log start offset to
// the new first segment.
func (l *Log) deleteFirst(n int) error {
	newStart := l.segs[n].base
	// Checkpoint the new log start offset first: if we crash after the files
	// go, the log must not claim offsets it no longer has.
	if newStart > l.lso {
		l.lso = newStart
		l.epochs.truncateFromStart(l.lso)
		if err := l.writeEpochs(); err != nil {
			return err
		}
		if err := l.writeCheckpoint(); err != nil {
			return err
		}
	}
	for _, s := range l.segs[:n] {
		l.retire(s)
	}
	l.segs = append(l.segs[:0:0], l.segs[n:]...)
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.fail("delete segments", err)
	}
	l.rebuildClosed()
	l.publish()
	return nil
}

// AdvanceLogStartOffset moves the log start offset up to offset, as
// DeleteRecords asks; offsets below it become unreadable at once and the
// segments wholly below it are deleted by the next ApplyRetention. The
// offset may not pass the high watermark.
func (l *Log) AdvanceLogStartOffset(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset > l.hw {
		return fmt.Errorf("%w: log start offset %d above the high watermark %d", ErrOffsetOutOfRange, offset, l.hw)
	}
	if offset <= l.lso {
		return nil
	}
	l.lso = offset
	if l.epochs.truncateFromStart(offset) {
		if err := l.writeEpochs(); err != nil {
			return err
		}
	}
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	l.publish()
	return nil
}
