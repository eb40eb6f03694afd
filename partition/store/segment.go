package store

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// File names of a segment: the base offset, zero-padded to 20 digits, and a
// suffix. Suffixes of files in transition are appended to these.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted" // renamed away, removed after the file delete delay
	tmpSuffix       = ".tmp"     // a checkpoint being written
)

func segmentName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentName returns the base offset of a segment's .log file name.
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// segment is one segment of the log: a file of whole batches and its two
// sparse indexes. Its fields belong to the Log's writer (under Log.mu);
// readers see it only through segView copies.
type segment struct {
	base int64
	dir  string
	log  vfs.File
	idx  vfs.File // offset index
	tidx vfs.File // time index

	size int64 // bytes of whole batches in log
	next int64 // offset after the last batch; base while empty

	// The indexes. While the segment is active its entries live in idxMem
	// and tidxMem and reach the files when it seals; once sealed they are read
	// from the files and the buffers are nil.
	idxMem, tidxMem []byte
	idxN, tidxN     int
	sealed          bool
	// pinned says the log file's descriptor is held open (vfs.Pin): the
	// active segment's, while the partition writes.
	pinned bool
	// reserved is where the space preallocated in the log file ends
	// (preallocate), or 0 when none lies beyond size.
	reserved int64
	// indexesDirty says the index files may not hold the entries in
	// memory, durably: set by every entry and by unseal, cleared when they
	// are written and synced (seal, a clean shutdown).
	indexesDirty bool

	bytesSinceIndex      int64
	maxTimestamp         int64 // largest batch max timestamp, -1 while empty
	offsetOfMaxTimestamp int64 // base offset of the batch that has it
	lastIndexedTimestamp int64 // timestamp of the last time-index entry
	firstAppend          time.Time

	// The aborted-transaction index (txnindex.go): the entries whose
	// markers are in this segment, in LastOffset order. Views share txns
	// up to their length: it is only appended to, or replaced.
	txns []AbortedTxn
	// txnFile says the .txnindex file exists (while there are entries,
	// and for a moment during a compaction swap); txnDirty that entries
	// were written to it since its last sync; txnNewFile that it was
	// created since the directory's last sync.
	txnFile, txnDirty, txnNewFile bool
}

// segView is an immutable copy of what a reader needs of a segment.
type segView struct {
	base, next, size     int64
	log                  vfs.File
	index, timeIndex     indexView
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	txns                 []AbortedTxn // never written in place
}

func (s *segment) view() segView {
	v := segView{
		base: s.base, next: s.next, size: s.size, log: s.log,
		maxTimestamp: s.maxTimestamp, offsetOfMaxTimestamp: s.offsetOfMaxTimestamp,
		index:     indexView{n: s.idxN, entrySize: offsetEntrySize},
		timeIndex: indexView{n: s.tidxN, entrySize: timeEntrySize},
		txns:      s.txns[:len(s.txns):len(s.txns)],
	}
	if s.sealed {
		v.index.file, v.timeIndex.file = s.idx, s.tidx
	} else {
		v.index.mem, v.timeIndex.mem = s.idxMem[:s.idxN*offsetEntrySize], s.tidxMem[:s.tidxN*timeEntrySize]
	}
	return v
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base, suffix))
}

// suffixes returns the suffixes of the segment's files, in the order of
// segmentSuffixes: the .txnindex only when it exists.
func (s *segment) suffixes() []string {
	if s.txnFile {
		return segmentSuffixes[:]
	}
	return withoutTxnIndex[:]
}

// newSegment returns an empty segment at base, without files.
func newSegment(dir string, base int64) *segment {
	return &segment{base: base, dir: dir, next: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1, lastIndexedTimestamp: -1}
}

// createSegment creates the files of an empty active segment. The index
// files stay empty while it is active (its entries are in memory) and get
// them when it seals: unlike Kafka's, which are mmapped, they are not
// preallocated, so a segment that never takes a record costs no write.
// The caller syncs the directory.
func createSegment(fs vfs.FS, dir string, base int64, opts *Options) (*segment, error) {
	s := newSegment(dir, base)
	if err := s.createFiles(fs); err != nil {
		return nil, err
	}
	return s, nil
}

// createFiles creates the segment's three files, empty.
func (s *segment) createFiles(fs vfs.FS) (err error) {
	defer func() {
		if err != nil {
			s.close()
			s.log, s.idx, s.tidx = nil, nil, nil
		}
	}()
	if s.log, err = fs.Create(s.path(logSuffix)); err != nil {
		return err
	}
	if s.idx, err = fs.Create(s.path(indexSuffix)); err != nil {
		return err
	}
	s.tidx, err = fs.Create(s.path(timeIndexSuffix))
	return err
}

// maxIndexEntries is how many entries the offset index may hold before the
// segment must roll (segment.index.bytes).
func maxIndexEntries(opts *Options) int { return int(opts.SegmentIndexBytes) / offsetEntrySize }

// fits reports whether a write of n more bytes, ending at offset last, may go
// into this segment, or the segment must roll first.
func (s *segment) fits(n int64, last int64, now time.Time, opts *Options) bool {
	if s.size == 0 {
		return true // a segment always takes its first write, however large
	}
	switch {
	case s.size+n > opts.SegmentBytes, s.size+n > math.MaxInt32:
		return false
	case last-s.base > math.MaxInt32:
		return false
	case s.idxN >= maxIndexEntries(opts) || (s.tidxN+1)*timeEntrySize > int(opts.SegmentIndexBytes):
		return false
	case opts.SegmentMs > 0 && !s.firstAppend.IsZero() && now.Sub(s.firstAppend) >= time.Duration(opts.SegmentMs)*time.Millisecond:
		return false
	}
	return true
}

// indexBatch records a batch just written at pos in the in-memory indexes,
// following Kafka: an index entry once index.interval.bytes have passed since
// the last one, and with it a time-index entry when the largest timestamp grew.
func (s *segment) indexBatch(h *Header, pos int64, opts *Options) {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTimestamp = h.BaseOffset
	}
	if s.bytesSinceIndex >= int64(opts.IndexIntervalBytes) || s.idxN == 0 {
		s.indexesDirty = true
		s.idxMem = appendOffsetEntry(s.idxMem[:s.idxN*offsetEntrySize], uint32(h.BaseOffset-s.base), uint32(pos))
		s.idxN++
		s.maybeIndexTime()
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += h.Size()
	s.next = h.NextOffset()
}

// maybeIndexTime adds a time-index entry for the largest timestamp so far if
// it is newer than the last entry.
func (s *segment) maybeIndexTime() {
	if s.maxTimestamp > s.lastIndexedTimestamp {
		s.indexesDirty = true
		s.tidxMem = appendTimeEntry(s.tidxMem[:s.tidxN*timeEntrySize], s.maxTimestamp, uint32(s.offsetOfMaxTimestamp-s.base))
		s.tidxN++
		s.lastIndexedTimestamp = s.maxTimestamp
	}
}

// writeIndexes writes the in-memory entries to the index files and trims
// the files to them (they may hold older, longer entries: after unseal).
func (s *segment) writeIndexes() error {
	if s.sealed {
		return nil
	}
	if _, err := s.idx.WriteAt(s.idxMem[:s.idxN*offsetEntrySize], 0); err != nil {
		return err
	}
	if _, err := s.tidx.WriteAt(s.tidxMem[:s.tidxN*timeEntrySize], 0); err != nil {
		return err
	}
	if err := s.idx.Truncate(int64(s.idxN * offsetEntrySize)); err != nil {
		return err
	}
	return s.tidx.Truncate(int64(s.tidxN * timeEntrySize))
}

// seal makes the segment read-only: a last time-index entry for its largest
// timestamp (so that retention and time lookups can read it from the file),
// indexes written and trimmed, the space reserved ahead given back,
// everything synced.
func (s *segment) seal() error {
	if s.sealed {
		return nil
	}
	s.maybeIndexTime()
	if err := s.writeIndexes(); err != nil {
		return err
	}
	if _, err := s.giveBack(); err != nil {
		return err
	}
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	s.sealed, s.indexesDirty = true, false
	s.idxMem, s.tidxMem = nil, nil
	s.unpin()
	return nil
}

// Space reserved ahead of the writes. ext4 does delayed-allocation
// bookkeeping for every page a write dirties past a file's allocated
// blocks; writes into space reserved ahead (vfs.Preallocate) skip it, which
// saved 12% of the broker's CPU per GB of 1 KiB records and 4% of 100-byte
// ones (tests/bench/README.md). A segment reserves ahead at most as much as
// it holds already, and at most preallocateMax, so that a partition written
// little reserves nothing and the space held ahead by a node is bounded by
// the partitions it writes at once. It gives the space back when it seals,
// when its log closes or goes idle (Log.ReleaseFiles), and at recovery.
const (
	preallocateFrom = 1 << 20 // a segment holding less reserves nothing
	preallocateMax  = 8 << 20
)

// preallocate reserves space for a write of the bytes [from, end) of the
// log file and beyond it, when the write goes past what is reserved. It is
// best effort: when the reservation fails (a full disk, a filesystem that
// cannot), the write allocates its blocks as it goes, and the next
// reservation is tried a chunk later, not at every write.
func (s *segment) preallocate(from, end int64, opts *Options) {
	if end <= s.reserved || from < preallocateFrom {
		return
	}
	limit := min(end+min(from, preallocateMax), opts.SegmentBytes)
	if start := max(from, s.reserved); limit > start {
		// NB: the error is dropped on purpose, see above; the write that
		// follows reports a full disk for itself.
		_ = vfs.Preallocate(s.log, start, limit-start)
	}
	s.reserved = max(limit, end)
}

// giveBack returns the space reserved past the segment's size to the
// filesystem: a truncate to its own size frees it. It reports whether it
// truncated the file.
func (s *segment) giveBack() (truncated bool, err error) {
	if s.reserved > s.size {
		if err := s.log.Truncate(s.size); err != nil {
			return false, err
		}
		truncated = true
	}
	s.reserved = 0
	return truncated, nil
}

// pin keeps the log file's descriptor open until unpin, for the writes to
// come, if the descriptor cache has pins to spare (a no-op when it is
// pinned already). Unpinned, the file still works, opened per write.
func (s *segment) pin() error {
	if s.pinned {
		return nil
	}
	pinned, err := vfs.Pin(s.log)
	s.pinned = pinned
	return err
}

// unpin lets the descriptor cache close the log file when it needs room.
func (s *segment) unpin() {
	if s.pinned {
		vfs.Unpin(s.log)
		s.pinned = false
	}
}

// unseal makes a sealed segment active again (after truncation into it, or
// at the first write after a clean open): its index entries come back into
// memory. The files keep their entries until it seals again; a crash
// before then rescans the active segment, whatever they hold.
func (s *segment) unseal() error {
	if !s.sealed {
		return nil
	}
	s.idxMem = make([]byte, s.idxN*offsetEntrySize)
	s.tidxMem = make([]byte, s.tidxN*timeEntrySize)
	if _, err := s.idx.ReadAt(s.idxMem, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if _, err := s.tidx.ReadAt(s.tidxMem, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	s.sealed, s.indexesDirty = false, true
	return nil
}

func (s *segment) close() error {
	s.unpin()
	var first error
	for _, f := range []vfs.File{s.log, s.idx, s.tidx} {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// readHeader reads the batch header at pos of a segment file of the given
// size. It returns io.EOF at the end, and ErrCorrupt for anything that is
// not the start of a whole batch.
func readHeader(f io.ReaderAt, pos, size int64, buf *[HeaderSize]byte) (Header, error) {
	if pos >= size {
		return Header{}, io.EOF
	}
	if size-pos < HeaderSize {
		return Header{}, corruptf("%d bytes at position %d, less than a batch header", size-pos, pos)
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		return Header{}, err
	}
	h, err := ParseHeader(buf[:])
	if err != nil {
		return Header{}, err
	}
	if h.Size() > size-pos {
		return Header{}, corruptf("batch at position %d claims %d bytes, %d left", pos, h.Size(), size-pos)
	}
	return h, nil
}
