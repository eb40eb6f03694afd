package store

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// Config says where a log lives and how it behaves.
type Config struct {
	FS  vfs.FS // nil means vfs.Default
	Dir string // the partition's directory, made at the first write if missing
	// TopicID, when not zero, is the id of the partition's topic: Open
	// refuses a directory that records another (TopicIDMismatchError),
	// and records it in one that records none (PartitionMetadataFile).
	// NB: a directory that records none and holds segments was made by
	// an older Skein; it is adopted, because the node removes, before it
	// hosts anything, every partition directory its current metadata does
	// not place on it (node's sweep): one left by a deleted topic whose
	// name is not in use again goes there, and one whose name was reused
	// while that older Skein ran was already served by it under the new
	// topic. Removing it instead would lose every partition's data at the
	// upgrade. The one case this cannot tell apart: the older Skein left a
	// deleted topic's directory, and the name was created again elsewhere
	// in the cluster while this node was down for the upgrade.
	TopicID [16]byte
	// Turns, when not nil, bounds how many logs make their directories at
	// once (make): a node's partitions share one, so that a produce to
	// thousands of new partitions makes as many directories a second as
	// 64 at a time do, without thousands of file creations and fsyncs
	// contending for the descriptor cache at once.
	Turns   chan struct{}
	Clock   clock.Clock // nil means clock.Real
	Options Options
}

// Open opens the log in cfg.Dir, and recovers it. Where cfg.Dir does not
// exist the log is new, and empty: nothing of it is on disk until its first
// write makes the directory (make). Otherwise, after a clean shutdown Open
// trusts the indexes and checkpoints; after a crash it rescans every
// segment from the recovery point, validating each batch, truncates at the
// first torn or corrupt one, and rebuilds the indexes of what it scanned.
// What remains is synced before Open returns, so the durable offset of a
// recovered log is its log end offset.
func Open(cfg Config) (*Log, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if err := cfg.Options.validate(); err != nil {
		return nil, err
	}
	l := &Log{fs: cfg.FS, dir: cfg.Dir, clock: cfg.Clock, opts: cfg.Options, lastStable: math.MaxInt64, topicID: cfg.TopicID, turns: cfg.Turns}
	names, err := l.fs.List(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A new log: nothing of it goes to disk until it first changes
		// (make), so a partition that never takes a record costs no file
		// and no fsync to create, open, stop or delete. It is as a log
		// shut down cleanly is, with one empty segment, sealed.
		l.unmade, l.clean = true, true
		s := newSegment(l.dir, 0)
		s.sealed = true
		l.segs = []*segment{s}
		l.rebuildClosed()
		l.publish()
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if cfg.TopicID != ([16]byte{}) {
		if err := l.claimDir(names, cfg.TopicID); err != nil {
			return nil, err
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { _, ok := parseSegmentName(n); return ok }) {
		// A make that crashed before it synced the directory's entry in
		// its parent leaves a directory without segments: sync it now,
		// before load makes the log in it.
		if err := syncDir(l.fs, filepath.Dir(filepath.Clean(l.dir))); err != nil {
			return nil, err
		}
	}
	if err := l.load(names); err != nil {
		for _, s := range l.segs {
			s.close()
		}
		return nil, fmt.Errorf("store: open %s: %w", l.dir, err)
	}
	l.publish()
	return l, nil
}

// load recovers the log from the directory's names, and leaves it ready to
// append.
func (l *Log) load(names []string) error {
	var err error
	// A compaction swap that a crash interrupted decides which segment
	// files are current: finish or discard it first (compact.go).
	if names, err = l.recoverSwaps(names); err != nil {
		return err
	}
	clean, marker := false, false
	var bases []int64
	for _, name := range names {
		switch {
		case name == cleanMarkerFile:
			clean, marker = true, true
		case strings.HasSuffix(name, tmpSuffix), strings.HasSuffix(name, deletedSuffix):
			// An interrupted checkpoint write or a deletion that did not
			// finish: both are garbage now.
			if err := l.fs.Remove(l.path(name)); err != nil {
				return err
			}
		default:
			if base, ok := parseSegmentName(name); ok {
				bases = append(bases, base)
			}
		}
	}
	slices.Sort(bases)

	ck := checkpoint{}
	if data, err := readFile(l.fs, l.path(checkpointFile)); err != nil {
		return err
	} else if data != nil {
		if ck, err = parseCheckpoint(data); err != nil {
			// A checkpoint is replaced atomically, so a bad one is not a
			// torn write; rescanning everything is the safe answer.
			// (And the checkpoint written at the end replaces it.)
			ck, clean = checkpoint{}, false
			l.checkpointed.RecoveryPoint = -1
		} else {
			l.checkpointed = ck
		}
	}
	if data, err := readFile(l.fs, l.path(epochFile)); err != nil {
		return err
	} else if data != nil {
		if l.epochs, err = parseEpochCache(data); err != nil {
			return err
		}
	}

	rescanned := map[int64]bool{} // by base offset
	for i, base := range bases {
		s, err := l.openSegment(base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		last := i == len(bases)-1
		nextBase := int64(-1)
		if !last {
			nextBase = bases[i+1]
		}
		// A segment ending at or below the recovery point was sealed and
		// synced with its indexes: check them and move on. The rest are
		// rescanned, unless the log was shut down cleanly.
		trusted := clean || (nextBase >= 0 && nextBase <= ck.RecoveryPoint)
		if trusted {
			if err := s.loadIndexes(last, nextBase); err == nil {
				continue
			}
		}
		// A rescan may rewrite the segment: the log is not as its clean
		// shutdown left it.
		clean = false
		rescanned[base] = true
		if err := s.recover(nextBase, &l.opts); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			// Everything from the corrupt batch on is lost: truncate here
			// and drop the segments after it (not opened yet).
			if err := l.dropSegments(bases[i+1:]); err != nil {
				return err
			}
			break
		}
	}
	created := len(l.segs) == 0
	if created {
		// A new log is clean: there is nothing in it to scan after a
		// crash. It starts as a cleanly shut down one does, with the
		// marker, which goes at its first write (prepareWrite): so a
		// partition that never takes a record costs nothing to stop and
		// to open again.
		s, err := createSegment(l.fs, l.dir, max(ck.LogStartOffset, ck.RecoveryPoint), &l.opts)
		if err != nil {
			return err
		}
		s.sealed = true // its index files, empty, hold its indexes
		l.segs = append(l.segs, s)
		if err := l.createMarker(); err != nil {
			return err
		}
		clean, marker = true, true
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		if err := s.seal(); err != nil {
			return err
		}
	}
	act := l.active()
	l.leo = act.next
	l.lso = min(max(ck.LogStartOffset, l.segs[0].base), l.leo)
	l.hw = min(max(ck.HighWatermark, l.lso), l.leo)
	if err := l.loadTxns(names, rescanned); err != nil {
		return err
	}
	if l.epochs.truncateFromEnd(l.leo) || l.epochs.truncateFromStart(l.lso) {
		if err := l.writeEpochs(); err != nil {
			return err
		}
	}
	l.advanceDurable(l.leo)
	if clean {
		// Nothing to write until the log changes: the marker and the
		// checkpoint stand, and the active segment stays sealed, its
		// indexes in their files (prepareWrite).
		l.clean = true
		l.rebuildClosed()
		if created {
			return syncDir(l.fs, l.dir) // the new files and the marker
		}
		return nil
	}
	if marker {
		// The marker must go before anything new is written, or a crash
		// later would skip the scan that catches a torn tail.
		if err := l.fs.Remove(l.path(cleanMarkerFile)); err != nil {
			return err
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
	}
	if err := act.unseal(); err != nil {
		return err
	}
	// What was read back may still be only in the page cache (after a
	// process crash): sync it before calling it durable, and the
	// aborted-transaction entries of its markers with it (sealed
	// segments' were synced when they were written).
	if err := act.log.Sync(); err != nil {
		return err
	}
	if act.txnFile {
		if err := syncFile(l.fs, act.path(txnIndexSuffix)); err != nil {
			return err
		}
	}
	l.rebuildClosed()
	// A producer-state snapshot may have been durable when the log tail it
	// covered was not (snapshot.go): it goes before anything is appended.
	if err := l.removeSnapshotsAbove(l.leo); err != nil {
		return err
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return err
	}
	return l.checkpointIfChanged()
}

// make creates the directory of a log opened before it had one, with its
// partition.metadata and the files of its empty segment, before the first
// write to it. The directory's entries are synced, then its own entry in
// its parent, and so on up for every directory it makes: a record written
// next is durable once its segment file is synced, whatever syncs it. A
// crash before that leaves a directory without a segment, which Open
// makes the log in again, or one with an empty segment. The caller holds
// l.mu.
func (l *Log) make() error {
	if !l.unmade {
		return nil
	}
	if l.turns != nil {
		l.turns <- struct{}{}
		defer func() { <-l.turns }()
	}
	made := filepath.Clean(l.dir)
	for ; filepath.Dir(made) != made; made = filepath.Dir(made) {
		if _, err := l.fs.Stat(filepath.Dir(made)); err == nil {
			break
		}
	}
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return l.fail("create the log directory", err)
	}
	if l.topicID != ([16]byte{}) {
		if err := l.claimDir(nil, l.topicID); err != nil {
			return l.fail("create the log directory", err)
		}
	}
	if err := l.active().createFiles(l.fs); err != nil {
		return l.fail("create the log directory", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.fail("create the log directory", err)
	}
	for d := filepath.Clean(l.dir); ; d = filepath.Dir(d) {
		if err := syncDir(l.fs, filepath.Dir(d)); err != nil {
			return l.fail("create the log directory", err)
		}
		if d == made {
			break
		}
	}
	// Without a clean-shutdown marker the log is as one opened after a
	// crash is, ready to write: a crash from now on rescans its one
	// segment. (So prepareWrite has no marker to remove, and no
	// directory sync to make for it.)
	s := l.active()
	s.sealed, s.indexesDirty = false, true
	l.unmade, l.clean = false, false
	return nil
}

// prepareWrite ends the clean state of a log opened after a clean
// shutdown, before its segments change: the clean-shutdown marker goes,
// durably, so that a crash from now on rescans the active segment whatever
// its files hold; then the active segment's indexes come back into memory
// (unseal), and the checkpoint's recovery point moves back to the active
// segment's base. A log opened after a crash has nothing to do here; a new
// one is made first.
func (l *Log) prepareWrite() error {
	if err := l.make(); err != nil {
		return err
	}
	if !l.clean {
		return nil
	}
	if err := l.fs.Remove(l.path(cleanMarkerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l.fail("remove the clean-shutdown marker", err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return l.fail("remove the clean-shutdown marker", err)
	}
	l.clean = false
	if err := l.active().unseal(); err != nil {
		return l.fail("unseal the active segment", err)
	}
	l.rebuildClosed()
	return l.checkpointIfChanged()
}

// checkpointIfChanged writes the checkpoint unless the file says the same
// already (or, for a new log, its absence does: all zero).
func (l *Log) checkpointIfChanged() error {
	if c := (checkpoint{RecoveryPoint: l.recoveryPoint(), LogStartOffset: l.lso, HighWatermark: l.hw}); c == l.checkpointed {
		return nil
	}
	return l.writeCheckpoint()
}

// createMarker creates the clean-shutdown marker; the caller syncs the
// directory. Its name says all: no temporary file and rename as for a
// checkpoint.
func (l *Log) createMarker() error {
	f, err := l.fs.Create(l.path(cleanMarkerFile))
	if err != nil {
		return err
	}
	return f.Close()
}

// openSegment opens the files of the segment at base; missing index files
// are created empty (recovery rebuilds them).
func (l *Log) openSegment(base int64) (s *segment, err error) {
	s = &segment{base: base, dir: l.dir, next: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1, lastIndexedTimestamp: -1, sealed: true}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.log, err = l.fs.OpenReadWrite(s.path(logSuffix)); err != nil {
		return nil, err
	}
	if s.idx, err = l.fs.OpenReadWrite(s.path(indexSuffix)); err != nil {
		return nil, err
	}
	if s.tidx, err = l.fs.OpenReadWrite(s.path(timeIndexSuffix)); err != nil {
		return nil, err
	}
	fi, err := s.log.Stat()
	if err != nil {
		return nil, err
	}
	s.size = fi.Size()
	return s, nil
}

// loadIndexes trusts a cleanly written segment: it reads the index sizes,
// sanity-checks the last entries, and finds the segment's next offset (from
// the next segment's base, or by walking the batches after the last index
// entry). Any inconsistency is ErrCorrupt, and the caller rescans.
func (s *segment) loadIndexes(last bool, nextBase int64) error {
	isz, err := fileSize(s.idx)
	if err != nil {
		return err
	}
	tsz, err := fileSize(s.tidx)
	if err != nil {
		return err
	}
	if isz%offsetEntrySize != 0 || tsz%timeEntrySize != 0 || (s.size > 0 && isz == 0) {
		return corruptf("segment %d: index sizes %d and %d", s.base, isz, tsz)
	}
	s.idxN, s.tidxN = int(isz/offsetEntrySize), int(tsz/timeEntrySize)
	v := s.view()
	var buf [timeEntrySize]byte
	lastPos := int64(0)
	if e, err := v.index.last(buf[:]); err != nil {
		return err
	} else if e != nil {
		_, p := offsetEntry(e)
		lastPos = int64(p)
	}
	if e, err := v.timeIndex.last(buf[:]); err != nil {
		return err
	} else if e != nil {
		ts, rel := timeEntry(e)
		s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastIndexedTimestamp = ts, s.base+int64(rel), ts
	}
	if lastPos > s.size {
		return corruptf("segment %d: index points past the end", s.base)
	}
	// Walk from the last indexed batch to the end: it checks that the index
	// points at a batch and yields the next offset.
	var hbuf [HeaderSize]byte
	pos := lastPos
	for pos < s.size {
		h, err := readHeader(s.log, pos, s.size, &hbuf)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			return corruptf("segment %d: time index misses timestamp %d", s.base, h.MaxTimestamp)
		}
		s.next = h.NextOffset()
		s.bytesSinceIndex = pos + h.Size() - lastPos
		pos += h.Size()
	}
	if !last && s.size > 0 && s.next > nextBase {
		return corruptf("segment %d runs past the next segment's base %d", s.base, nextBase)
	}
	return nil
}

func fileSize(f vfs.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// recoverBufSize is the read size of the recovery scan.
const recoverBufSize = 1 << 20

// recover rescans the segment: every batch is checked (header, length, CRC,
// offsets increasing and within the segment), the indexes are rebuilt in
// memory, and the file is truncated after the last good batch. It returns an
// error wrapping ErrCorrupt if it had to truncate, so the caller drops the
// segments after this one.
func (s *segment) recover(nextBase int64, opts *Options) error {
	s.idxMem, s.tidxMem, s.idxN, s.tidxN = s.idxMem[:0], s.tidxMem[:0], 0, 0
	s.sealed, s.indexesDirty = false, true
	s.next, s.maxTimestamp, s.offsetOfMaxTimestamp, s.lastIndexedTimestamp, s.bytesSinceIndex = s.base, -1, -1, -1, 0
	buf := make([]byte, 0, recoverBufSize)
	var bufPos int64 // file position of buf[0]
	pos := int64(0)
	var bad error
	for pos < s.size {
		// Make sure buf holds the batch at pos, reading ahead in big chunks.
		need := func(n int64) error {
			if pos+n <= bufPos+int64(len(buf)) {
				return nil
			}
			if n > s.size-pos {
				// A damaged length: check it before allocating for it.
				return corruptf("segment %d: %d bytes at position %d, want %d", s.base, s.size-pos, pos, n)
			}
			want := max(n, recoverBufSize)
			if int64(cap(buf)) < want {
				buf = make([]byte, 0, want)
			}
			buf = buf[:min(want, s.size-pos)]
			bufPos = pos
			_, err := s.log.ReadAt(buf, pos)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if int64(len(buf)) < n {
				return corruptf("segment %d: %d bytes at position %d, want %d", s.base, len(buf), pos, n)
			}
			return nil
		}
		if err := need(HeaderSize); err != nil {
			bad = err
			break
		}
		h, err := ParseHeader(buf[pos-bufPos:])
		if err != nil {
			bad = err
			break
		}
		if err := need(h.Size()); err != nil {
			bad = err
			break
		}
		b := buf[pos-bufPos : pos-bufPos+h.Size()]
		if err := CheckCRC(b); err != nil {
			bad = err
			break
		}
		switch {
		case h.BaseOffset < s.next:
			bad = corruptf("segment %d: batch at offset %d after offset %d", s.base, h.BaseOffset, s.next)
		case h.LastOffset()-s.base > 1<<31-1:
			bad = corruptf("segment %d: offset %d beyond the segment's range", s.base, h.LastOffset())
		case nextBase >= 0 && h.NextOffset() > nextBase:
			bad = corruptf("segment %d: offset %d reaches the next segment", s.base, h.LastOffset())
		}
		if bad != nil {
			break
		}
		s.indexBatch(&h, pos, opts)
		pos += h.Size()
	}
	if bad == nil {
		// Space a crash left reserved past the end (preallocate) goes
		// back: the segment has no record of it.
		return s.log.Truncate(s.size)
	}
	if !errors.Is(bad, ErrCorrupt) {
		return bad // a failed read is not corruption: do not truncate
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.size = pos
	return bad
}

// loadTxns loads the aborted-transaction entries of the segments from the
// .txnindex files among the directory's names (segment.loadTxns), and
// deletes the files of segments that are not in the log.
func (l *Log) loadTxns(names []string, rescanned map[int64]bool) error {
	for _, name := range names {
		digits, ok := strings.CutSuffix(name, txnIndexSuffix)
		if !ok {
			continue
		}
		base, ok := parseSegmentName(digits + logSuffix)
		if !ok {
			continue
		}
		i, found := slices.BinarySearchFunc(l.segs, base, func(s *segment, base int64) int { return cmp.Compare(s.base, base) })
		if !found {
			if err := l.fs.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		end := l.leo
		if i+1 < len(l.segs) {
			end = l.segs[i+1].base
		}
		if err := l.segs[i].loadTxns(l.fs, end, rescanned[base]); err != nil {
			return err
		}
	}
	return nil
}

// dropSegments removes the files of the segments at bases, which are not
// open. The caller syncs the directory.
func (l *Log) dropSegments(bases []int64) error {
	for _, base := range bases {
		for _, suffix := range segmentSuffixes {
			if err := l.fs.Remove(l.path(segmentName(base, suffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Close syncs and closes the log and writes the clean-shutdown marker, so
// that the next Open skips the recovery scan. A failed log closes without
// the marker.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isClosed {
		return nil
	}
	l.isClosed = true
	clear(l.staged) // never written, so never acknowledged
	l.staged = nil
	err := l.failed
	if err == nil && !l.clean {
		// (A log still clean has written nothing since its clean open:
		// the marker and the checkpoint stand.)
		err = l.shutdownCleanly()
	}
	for _, s := range l.segs {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	for _, d := range l.deleted {
		l.removeDeleted(d.seg)
	}
	l.deleted = nil
	return err
}

// Abandon closes the log as a failed one closes: nothing more is synced and
// no clean-shutdown marker is written, so the next Open rescans from the
// recovery point. A partition gives up a log this way once another Log has
// been opened on its directory.
func (l *Log) Abandon() error {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: abandoned", ErrFailed)
	}
	l.mu.Unlock()
	return l.Close()
}

// shutdownCleanly makes the active segment's indexes, its records and the
// checkpoint durable, then writes the marker. It skips what is durable
// already, so that a partition that took no record since its last sync
// costs the marker alone.
func (l *Log) shutdownCleanly() error {
	act := l.active()
	gaveBack, err := act.giveBack()
	if err != nil {
		return err
	}
	act.maybeIndexTime()
	if act.indexesDirty {
		if err := act.writeIndexes(); err != nil {
			return err
		}
		for _, f := range []vfs.File{act.idx, act.tidx} {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		act.indexesDirty = false
	}
	if l.durable.Load() < l.leo || gaveBack {
		// (After a give-back, so that a crash cannot bring the reserved
		// space back under a log that will open clean and never rescan.)
		if err := act.log.Sync(); err != nil {
			return err
		}
	}
	// The directory sync below covers a new file's name.
	if err := act.syncTxnFile(l.fs); err != nil {
		return err
	}
	l.advanceDurable(l.leo)
	c := checkpoint{RecoveryPoint: l.leo, LogStartOffset: l.lso, HighWatermark: l.hw}
	if c != l.checkpointed {
		if err := l.writeCheckpointAt(l.leo); err != nil {
			return err
		}
	}
	if err := l.createMarker(); err != nil {
		return err
	}
	return syncDir(l.fs, l.dir)
}
