package store

import (
	"fmt"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// Appending several record sets with one write.
//
// The partition actor takes every Append waiting in its mailbox at once.
// It stages each record set (Stage: offsets assigned, headers rewritten,
// nothing written), deciding the next one's fate on the offsets the
// previous got, then writes them all with WriteStaged: one vectored write
// per segment they land in and per MiB, instead of one write each. On Linux a write
// into the page cache costs per call as well as per byte (the filesystem
// reserves and maps blocks, and dirties pages, call by call), so small
// record sets cost less written together.
//
// Until WriteStaged returns, staged sets are not in the log: the log end
// offset, views and syncs do not count them.

// maxWriteBytes bounds a vectored write of several record sets (a single
// larger set is written alone). Past about 1 MiB a write into the page
// cache costs per byte only, so longer vectors save nothing, and hold the
// log's mutex longer. NB: on the shared test VM (virtio-balloon free page
// reporting), writes of 2 MiB and more, whose page-cache folios are 2 MiB,
// cost three to four times as much per byte as 1 MiB ones: the kernel
// gives them memory that the host took back, which faults on first touch.
// Record sets of 1 MiB (1 KiB values, franz-go's default batch size)
// coalesced two and three at a time cost 18% more broker CPU per GB there.
const maxWriteBytes = 1 << 20

// stagedSet is a record set that Stage gave offsets to.
type stagedSet struct {
	records []byte
	last    int64 // offset of its last record
	count   int64 // records in it, for flush.messages
}

// Stage assigns offsets to a record set as Append does, after those of any
// record sets already staged, rewriting its headers in place, and keeps it
// for the next WriteStaged, which writes it. The log holds records until
// then: the caller must not change or reuse them before WriteStaged
// returns. An error means nothing was staged (other staged sets stay).
//
// The writer calls WriteStaged after staging, before it calls any other
// method that changes the log: truncating under staged offsets would hand
// the same offsets out twice, so Truncate and TruncateFullyAndStartAt
// panic when record sets are staged, and Close drops them.
func (l *Log) Stage(records []byte, leaderEpoch int32) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stage(records, leaderEpoch, true)
}

// WriteStaged writes every staged record set, in order, and publishes
// them: the log end offset moves past them. The records are in the file,
// not yet durable: wait with SyncTo for that. An error fails the log (some
// of the sets may be in the file): nothing staged is acknowledged, and
// every staged set is dropped.
func (l *Log) WriteStaged() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeStaged()
}

// mustHaveNoneStaged panics if record sets are staged: the writer broke
// the contract of Stage, and what follows would reuse their offsets.
func (l *Log) mustHaveNoneStaged() {
	if len(l.staged) > 0 {
		panic(fmt.Sprintf("store: %d record sets staged in %s and not written", len(l.staged), l.dir))
	}
}

// nextOffset is the offset the next staged record gets.
func (l *Log) nextOffset() int64 {
	if n := len(l.staged); n > 0 {
		return l.staged[n-1].last + 1
	}
	return l.leo
}

// stage checks a record set's batch framing and gives it offsets: from the
// next offset when assign is set (a leader), else its own, which must not
// go back (a follower). Called with mu held.
func (l *Log) stage(records []byte, leaderEpoch int32, assign bool) (AppendResult, error) {
	if err := l.writable(); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{BaseOffset: -1, LogAppendTime: -1}
	next := l.nextOffset()
	var count int64
	for pos := 0; pos < len(records); {
		if len(records)-pos < HeaderSize {
			return AppendResult{}, corruptf("record set ends in a partial batch header")
		}
		h, err := ParseHeader(records[pos:])
		if err != nil {
			return AppendResult{}, err
		}
		end := pos + int(h.Size())
		if end > len(records) {
			return AppendResult{}, corruptf("record set ends in a partial batch")
		}
		b := records[pos:end]
		if assign {
			SetBaseOffset(b, next)
			SetPartitionLeaderEpoch(b, leaderEpoch)
			if l.opts.LogAppendTime {
				if res.LogAppendTime < 0 {
					res.LogAppendTime = l.clock.Now().UnixMilli()
				}
				SetLogAppendTime(b, res.LogAppendTime)
			}
		} else if h.BaseOffset < next {
			return AppendResult{}, fmt.Errorf("%w: follower batch at offset %d is below the log end offset %d", ErrInvalidRecord, h.BaseOffset, next)
		} else {
			next = h.BaseOffset
		}
		if res.BaseOffset < 0 {
			res.BaseOffset = next
		}
		next += int64(h.LastOffsetDelta) + 1
		count += int64(h.NumRecords)
		pos = end
	}
	if res.BaseOffset < 0 {
		return AppendResult{}, corruptf("empty record set")
	}
	res.LastOffset = next - 1
	res.LogStartOffset = l.lso
	l.staged = append(l.staged, stagedSet{records: records, last: res.LastOffset, count: count})
	return res, nil
}

// writeStaged writes the staged sets: into the active segment while they
// fit (the same test as one Append each), rolling between sets where one
// does not, one write per segment. Called with mu held.
func (l *Log) writeStaged() error {
	if len(l.staged) == 0 {
		return nil
	}
	defer func() {
		clear(l.staged) // keep no records reachable
		l.staged = l.staged[:0]
	}()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.prepareWrite(); err != nil {
		return err
	}
	now := l.clock.Now()
	sets := l.staged
	for len(sets) > 0 {
		if !l.active().fits(int64(len(sets[0].records)), sets[0].last, now, &l.opts) {
			if err := l.roll(); err != nil {
				return err
			}
		}
		// NB: any failure from here on fails the log: the writer counts
		// every staged set (its producer state), so none may be dropped
		// while the log goes on.
		if err := l.active().pin(); err != nil {
			return l.fail("open the active segment", err)
		}
		n := l.indexStaged(sets, now)
		if err := l.writeSets(sets[:n], now); err != nil {
			return err
		}
		sets = sets[n:]
	}
	l.publish()
	return nil
}

// indexStaged takes into the active segment's size and in-memory indexes
// the first sets that fit into it, one after the other, up to
// maxWriteBytes, and returns how many (at least one: the caller rolled for
// the first). Nothing is written yet; nothing is published before
// writeSets has written them, and a failed write fails the log, so readers
// never see entries for bytes not in the file.
func (l *Log) indexStaged(sets []stagedSet, now time.Time) int {
	s := l.active()
	size := 0
	for i, set := range sets {
		size += len(set.records)
		if i > 0 && (size > maxWriteBytes || !s.fits(int64(len(set.records)), set.last, now, &l.opts)) {
			return i
		}
		if s.size == 0 {
			s.firstAppend = now
		}
		for pos := 0; pos < len(set.records); {
			h, _ := ParseHeader(set.records[pos:]) // parsed by stage
			s.indexBatch(&h, s.size+int64(pos), &l.opts)
			pos += int(h.Size())
		}
		s.size += int64(len(set.records))
	}
	return len(sets)
}

// writeSets writes sets, already indexed, at the end of the active segment
// with one vectored write, then records the first batch of any new leader
// epoch among them (KIP-101) and moves the log end offset past them.
func (l *Log) writeSets(sets []stagedSet, now time.Time) error {
	s := l.active()
	l.iov = l.iov[:0]
	var size int64
	for _, set := range sets {
		l.iov = append(l.iov, set.records)
		size += int64(len(set.records))
	}
	s.preallocate(s.size-size, s.size, &l.opts)
	_, err := vfs.WritevAt(s.log, l.iov, s.size-size)
	clear(l.iov)
	if err != nil {
		// Part of the record sets may be in the file: nothing is
		// acknowledged, and the log refuses further writes until reopened
		// and recovered.
		return l.fail("write", err)
	}
	for _, set := range sets {
		for pos := 0; pos < len(set.records); {
			h, _ := ParseHeader(set.records[pos:]) // parsed by stage
			if h.PartitionLeaderEpoch > l.epochs.latestEpoch() {
				// The first batch of a new leader epoch: remember where it
				// started, durably, before anyone is told about it.
				if err := l.assignEpoch(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
					return err
				}
			}
			pos += int(h.Size())
		}
		l.leo = set.last + 1
		if l.unflushedRecords == 0 {
			l.oldestUnflushed = now
		}
		l.unflushedRecords += set.count
	}
	return nil
}
