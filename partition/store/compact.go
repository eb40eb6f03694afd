package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// Compaction (cleanup.policy=compact, and compact,delete), after Kafka's
// LogCleaner. A pass keeps the newest record of every key in the cleanable
// part of the log and leaves everything else alone.
//
// # What a pass may clean
//
// The cleanable part is the longest run of the oldest segments that are
// sealed (never the active one), lie wholly below the last stable offset
// (so below the high watermark, and never inside an unfinished
// transaction), and whose largest timestamp is at least
// min.compaction.lag.ms old: the first segment that fails any of these
// ends it. Records in the rest of the log
// (the uncleanable part and the active segment) are neither changed nor
// looked at to decide what goes, as in Kafka.
//
// # Rules
//
//  1. The offset map: the newest offset of every key in the dirty part, the
//     cleanable segments not cleaned since the last pass (the whole
//     cleanable part after Open, or after a truncation). Records of aborted
//     transactions (rule 5) do not enter it: an aborted write must never
//     make an older committed value of its key go. Keys are compared
//     by a 16-byte digest of their content (SHA-256, truncated, where
//     Kafka's SkimpyOffsetMap uses MD5). The map holds at most
//     maxCleanerKeys keys: when it is full at a segment boundary the pass
//     stops its dirty part there, and the next pass goes on from that point.
//  2. Every cleanable segment, clean or dirty, is rewritten from its start:
//     a record stays when it has a key, no newer offset in the map, is not
//     a tombstone past its delete horizon (rule 4) and is not part of an
//     aborted transaction (rule 5). Keyless records go, as Kafka's cleaner
//     drops them.
//  3. Offsets never change. A batch that keeps every record (and needs no
//     delete horizon) is copied byte for byte. One that loses some is
//     rebuilt with AppendBatch keeping its base offset, LastOffsetDelta,
//     partition leader epoch, producer id, epoch and base sequence,
//     attributes and codec (decompressed, filtered, recompressed); record
//     offset and timestamp deltas are kept, so record offsets and
//     timestamps do not move. MaxTimestamp becomes the largest kept
//     timestamp (LogAppendTime batches keep theirs), as Kafka's builder
//     computes it. A batch that loses every record is dropped, except:
//     the last batch of each producer id (>= 0) in the whole log stays as
//     an empty batch (61 bytes, no codec) so that its producer's state
//     survives, as Kafka's isBatchLastRecordOfProducer: its last data
//     batch in its latest epoch (its last sequence), or, when it wrote no
//     data in that epoch, its markers of that epoch (the epoch, for
//     fencing); and the last batch of each group of segments a pass
//     rewrites stays as an empty batch too, so that a cleaned segment
//     always ends where its originals ended (recovery reads a swap
//     segment's range from its data, see Crash safety). That one is
//     anonymous when it stands for a transactional or control batch
//     (producer id, epoch and sequence -1, neither bit set), so that it
//     does not count as a batch of the transaction under rule 5.
//  4. Tombstones (a null value) follow KIP-534. The first pass that keeps a
//     batch holding tombstones sets its delete horizon: attribute bit 6 and
//     BaseTimestamp = now + delete.retention.ms, with the records'
//     timestamp deltas shifted so that their timestamps stay the same. A
//     later pass at or after the horizon drops the batch's tombstones.
//  5. Transactions, as Kafka's LogCleaner and CleanedTransactionMetadata.
//     The pass walks the log in offset order with the aborted-transaction
//     index entries of the range (txnindex.go), by first offset: from an
//     entry's first offset until its producer's abort marker, that
//     producer's transactional data batches belong to the aborted
//     transaction. Their records all go (the batch is dropped, or kept
//     empty under rule 3). Markers (control batches) go last:
//     an abort marker stays while the pass meets any batch of its
//     transaction, and so does a commit marker; a marker whose
//     transaction's batches are all gone (met none in this pass) follows
//     rule 4: the first such pass sets its batch's delete horizon, and the
//     first pass at or after the horizon drops it (unless rule 3 keeps it
//     empty). A control batch without records goes at once; control
//     batches of other types stay. An aborted transaction's index entry
//     stays in the cleaned segment while batches of its transaction do
//     (Kafka's cleanedIndex), so no later than its marker; a fetch never
//     learns of an aborted transaction whose marker is gone. A pass that
//     keeps a marker only for batches it removed itself makes the next
//     pass due at once (CompactionDue), to start the marker's horizon.
//
// # Grouping
//
// Adjacent cleanable segments are cleaned into one segment while their
// original sizes fit segment.bytes, their indexes segment.index.bytes, and
// their offsets the 32-bit relative offsets of one segment (Kafka's
// groupSegmentsBySize). A group of one segment that the pass would not
// change is left alone.
//
// # Swap
//
// Reading, the offset map and writing the cleaned segment happen outside
// Log.mu, so appends, syncs and readers go on. For each group:
//
//  1. write <base>.log.cleaned, .index.cleaned and .timeindex.cleaned,
//     where base is the group's first segment's, and .txnindex.cleaned
//     when the cleaned segment keeps entries or the original at base has a
//     .txnindex (then possibly empty, see Crash safety), and sync them;
//  2. under Log.mu, check that the group's segments are still in the log as
//     they were (their aborted-transaction entries too) and no truncation
//     ran (else delete the cleaned files: a later pass starts over);
//  3. rename the cleaned files to *.swap and sync the directory: the commit;
//  4. rename the originals to *.deleted (retired: still open for readers
//     holding older views until file.delete.delay.ms has passed), rename
//     the swap files to their final names, install the new segment in the
//     log and publish, sync the directory; an empty .txnindex then goes
//     (no sync: Open deletes an empty one).
//
// Step 3 runs under Log.mu because a committed swap replays after a crash:
// a truncation after it, undone by the replay, would resurrect what it
// removed. An error after the commit fails the log, as a failed write does;
// reopening finishes the swap.
//
// # Crash safety
//
// Open (recoverSwaps) deletes *.cleaned files and index *.swap files
// without their .log.swap (an uncommitted swap), and finishes a committed
// one as Kafka's LogLoader does: it deletes the original segments whose
// base offsets fall within the swap segment's range [base, next offset of
// its last batch) and renames the swap files to their final names. So a
// crash leaves either the old segments or the cleaned one, never a mix.
//
// A missing index .swap file is rebuilt, but a .txnindex cannot be: when
// there is no <base>.txnindex.swap, the file under the final name, if any,
// is the cleaned one already renamed. It cannot be the original's, since
// step 1 writes a .txnindex.cleaned, empty if need be, whenever the
// original at base has one. (Keeping the original's would be wrong: its
// entries may describe transactions whose markers the pass dropped, and a
// read_committed consumer would then skip the producer's later records.)
//
// NB: step 4's renames need not be durable in order: the replay redoes
// them. Step 3's must be durable before step 4's, hence its directory sync.

// CompactStats says what a pass of Compact did.
type CompactStats struct {
	// SegmentsCleaned counts the original segments replaced by cleaned ones.
	SegmentsCleaned int
	// BytesBefore is the size of the replaced segments and BytesAfter that
	// of the segments that replaced them.
	BytesBefore, BytesAfter int64
	// RecordsRemoved counts the records dropped from the replaced segments:
	// superseded, tombstones past their delete horizon, keyless, of aborted
	// transactions, and markers past their delete horizon.
	RecordsRemoved int64
}

// File name suffixes of a segment being swapped in (see the Swap section).
const (
	cleanedSuffix = ".cleaned" // written by a pass, not committed: garbage after a crash
	swapSuffix    = ".swap"    // committed: a crash finishes the swap
)

// segmentSuffixes are the files of a segment, in the order a swap renames
// them: the .log last, since the .log.swap is what commits a swap. A
// segment without aborted-transaction entries has no .txnindex
// (withoutTxnIndex).
var (
	segmentSuffixes = [...]string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	withoutTxnIndex = [...]string{indexSuffix, timeIndexSuffix, logSuffix}
)

// maxCleanerKeys bounds the keys in one pass's offset map (rule 1), as
// Kafka's log.cleaner.dedupe.buffer.size does: about 64 MiB of map. A
// variable so that tests can make passes stop early.
var maxCleanerKeys = 1 << 21

// cleanerWriteSize is how many bytes a pass gathers before writing them to
// the cleaned segment, and how far it reads ahead in a segment.
const cleanerWriteSize = 1 << 20

// cleanerState is what compaction keeps in the Log between passes.
type cleanerState struct {
	// run serialises passes, so that Compact is safe to call concurrently
	// with itself, though the partition runs one at a time.
	run sync.Mutex

	// Guarded by Log.mu.
	firstDirty  int64  // the segments ending at or below it were cleaned by a pass since Open
	truncations uint64 // Log.truncations when firstDirty was set: a truncation makes it void
	horizon     int64  // earliest delete horizon of a batch that kept tombstones, in ms; 0 before any pass
}

// Compact runs one cleaning pass over the cleanable part of the log and
// returns what it did. It does nothing when the log's cleanup.policy does
// not include compact, or when no segment was appended to the cleanable part
// since the last pass and no kept tombstone has reached its delete horizon.
//
// Concurrency: Compact may run concurrently with Append, SyncTo, Truncate,
// ApplyRetention and readers, which it blocks only for the swap of each
// cleaned segment (a few renames and two directory syncs). Passes are
// serialised: a second call waits for the first. A truncation or retention
// that removes a segment the pass is cleaning makes the pass stop without
// error, leaving the log as it was; the next pass starts over.
//
// Restart: the cleaned state is in the segments. What Compact remembers
// between passes (which segments are clean) is lost, so the first pass
// after Open cleans the whole cleanable part.
func (l *Log) Compact() (CompactStats, error) {
	l.cleaner.run.Lock()
	defer l.cleaner.run.Unlock()
	p, err := l.planClean()
	if p == nil || err != nil {
		return CompactStats{}, err
	}
	c := &cleaner{l: l, p: p, horizon: math.MaxInt64}
	return c.clean()
}

// CleanableRatio returns Kafka's dirty ratio: the bytes of the cleanable
// segments that no pass has cleaned since Open, over the bytes of all
// cleanable segments, or 0 when there are none. After Open nothing is known
// to be clean, so it starts at 1 when there is anything to clean.
func (l *Log) CleanableRatio() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	clean, dirty := l.cleanableBytes(l.clock.Now().UnixMilli())
	if clean+dirty == 0 {
		return 0
	}
	return float64(dirty) / float64(clean+dirty)
}

// CompactionDue reports whether a pass of Compact is worth running now, as
// Kafka's cleaner manager picks logs: compaction is on and either the dirty
// ratio has reached minCleanableDirtyRatio (min.cleanable.dirty.ratio) with
// something dirty, or a tombstone kept by an earlier pass has reached its
// delete horizon (KIP-534).
func (l *Log) CompactionDue(minCleanableDirtyRatio float64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opts.Compact || l.writable() != nil {
		return false
	}
	now := l.clock.Now().UnixMilli()
	clean, dirty := l.cleanableBytes(now)
	if dirty > 0 && float64(dirty) >= minCleanableDirtyRatio*float64(clean+dirty) {
		return true
	}
	return clean > 0 && now >= l.cleaner.horizon
}

// cleanableCount returns how many of the oldest segments are cleanable: sealed,
// wholly below the last stable offset (which is at most the high
// watermark), and older than min.compaction.lag.ms. The caller holds l.mu.
func (l *Log) cleanableCount(now int64) int {
	n := 0
	stable := l.lastStableOffset()
	for n < len(l.segs)-1 {
		s, next := l.segs[n], l.segs[n+1]
		if next.base > stable {
			break
		}
		// An empty segment (no timestamp) is as old as can be.
		if lag := l.opts.MinCompactionLagMs; lag > 0 && s.maxTimestamp >= 0 && now-s.maxTimestamp < lag {
			break
		}
		n++
	}
	return n
}

// firstDirtyOffset returns the offset from which the log may hold
// uncleaned records. The caller holds l.mu.
func (l *Log) firstDirtyOffset() int64 {
	if l.cleaner.truncations != l.truncations {
		return 0
	}
	return l.cleaner.firstDirty
}

// cleanableBytes splits the bytes of the cleanable segments into clean and
// dirty ones. The caller holds l.mu.
func (l *Log) cleanableBytes(now int64) (clean, dirty int64) {
	first := l.firstDirtyOffset()
	for i, n := 0, l.cleanableCount(now); i < n; i++ {
		if l.segs[i+1].base <= first {
			clean += l.segs[i].size
		} else {
			dirty += l.segs[i].size
		}
	}
	return clean, dirty
}

// cleanPlan is the log as a pass found it: copies taken under Log.mu, so
// that the pass reads without it.
type cleanPlan struct {
	opts    Options
	now     int64  // ms
	gen     uint64 // Log.truncations
	segs    []*segment
	views   []segView // of segs, the sealed segments
	ends    []int64   // ends[i] is the base offset of the segment after segs[i]
	txnFile []bool    // txnFile[i] says segs[i] has a .txnindex
	active  segView
	n       int   // segs[:n] are cleanable
	dirty   int   // segs[dirty:n] are dirty
	first   int64 // the first dirty offset
}

// planClean snapshots the log for a pass, or returns nil when there is
// nothing to do.
func (l *Log) planClean() (*cleanPlan, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return nil, err
	}
	if !l.opts.Compact {
		return nil, nil
	}
	now := l.clock.Now().UnixMilli()
	p := &cleanPlan{
		opts: l.opts, now: now, gen: l.truncations,
		segs:   slices.Clone(l.segs[:len(l.segs)-1]),
		active: l.active().view(),
		n:      l.cleanableCount(now),
		first:  l.firstDirtyOffset(),
	}
	for i, s := range p.segs {
		p.views = append(p.views, s.view())
		p.ends = append(p.ends, l.segs[i+1].base)
		p.txnFile = append(p.txnFile, s.txnFile)
	}
	p.dirty = p.n
	for i := 0; i < p.n; i++ {
		if p.ends[i] > p.first {
			p.dirty = i
			break
		}
	}
	if p.n == 0 || (p.dirty == p.n && now < l.cleaner.horizon) {
		return nil, nil
	}
	return p, nil
}

// cleaner is one pass.
type cleaner struct {
	l *Log
	p *cleanPlan

	dec       Decompressor
	keys      map[[16]byte]int64       // key digest → newest offset in the dirty part
	producers map[int64]lastOfProducer // producer id → what rule 3 keeps of it
	txns      *txnTracker              // rule 5, over the pass's groups
	horizon   int64                    // earliest delete horizon of a kept batch with tombstones or a removable marker
	from      int                      // segs[from:] are not swapped yet

	cleanedTxns []AbortedTxn // the index entries the group being cleaned keeps

	rbuf    []byte // read-ahead over a segment
	out     []byte // cleaned bytes not yet written
	scratch []byte // a rebuilt batch
	arena   []byte // the kept records' bytes, one batch at a time
	kept    []keptRecord
	recs    []Record

	stats CompactStats
}

// keptRecord is a record a batch keeps; its byte fields are spans of the
// cleaner's arena.
type keptRecord struct {
	attrs               int8
	timestamp           int64
	offsetDelta         int32
	key, value, headers span
	numHeaders          int32
}

// span is a slice of the arena; n is -1 for nil.
type span struct{ off, n int }

func (c *cleaner) clean() (CompactStats, error) {
	p := c.p
	end, err := c.buildOffsetMap()
	if err != nil {
		return c.stats, c.abort(err)
	}
	if err := c.scanProducers(); err != nil {
		return c.stats, c.abort(err)
	}
	// Rule 5: the transactions of the whole range the pass rewrites, one
	// tracker across its groups, as they follow one another.
	c.txns = newTxnTracker(p.abortedTxns(p.views[0].base, p.ends[end-1]))
	for _, g := range groupSegments(p, end) {
		ok, err := c.cleanGroup(g[0], g[1])
		if err != nil {
			return c.stats, c.abort(err)
		}
		if !ok {
			return c.stats, nil // the log changed under the pass: the next one starts over
		}
		c.from = g[1]
	}
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncations == p.gen {
		st := &l.cleaner
		st.firstDirty = max(p.first, p.ends[end-1])
		st.truncations = p.gen
		st.horizon = c.horizon
	}
	return c.stats, nil
}

// abort returns the error to report for err, which stopped the pass: none
// when the log changed under the pass, since reading a segment that
// retention or a truncation took away may fail, and the next pass starts
// over anyway.
func (c *cleaner) abort(err error) error {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if werr := l.writable(); werr != nil {
		return werr
	}
	if l.truncations != c.p.gen {
		return nil
	}
	for _, s := range c.p.segs[c.from:] {
		if !slices.Contains(l.segs, s) {
			return nil
		}
	}
	return fmt.Errorf("store: compact %s: %w", l.dir, err)
}

// buildOffsetMap maps the keys of the dirty segments to their newest
// offsets, skipping aborted transactions (rule 5), and returns how many
// segments the pass cleans: all the cleanable ones, or fewer when the map
// filled up.
func (c *cleaner) buildOffsetMap() (int, error) {
	p := c.p
	c.keys = make(map[[16]byte]int64)
	if p.dirty == p.n {
		return p.n, nil
	}
	txns := newTxnTracker(p.abortedTxns(p.views[p.dirty].base, p.ends[p.n-1]))
	for i := p.dirty; i < p.n; i++ {
		if i > p.dirty && len(c.keys) >= maxCleanerKeys {
			return i, nil
		}
		err := c.eachBatch(p.views[i], func(b []byte, h Header) error {
			if h.Control() {
				// Markers' keys are not the user's keys; an abort marker
				// ends its producer's aborted transaction.
				typ, ok, err := markerType(b, &c.dec)
				if err != nil {
					return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
				}
				txns.onMarker(&h, typ, ok)
				return nil
			}
			if txns.onData(&h) {
				return nil // aborted: its records supersede nothing
			}
			return ForEachRecord(b, &c.dec, func(r *Record) error {
				if r.Key != nil {
					c.keys[keyDigest(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
				}
				return nil
			})
		})
		if err != nil {
			return 0, err
		}
	}
	return p.n, nil
}

func keyDigest(key []byte) (d [16]byte) {
	sum := sha256.Sum256(key)
	copy(d[:], sum[:])
	return d
}

// lastOfProducer is what rule 3 keeps of a producer: the producer state
// Kafka keeps for it (ProducerStateEntry), its latest epoch and the last
// offset of its last data batch in that epoch.
type lastOfProducer struct {
	epoch    int16
	lastData int64 // -1 when it wrote no data in epoch
}

// scanProducers finds the last batches of every producer id in the whole
// log (rule 3), reading batch headers only. Batches appended during the
// pass may make another one the last: the one kept is then kept
// needlessly, which is harmless.
func (c *cleaner) scanProducers() error {
	c.producers = make(map[int64]lastOfProducer)
	var buf [HeaderSize]byte
	for _, v := range append(c.p.views[:len(c.p.views):len(c.p.views)], c.p.active) {
		for pos := int64(0); pos < v.size; {
			h, err := readHeader(v.log, pos, v.size, &buf)
			if err != nil {
				return err
			}
			if h.ProducerID >= 0 {
				// As Kafka's producer state: a new epoch forgets the
				// batches of the old one.
				p, ok := c.producers[h.ProducerID]
				if !ok || p.epoch != h.ProducerEpoch {
					p = lastOfProducer{epoch: h.ProducerEpoch, lastData: -1}
				}
				if !h.Control() {
					p.lastData = h.LastOffset()
				}
				c.producers[h.ProducerID] = p
			}
			pos += h.Size()
		}
	}
	return nil
}

// isLastOfProducer reports whether rule 3 keeps batch h, at least empty,
// for its producer's state (Kafka's isBatchLastRecordOfProducer).
func (c *cleaner) isLastOfProducer(h *Header) bool {
	if h.ProducerID < 0 {
		return false
	}
	p, ok := c.producers[h.ProducerID]
	switch {
	case !ok:
		return false
	case p.lastData >= 0:
		return !h.Control() && h.LastOffset() == p.lastData
	}
	return h.Control() && h.ProducerEpoch == p.epoch
}

// groupSegments splits segs[:end] into runs of adjacent segments to clean
// into one, as Kafka's groupSegmentsBySize: while their sizes add up to at
// most segment.bytes, their offset and time indexes each to at most
// segment.index.bytes, and their offsets stay within 2^31-1 of the first
// segment's base (relative offsets in the index and recovery's bound).
func groupSegments(p *cleanPlan, end int) [][2]int {
	var groups [][2]int
	limit := min(p.opts.SegmentBytes, math.MaxInt32)
	for i := 0; i < end; {
		first := &p.views[i]
		size, isz, tsz := first.size, first.index.n*offsetEntrySize, first.timeIndex.n*timeEntrySize
		j := i + 1
		for ; j < end; j++ {
			v := &p.views[j]
			if size+v.size > limit ||
				isz+v.index.n*offsetEntrySize > int(p.opts.SegmentIndexBytes) ||
				tsz+v.timeIndex.n*timeEntrySize > int(p.opts.SegmentIndexBytes) ||
				(v.size > 0 && v.next-1-first.base > math.MaxInt32) {
				break
			}
			size, isz, tsz = size+v.size, isz+v.index.n*offsetEntrySize, tsz+v.timeIndex.n*timeEntrySize
		}
		groups = append(groups, [2]int{i, j})
		i = j
	}
	return groups
}

// eachBatch calls fn with each batch of segment v in order, its CRC
// checked: the cleaner must not launder a corrupt batch into a rebuilt one
// with a fresh CRC. b is valid only during the call.
func (c *cleaner) eachBatch(v segView, fn func(b []byte, h Header) error) error {
	buf := c.rbuf[:0]
	bufPos := int64(0)
	// fill makes buf hold at least need bytes from pos, reading ahead.
	fill := func(pos, need int64) error {
		n := min(max(need, cleanerWriteSize), v.size-pos)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
			c.rbuf = buf
		}
		buf, bufPos = buf[:n], pos
		k, err := v.log.ReadAt(buf, pos)
		if k < len(buf) {
			// The file is shorter than the view says: a truncation cut it
			// under the pass.
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		return nil
	}
	for pos := int64(0); pos < v.size; {
		if v.size-pos < HeaderSize {
			return corruptf("segment %d: %d bytes at position %d, less than a batch header", v.base, v.size-pos, pos)
		}
		if pos+HeaderSize > bufPos+int64(len(buf)) {
			if err := fill(pos, HeaderSize); err != nil {
				return err
			}
		}
		h, err := ParseHeader(buf[pos-bufPos:])
		if err != nil {
			return err
		}
		if h.Size() > v.size-pos {
			return corruptf("segment %d: batch at position %d claims %d bytes, %d left", v.base, pos, h.Size(), v.size-pos)
		}
		if pos+h.Size() > bufPos+int64(len(buf)) {
			if err := fill(pos, h.Size()); err != nil {
				return err
			}
		}
		b := buf[pos-bufPos : pos-bufPos+h.Size()]
		if err := CheckCRC(b); err != nil {
			return fmt.Errorf("segment %d, offset %d: %w", v.base, h.BaseOffset, err)
		}
		if err := fn(b, h); err != nil {
			return err
		}
		pos += h.Size()
	}
	return nil
}

// cleanGroup cleans segs[from:to] into one segment and swaps it in. It
// returns false when the log changed and the pass must stop.
func (c *cleaner) cleanGroup(from, to int) (bool, error) {
	p, l := c.p, c.l
	var before int64
	for _, v := range p.views[from:to] {
		before += v.size
	}
	if before == 0 {
		return true, nil // only empty segments: nothing to write
	}
	s, err := createCleanedSegment(l.fs, l.dir, p.views[from].base)
	if err != nil {
		return false, err
	}
	swapping := false
	defer func() {
		if !swapping {
			s.close()
			removeSegmentFiles(l.fs, s, cleanedSuffix)
		}
	}()

	changed := to-from > 1
	c.cleanedTxns = c.cleanedTxns[:0]
	var removed int64
	var dropped *Header // the last batch, when it was dropped whole
	for i := from; i < to; i++ {
		err := c.eachBatch(p.views[i], func(b []byte, h Header) error {
			out, n, err := c.filter(b, h)
			if err != nil {
				return err
			}
			removed += n
			if out == nil || len(out) != len(b) || &out[0] != &b[0] {
				changed = true
			}
			if out == nil {
				dropped = &h
				return nil
			}
			dropped = nil
			return c.write(s, out)
		})
		if err != nil {
			return false, err
		}
	}
	if dropped != nil {
		// Rule 3: the segment must end where its originals did.
		out, err := c.placeholder(*dropped)
		if err != nil {
			return false, err
		}
		if err := c.write(s, out); err != nil {
			return false, err
		}
	}
	if err := c.flush(s); err != nil {
		return false, err
	}
	if !changed {
		return true, nil // one segment, as it was: leave it
	}
	if len(c.cleanedTxns) > 0 || p.txnFile[from] {
		// Empty when only the original has one: see Crash safety.
		if err := s.writeCleanedTxns(l.fs, c.cleanedTxns); err != nil {
			return false, err
		}
	}
	if err := s.seal(); err != nil {
		return false, err
	}
	swapping = true
	counts := make([]int, 0, to-from)
	for _, v := range p.views[from:to] {
		counts = append(counts, len(v.txns))
	}
	ok, err := l.swapCleaned(p.segs[from:to], counts, s, p.gen)
	if ok {
		c.stats.SegmentsCleaned += to - from
		c.stats.BytesBefore += before
		c.stats.BytesAfter += s.size
		c.stats.RecordsRemoved += removed
	}
	return ok, err
}

// filter decides what the cleaned segment keeps of batch b: b itself, a
// rebuilt batch (valid until the next call), or nil. It returns how many
// records went.
func (c *cleaner) filter(b []byte, h Header) (out []byte, removed int64, err error) {
	if h.Control() {
		return c.filterMarker(b, h)
	}
	if c.txns.onData(&h) {
		// Rule 5: an aborted transaction's records all go.
		if c.isLastOfProducer(&h) {
			out, err = c.retainEmpty(b, h)
			c.txns.kept(&h)
		}
		return out, int64(h.NumRecords), err
	}
	c.kept, c.arena = c.kept[:0], c.arena[:0]
	all, tombstones := true, false
	retainDeletes := !h.DeleteHorizon() || c.p.now < h.BaseTimestamp
	err = ForEachRecord(b, &c.dec, func(r *Record) error {
		keep := r.Key != nil
		if keep {
			latest, ok := c.keys[keyDigest(r.Key)]
			keep = !ok || h.BaseOffset+int64(r.OffsetDelta) >= latest
		}
		if keep && r.Value == nil && !retainDeletes {
			keep = false
		}
		if !keep {
			all = false
			return nil
		}
		tombstones = tombstones || r.Value == nil
		c.keep(h, r)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	removed = int64(h.NumRecords) - int64(len(c.kept))
	setHorizon := tombstones && !h.DeleteHorizon()
	horizon := h.BaseTimestamp
	if setHorizon {
		horizon = satAdd(c.p.now, c.p.opts.DeleteRetentionMs)
	}
	if tombstones {
		c.horizon = min(c.horizon, horizon)
	}
	switch {
	case all && !setHorizon:
		out = b
	case len(c.kept) > 0:
		out, err = c.rebuild(h, setHorizon, horizon)
	case c.isLastOfProducer(&h):
		out, err = c.emptyBatch(h)
	}
	if out != nil && h.Transactional() {
		c.txns.kept(&h)
	}
	return out, removed, err
}

// keep adds record r of batch h to the records the batch keeps.
func (c *cleaner) keep(h Header, r *Record) {
	c.kept = append(c.kept, keptRecord{
		attrs:       r.Attributes,
		timestamp:   h.BaseTimestamp + r.TimestampDelta,
		offsetDelta: r.OffsetDelta,
		key:         c.save(r.Key),
		value:       c.save(r.Value),
		numHeaders:  r.NumHeaders,
		headers:     c.save(r.Headers),
	})
}

// save copies b into the arena.
func (c *cleaner) save(b []byte) span {
	if b == nil {
		return span{n: -1}
	}
	s := span{off: len(c.arena), n: len(b)}
	c.arena = append(c.arena, b...)
	return s
}

func (c *cleaner) bytes(s span) []byte {
	if s.n < 0 {
		return nil
	}
	return c.arena[s.off : s.off+s.n : s.off+s.n]
}

// rebuild builds batch h anew with the kept records (rule 3), setting its
// delete horizon if asked (rule 4).
func (c *cleaner) rebuild(h Header, setHorizon bool, horizon int64) ([]byte, error) {
	nh := h
	if setHorizon {
		nh.Attributes |= attrDeleteHorizon
		nh.BaseTimestamp = horizon
	}
	if !h.LogAppendTime() {
		nh.MaxTimestamp = math.MinInt64
	}
	c.recs = c.recs[:0]
	for i := range c.kept {
		k := &c.kept[i]
		if !h.LogAppendTime() {
			nh.MaxTimestamp = max(nh.MaxTimestamp, k.timestamp)
		}
		c.recs = append(c.recs, Record{
			Attributes:     k.attrs,
			TimestampDelta: k.timestamp - nh.BaseTimestamp,
			OffsetDelta:    k.offsetDelta,
			Key:            c.bytes(k.key),
			Value:          c.bytes(k.value),
			NumHeaders:     k.numHeaders,
			Headers:        c.bytes(k.headers),
		})
	}
	var err error
	c.scratch, err = AppendBatch(c.scratch[:0], nh, c.recs, h.Codec())
	return c.scratch, err
}

// emptyBatch builds the header-only batch that stands for batch h when all
// its records went but the batch must stay (rule 3): Kafka's
// writeEmptyHeader, uncompressed, both timestamps h's MaxTimestamp, no
// delete horizon.
func (c *cleaner) emptyBatch(h Header) ([]byte, error) {
	nh := h
	nh.Attributes &^= attrCodecMask | attrDeleteHorizon
	nh.BaseTimestamp = h.MaxTimestamp
	var err error
	c.scratch, err = AppendBatch(c.scratch[:0], nh, nil, CodecNone)
	return c.scratch, err
}

// write appends batch b to the cleaned segment s and indexes it.
func (c *cleaner) write(s *segment, b []byte) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	pos := s.size + int64(len(c.out))
	if pos+h.Size() > math.MaxInt32 {
		return fmt.Errorf("store: compact %s: cleaned segment %d would pass 2 GiB", c.l.dir, s.base)
	}
	c.out = append(c.out, b...)
	s.indexBatch(&h, pos, &c.p.opts)
	if len(c.out) >= cleanerWriteSize {
		return c.flush(s)
	}
	return nil
}

func (c *cleaner) flush(s *segment) error {
	if len(c.out) == 0 {
		return nil
	}
	if _, err := s.log.WriteAt(c.out, s.size); err != nil {
		return err
	}
	s.size += int64(len(c.out))
	c.out = c.out[:0]
	return nil
}

// satAdd returns a+b for b >= 0, capped at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// createCleanedSegment creates the .cleaned files of a segment at base.
func createCleanedSegment(fsys vfs.FS, dir string, base int64) (s *segment, err error) {
	s = &segment{base: base, dir: dir, next: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1, lastIndexedTimestamp: -1}
	defer func() {
		if err != nil {
			s.close()
			removeSegmentFiles(fsys, s, cleanedSuffix)
		}
	}()
	for _, f := range []struct {
		file   *vfs.File
		suffix string
	}{{&s.log, logSuffix}, {&s.idx, indexSuffix}, {&s.tidx, timeIndexSuffix}} {
		if *f.file, err = fsys.Create(s.path(f.suffix + cleanedSuffix)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// removeSegmentFiles removes the files of s that carry suffix after their
// segment suffix, and reports the first failure other than a missing file.
func removeSegmentFiles(fsys vfs.FS, s *segment, suffix string) error {
	var first error
	for _, sfx := range segmentSuffixes {
		if err := fsys.Remove(s.path(sfx + suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// swapCleaned replaces the segments old, adjacent in the log, with the
// cleaned and sealed segment s, whose files still have the .cleaned suffix
// (steps 2 to 4 of the Swap section). It takes ownership of s. It returns
// false without error when the log no longer holds old as they were (with
// txns[i] aborted-transaction entries in old[i]: an entry added since the
// pass read them would be lost), or a truncation ran since the pass began
// (gen): s is then deleted.
func (l *Log) swapCleaned(old []*segment, txns []int, s *segment, gen uint64) (installed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	discard := func() error {
		s.close()
		err := removeSegmentFiles(l.fs, s, cleanedSuffix)
		if serr := removeSegmentFiles(l.fs, s, swapSuffix); err == nil {
			err = serr
		}
		return err
	}
	if err := l.writable(); err == nil {
		err = l.prepareWrite()
	}
	if err := l.writable(); err != nil {
		discard()
		return false, err
	}
	i := slices.Index(l.segs, old[0])
	same := l.truncations == gen && i >= 0 && i+len(old) < len(l.segs) && slices.Equal(l.segs[i:i+len(old)], old)
	for k := 0; same && k < len(old); k++ {
		same = len(old[k].txns) == txns[k]
	}
	if !same {
		discard()
		return false, nil
	}

	// The commit: once the .log.swap is durable, a crash finishes the swap.
	for _, sfx := range s.suffixes() {
		if err := l.fs.Rename(s.path(sfx+cleanedSuffix), s.path(sfx+swapSuffix)); err != nil {
			// Not committed. The files must go, a .log.swap above all
			// (had the rename happened after all), before any later
			// directory sync could make it durable.
			if derr := discard(); derr != nil {
				return false, l.fail("compact: remove swap files", derr)
			}
			return false, err
		}
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		s.close()
		return false, l.fail("compact: sync directory", err)
	}

	// Committed: from here a failure leaves the rest to the replay on Open.
	for _, o := range old {
		for _, sfx := range o.suffixes() {
			if err := l.fs.Rename(o.path(sfx), o.path(sfx+deletedSuffix)); err != nil {
				s.close()
				return false, l.fail("compact: retire segment", err)
			}
		}
	}
	for _, sfx := range s.suffixes() {
		if err := l.fs.Rename(s.path(sfx+swapSuffix), s.path(sfx)); err != nil {
			s.close()
			return false, l.fail("compact: rename swap file", err)
		}
	}
	// As retire does: old views read the originals' open files until the
	// file delete delay has passed.
	due := l.clock.Now().Add(time.Duration(l.opts.FileDeleteDelayMs) * time.Millisecond)
	for _, o := range old {
		l.deleted = append(l.deleted, deletedSegment{seg: o, due: due})
	}
	segs := make([]*segment, 0, len(l.segs)-len(old)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, s)
	l.segs = append(segs, l.segs[i+len(old):]...)
	l.rebuildClosed()
	l.publish()
	if err := syncDir(l.fs, l.dir); err != nil {
		return true, l.fail("compact: sync directory", err)
	}
	if s.txnFile && len(s.txns) == 0 {
		// Written empty only for a crash to tell it from the original's.
		// A crash that brings it back is harmless: Open deletes it.
		if err := l.fs.Remove(s.path(txnIndexSuffix)); err == nil || errors.Is(err, fs.ErrNotExist) {
			s.txnFile = false
		}
	}
	return true, nil
}

// recoverSwaps deals with what a crash left of compaction swaps (see Crash
// safety) before Open reads the segments, and returns the directory's
// names as they are afterwards:
//
//   - *.cleaned files, and index *.swap files whose .log.swap is not there,
//     belong to a swap that was not committed: they are deleted;
//   - a <base>.log.swap was committed: the segments whose base offsets fall
//     within its range go, and it takes its final name. Its index .swap
//     files do too when they are there; when one is not, the file under the
//     final name may be the original's, so it is deleted and recovery
//     rebuilds it. A .txnindex under the final name without a .swap is
//     the cleaned one, and stays.
func (l *Log) recoverSwaps(names []string) ([]string, error) {
	var swaps, bases []int64
	var garbage []string
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			garbage = append(garbage, name)
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix)); ok {
				swaps = append(swaps, base)
			}
		default:
			if base, ok := parseSegmentName(name); ok {
				bases = append(bases, base)
			}
		}
	}
	for _, name := range names {
		if strings.HasSuffix(name, swapSuffix) && !strings.HasSuffix(name, logSuffix+swapSuffix) {
			stem, _, _ := strings.Cut(name, ".")
			base, err := strconv.ParseInt(stem, 10, 64)
			if err != nil || !slices.Contains(swaps, base) {
				garbage = append(garbage, name)
			}
		}
	}
	if len(garbage) == 0 && len(swaps) == 0 {
		return names, nil
	}
	for _, name := range garbage {
		if err := l.fs.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	slices.Sort(swaps)
	for _, base := range swaps {
		next, err := l.swapEnd(base)
		if err != nil {
			return nil, err
		}
		for _, b := range bases {
			if b <= base || b >= next {
				continue
			}
			for _, sfx := range segmentSuffixes {
				if err := l.fs.Remove(l.path(segmentName(b, sfx))); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
			}
		}
		for _, sfx := range segmentSuffixes {
			final := l.path(segmentName(base, sfx))
			err := l.fs.Rename(l.path(segmentName(base, sfx+swapSuffix)), final)
			if errors.Is(err, fs.ErrNotExist) && sfx != logSuffix && sfx != txnIndexSuffix {
				// The file under the final name may be the original's:
				// recovery rebuilds the index. (A .txnindex under the
				// final name is the cleaned one: see Crash safety.)
				err = l.fs.Remove(final)
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return nil, err
	}
	return l.fs.List(l.dir)
}

// swapEnd returns the offset after the last whole batch of the segment file
// <base>.log.swap: the end of the range of offsets it replaces.
func (l *Log) swapEnd(base int64) (int64, error) {
	f, err := l.fs.Open(l.path(segmentName(base, logSuffix+swapSuffix)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := fileSize(f)
	if err != nil {
		return 0, err
	}
	next := base
	var buf [HeaderSize]byte
	for pos := int64(0); pos < size; {
		h, err := readHeader(f, pos, size, &buf)
		if errors.Is(err, ErrCorrupt) {
			break // it was synced whole: recovery will find what went wrong
		}
		if err != nil {
			return 0, err
		}
		next = h.NextOffset()
		pos += h.Size()
	}
	return next, nil
}
