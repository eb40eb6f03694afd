package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"

	"github.com/skeinlog/skein/internal/vfs"
)

// The aborted-transaction index (Kafka's TransactionIndex). The partition
// layer appends a transaction's abort marker, then tells the store about the
// aborted transaction (AddAbortedTxn); a read_committed fetch asks which
// aborted transactions overlap the data it returns (View.AbortedTxns), so
// that the consumer can drop their records.
//
// Each entry lives in the segment that holds its marker, in memory (a
// segment's entries are few: one per aborted transaction) and in the file
// <base>.txnindex, which exists only while the segment has entries, so that
// partitions without aborted transactions cost no file. Entries are in
// LastOffset order across the whole log.
//
// Durability: an entry is written when it is added (open, write, close: no
// descriptor stays open) and is durable no later than its marker. A sync
// that makes the marker durable syncs the file too (Sync, SyncTo, the
// filesystem sync of PrepareSync and CompleteSync, a roll, Close); an entry
// added for a marker that is durable already is synced at once. Truncation
// and recovery drop the entries whose markers are gone, retention deletes
// them with their segments, and compaction keeps them while their
// transactions have batches left (compact.go, rule 5). The file's layout
// is drawn in doc.go.
//
// Recovery: the .txnindex of a segment that Open rescans is recovered as
// the segment is, keeping the prefix of entries that point at abort
// markers in it (segment.loadTxns): the rest was not synced.
//
// Loss: any other .txnindex that fails its checks at Open (a size that is
// not a multiple of 34 bytes, an unknown version, an entry whose first
// offset is above its last, entries out of order, one whose marker would
// precede its segment) is corrupt: it is deleted, as Kafka deletes an
// index it can rebuild, and Open goes on. The store cannot rebuild it: the
// partition layer re-adds the entries of the markers at or after its
// producer-state snapshot, and the entries older than that are lost. That
// only changes what read_committed consumers filter: the records of those
// aborted transactions then reach them as if committed, and compaction
// keeps them as committed ones.

// txnIndexSuffix names a segment's aborted-transaction index.
const txnIndexSuffix = ".txnindex"

// Kafka's AbortedTxn layout, version 0.
const (
	abortedTxnSize = 34
	abortedTxnV0   = 0
)

// AbortedTxn is one entry of the aborted-transaction index (Kafka's
// AbortedTxn).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64 // the transaction's first offset in this partition
	LastOffset  int64 // the offset of its abort marker
	// LastStableOffset is the last stable offset right after the marker was
	// appended: the first offset of the next unfinished transaction of
	// another producer, else LastOffset+1.
	LastStableOffset int64
}

// appendAbortedTxn appends t's 34 bytes to dst.
func appendAbortedTxn(dst []byte, t AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnV0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// decodeAbortedTxns decodes the contents of a .txnindex file. It returns
// the entries of its longest valid prefix and, when b holds more than
// that, an error wrapping ErrCorrupt: for an entry with an unknown version,
// a first offset above its last offset, or a last offset not above the
// previous entry's; or for a partial entry at the end (a torn append,
// after the whole entries it returns). It never fails for an empty b.
func decodeAbortedTxns(b []byte) ([]AbortedTxn, error) {
	var txns []AbortedTxn
	for len(b) >= abortedTxnSize {
		e := b[:abortedTxnSize]
		if v := int16(binary.BigEndian.Uint16(e)); v != abortedTxnV0 {
			return txns, corruptf("aborted-transaction entry %d: version %d", len(txns), v)
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		switch {
		case t.FirstOffset > t.LastOffset:
			return txns, corruptf("aborted-transaction entry %d: first offset %d above last offset %d", len(txns), t.FirstOffset, t.LastOffset)
		case len(txns) > 0 && t.LastOffset <= txns[len(txns)-1].LastOffset:
			return txns, corruptf("aborted-transaction entry %d: last offset %d after %d", len(txns), t.LastOffset, txns[len(txns)-1].LastOffset)
		}
		txns = append(txns, t)
		b = b[abortedTxnSize:]
	}
	if len(b) > 0 {
		return txns, corruptf("%d bytes after the last whole aborted-transaction entry", len(b))
	}
	return txns, nil
}

// AddAbortedTxn indexes an aborted transaction whose abort marker the
// writer has appended: t.LastOffset, the marker's offset, must be in the
// log (below the log end offset; else the error wraps
// ErrOffsetOutOfRange). The entry goes to the segment that holds the
// marker, and reaches the disk before the marker is called durable (see
// the file's doc): a failed write or sync fails the log.
//
// It is idempotent: an entry whose LastOffset is not above that of the
// newest entry indexed is ignored, so that after a restart the partition
// layer may replay the markers from its producer-state snapshot on and add
// their entries again.
//
// NB: the writer adds the entry before it moves the last stable offset
// past the transaction (SetLastStableOffset): compaction cleans what lies
// below the last stable offset, and takes a transaction without an entry
// for a committed one.
func (l *Log) AddAbortedTxn(t AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	switch {
	case t.LastOffset >= l.leo || t.LastOffset < l.segs[0].base:
		return fmt.Errorf("%w: aborted transaction's marker at offset %d, log has [%d, %d)", ErrOffsetOutOfRange, t.LastOffset, l.segs[0].base, l.leo)
	case t.FirstOffset > t.LastOffset:
		return fmt.Errorf("store: aborted transaction's first offset %d is above its marker's %d", t.FirstOffset, t.LastOffset)
	}
	if t.LastOffset <= l.newestAbortedOffset() {
		return nil
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > t.LastOffset }) - 1
	s := l.segs[i]
	if err := s.appendTxn(l.fs, t); err != nil {
		return l.fail("write aborted-transaction index", err)
	}
	l.txnWrites++
	if s != l.active() || t.LastOffset < l.durable.Load() {
		// The marker may be durable already (a sealed segment's always
		// is): its entry must be too, before anyone relies on it.
		if err := s.syncTxns(l.fs); err != nil {
			return l.fail("sync aborted-transaction index", err)
		}
	}
	if s != l.active() {
		l.rebuildClosed()
	}
	l.publish()
	return nil
}

// newestAbortedOffset returns the LastOffset of the newest entry of the
// aborted-transaction index, or -1. The caller holds l.mu.
func (l *Log) newestAbortedOffset() int64 {
	for i := len(l.segs) - 1; i >= 0; i-- {
		if txns := l.segs[i].txns; len(txns) > 0 {
			return txns[len(txns)-1].LastOffset
		}
	}
	return -1
}

// AbortedTxns returns, in order, the aborted transactions that a
// read_committed fetch of the offsets [from, upTo) must know of: those
// whose marker is at or after from and whose first offset is below upTo
// (Kafka's collectAbortedTxns). It reads from memory, without locks; nil
// when there are none. The slice is new: the caller owns it.
func (v *View) AbortedTxns(from, upTo int64) []AbortedTxn {
	return collectAbortedTxns(v, from, upTo)
}

// collectAbortedTxns is View.AbortedTxns over the segments of v. An
// entry's marker is at or after its first offset, so the search starts at
// the segment that holds from (where entries whose markers are below from
// are skipped: Kafka looks at them too, to no effect); it stops at the
// first entry whose last stable offset is at or above upTo: every
// transaction that started below upTo had ended by then (Kafka's "search
// complete").
func collectAbortedTxns(v *View, from, upTo int64) []AbortedTxn {
	var out []AbortedTxn
	for i := v.find(from); i < v.numSegments(); i++ {
		txns := v.segment(i).txns
		k := sort.Search(len(txns), func(k int) bool { return txns[k].LastOffset >= from })
		for _, t := range txns[k:] {
			if t.FirstOffset < upTo {
				out = append(out, t)
			}
			if t.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// appendTxn adds t to the segment's entries and appends it to its
// .txnindex file, which the first entry creates. The file is opened for
// the write and closed after it: a segment holds no descriptor for it.
func (s *segment) appendTxn(fsys vfs.FS, t AbortedTxn) error {
	open := fsys.OpenReadWrite
	if !s.txnFile {
		open = fsys.Create // whatever a failed removal left under its name goes
	}
	f, err := open(s.path(txnIndexSuffix))
	if err != nil {
		return err
	}
	if !s.txnFile {
		s.txnFile, s.txnNewFile = true, true
	}
	var buf [abortedTxnSize]byte
	_, err = f.WriteAt(appendAbortedTxn(buf[:0], t), int64(len(s.txns))*abortedTxnSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Views share s.txns up to their length: appending past it is safe.
	s.txns = append(s.txns, t)
	s.txnDirty = true
	return nil
}

// syncTxnFile syncs the segment's .txnindex if entries were written to it
// since its last sync. The caller syncs the directory for a new file
// (txnNewFile).
func (s *segment) syncTxnFile(fsys vfs.FS) error {
	if !s.txnDirty {
		return nil
	}
	if err := syncFile(fsys, s.path(txnIndexSuffix)); err != nil {
		return err
	}
	s.txnDirty = false
	return nil
}

// syncTxns makes the segment's entries durable: the file if it has
// unsynced writes, and the directory if the file is new.
func (s *segment) syncTxns(fsys vfs.FS) error {
	if err := s.syncTxnFile(fsys); err != nil {
		return err
	}
	if s.txnNewFile {
		if err := syncDir(fsys, s.dir); err != nil {
			return err
		}
		s.txnNewFile = false
	}
	return nil
}

// syncFile opens the named file, syncs it and closes it.
func syncFile(fsys vfs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// truncateTxns drops the entries whose markers are at or after offset.
func (s *segment) truncateTxns(fsys vfs.FS, offset int64) error {
	k := sort.Search(len(s.txns), func(i int) bool { return s.txns[i].LastOffset >= offset })
	if k == len(s.txns) {
		return nil
	}
	// A copy: views share the old slice.
	return s.rewriteTxns(fsys, slices.Clone(s.txns[:k]))
}

// rewriteTxns replaces the segment's entries with txns, which it takes:
// the file is replaced atomically and durably, or removed when txns is
// empty. The caller syncs the directory after a removal, unless a crash
// that brings the file back is harmless (its entries are dropped again).
func (s *segment) rewriteTxns(fsys vfs.FS, txns []AbortedTxn) error {
	if len(txns) == 0 {
		if !s.txnFile {
			return nil
		}
		if err := fsys.Remove(s.path(txnIndexSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.txns, s.txnFile, s.txnDirty, s.txnNewFile = nil, false, false, false
		return nil
	}
	b := make([]byte, 0, len(txns)*abortedTxnSize)
	for _, t := range txns {
		b = appendAbortedTxn(b, t)
	}
	if err := writeFileAtomic(fsys, s.dir, segmentName(s.base, txnIndexSuffix), b); err != nil {
		return err
	}
	s.txns, s.txnFile, s.txnDirty, s.txnNewFile = txns, true, false, false
	return nil
}

// loadTxns reads the segment's .txnindex at Open and keeps the entries it
// can trust, rewriting the file when it drops some (deleting it when none
// is left). A read error fails Open.
//
// A segment that Open rescanned (the active one when the log stopped
// without a clean shutdown) gets its file recovered as its batches are:
// the longest prefix of whole, well-ordered entries each of which points
// at an abort marker of its producer in the recovered segment is kept, and
// what follows is dropped. It was not synced (an entry is synced after its
// marker, so one whose marker was durable survives), and may be a torn or
// garbled tail, or describe markers that the crash cut off.
//
// Any other segment's file was synced when written: one that fails its
// checks is corrupt and deleted (see the file's doc); entries whose markers
// would lie at or past end, the next segment's base, are dropped.
func (s *segment) loadTxns(fsys vfs.FS, end int64, rescanned bool) error {
	f, err := fsys.Open(s.path(txnIndexSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	size, err := fileSize(f)
	if err != nil {
		f.Close()
		return err
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	f.Close()
	if n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	s.txnFile = true
	txns, err := decodeAbortedTxns(b)
	if !rescanned && (err != nil || (len(txns) > 0 && txns[0].LastOffset < s.base)) {
		return s.rewriteTxns(fsys, nil)
	}
	k := sort.Search(len(txns), func(i int) bool { return txns[i].LastOffset >= end })
	if rescanned {
		var dec Decompressor
		for i, t := range txns[:k] {
			ok, err := s.abortMarkerAt(t.LastOffset, t.ProducerID, &dec)
			if err != nil {
				return err
			}
			if !ok {
				k = i
				break
			}
		}
	}
	if k < len(txns) || err != nil || len(txns) == 0 {
		return s.rewriteTxns(fsys, txns[:k])
	}
	s.txns = txns
	return nil
}

// abortMarkerAt reports whether the segment holds an abort marker of
// producer pid at offset.
func (s *segment) abortMarkerAt(offset, pid int64, dec *Decompressor) (bool, error) {
	var buf [HeaderSize]byte
	v := s.view()
	pos, h, err := v.seek(offset, &buf)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if h.BaseOffset != offset || !h.Control() || h.ProducerID != pid {
		return false, nil
	}
	b := make([]byte, h.Size())
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return false, err
	}
	typ, ok, err := markerType(b, dec)
	if errors.Is(err, ErrCorrupt) {
		return false, nil
	}
	return ok && typ == markerAbort, err
}
