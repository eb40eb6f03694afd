package store

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/skeinlog/skein/internal/vfs"
)

// View is an immutable picture of the log for readers: fetch handlers load it
// from Log.View and read without locks or messages while the writer goes on.
// The bytes a view points at stay valid while it is in use, as long as that
// is shorter than the file delete delay (file.delete.delay.ms): segments
// deleted by retention are closed only after it.
type View struct {
	closed []segView // sealed segments, by base offset
	active segView
	epochs []epochEntry // the leader epoch history; never written in place

	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	// LastStableOffset is Kafka's LSO: the first offset of the oldest
	// unfinished transaction, or the high watermark when there is none
	// (or when it is lower). A read_committed fetch reads below it.
	LastStableOffset int64
}

// segment returns the i-th segment, the active one last.
func (v *View) segment(i int) *segView {
	if i < len(v.closed) {
		return &v.closed[i]
	}
	return &v.active
}

func (v *View) numSegments() int { return len(v.closed) + 1 }

// Size returns the bytes of the log's segment files (batches only, not
// indexes), as DescribeLogDirs reports a partition's size.
func (v *View) Size() int64 {
	size := v.active.size
	for _, s := range v.closed {
		size += s.size
	}
	return size
}

// Segments returns the number of the log's segments, the active one
// included, for the admin API's per-partition metrics.
func (v *View) Segments() int { return v.numSegments() }

// find returns the index of the segment that holds offset: the last one
// whose base is at most offset.
func (v *View) find(offset int64) int {
	i := sort.Search(v.numSegments(), func(i int) bool { return v.segment(i).base > offset })
	return max(i-1, 0)
}

// Slice is a byte range of whole batches in a segment file, ready to be sent
// as it is (with sendfile where File has a descriptor).
type Slice struct {
	File vfs.File
	Pos  int64
	Size int64
	// FirstOffset is the base offset of the first batch; NextOffset the
	// offset after the last one. Both are 0 for an empty slice.
	FirstOffset, NextOffset int64
}

// ReadOptions bound a read.
type ReadOptions struct {
	// MaxBytes caps the slice's size.
	MaxBytes int64
	// MaxOffset is the exclusive upper bound: only batches that end at or
	// below it are returned (the high watermark for consumers, the log end
	// offset for followers).
	MaxOffset int64
	// MinOneBatch returns the first batch whole even when it is larger than
	// MaxBytes (KIP-74), so that a consumer can always make progress.
	MinOneBatch bool
}

// Read returns the batches starting with the one that holds offset. The
// slice is empty when offset is at or past MaxOffset or the log end.
// Reading below the log start offset or past the log end offset is
// ErrOffsetOutOfRange.
func (v *View) Read(offset int64, o ReadOptions) (Slice, error) {
	if offset < v.LogStartOffset || offset > v.LogEndOffset {
		return Slice{}, fmt.Errorf("%w: offset %d, log has [%d, %d)", ErrOffsetOutOfRange, offset, v.LogStartOffset, v.LogEndOffset)
	}
	maxOffset := min(o.MaxOffset, v.LogEndOffset)
	var buf [HeaderSize]byte
	for i := v.find(offset); i < v.numSegments(); i++ {
		s := v.segment(i)
		if offset >= maxOffset || s.base >= maxOffset {
			return Slice{}, nil
		}
		start, h, err := s.seek(offset, &buf)
		if errors.Is(err, io.EOF) {
			continue // compaction or an empty segment left nothing here at or after offset
		}
		if err != nil {
			return Slice{}, err
		}
		if h.NextOffset() > maxOffset {
			return Slice{}, nil
		}
		return s.slice(start, h, o.MaxBytes, maxOffset, o.MinOneBatch, &buf)
	}
	return Slice{}, nil
}

// seek returns the position and header of the first batch in the segment
// whose last offset is at least offset, or io.EOF.
func (s *segView) seek(offset int64, buf *[HeaderSize]byte) (int64, Header, error) {
	pos := int64(0)
	if offset > s.base {
		rel := offset - s.base
		if rel > 1<<32-1 {
			rel = 1<<32 - 1
		}
		p, err := s.index.lookupOffset(uint32(rel))
		if err != nil {
			return 0, Header{}, err
		}
		pos = p
	}
	for {
		h, err := readHeader(s.log, pos, s.size, buf)
		if err != nil {
			return 0, Header{}, err
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += h.Size()
	}
}

// slice extends a read from the batch h at start over the following batches
// while they fit in maxBytes and end at or below maxOffset. It jumps with
// the offset index to the last indexed batch that could still fit, so it
// reads only a few headers however large the slice.
func (s *segView) slice(start int64, h Header, maxBytes, maxOffset int64, minOne bool, buf *[HeaderSize]byte) (Slice, error) {
	out := Slice{File: s.log, Pos: start, FirstOffset: h.BaseOffset}
	if h.Size() > maxBytes {
		if !minOne {
			return Slice{}, nil
		}
		out.Size, out.NextOffset = h.Size(), h.NextOffset()
		return out, nil
	}
	// end and next describe the slice so far: it always holds batch h.
	end, next := start+h.Size(), h.NextOffset()
	limit := start + maxBytes
	if jump, ok, err := s.index.lookupPosition(limit); err != nil {
		return Slice{}, err
	} else if ok && jump > end {
		// The indexed batch at jump starts within the limit; take it if it
		// ends within both bounds, then walk on from there.
		jh, err := readHeader(s.log, jump, s.size, buf)
		if err != nil {
			return Slice{}, err
		}
		if jump+jh.Size() <= limit && jh.NextOffset() <= maxOffset {
			end, next = jump+jh.Size(), jh.NextOffset()
		}
	}
	for {
		nh, err := readHeader(s.log, end, s.size, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Slice{}, err
		}
		if end+nh.Size() > limit || nh.NextOffset() > maxOffset {
			break
		}
		end, next = end+nh.Size(), nh.NextOffset()
	}
	out.Size, out.NextOffset = end-start, next
	return out, nil
}

// ReadBytes is Read followed by reading the slice into memory; it is for
// tests and for callers that cannot use the file directly.
func (v *View) ReadBytes(offset int64, o ReadOptions) ([]byte, error) {
	sl, err := v.Read(offset, o)
	if err != nil || sl.Size == 0 {
		return nil, err
	}
	b := make([]byte, sl.Size)
	if _, err := sl.File.ReadAt(b, sl.Pos); err != nil {
		return nil, err
	}
	return b, nil
}

// OffsetForTimestamp returns the offset and timestamp of the first record
// whose timestamp is at least ts, as ListOffsets asks; found is false when
// there is none. dec decompresses batches that must be looked into.
func (v *View) OffsetForTimestamp(ts int64, dec *Decompressor) (offset, timestamp int64, found bool, err error) {
	var buf [HeaderSize]byte
	for i := 0; i < v.numSegments(); i++ {
		s := v.segment(i)
		if s.maxTimestamp < ts {
			continue
		}
		rel, err := s.timeIndex.lookupTime(ts)
		if err != nil {
			return 0, 0, false, err
		}
		pos, _, err := s.seek(s.base+int64(rel), &buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, false, err
		}
		for err == nil {
			var h Header
			h, err = readHeader(s.log, pos, s.size, &buf)
			if err != nil {
				break
			}
			if h.MaxTimestamp >= ts && h.BaseOffset >= v.LogStartOffset {
				return s.findTimestamp(pos, h, ts, dec)
			}
			pos += h.Size()
		}
		if !errors.Is(err, io.EOF) {
			return 0, 0, false, err
		}
	}
	return 0, 0, false, nil
}

// errFound stops a record walk that found what it looked for.
var errFound = errors.New("found")

// findTimestamp looks inside batch h at pos for its first record with a
// timestamp of at least ts. With LogAppendTime every record has the batch's.
func (s *segView) findTimestamp(pos int64, h Header, ts int64, dec *Decompressor) (int64, int64, bool, error) {
	if h.LogAppendTime() {
		return h.BaseOffset, h.MaxTimestamp, true, nil
	}
	b := make([]byte, h.Size())
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return 0, 0, false, err
	}
	var off, at int64 = -1, -1
	err := ForEachRecord(b, dec, func(r *Record) error {
		if t := h.BaseTimestamp + r.TimestampDelta; t >= ts {
			off, at = h.BaseOffset+int64(r.OffsetDelta), t
			return errFound
		}
		return nil
	})
	if off >= 0 {
		return off, at, true, nil
	}
	if err == nil {
		err = corruptf("batch at offset %d has max timestamp %d but no record at or after %d", h.BaseOffset, h.MaxTimestamp, ts)
	}
	return 0, 0, false, err
}

// MaxTimestamp returns the largest timestamp in the log and the offset of the
// record that carries it (ListOffsets with timestamp -3, KIP-734); found is
// false for an empty log.
func (v *View) MaxTimestamp(dec *Decompressor) (offset, timestamp int64, found bool, err error) {
	best := -1
	for i := 0; i < v.numSegments(); i++ {
		if s := v.segment(i); s.maxTimestamp >= 0 && (best < 0 || s.maxTimestamp > v.segment(best).maxTimestamp) {
			best = i
		}
	}
	if best < 0 {
		return 0, 0, false, nil
	}
	s := v.segment(best)
	var buf [HeaderSize]byte
	pos, h, err := s.seek(s.offsetOfMaxTimestamp, &buf)
	if err != nil {
		return 0, 0, false, err
	}
	return s.findTimestamp(pos, h, s.maxTimestamp, dec)
}
