package store

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// Truncate removes every batch from the one that holds offset on, as a
// follower does when it diverges from its leader (KIP-101). The log end
// offset becomes the base offset of the first removed batch (offset itself
// when it falls on a batch boundary). Indexes, the aborted-transaction
// entries whose markers went, the high watermark, the durable offset and
// the leader epoch history follow.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mustHaveNoneStaged()
	if err := l.writable(); err != nil {
		return err
	}
	if offset >= l.leo {
		return nil
	}
	if err := l.prepareWrite(); err != nil {
		return err
	}
	if offset < l.lso {
		return fmt.Errorf("%w: truncate to %d below the log start offset %d", ErrOffsetOutOfRange, offset, l.lso)
	}
	l.truncations++
	i := len(l.segs) - 1
	for i > 0 && l.segs[i].base > offset {
		i--
	}
	// Segments wholly above offset go; the one that holds it is cut.
	for _, s := range l.segs[i+1:] {
		l.retire(s)
	}
	l.segs = l.segs[:i+1]
	s := l.segs[i]
	if err := s.unseal(); err != nil {
		return l.fail("truncate", err)
	}
	if err := s.truncateTo(offset); err != nil {
		return l.fail("truncate", err)
	}
	l.leo = s.next
	if err := s.truncateTxns(l.fs, l.leo); err != nil {
		return l.fail("truncate", err)
	}
	if l.hw > l.leo {
		l.hw = l.leo
	}
	if d := l.durable.Load(); d > l.leo {
		l.durable.Store(l.leo)
	}
	if l.epochs.truncateFromEnd(l.leo) {
		if err := l.writeEpochs(); err != nil {
			return err
		}
	}
	if err := l.removeSnapshotsAbove(l.leo); err != nil {
		return l.fail("truncate", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.fail("truncate", err)
	}
	l.rebuildClosed()
	l.publish()
	return l.writeCheckpoint()
}

// truncateTo cuts an active (unsealed) segment before the batch holding
// offset and trims its in-memory indexes to match.
func (s *segment) truncateTo(offset int64) error {
	var buf [HeaderSize]byte
	v := s.view()
	pos, h, err := v.seek(offset, &buf)
	if errors.Is(err, io.EOF) {
		return nil // nothing at or after offset in this segment
	}
	if err != nil {
		return err
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.reserved = 0 // the truncate freed what was reserved past pos
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.size = pos
	s.next = h.BaseOffset
	if pos == 0 {
		s.next = s.base
	}
	// The in-memory buffers may be shared with published views: copy what is
	// kept instead of writing over it.
	keep := 0
	for keep < s.idxN {
		_, p := offsetEntry(s.idxMem[keep*offsetEntrySize:])
		if int64(p) >= pos {
			break
		}
		keep++
	}
	s.idxMem = append([]byte(nil), s.idxMem[:keep*offsetEntrySize]...)
	s.idxN = keep
	keepT := 0
	s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastIndexedTimestamp = -1, -1, -1
	for keepT < s.tidxN {
		ts, rel := timeEntry(s.tidxMem[keepT*timeEntrySize:])
		if s.base+int64(rel) >= s.next {
			break
		}
		s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastIndexedTimestamp = ts, s.base+int64(rel), ts
		keepT++
	}
	s.tidxMem = append([]byte(nil), s.tidxMem[:keepT*timeEntrySize]...)
	s.tidxN = keepT
	// Batches after the last kept index entry are not in the time index
	// yet: walk them to restore the largest timestamp and the index cadence.
	from := int64(0)
	if keep > 0 {
		_, p := offsetEntry(s.idxMem[(keep-1)*offsetEntrySize:])
		from = int64(p)
	}
	s.bytesSinceIndex = 0
	for p := from; p < s.size; {
		bh, err := readHeader(s.log, p, s.size, &buf)
		if err != nil {
			return err
		}
		if bh.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = bh.MaxTimestamp, bh.BaseOffset
		}
		s.bytesSinceIndex += bh.Size()
		p += bh.Size()
	}
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, as a
// follower does when its leader no longer has the offsets it holds.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mustHaveNoneStaged()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.prepareWrite(); err != nil {
		return err
	}
	l.truncations++
	s, err := createSegment(l.fs, l.dir, offset, &l.opts)
	if err != nil {
		return l.fail("truncate fully", err)
	}
	for _, old := range l.segs {
		if old.base == offset {
			// createSegment just replaced its files in place, all but
			// its aborted-transaction entries, which go too.
			old.close()
			if err := old.rewriteTxns(l.fs, nil); err != nil {
				return l.fail("truncate fully", err)
			}
			continue
		}
		l.retire(old)
	}
	l.segs = []*segment{s}
	l.leo, l.lso, l.hw = offset, offset, offset
	l.durable.Store(offset)
	l.epochs.entries = nil
	if err := l.writeEpochs(); err != nil {
		return err
	}
	// The producer state of the old history is wrong for the new one.
	if err := l.removeSnapshotsAbove(-1); err != nil {
		return l.fail("truncate fully", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.fail("truncate fully", err)
	}
	l.rebuildClosed()
	l.publish()
	return l.writeCheckpoint()
}

// retire takes a segment out of the log: its files are renamed to
// *.deleted at once (recovery removes leftovers), and closed and removed
// after the file delete delay, so readers holding an older view can finish.
func (l *Log) retire(s *segment) {
	for _, suffix := range s.suffixes() {
		// A failed rename leaves the file under its name; the segment is
		// gone from the log either way, and a later open deletes it as a
		// segment below the log start offset or rescans it.
		_ = l.fs.Rename(s.path(suffix), s.path(suffix+deletedSuffix))
	}
	l.deleted = append(l.deleted, deletedSegment{seg: s, due: l.clock.Now().Add(time.Duration(l.opts.FileDeleteDelayMs) * time.Millisecond)})
}

// removeDeleted closes a retired segment and removes its files.
func (l *Log) removeDeleted(s *segment) {
	s.close()
	for _, suffix := range s.suffixes() {
		_ = l.fs.Remove(filepath.Join(s.dir, segmentName(s.base, suffix+deletedSuffix)))
	}
}

// collectDeleted removes the retired segments whose delay has passed.
func (l *Log) collectDeleted(now time.Time) {
	kept := l.deleted[:0]
	for _, d := range l.deleted {
		if now.Before(d.due) {
			kept = append(kept, d)
			continue
		}
		l.removeDeleted(d.seg)
	}
	clear(l.deleted[len(kept):])
	l.deleted = kept
}
