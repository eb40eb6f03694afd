package store

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
)

// The two sparse indexes of a segment. Entries are fixed-size, big-endian
// (Kafka's layout, see doc.go) and monotonic in every field, so a lookup is a
// binary search.
//
// The active segment keeps its entries in memory (mem) and writes them to its
// files when it rolls, syncs for a clean shutdown, or closes: recovery
// rebuilds the indexes of every segment it rescans, so they need not reach
// the disk before the data does. A closed segment's entries are read from its
// trimmed, synced files with ReadAt, which costs a handful of page-cache reads
// per lookup and no memory.

const (
	offsetEntrySize = 8  // relative offset uint32, position uint32
	timeEntrySize   = 12 // timestamp int64, relative offset uint32
)

// indexView is an immutable window over one index: the first n entries of
// either an in-memory buffer or a file. Views share the buffer with the
// writer, which only ever appends past n or replaces the buffer.
type indexView struct {
	mem       []byte      // entries, when the segment is active
	file      io.ReaderAt // entries, when the segment is closed
	n         int         // number of entries
	entrySize int
}

// entry reads entry i into buf (at least entrySize bytes) and returns it.
func (v indexView) entry(i int, buf []byte) ([]byte, error) {
	off := i * v.entrySize
	if v.mem != nil {
		return v.mem[off : off+v.entrySize], nil
	}
	b := buf[:v.entrySize]
	if _, err := v.file.ReadAt(b, int64(off)); err != nil {
		return nil, fmt.Errorf("store: read index entry %d: %w", i, err)
	}
	return b, nil
}

// search returns the largest i whose entry satisfies !after(entry), that is
// the last entry at or before the target, or -1 when every entry is after it.
func (v indexView) search(after func(e []byte) bool) (int, error) {
	var buf [timeEntrySize]byte
	var err error
	i := sort.Search(v.n, func(i int) bool {
		if err != nil {
			return true
		}
		e, rerr := v.entry(i, buf[:])
		if rerr != nil {
			err = rerr
			return true
		}
		return after(e)
	})
	return i - 1, err
}

func offsetEntry(e []byte) (rel uint32, pos uint32) {
	return binary.BigEndian.Uint32(e[0:4]), binary.BigEndian.Uint32(e[4:8])
}

func timeEntry(e []byte) (ts int64, rel uint32) {
	return int64(binary.BigEndian.Uint64(e[0:8])), binary.BigEndian.Uint32(e[8:12])
}

func appendOffsetEntry(dst []byte, rel, pos uint32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, rel)
	return binary.BigEndian.AppendUint32(dst, pos)
}

func appendTimeEntry(dst []byte, ts int64, rel uint32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, rel)
}

// lookupOffset returns the position of the last indexed batch whose relative
// offset is at most rel, or 0 when there is none.
func (v indexView) lookupOffset(rel uint32) (pos int64, err error) {
	i, err := v.search(func(e []byte) bool { r, _ := offsetEntry(e); return r > rel })
	if err != nil || i < 0 {
		return 0, err
	}
	var buf [offsetEntrySize]byte
	e, err := v.entry(i, buf[:])
	if err != nil {
		return 0, err
	}
	_, p := offsetEntry(e)
	return int64(p), nil
}

// lookupPosition returns the last indexed batch start at or before pos, and
// its relative offset; ok is false when there is none.
func (v indexView) lookupPosition(pos int64) (start int64, ok bool, err error) {
	i, err := v.search(func(e []byte) bool { _, p := offsetEntry(e); return int64(p) > pos })
	if err != nil || i < 0 {
		return 0, false, err
	}
	var buf [offsetEntrySize]byte
	e, err := v.entry(i, buf[:])
	if err != nil {
		return 0, false, err
	}
	_, p := offsetEntry(e)
	return int64(p), true, nil
}

// lookupTime returns the relative offset of the last time-index entry whose
// timestamp is below ts (so that every batch with a timestamp of at least ts
// is at or after it), or 0 when there is none.
func (v indexView) lookupTime(ts int64) (rel uint32, err error) {
	i, err := v.search(func(e []byte) bool { t, _ := timeEntry(e); return t >= ts })
	if err != nil || i < 0 {
		return 0, err
	}
	var buf [timeEntrySize]byte
	e, err := v.entry(i, buf[:])
	if err != nil {
		return 0, err
	}
	_, r := timeEntry(e)
	return r, nil
}

// last returns the last entry, or nil when the index is empty.
func (v indexView) last(buf []byte) ([]byte, error) {
	if v.n == 0 {
		return nil, nil
	}
	return v.entry(v.n-1, buf)
}
