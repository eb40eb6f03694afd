package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/skeinlog/skein/internal/vfs"
)

// Transactions in compaction (rule 5 of compact.go), after Kafka's
// CleanedTransactionMetadata.

// Control record types (the Type of kmsg.ControlRecordKey).
const (
	markerAbort  = 0
	markerCommit = 1
)

// markerType returns the type of the control record in control batch b
// (its first record's key: version int16, type int16); ok is false for a
// batch without records, which compaction emptied. A key too short to
// hold a type reads as an unknown type (-1), which compaction keeps.
func markerType(b []byte, dec *Decompressor) (typ int16, ok bool, err error) {
	typ = -1
	err = ForEachRecord(b, dec, func(r *Record) error {
		ok = true
		if len(r.Key) >= 4 && int16(binary.BigEndian.Uint16(r.Key)) >= 0 {
			typ = int16(binary.BigEndian.Uint16(r.Key[2:]))
		}
		return errFound
	})
	if err == errFound {
		err = nil
	}
	return typ, ok, err
}

// txnTracker follows transactions through the batches of a pass, in offset
// order, as Kafka's CleanedTransactionMetadata does: it tells which data
// batches belong to aborted transactions and which markers may go. It
// starts with the index entries of the range, by first offset; an entry
// becomes its producer's aborted transaction in progress once the pass
// reaches its first offset, and stays so until the producer's abort
// marker.
type txnTracker struct {
	pending []AbortedTxn // entries not reached yet, by first offset
	// aborted maps a producer id to its aborted transaction in progress.
	aborted map[int64]*txnInPass
	// committed maps a producer id to its transaction in progress that is
	// not an aborted one, once the pass met a batch of it.
	committed map[int64]*txnInPass
}

// txnInPass is a transaction the pass is inside of.
type txnInPass struct {
	txn AbortedTxn // for an aborted one
	// seen says the pass met a batch of the transaction; kept says one of
	// those stays in the log.
	seen, kept bool
}

func newTxnTracker(txns []AbortedTxn) *txnTracker {
	pending := slices.Clone(txns)
	slices.SortStableFunc(pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &txnTracker{pending: pending, aborted: map[int64]*txnInPass{}, committed: map[int64]*txnInPass{}}
}

// reach starts the aborted transactions whose first offset is at most
// offset.
func (t *txnTracker) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if t.aborted[a.ProducerID] == nil {
			t.aborted[a.ProducerID] = &txnInPass{txn: a}
		}
	}
}

// onData takes the data batch h and reports whether it belongs to an
// aborted transaction (Kafka's onBatchRead).
func (t *txnTracker) onData(h *Header) bool {
	t.reach(h.LastOffset())
	if !h.Transactional() {
		return false
	}
	if a := t.aborted[h.ProducerID]; a != nil {
		a.seen = true
		return true
	}
	c := t.committed[h.ProducerID]
	if c == nil {
		c = &txnInPass{}
		t.committed[h.ProducerID] = c
	}
	c.seen = true
	return false
}

// kept records that the transactional data batch h stays in the log,
// whole, rebuilt or emptied.
func (t *txnTracker) kept(h *Header) {
	if a := t.aborted[h.ProducerID]; a != nil {
		a.kept = true
	} else if c := t.committed[h.ProducerID]; c != nil {
		c.kept = true
	}
}

// onMarker takes the control batch h, of type typ (ok false when it has no
// record), and says what becomes of it (Kafka's onControlBatchRead):
//
//   - removable: no batch of its transaction was met in this pass, so it
//     may go once past its delete horizon. An abort marker is kept while
//     any batch of its transaction remains, and so is a commit marker;
//     a batch-less control batch may always go, other control types never;
//   - entry: the aborted transaction's index entry, to keep with the marker
//     in the cleaned segment while batches of the transaction remain
//     (Kafka's cleanedIndex), or nil;
//   - soon: the batches met were all removed by this pass: the next pass
//     will find the marker removable and should not wait for new dirty
//     segments to start its delete horizon.
func (t *txnTracker) onMarker(h *Header, typ int16, ok bool) (removable bool, entry *AbortedTxn, soon bool) {
	t.reach(h.LastOffset())
	if !ok {
		return true, nil, false
	}
	switch typ {
	case markerAbort:
		a := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		if a == nil || !a.seen {
			return true, nil, false
		}
		return false, &a.txn, !a.kept
	case markerCommit:
		c := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		if c == nil {
			return true, nil, false
		}
		return false, nil, !c.kept
	}
	return false, nil, false
}

// abortedTxns returns the aborted-transaction entries of the whole log as
// the plan found it that a pass over [from, upTo) must know of.
func (p *cleanPlan) abortedTxns(from, upTo int64) []AbortedTxn {
	return collectAbortedTxns(&View{closed: p.views, active: p.active}, from, upTo)
}

// writeCleanedTxns writes txns, the entries a cleaned segment keeps, to its
// .txnindex.cleaned and syncs it.
func (s *segment) writeCleanedTxns(fsys vfs.FS, txns []AbortedTxn) error {
	b := make([]byte, 0, len(txns)*abortedTxnSize)
	for _, t := range txns {
		b = appendAbortedTxn(b, t)
	}
	f, err := fsys.Create(s.path(txnIndexSuffix + cleanedSuffix))
	if err != nil {
		return err
	}
	s.txnFile = true
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.txns = slices.Clone(txns)
	return err
}

// filterMarker decides what the cleaned segment keeps of control batch b
// (rule 5), as filter does for data batches.
func (c *cleaner) filterMarker(b []byte, h Header) (out []byte, removed int64, err error) {
	typ, ok, err := markerType(b, &c.dec)
	if err != nil {
		return nil, 0, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	removable, entry, soon := c.txns.onMarker(&h, typ, ok)
	if entry != nil {
		c.cleanedTxns = append(c.cleanedTxns, *entry)
	}
	if soon {
		c.horizon = min(c.horizon, c.p.now)
	}
	switch {
	case !removable:
		return b, 0, nil
	case !ok || (h.DeleteHorizon() && c.p.now >= h.BaseTimestamp):
		// Empty, or past its delete horizon: it goes, unless rule 3 keeps
		// it for its producer's epoch.
		if c.isLastOfProducer(&h) {
			out, err = c.retainEmpty(b, h)
		}
		return out, int64(h.NumRecords), err
	case h.DeleteHorizon():
		c.horizon = min(c.horizon, h.BaseTimestamp)
		return b, 0, nil
	}
	// The first pass to find it removable starts its delete horizon.
	horizon := satAdd(c.p.now, c.p.opts.DeleteRetentionMs)
	c.horizon = min(c.horizon, horizon)
	c.kept, c.arena = c.kept[:0], c.arena[:0]
	if err := ForEachRecord(b, &c.dec, func(r *Record) error { c.keep(h, r); return nil }); err != nil {
		return nil, 0, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	out, err = c.rebuild(h, true, horizon)
	return out, 0, err
}

// retainEmpty is emptyBatch for a batch whose records all go, except that a
// batch emptied by an earlier pass is kept as it is (emptyBatch would build
// the same bytes), so that a pass that changes nothing rewrites nothing.
func (c *cleaner) retainEmpty(b []byte, h Header) ([]byte, error) {
	if len(b) == HeaderSize && h.NumRecords == 0 && h.Attributes&(attrCodecMask|attrDeleteHorizon) == 0 && h.BaseTimestamp == h.MaxTimestamp {
		return b, nil
	}
	return c.emptyBatch(h)
}

// placeholder builds the empty batch that stands for the dropped batch h at
// the end of a group (rule 3). For a transactional or control batch it is
// anonymous, so that later passes do not take it for a batch of the
// transaction (rule 5) and keep the transaction's marker for ever.
func (c *cleaner) placeholder(h Header) ([]byte, error) {
	if h.Transactional() || h.Control() {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = -1, -1, -1
		h.Attributes &^= attrTransactional | attrControl
	}
	return c.emptyBatch(h)
}
