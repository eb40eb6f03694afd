package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/internal/vfs"
)

// Producer-state snapshots. The partition layer keeps the state of its
// idempotent producers in memory and persists it here, as an opaque payload,
// in Kafka's file naming: <offset>.snapshot, the offset zero-padded to 20
// digits, holds the state after every batch below offset (the log end
// offset when it was taken). The store owns the files: it frames, writes,
// prunes and checks them, and deletes the ones a truncation or a crash made
// wrong.
//
//	+-------------+-----------+------------+-------------------+
//	| version u16 | crc u32   | length u32 | payload (length)  |
//	+-------------+-----------+------------+-------------------+
//	                crc: CRC-32C of length and payload
//
// Invariant: no snapshot lies above the log end offset. Open deletes those
// a crash left above it (the snapshot was durable, the log tail it covered
// was not) and Truncate those above the new end, so that later appends
// cannot make a snapshot of another history look valid again.

const (
	snapshotSuffix     = ".snapshot"
	snapshotV0         = 0
	snapshotHeaderSize = 2 + 4 + 4
	// snapshotsKept is how many snapshots WriteSnapshot leaves: the newest,
	// and one older in case the newest is lost to a truncation.
	snapshotsKept = 2
	// maxSnapshotBytes bounds what a snapshot read allocates.
	maxSnapshotBytes = 1 << 30
)

func parseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, snapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// WriteSnapshot writes payload as the producer-state snapshot at offset,
// which may not pass the log end offset, atomically and durably (a crash
// leaves the old set of snapshots or the new one), then deletes all but the
// newest snapshotsKept. The caller keeps ownership of payload. A failed
// write does not fail the log: the segments are untouched.
func (l *Log) WriteSnapshot(offset int64, payload []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 || offset > l.leo {
		return fmt.Errorf("%w: snapshot at offset %d, log end offset %d", ErrOffsetOutOfRange, offset, l.leo)
	}
	if len(payload) > maxSnapshotBytes-snapshotHeaderSize {
		return fmt.Errorf("store: producer-state snapshot of %d bytes is too large", len(payload))
	}
	if err := l.make(); err != nil {
		return err
	}
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(payload))
	binary.BigEndian.PutUint16(b, snapshotV0)
	binary.BigEndian.PutUint32(b[6:], uint32(len(payload)))
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	if err := writeFileAtomic(l.fs, l.dir, segmentName(offset, snapshotSuffix), b); err != nil {
		return fmt.Errorf("store: writing producer-state snapshot at %d: %w", offset, err)
	}
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, off := range offs[:max(len(offs)-snapshotsKept, 0)] {
		// NB: no directory sync: an old snapshot that comes back after a
		// crash still describes the log below its offset correctly.
		if err := l.fs.Remove(l.path(segmentName(off, snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ReadLatestSnapshot returns the newest producer-state snapshot whose frame
// is intact, and the offset it covers; ok is false when there is none.
// Corrupt snapshots are deleted on the way. A read error is returned as
// such, never taken for corruption.
func (l *Log) ReadLatestSnapshot() (offset int64, payload []byte, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isClosed {
		return 0, nil, false, ErrClosed
	}
	offs, err := l.snapshotOffsets()
	if err != nil {
		return 0, nil, false, err
	}
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > l.leo {
			// The invariant says this cannot be; never trust such a one.
			if err := l.fs.Remove(l.path(segmentName(off, snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, nil, false, err
			}
			continue
		}
		payload, err := readSnapshot(l.fs, l.path(segmentName(off, snapshotSuffix)))
		if errors.Is(err, ErrCorrupt) {
			if err := l.fs.Remove(l.path(segmentName(off, snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, nil, false, err
			}
			continue
		}
		if err != nil {
			return 0, nil, false, err
		}
		return off, payload, true, nil
	}
	return 0, nil, false, nil
}

// snapshotOffsets lists the snapshots in the directory, oldest first.
func (l *Log) snapshotOffsets() ([]int64, error) {
	if l.unmade {
		return nil, nil
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, name := range names {
		if off, ok := parseSnapshotName(name); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs, nil
}

// removeSnapshotsAbove deletes the snapshots above offset (all of them for
// -1). The caller syncs the directory before anything new is appended.
func (l *Log) removeSnapshotsAbove(offset int64) error {
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, off := range offs {
		if off > offset {
			if err := l.fs.Remove(l.path(segmentName(off, snapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// readSnapshot reads and checks one snapshot file; a bad frame wraps
// ErrCorrupt.
func readSnapshot(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < snapshotHeaderSize || size > maxSnapshotBytes {
		return nil, corruptf("snapshot %s: %d bytes", path, size)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = corruptf("snapshot %s: read %d of %d bytes", path, n, len(b))
		}
		return nil, err
	}
	switch {
	case binary.BigEndian.Uint16(b) != snapshotV0:
		return nil, corruptf("snapshot %s: unknown version %d", path, binary.BigEndian.Uint16(b))
	case int64(binary.BigEndian.Uint32(b[6:])) != size-snapshotHeaderSize:
		return nil, corruptf("snapshot %s: length %d in a file of %d bytes", path, binary.BigEndian.Uint32(b[6:]), size)
	case crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]):
		return nil, corruptf("snapshot %s: CRC mismatch", path)
	}
	return b[snapshotHeaderSize:], nil
}

// ActiveSegmentBase returns the base offset of the active segment: a
// writer that sees it change after an append knows the append rolled the
// log (the partition actor snapshots its producer state there).
func (v *View) ActiveSegmentBase() int64 { return v.active.base }
