package share

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition/store"
)

// acquired is a record state that is never persisted: a consumer holds the
// record under a lock until it acknowledges it or the lock expires.
const acquired int8 = 1

// slot is one offset of the in-flight window.
type slot struct {
	state    int8  // Available, acquired, Acknowledged or Archived
	count    int16 // deliveries so far
	member   string
	deadline time.Time // the lock's expiry, while acquired
	// dirty marks a change not yet written to the share coordinator.
	dirty bool
}

// window is a share-partition's in-flight state (Kafka's SharePartition
// cached state): every offset from the share-partition start offset
// (SPSO) to end has a slot; everything below the SPSO is done (delivered
// and acknowledged, or archived), and nothing at or past end was read
// yet. Offsets without a record (compacted away, control batches,
// aborted transactions under read_committed) are archived when read, so
// that the SPSO moves past them.
//
// Concurrency: not safe for concurrent use; its actor owns it.
type window struct {
	start int64
	slots []slot // offsets start .. start+len(slots)-1
	// restored is the persisted state of offsets at or past end, from the
	// share coordinator, applied as the log is read past them.
	restored []StateBatch
	// startDirty is set when the SPSO moved since the last write.
	startDirty bool
}

func (w *window) end() int64 { return w.start + int64(len(w.slots)) }

// at returns the slot of an in-flight offset, nil outside the window.
func (w *window) at(o int64) *slot {
	if o < w.start || o >= w.end() {
		return nil
	}
	return &w.slots[o-w.start]
}

// reset starts the window at start with the persisted batches.
func (w *window) reset(start int64, batches []StateBatch) {
	w.start, w.slots, w.startDirty = start, nil, false
	w.restored = w.restored[:0]
	for _, b := range batches {
		if b.Last >= start {
			b.First = max(b.First, start)
			w.restored = append(w.restored, b)
		}
	}
	slices.SortFunc(w.restored, func(a, b StateBatch) int { return int(a.First - b.First) })
}

// restoredAt returns the persisted state of an offset not read yet.
func (w *window) restoredAt(o int64) (StateBatch, bool) {
	for len(w.restored) > 0 && w.restored[0].Last < o {
		w.restored = w.restored[1:]
	}
	if len(w.restored) > 0 && w.restored[0].First <= o {
		return w.restored[0], true
	}
	return StateBatch{}, false
}

// moveStart raises the SPSO to at least o (the log start moved past it:
// retention or DeleteRecords took those records).
func (w *window) moveStart(o int64) {
	if o <= w.start {
		return
	}
	if o >= w.end() {
		w.slots = w.slots[:0]
	} else {
		w.slots = w.slots[o-w.start:]
	}
	w.start, w.startDirty = o, true
}

// advance moves the SPSO past every finished offset at its head.
func (w *window) advance() {
	n := 0
	for n < len(w.slots) && (w.slots[n].state == Acknowledged || w.slots[n].state == Archived) {
		n++
	}
	if n > 0 {
		w.slots = w.slots[n:]
		w.start += int64(n)
		w.startDirty = true
	}
}

// limits are what bounds one acquisition.
type limits struct {
	member      string
	maxRecords  int
	maxBytes    int64
	lock        time.Duration
	countLimit  int16
	maxLocks    int  // group.share.partition.max.record.locks
	readCommitd bool // share.isolation.level=read_committed
	// wholeBatches finishes the log batch that reaches maxRecords
	// (ShareFetch's batch-optimized mode, Kafka's default): a fetch may
	// get more than maxRecords, never part of a batch it read anew.
	wholeBatches bool
}

// span is a run of acquired offsets with the same delivery count.
type span struct {
	first, last int64
	count       int16
}

// acquisition is what one Acquire took.
type acquisition struct {
	spans []span
	n     int
	// archived counts records archived instead of delivered (their
	// delivery count reached the limit).
	archived int
	// redelivered counts records delivered again.
	redelivered int
}

func (a *acquisition) add(o int64, count int16) {
	if k := len(a.spans) - 1; k >= 0 && a.spans[k].last == o-1 && a.spans[k].count == count {
		a.spans[k].last = o
	} else {
		a.spans = append(a.spans, span{o, o, count})
	}
	a.n++
}

// take acquires the slot for l.member, or archives it at the delivery
// limit; reports whether it was acquired.
func (a *acquisition) take(s *slot, o int64, l limits, now time.Time) bool {
	if s.count >= l.countLimit {
		s.state, s.dirty = Archived, true
		a.archived++
		return false
	}
	if s.count > 0 {
		a.redelivered++
	}
	s.state, s.member, s.deadline = acquired, l.member, now.Add(l.lock)
	s.count++
	a.add(o, s.count)
	return true
}

// acquire takes up to l.maxRecords available records (or, with
// wholeBatches, the rest of the log batch that reaches it): first those in the
// window that were released or whose lock expired, then new ones read
// from the log up to bound (the high watermark, or the last stable offset
// under read_committed), never holding more than l.maxLocks offsets in
// flight.
//
// A record on its last delivery attempt (delivery count limit-1, with a
// limit above 2) is delivered alone, as Kafka 4.2 does
// (SharePartition.acquireSubsetBatchRecords): an acquisition stops before
// it when it holds records already, and stops after it. So a consumer
// that fails a whole fetch because of one bad record has its other
// records delivered apart on their last attempt, and only the bad one is
// archived. NB: Kafka also narrows the records it redelivers from
// delivery ceil(limit/2) on, halving its in-flight batch at each
// further delivery; Skein has no in-flight batches and does not, which
// changes how many records a fetch gets, not their delivery counts or
// which are archived.
func (w *window) acquire(v *store.View, bound int64, l limits, now time.Time, dec *store.Decompressor) (acquisition, error) {
	var a acquisition
	alone := l.countLimit > 2
	for i := range w.slots {
		if a.n >= l.maxRecords {
			return a, nil
		}
		s := &w.slots[i]
		if s.state != Available {
			continue
		}
		last := alone && s.count == l.countLimit-1
		if last && a.n > 0 {
			return a, nil
		}
		if a.take(s, w.start+int64(i), l, now) && last {
			return a, nil
		}
	}
	var bytes int64
	for a.n < l.maxRecords && (a.n == 0 || bytes < l.maxBytes) {
		from := w.end()
		stop := min(bound, w.start+int64(l.maxLocks))
		if from >= stop || from < v.LogStartOffset {
			return a, nil
		}
		b, err := v.ReadBytes(from, store.ReadOptions{MaxBytes: 1 << 20, MaxOffset: bound, MinOneBatch: true})
		if err != nil || len(b) == 0 {
			return a, err
		}
		var aborted []store.AbortedTxn
		if l.readCommitd {
			aborted = v.AbortedTxns(from, stop)
		}
		err = store.ForEachBatch(b, func(batch []byte, h store.Header) error {
			if h.BaseOffset >= stop || a.n >= l.maxRecords || (a.n > 0 && bytes >= l.maxBytes) {
				return errStop
			}
			present, err := presentOffsets(batch, h, aborted, dec)
			if err != nil {
				return err
			}
			took := false
			for o := h.BaseOffset; o <= h.LastOffset() && o < stop; o++ {
				if o < w.end() {
					continue // read before, in part
				}
				if a.n >= l.maxRecords && !l.wholeBatches {
					break
				}
				s := slot{state: Archived} // a gap: nothing to deliver
				if present(o) {
					s.state = Available
					if r, ok := w.restoredAt(o); ok {
						s.state, s.count = r.State, r.Count
					}
				}
				w.slots = append(w.slots, s)
				if s.state == Available {
					took = a.take(&w.slots[len(w.slots)-1], o, l, now) || took
				}
			}
			if took {
				bytes += h.Size()
			}
			return nil
		})
		if err != nil && err != errStop {
			return a, err
		}
		if err == errStop {
			return a, nil
		}
	}
	return a, nil
}

// errStop ends a walk over batches early.
var errStop = errors.New("stop")

// presentOffsets says which offsets of a batch hold a record a consumer
// may get: none of a control batch or of an aborted transaction's batch;
// under compaction, only those whose records remain.
func presentOffsets(batch []byte, h store.Header, aborted []store.AbortedTxn, dec *store.Decompressor) (func(int64) bool, error) {
	if h.Control() || isAborted(h, aborted) {
		return func(int64) bool { return false }, nil
	}
	if h.NumRecords == h.LastOffsetDelta+1 {
		return func(int64) bool { return true }, nil
	}
	have := map[int64]bool{}
	err := store.ForEachRecord(batch, dec, func(r *store.Record) error {
		have[h.BaseOffset+int64(r.OffsetDelta)] = true
		return nil
	})
	return func(o int64) bool { return have[o] }, err
}

// isAborted reports whether a transactional batch belongs to a
// transaction that was aborted.
func isAborted(h store.Header, aborted []store.AbortedTxn) bool {
	if !h.Transactional() {
		return false
	}
	for _, t := range aborted {
		if t.ProducerID == h.ProducerID && t.FirstOffset <= h.BaseOffset && h.BaseOffset < t.LastOffset {
			return true
		}
	}
	return false
}

// Acknowledgement types (ShareAcknowledgeRequest.json).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// AckBatch acknowledges a range of offsets: Types has one type for the
// whole range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

func (b AckBatch) typeOf(o int64) int8 {
	if len(b.Types) == 1 {
		return b.Types[0]
	}
	return b.Types[o-b.First]
}

// ackCounts counts what an acknowledgement did, for metrics.
type ackCounts struct {
	accepted, released, rejected, renewed, archived int
}

// acknowledge applies a member's acknowledgements atomically: all of them
// or, on an error, none. The checks run in Kafka's order, so that a
// request wrong in two ways gets Kafka's code:
//
//  1. the request's form, every batch first (KafkaApis
//     validateAcknowledgementBatches), INVALID_REQUEST: first after
//     last, a batch starting before the previous one's last offset, no
//     types, neither one type nor one per offset, an unknown type, RENEW
//     outside a renew request. NB: a batch may start at the previous
//     one's last offset; that offset is then acknowledged twice, which
//     step 2 refuses;
//  2. each batch in turn against the window as the batches before it
//     left it (SharePartition.acknowledge): offsets past what was ever
//     delivered INVALID_REQUEST, or INVALID_RECORD_STATE when nothing is
//     in flight (Kafka's cache is empty: "batch record not found"); an
//     offset acknowledged by the batch before, or one this member does
//     not hold acquired, INVALID_RECORD_STATE.
//
// Below the SPSO, offsets are INVALID_RECORD_STATE too (other than GAP):
// a record there is finished, so a member acknowledging it lost its lock
// (it expired, or the actor that gave it restarted) and another settled
// the record since, or it acknowledges the record a second time.
// Confirming the acknowledgement would tell the member it settled a
// record it did not. NB: Kafka 4.2 skips such a batch and answers no
// error (SharePartition.acknowledge: "already archived"); this is a
// deliberate difference (tests/diff/differences.go). Only GAP is taken
// below the SPSO: gaps are archived when read, and the SPSO may pass them
// before the consumer acknowledges them.
func (w *window) acknowledge(member string, batches []AckBatch, renew bool, l limits, now time.Time) (ackCounts, *kerr.Error) {
	var c ackCounts
	last := int64(-1)
	for _, b := range batches {
		if b.First > b.Last || b.First < last || len(b.Types) == 0 ||
			(len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1) {
			return c, kerr.InvalidRequest
		}
		last = b.Last
		for _, t := range b.Types {
			if t < ackGap || t > ackRenew || (t == ackRenew && !renew) {
				return c, kerr.InvalidRequest
			}
		}
	}
	last = -1
	for i, b := range batches {
		if b.First < w.start {
			below := b.Types
			if len(below) > 1 {
				below = below[:min(w.start, b.Last+1)-b.First]
			}
			if slices.ContainsFunc(below, func(t int8) bool { return t != ackGap }) {
				return c, kerr.InvalidRecordState
			}
		}
		if b.Last >= w.start {
			switch {
			case len(w.slots) == 0:
				return c, kerr.InvalidRecordState
			case b.Last >= w.end():
				return c, kerr.InvalidRequest
			case i > 0 && b.First == last && last >= w.start:
				return c, kerr.InvalidRecordState // acknowledged by the batch before
			}
		}
		last = b.Last
		for o := max(b.First, w.start); o <= b.Last; o++ {
			s := w.at(o)
			switch {
			case b.typeOf(o) == ackGap && s.state == Archived:
			case s.state != acquired || s.member != member:
				return c, kerr.InvalidRecordState
			}
		}
	}
	for _, b := range batches {
		for o := max(b.First, w.start); o <= b.Last; o++ {
			s := w.at(o)
			if s.state != acquired {
				continue // a gap
			}
			switch b.typeOf(o) {
			case ackAccept:
				s.state, s.member, s.dirty = Acknowledged, "", true
				c.accepted++
			case ackRelease:
				if w.release(s, l.countLimit) {
					c.archived++
				}
				c.released++
			case ackGap, ackReject:
				s.state, s.member, s.dirty = Archived, "", true
				c.rejected++
			case ackRenew:
				s.deadline = now.Add(l.lock)
				c.renewed++
			}
		}
	}
	w.advance()
	return c, nil
}

// release makes an acquired slot available again, or archives it at the
// delivery limit; reports whether it archived.
func (w *window) release(s *slot, countLimit int16) bool {
	s.member, s.dirty = "", true
	if s.count >= countLimit {
		s.state = Archived
		return true
	}
	s.state = Available
	return false
}

// releaseMember releases every record a member holds; it returns how many
// were released and how many of those archived.
func (w *window) releaseMember(member string, countLimit int16) (released, archived int) {
	for i := range w.slots {
		if s := &w.slots[i]; s.state == acquired && s.member == member {
			released++
			if w.release(s, countLimit) {
				archived++
			}
		}
	}
	w.advance()
	return released, archived
}

// expire releases every record whose lock expired by now; it returns how
// many, how many of those archived, and the earliest lock still held.
func (w *window) expire(now time.Time, countLimit int16) (expired, archived int, next time.Time) {
	for i := range w.slots {
		s := &w.slots[i]
		if s.state != acquired {
			continue
		}
		if !s.deadline.After(now) {
			expired++
			if w.release(s, countLimit) {
				archived++
			}
		} else if next.IsZero() || s.deadline.Before(next) {
			next = s.deadline
		}
	}
	w.advance()
	return expired, archived, next
}

// changes returns what to write: the SPSO if it moved (else -1) and the
// changed slots as state batches (an acquired record is written as
// available, with its delivery count), and marks them written.
func (w *window) changes() (start int64, batches []StateBatch) {
	start = -1
	if w.startDirty {
		start, w.startDirty = w.start, false
	}
	for i := range w.slots {
		s := &w.slots[i]
		if !s.dirty {
			continue
		}
		s.dirty = false
		o, st := w.start+int64(i), s.state
		if st == acquired {
			st = Available
		}
		if k := len(batches) - 1; k >= 0 && batches[k].Last == o-1 && batches[k].State == st && batches[k].Count == s.count {
			batches[k].Last = o
			continue
		}
		batches = append(batches, StateBatch{First: o, Last: o, State: st, Count: s.count})
	}
	return start, batches
}

// dirty reports whether anything changed since the last write.
func (w *window) dirty() bool {
	if w.startDirty {
		return true
	}
	return slices.ContainsFunc(w.slots, func(s slot) bool { return s.dirty })
}

// deliveryComplete counts the records after the SPSO that are finished
// (acknowledged or archived): those of the window and those of the
// restored state past its end. The share coordinator keeps it with the
// state (Kafka's DeliveryCompleteCount, KIP-1226) for
// DescribeShareGroupOffsets' lag.
func (w *window) deliveryComplete() int32 {
	n := 0
	for _, s := range w.slots {
		if s.state == Acknowledged || s.state == Archived {
			n++
		}
	}
	end := w.end()
	for _, b := range w.restored {
		if (b.State == Acknowledged || b.State == Archived) && b.Last >= end {
			n += int(b.Last - max(b.First, end) + 1)
		}
	}
	return int32(n)
}

// counts returns how many of the window's records are in each delivery
// state, for describing the share-partition (Describe). Everything below
// the SPSO is finished and forgotten: the acknowledged and archived
// records counted are those still held in the window by an unfinished
// record before them.
func (w *window) counts() (acquiredN, availableN, acknowledgedN, archivedN int) {
	for _, s := range w.slots {
		switch s.state {
		case acquired:
			acquiredN++
		case Available:
			availableN++
		case Acknowledged:
			acknowledgedN++
		case Archived:
			archivedN++
		}
	}
	return acquiredN, availableN, acknowledgedN, archivedN
}
