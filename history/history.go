// Package history is the log history checker of the fault tests in
// tests/cluster, standard library only so that any client can feed it
// (a chaos run's too): producers record what they sent and what each send
// came to, readers record what they read, and Check decides from both what
// was lost, duplicated, reordered, invented, left unseen by a consumer
// group, or read against a transaction's outcome. It never trusts a count:
// every acknowledged record must be read back at the offset its
// acknowledgement gave.
//
// Share (share.go) is the same for a share group (KIP-932): produces,
// deliveries with the broker's delivery counts, and acknowledgements with
// the broker's verdicts, which CheckShare holds to the group's promises.
//
// A record is named by its value, which History makes unique in a run:
// w<worker>-<seq> for plain (idempotent, acks=all) producers,
// t<worker>-<txn>-<i> for the i-th record of a worker's txn-th transaction
// (which History names t<worker>-<txn>).
//
// # What is allowed
//
//   - A plain record acknowledged at a partition and offset is in the log
//     there, once. One that failed, or whose outcome never came, may be
//     absent or present once: a failed produce may have been written.
//   - One worker's plain records are in each partition in the order sent,
//     and its transactions in the order begun.
//   - A committed transaction's records are all visible to read_committed
//     readers, an aborted one's none, one of unknown outcome (EndTxn failed,
//     or never ended) all or none.
//   - A consumer group delivers, at least once, every record that is
//     visible at or past the offset it starts from, at the offset the log
//     has it; the offsets it commits for a partition never go back. It is
//     held to the topics it was seen on (Consumed, Committed) or declared
//     for (ExpectConsumedFrom), so that a run may have a group on some of
//     its topics only.
//
// # The caller's duties
//
//  1. Call Send (or SendTxn) before producing the record with the value it
//     returns, and only then: a transaction holds every record SendTxn
//     returned for it, so a committed one with a record never produced
//     would be reported lost.
//  2. Report each plain send's outcome with Acked or Failed, each
//     transaction's with TxnEnded.
//  3. Once the load has stopped and the replicas agree, read every
//     partition of every topic produced to from its start to its high
//     watermark with a read_uncommitted reader, calling Read for each
//     record in offset order; with transactions, read it to its last
//     stable offset with a read_committed reader too, calling
//     ReadCommitted. A topic with records acknowledged must be read back
//     whole: what is not read is lost.
//  4. With a consumer group, call Consumed for each record it delivered and
//     Committed for each committed offset observed, as they happen.
//  5. Call Check.
//
// # Concurrency
//
// Every method is safe for concurrent use, Check too: it holds the
// History's lock while it runs (about a second for two million records),
// so it sees one consistent state and recorders wait for it. Check does
// not change the History: it may be called any number of times, to poll.
package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) at(offset int64) string { return fmt.Sprintf("%s-%d@%d", tp.Topic, tp.Partition, offset) }

// TxnOutcome is how a transaction ended, as its producer saw it.
type TxnOutcome int8

const (
	// TxnUnknown: EndTxn failed or timed out, or was never sent (the
	// producer died): the transaction may be committed or aborted, but
	// whole. The zero value, so that a transaction never ended is unknown.
	TxnUnknown TxnOutcome = iota
	// TxnCommitted: EndTxn(commit) succeeded.
	TxnCommitted
	// TxnAborted: EndTxn(abort) succeeded.
	TxnAborted
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	default:
		return "unknown"
	}
}

// History is what one run sent and read. Make one with New.
type History struct {
	mu   sync.Mutex
	sent map[string]*record // value: what was sent under it
	all  []*record          // in the order sent; record.idx is the index
	txns map[txnKey]*txn
	// The readers' records, in the order recorded.
	reads, committedReads, consumed map[TP][]read
	commits                         map[TP][]int64 // committed offsets, in the order observed
	consumeFrom                     map[TP]int64
	acked                           int      // plain records acknowledged, for Acknowledged
	twice                           []string // values sent twice
	strays                          []string // outcomes of values never sent
}

// record is one record sent, plain (txn nil) or of a transaction.
type record struct {
	value  string
	idx    int
	worker int
	seq    int  // plain: the worker's seq; transactional: i, within txn
	txn    *txn // nil for a plain record
	acked  bool
	tp     TP
	offset int64
	err    string // the failure's message, if the send failed
	failed bool
}

type txnKey struct{ worker, n int }

// txn is one transaction: the records sent in it and its outcome.
type txn struct {
	worker, n int
	records   []*record
	outcome   TxnOutcome
}

func (t *txn) String() string { return fmt.Sprintf("t%d-%05d", t.worker, t.n) }

// read is one record a reader read. NB: r is the record sent under value
// as found when the read was recorded (nil if not yet sent), so that Check
// need not look two million values up again.
type read struct {
	offset int64
	value  string
	r      *record
}

// resolve returns the record sent under rd's value, nil if none.
func (h *History) resolve(rd *read) *record {
	if rd.r != nil {
		return rd.r
	}
	return h.sent[rd.value]
}

// New returns an empty History.
func New() *History {
	return &History{
		sent:           map[string]*record{},
		txns:           map[txnKey]*txn{},
		reads:          map[TP][]read{},
		committedReads: map[TP][]read{},
		consumed:       map[TP][]read{},
		commits:        map[TP][]int64{},
		consumeFrom:    map[TP]int64{},
	}
}

// Send records that a plain producer's worker is about to send its seq-th
// record, its outcome pending, and returns the record's value, w<worker>-<seq>.
func (h *History) Send(worker, seq int) string {
	v := fmt.Sprintf("w%d-%07d", worker, seq)
	h.mu.Lock()
	h.add(&record{value: v, worker: worker, seq: seq})
	h.mu.Unlock()
	return v
}

// SendTxn records that a transactional producer's worker is about to send
// the i-th record of its txn-th transaction, and returns the record's
// value, t<worker>-<txn>-<i>.
func (h *History) SendTxn(worker, txn, i int) string {
	v := fmt.Sprintf("t%d-%05d-%03d", worker, txn, i)
	h.mu.Lock()
	t := h.txn(worker, txn)
	r := &record{value: v, worker: worker, seq: i, txn: t}
	if h.add(r) {
		t.records = append(t.records, r)
	}
	h.mu.Unlock()
	return v
}

// add records r as sent, unless its value was sent already.
func (h *History) add(r *record) bool {
	if h.sent[r.value] != nil {
		// NB: the first send keeps the name: the history cannot tell two
		// copies of one value apart, so this is reported, not merged.
		h.twice = append(h.twice, r.value+" sent twice")
		return false
	}
	r.idx = len(h.all)
	h.sent[r.value] = r
	h.all = append(h.all, r)
	return true
}

func (h *History) txn(worker, n int) *txn {
	k := txnKey{worker, n}
	t := h.txns[k]
	if t == nil {
		t = &txn{worker: worker, n: n}
		h.txns[k] = t
	}
	return t
}

// Acked records that the produce of value was acknowledged at tp/offset.
func (h *History) Acked(value string, tp TP, offset int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.sent[value]
	if r == nil {
		h.strays = append(h.strays, fmt.Sprintf("%s acknowledged at %s, never sent", value, tp.at(offset)))
		return
	}
	if !r.acked && r.txn == nil {
		h.acked++
	}
	r.acked, r.tp, r.offset = true, tp, offset
}

// AckedTxnRecord records that the produce of value, a record of a
// transaction, was acknowledged at tp/offset. Optional: with it, a
// committed transaction's record must be read at that offset.
func (h *History) AckedTxnRecord(value string, tp TP, offset int64) { h.Acked(value, tp, offset) }

// Failed records that the produce of value failed: it may or may not be in
// the log.
func (h *History) Failed(value string, err error) {
	msg := "<nil>"
	if err != nil {
		msg = err.Error()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.sent[value]
	if r == nil {
		h.strays = append(h.strays, fmt.Sprintf("%s failed (%s), never sent", value, msg))
		return
	}
	r.failed, r.err = true, msg
}

// TxnEnded records how a worker's txn-th transaction ended. A transaction
// never ended is TxnUnknown.
func (h *History) TxnEnded(worker, txn int, outcome TxnOutcome) {
	h.mu.Lock()
	h.txn(worker, txn).outcome = outcome
	h.mu.Unlock()
}

// Read records a record of the full read-back (read_uncommitted, from the
// log's start to its high watermark): one call per record, in offset order
// within a partition.
func (h *History) Read(tp TP, offset int64, value string) {
	h.mu.Lock()
	h.reads[tp] = append(h.reads[tp], read{offset, value, h.sent[value]})
	h.mu.Unlock()
}

// ReadCommitted records a record of a read_committed reader's full
// read-back, to the last stable offset; shaped as Read.
func (h *History) ReadCommitted(tp TP, offset int64, value string) {
	h.mu.Lock()
	h.committedReads[tp] = append(h.committedReads[tp], read{offset, value, h.sent[value]})
	h.mu.Unlock()
}

// Consumed records that the consumer group (any member) delivered a
// record. Delivery is at least once: repeats are allowed.
func (h *History) Consumed(tp TP, offset int64, value string) {
	h.mu.Lock()
	h.consumed[tp] = append(h.consumed[tp], read{offset, value, h.sent[value]})
	h.mu.Unlock()
}

// Committed records the group's committed offset for tp as observed (by an
// OffsetFetch, or a commit's acknowledgement), in the order observed.
func (h *History) Committed(tp TP, offset int64) {
	h.mu.Lock()
	h.commits[tp] = append(h.commits[tp], offset)
	h.mu.Unlock()
}

// ExpectConsumedFrom records that the group starts consuming tp at offset:
// the records before it need not be consumed. Optional; the default is 0.
// It also says that the group consumes tp's topic, which Check otherwise
// learns from Consumed and Committed only: with it, a group that delivers
// nothing leaves every record unseen rather than checks nothing.
func (h *History) ExpectConsumedFrom(tp TP, offset int64) {
	h.mu.Lock()
	h.consumeFrom[tp] = offset
	h.mu.Unlock()
}

// Acknowledged returns how many plain records have been acknowledged so
// far, without the cost of Check: for progress while the load runs.
func (h *History) Acknowledged() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acked
}

// Verdict is what Check found: counts, and the violations, each list
// sorted, each entry a short description. Every list empty means the
// history holds.
type Verdict struct {
	// Acknowledged, Failed and Pending count plain records by outcome
	// (Failed counts transactions' failed sends too); Read, ReadCommitted
	// and Consumed the records each reader delivered.
	Acknowledged, Failed, Pending, Read, ReadCommitted, Consumed int
	// Transactions by outcome; those never ended are unknown.
	TxnCommitted, TxnAborted, TxnUnknown int
	// Errors counts failed sends by error message.
	Errors map[string]int

	// Lost: an acknowledged plain record not read back at its offset; a
	// committed transaction's record not read by read_committed (at its
	// offset, if acknowledged).
	Lost []string
	// Duplicated: a value read back more than once, or read more than
	// once by read_committed; a value sent twice.
	Duplicated []string
	// Reordered: one worker's plain records, or its transactions, out of
	// send order in a partition, as either reader read it.
	Reordered []string
	// Invented: a value read or consumed that was never sent; a record
	// consumed at an offset where the read-back has another; an outcome
	// reported for a value never sent.
	Invented []string
	// Unseen: a record the consumer group should have delivered and did
	// not.
	Unseen []string
	// OffsetsBack: a committed offset below one observed before it.
	OffsetsBack []string
	// AbortedRead: a record of an aborted transaction read by
	// read_committed.
	AbortedRead []string
	// Partial: a transaction committed or of unknown outcome of which
	// read_committed read some records, not all.
	Partial []string
}

// OK says whether the history holds: every violation list is empty.
func (v Verdict) OK() bool {
	for _, l := range v.violations() {
		if len(l.list) > 0 {
			return false
		}
	}
	return true
}

type namedList struct {
	name string
	list []string
}

func (v Verdict) violations() []namedList {
	return []namedList{{"lost", v.Lost}, {"duplicated", v.Duplicated}, {"reordered", v.Reordered},
		{"invented", v.Invented}, {"unseen", v.Unseen}, {"offsets back", v.OffsetsBack},
		{"aborted read", v.AbortedRead}, {"partial", v.Partial}}
}

// String gives the counts and each violation list, shortened to five
// entries, on one line.
func (v Verdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acknowledged, %d failed %v, %d pending; %d transactions committed, %d aborted, %d unknown; read %d, read_committed %d, consumed %d",
		v.Acknowledged, v.Failed, v.Errors, v.Pending, v.TxnCommitted, v.TxnAborted, v.TxnUnknown, v.Read, v.ReadCommitted, v.Consumed)
	for _, l := range v.violations() {
		fmt.Fprintf(&b, "; %s %d", l.name, len(l.list))
		if len(l.list) == 0 {
			continue
		}
		if len(l.list) > 5 {
			fmt.Fprintf(&b, " [%s and %d more]", strings.Join(l.list[:5], ", "), len(l.list)-5)
		} else {
			fmt.Fprintf(&b, " [%s]", strings.Join(l.list, ", "))
		}
	}
	return b.String()
}

// seen is what the readers did with one record sent, in Check. NB: one
// per record sent, so kept small.
type seen struct {
	reads, committed, consumed int32
	committedTP                int32 // where read_committed first read it: an index into its partitions
	committedOffset            int64
}

// lost is a lost record, described once Check knows where it was read.
type lost struct {
	r    *record
	what string
}

// Check decides whether the history holds; see Verdict for what each
// violation means.
func (h *History) Check() Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := Verdict{Errors: map[string]int{}}
	v.Duplicated = append(v.Duplicated, h.twice...)
	v.Invented = append(v.Invented, h.strays...)
	tally := make([]seen, len(h.all)) // by record.idx

	// The read-back and read_committed, partition by partition in offset
	// order: who read what, and in which order each worker's records are.
	readBack, readCommitted := indexes(h.reads), indexes(h.committedReads)
	walk := func(reads map[TP][]read, reader string, count func(s *seen, tp int, offset int64)) []TP {
		tps := slices.SortedFunc(maps.Keys(reads), func(a, b TP) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for i, tp := range tps {
			lastSeq, lastTxn := map[int]*record{}, map[int]*record{} // worker: its latest record read
			for _, rd := range reads[tp] {
				r := h.resolve(&rd)
				if r == nil {
					v.Invented = append(v.Invented, fmt.Sprintf("%s %s at %s, never sent", rd.value, reader, tp.at(rd.offset)))
					continue
				}
				count(&tally[r.idx], i, rd.offset)
				last := lastSeq
				if r.txn != nil {
					last = lastTxn
				}
				prev := last[r.worker]
				if prev != nil && (r.txn == nil && r.seq < prev.seq || r.txn != nil && r.txn.n < prev.txn.n) {
					v.Reordered = append(v.Reordered, fmt.Sprintf("%s %s at %s after %s", r.value, reader, tp.at(rd.offset), prev.value))
					continue // the latest stays the highest
				}
				last[r.worker] = r
			}
		}
		return tps
	}
	walk(h.reads, "read back", func(s *seen, _ int, _ int64) { s.reads++ })
	tps := walk(h.committedReads, "read_committed", func(s *seen, tp int, offset int64) {
		if s.committed == 0 {
			s.committedTP, s.committedOffset = int32(tp), offset
		}
		s.committed++
	})
	for _, rs := range h.reads {
		v.Read += len(rs)
	}
	for _, rs := range h.committedReads {
		v.ReadCommitted += len(rs)
	}

	// The group: what it delivered is where the log has it, and the
	// offsets it commits only go forward.
	readTopics := map[string]bool{}
	for _, x := range []index{readBack, readCommitted} {
		for tp := range x {
			readTopics[tp.Topic] = true
		}
	}
	groupTopics := map[string]bool{}
	for tp, rs := range h.consumed {
		groupTopics[tp.Topic] = true
		v.Consumed += len(rs)
		for _, c := range rs {
			r := h.resolve(&c)
			if r == nil {
				v.Invented = append(v.Invented, fmt.Sprintf("%s consumed at %s, never sent", c.value, tp.at(c.offset)))
				continue
			}
			tally[r.idx].consumed++
			if !readTopics[tp.Topic] || readBack.at(tp, c.offset) == c.value || readCommitted.at(tp, c.offset) == c.value {
				continue
			}
			there := "nothing"
			if x := cmp.Or(readBack.at(tp, c.offset), readCommitted.at(tp, c.offset)); x != "" {
				there = x
			}
			v.Invented = append(v.Invented, fmt.Sprintf("%s consumed at %s, where the read-back has %s", c.value, tp.at(c.offset), there))
		}
	}
	for tp, cs := range h.commits {
		groupTopics[tp.Topic] = true
		for i, high := 1, cs[0]; i < len(cs); i++ {
			if cs[i] < high {
				v.OffsetsBack = append(v.OffsetsBack, fmt.Sprintf("%s-%d committed %d after %d", tp.Topic, tp.Partition, cs[i], high))
			}
			high = max(high, cs[i])
		}
	}
	for tp := range h.consumeFrom {
		groupTopics[tp.Topic] = true
	}
	// NB: the group is held to the topics it was seen on, so that a run
	// may have a group on some of its topics only.
	unseen := func(r *record, tp TP, offset int64) {
		if groupTopics[tp.Topic] && offset >= h.consumeFrom[tp] && tally[r.idx].consumed == 0 {
			v.Unseen = append(v.Unseen, fmt.Sprintf("%s at %s never consumed", r.value, tp.at(offset)))
		}
	}

	// Each record sent, by its outcome.
	var losses []lost
	for _, r := range h.all {
		s := &tally[r.idx]
		if r.failed {
			v.Failed++
			v.Errors[r.err]++
		}
		if r.txn == nil {
			switch {
			case r.acked:
				v.Acknowledged++
				if readBack.at(r.tp, r.offset) != r.value {
					losses = append(losses, lost{r, fmt.Sprintf("%s acknowledged at %s, not read back there", r.value, r.tp.at(r.offset))})
				}
				unseen(r, r.tp, r.offset)
			case !r.failed:
				v.Pending++
			}
			continue
		}
		switch r.txn.outcome {
		case TxnAborted:
			if s.committed > 0 {
				v.AbortedRead = append(v.AbortedRead, fmt.Sprintf("%s of aborted %s read_committed at %s", r.value, r.txn, tps[s.committedTP].at(s.committedOffset)))
			}
		case TxnCommitted:
			switch {
			case r.acked && readCommitted.at(r.tp, r.offset) != r.value:
				losses = append(losses, lost{r, fmt.Sprintf("%s of committed %s acknowledged at %s, not read_committed there", r.value, r.txn, r.tp.at(r.offset))})
			case !r.acked && s.committed == 0:
				losses = append(losses, lost{r, fmt.Sprintf("%s of committed %s not read_committed", r.value, r.txn)})
			}
			switch {
			case r.acked:
				unseen(r, r.tp, r.offset)
			case s.committed > 0:
				unseen(r, tps[s.committedTP], s.committedOffset)
			}
		}
	}

	// Transactions: read whole or not at all.
	for _, t := range h.txns {
		switch t.outcome {
		case TxnCommitted:
			v.TxnCommitted++
		case TxnAborted:
			v.TxnAborted++
			continue
		default:
			v.TxnUnknown++
		}
		n := 0
		for _, r := range t.records {
			if tally[r.idx].committed > 0 {
				n++
			}
		}
		if n > 0 && n < len(t.records) {
			v.Partial = append(v.Partial, fmt.Sprintf("%s (%s): %d of its %d records read_committed", t, t.outcome, n, len(t.records)))
		}
	}

	// Where the records lost or read twice were read: a second walk, for
	// those only.
	at := map[*record][]string{}
	for _, l := range losses {
		at[l.r] = nil
	}
	for _, r := range h.all {
		if s := tally[r.idx]; s.reads > 1 || s.committed > 1 {
			at[r] = nil
		}
	}
	if len(at) > 0 {
		note := func(reads map[TP][]read, reader string) {
			for tp, rs := range reads {
				for _, rd := range rs {
					if r := h.resolve(&rd); r != nil {
						if l, ok := at[r]; ok {
							at[r] = append(l, reader+" "+tp.at(rd.offset))
						}
					}
				}
			}
		}
		note(h.reads, "read back at")
		note(h.committedReads, "read_committed at")
	}
	for _, l := range losses {
		where := "read nowhere"
		if len(at[l.r]) > 0 {
			slices.Sort(at[l.r])
			where = strings.Join(at[l.r], ", ")
		}
		v.Lost = append(v.Lost, fmt.Sprintf("%s (%s)", l.what, where))
	}
	for r, where := range at {
		if s := tally[r.idx]; s.reads > 1 || s.committed > 1 {
			slices.Sort(where)
			v.Duplicated = append(v.Duplicated, fmt.Sprintf("%s %s", r.value, strings.Join(where, ", ")))
		}
	}
	for _, l := range v.violations() {
		slices.Sort(l.list)
	}
	return v
}

// index is a reader's records by partition, sorted by offset.
type index map[TP][]read

// indexes sorts each partition's reads by offset, copying those recorded
// out of order.
func indexes(reads map[TP][]read) index {
	x := make(index, len(reads))
	for tp, rs := range reads {
		byOffset := func(a, b read) int { return cmp.Compare(a.offset, b.offset) }
		if !slices.IsSortedFunc(rs, byOffset) {
			rs = slices.Clone(rs)
			slices.SortStableFunc(rs, byOffset)
		}
		x[tp] = rs
	}
	return x
}

// at returns the value read at tp/offset, "" if none (the first, if the
// reader recorded the offset twice).
func (x index) at(tp TP, offset int64) string {
	rs := x[tp]
	i, ok := slices.BinarySearchFunc(rs, offset, func(r read, o int64) int { return cmp.Compare(r.offset, o) })
	if !ok {
		return ""
	}
	return rs[i].value
}
