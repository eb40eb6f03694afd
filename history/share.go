package history

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Share is the history of a share group (KIP-932) consuming what
// producers sent: which records were produced and acknowledged, each
// delivery of a record to a share consumer (with the delivery count the
// broker gave it), and each acknowledgement a consumer sent for a delivery
// with the broker's verdict on it. CheckShare decides from it whether the
// group's promises held. A record is named by a key the caller makes
// unique in a run.
//
// # What is allowed
//
// A share group delivers each record at least once, under an
// acquisition lock, and a consumer settles each delivery with ACCEPT,
// RELEASE or REJECT; the broker confirms an acknowledgement or refuses it
// with an error. A refused acknowledgement's outcome is unknown to the
// consumer: the broker may have applied it (it failed after making it
// durable) or not (the record is delivered again once its lock ends).
// So:
//
//   - A record whose produce was acknowledged is delivered, and ends
//     settled: accepted (confirmed) exactly once, or rejected (confirmed)
//     and never accepted. Allowed too, and counted: a record whose last
//     delivery's acknowledgement was refused or never sent and that was
//     never delivered again (unsettled: the broker may have applied it,
//     or archived the record when its lock ended at the delivery count
//     limit), and a record whose last delivery, at the limit, was
//     released (archived).
//   - No record is delivered again after an ACCEPT or REJECT the broker
//     confirmed. Deliveries are ordered by their delivery counts, not by
//     when the consumer saw them (a consumer may buffer records past
//     their locks): an acquisition's count is at least that of every
//     acquisition before it, even across a crash that lost an
//     acquisition's count (which Kafka persists only with the record's
//     next change, so a crash may count one delivery twice). So a delivery
//     with a greater count than a confirmed ACCEPT's or REJECT's is one
//     after it.
//   - A delivery count is between 1 and share.delivery.count.limit.
//   - Every delivery of a record is at the partition and offset its
//     produce acknowledgement gave (if it was acknowledged), and a
//     partition's offset holds one record.
//   - A record confirmed RELEASED below the limit is delivered again.
//
// A record whose produce failed or never ended may be delivered or not,
// but is held to the same rules when it is.
//
// # The caller's duties
//
//  1. Call Sent before producing a key, then Produced or ProduceFailed
//     with its outcome.
//  2. Call Delivered for each record a consumer polled, as it polls it.
//  3. Call Acked for each acknowledgement, once its verdict is known: nil
//     if the broker confirmed it, the error otherwise (the error of the
//     whole request or of the record's partition, or of a flush that did
//     not finish).
//  4. Once the group has drained (the broker holds nothing in flight) and
//     every consumer has stopped, call CheckShare.
//
// Every method is safe for concurrent use.
type Share struct {
	mu      sync.Mutex
	limit   int
	records map[string]*shareRecord
	order   []*shareRecord // in the order sent
	strays  []string       // events of keys never sent, and the like
	at      map[TP]map[int64]string
}

// Ack is an acknowledgement type, as Kafka numbers them.
type Ack int8

// The acknowledgement types a consumer settles a delivery with.
const (
	Accept  Ack = 1
	Release Ack = 2
	Reject  Ack = 3
)

func (a Ack) String() string {
	switch a {
	case Accept:
		return "accept"
	case Release:
		return "release"
	case Reject:
		return "reject"
	}
	return fmt.Sprintf("ack(%d)", int8(a))
}

// shareRecord is one key sent and what became of it.
type shareRecord struct {
	key      string
	acked    bool // produce acknowledged
	failed   bool // produce failed
	tp       TP
	offset   int64
	events   []shareEvent
	produced string // the produce's error, if failed
}

// shareEvent is a delivery (ack 0) or an acknowledgement of one.
type shareEvent struct {
	consumer string
	count    int
	ack      Ack
	err      string // "" when confirmed
	tp       TP
	offset   int64
}

// NewShare returns an empty share history for a group whose
// share.delivery.count.limit is limit.
func NewShare(limit int) *Share {
	return &Share{limit: limit, records: map[string]*shareRecord{}, at: map[TP]map[int64]string{}}
}

// Sent records that key is about to be produced.
func (s *Share) Sent(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records[key] != nil {
		s.strays = append(s.strays, key+" sent twice")
		return
	}
	r := &shareRecord{key: key}
	s.records[key] = r
	s.order = append(s.order, r)
}

// Produced records that key's produce was acknowledged at tp/offset.
func (s *Share) Produced(key string, tp TP, offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if r == nil {
		s.strays = append(s.strays, fmt.Sprintf("%s acknowledged at %s, never sent", key, tp.at(offset)))
		return
	}
	r.acked, r.tp, r.offset = true, tp, offset
	s.place(key, tp, offset)
}

// ProduceFailed records that key's produce failed: it may or may not be in
// the log.
func (s *Share) ProduceFailed(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if r == nil {
		s.strays = append(s.strays, key+" failed, never sent")
		return
	}
	r.failed, r.produced = true, fmt.Sprint(err)
}

// place records that key is at tp/offset; a second key there is invented.
func (s *Share) place(key string, tp TP, offset int64) {
	m := s.at[tp]
	if m == nil {
		m = map[int64]string{}
		s.at[tp] = m
	}
	if k, ok := m[offset]; ok && k != key {
		s.strays = append(s.strays, fmt.Sprintf("%s and %s both at %s", k, key, tp.at(offset)))
		return
	}
	m[offset] = key
}

// Delivered records that consumer polled key from tp/offset, delivered
// for the count-th time as the broker counts.
func (s *Share) Delivered(key, consumer string, tp TP, offset int64, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if r == nil {
		s.strays = append(s.strays, fmt.Sprintf("%s delivered to %s at %s, never sent", key, consumer, tp.at(offset)))
		return
	}
	r.events = append(r.events, shareEvent{consumer: consumer, count: count, tp: tp, offset: offset})
	s.place(key, tp, offset)
}

// Acked records consumer's acknowledgement of its count-th delivery of
// key and the broker's verdict: err nil if the broker confirmed it.
func (s *Share) Acked(key, consumer string, count int, ack Ack, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if r == nil {
		s.strays = append(s.strays, fmt.Sprintf("%s acknowledged (%v) by %s, never sent", key, ack, consumer))
		return
	}
	e := shareEvent{consumer: consumer, count: count, ack: ack}
	if err != nil {
		e.err = err.Error()
		if e.err == "" {
			e.err = "error"
		}
	}
	r.events = append(r.events, e)
}

// ShareVerdict is what CheckShare found: counts, and the violations, each
// list sorted, each entry a short description. Every list empty means
// the history holds.
type ShareVerdict struct {
	// Sent, Produced (acknowledged) and ProduceFailed count keys by their
	// produce's outcome; those with none are counted in Sent only.
	Sent, Produced, ProduceFailed int
	// Deliveries counts every delivery, Redeliveries those with a count
	// above 1, MaxDeliveryCount is the greatest count seen.
	Deliveries, Redeliveries, MaxDeliveryCount int
	// Confirmed counts the acknowledgements the broker confirmed, by
	// type; Refused those it refused, by error.
	Confirmed map[Ack]int
	Refused   map[string]int
	// Accepted and Rejected count records settled so; ArchivedAtLimit
	// those released at the limit.
	Accepted, Rejected, ArchivedAtLimit int
	// Unsettled are the records whose last delivery's acknowledgement
	// was refused or never sent, and that were not delivered again: the
	// broker may have applied it. Allowed, not a violation; sorted.
	Unsettled []string

	// Lost: a record acknowledged by its producer and never delivered,
	// or released (confirmed) below the limit and never delivered again.
	Lost []string
	// SettledTwice: a record confirmed accepted twice, or accepted and
	// rejected, or rejected twice.
	SettledTwice []string
	// AfterSettled: a delivery with a greater count than a confirmed
	// ACCEPT's or REJECT's.
	AfterSettled []string
	// BadCount: a delivery count below 1 or above the limit.
	BadCount []string
	// Invented: a key delivered or acknowledged that was never sent, a
	// delivery elsewhere than its produce acknowledgement said, two keys
	// at one offset, an acknowledgement of a delivery never recorded.
	Invented []string
}

func (v ShareVerdict) violations() []namedList {
	return []namedList{{"lost", v.Lost}, {"settled twice", v.SettledTwice}, {"delivered after settled", v.AfterSettled},
		{"bad count", v.BadCount}, {"invented", v.Invented}}
}

// OK says whether the history holds: every violation list is empty.
func (v ShareVerdict) OK() bool {
	for _, l := range v.violations() {
		if len(l.list) > 0 {
			return false
		}
	}
	return true
}

// String gives the counts and each violation list, shortened to five
// entries, on one line.
func (v ShareVerdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sent, %d produced, %d failed; %d deliveries (%d redeliveries, max count %d); confirmed %s; refused %v; settled: %d accepted, %d rejected, %d unsettled %s, %d archived at the limit",
		v.Sent, v.Produced, v.ProduceFailed, v.Deliveries, v.Redeliveries, v.MaxDeliveryCount, ackCounts(v.Confirmed), v.Refused,
		v.Accepted, v.Rejected, len(v.Unsettled), shorten(v.Unsettled), v.ArchivedAtLimit)
	for _, l := range v.violations() {
		fmt.Fprintf(&b, "; %s %d", l.name, len(l.list))
		if len(l.list) == 0 {
			continue
		}
		fmt.Fprintf(&b, " %s", shorten(l.list))
	}
	return b.String()
}

// shorten gives a list's first five entries.
func shorten(l []string) string {
	if len(l) > 5 {
		return fmt.Sprintf("[%s and %d more]", strings.Join(l[:5], ", "), len(l)-5)
	}
	return "[" + strings.Join(l, ", ") + "]"
}

func ackCounts(m map[Ack]int) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %v", m[a], a))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// CheckShare decides whether the history holds; see ShareVerdict for
// what each violation means. It does not change the history.
func (s *Share) CheckShare() ShareVerdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := ShareVerdict{Confirmed: map[Ack]int{}, Refused: map[string]int{}}
	v.Invented = append(v.Invented, s.strays...)
	for _, r := range s.order {
		v.Sent++
		switch {
		case r.acked:
			v.Produced++
		case r.failed:
			v.ProduceFailed++
		}
		s.checkRecord(r, &v)
	}
	for _, l := range []*[]string{&v.Lost, &v.SettledTwice, &v.AfterSettled, &v.BadCount, &v.Invented, &v.Unsettled} {
		slices.Sort(*l)
	}
	return v
}

// checkRecord checks one record's deliveries and acknowledgements.
func (s *Share) checkRecord(r *shareRecord, v *ShareVerdict) {
	// delivery is one delivery with the verdicts on its acknowledgements.
	type delivery struct {
		ev   shareEvent
		acks []shareEvent
	}
	var ds []*delivery
	var settled []shareEvent // confirmed accepts and rejects
	for _, e := range r.events {
		if e.ack == 0 {
			v.Deliveries++
			if e.count > 1 {
				v.Redeliveries++
			}
			v.MaxDeliveryCount = max(v.MaxDeliveryCount, e.count)
			if e.count < 1 || e.count > s.limit {
				v.BadCount = append(v.BadCount, fmt.Sprintf("%s delivered to %s with count %d (limit %d)", r.key, e.consumer, e.count, s.limit))
			}
			if r.acked && (e.tp != r.tp || e.offset != r.offset) {
				v.Invented = append(v.Invented, fmt.Sprintf("%s delivered at %s, produced at %s", r.key, e.tp.at(e.offset), r.tp.at(r.offset)))
			}
			ds = append(ds, &delivery{ev: e})
			continue
		}
		if e.err != "" {
			v.Refused[e.err]++
		} else {
			v.Confirmed[e.ack]++
			if e.ack == Accept || e.ack == Reject {
				settled = append(settled, e)
			}
		}
		// The acknowledgement is of the last delivery of this count to
		// this consumer.
		var d *delivery
		for i := len(ds) - 1; i >= 0; i-- {
			if ds[i].ev.consumer == e.consumer && ds[i].ev.count == e.count {
				d = ds[i]
				break
			}
		}
		if d == nil {
			v.Invented = append(v.Invented, fmt.Sprintf("%s: %v by %s of delivery %d, which it was never given", r.key, e.ack, e.consumer, e.count))
			continue
		}
		d.acks = append(d.acks, e)
	}

	if len(settled) > 1 {
		var what []string
		for _, e := range settled {
			what = append(what, fmt.Sprintf("%v by %s at delivery %d", e.ack, e.consumer, e.count))
		}
		v.SettledTwice = append(v.SettledTwice, fmt.Sprintf("%s: %s", r.key, strings.Join(what, ", ")))
	}
	for _, st := range settled {
		for _, d := range ds {
			if d.ev.count > st.count {
				v.AfterSettled = append(v.AfterSettled, fmt.Sprintf("%s delivered to %s with count %d after %v by %s at delivery %d was confirmed",
					r.key, d.ev.consumer, d.ev.count, st.ack, st.consumer, st.count))
			}
		}
	}

	switch {
	case len(settled) > 0:
		if settled[0].ack == Accept {
			v.Accepted++
		} else {
			v.Rejected++
		}
		return
	case len(ds) == 0:
		if r.acked {
			v.Lost = append(v.Lost, fmt.Sprintf("%s (at %s) never delivered", r.key, r.tp.at(r.offset)))
		}
		return
	}
	// Not settled: what came of the last delivery (the greatest count,
	// the last recorded among equals) decides.
	last := ds[0]
	for _, d := range ds[1:] {
		if d.ev.count >= last.ev.count {
			last = d
		}
	}
	confirmedRelease := false
	var what []string
	for _, a := range last.acks {
		if a.err == "" && a.ack == Release {
			confirmedRelease = true
		}
		what = append(what, fmt.Sprintf("%v refused (%s)", a.ack, a.err))
	}
	if len(what) == 0 {
		what = append(what, "never acknowledged")
	}
	switch {
	case !confirmedRelease:
		v.Unsettled = append(v.Unsettled, fmt.Sprintf("%s delivered to %s at %s with count %d: %s",
			r.key, last.ev.consumer, last.ev.tp.at(last.ev.offset), last.ev.count, strings.Join(what, ", ")))
	case last.ev.count >= s.limit:
		v.ArchivedAtLimit++
	default:
		v.Lost = append(v.Lost, fmt.Sprintf("%s released by %s at delivery %d (confirmed), never delivered again", r.key, last.ev.consumer, last.ev.count))
	}
}
