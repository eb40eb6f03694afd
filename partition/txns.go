package partition

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition/store"
)

// Transactions, the partition's side (KIP-98, KIP-890).
//
// The producer state (producers.go) knows each producer's transaction in
// progress here; from it the actor keeps the log's last stable offset
// (store.Log.SetLastStableOffset), which read_committed fetches stop at,
// and the aborted-transaction index (store.Log.AddAbortedTxn), which tells
// them what to skip. Markers come as Appends with a Marker: the control
// batch is built here, checked against the producer's epochs, and written
// in its turn with the other appends, answered once the high watermark
// passes it (markers are written with acks=all, as Kafka's coordinator
// writes them).
//
// Verification (KIP-890 part 1): a transactional batch of a producer with
// no transaction in progress here is held while Append.Verify asks the
// coordinator whether its transaction includes this partition; the answer
// comes back as txnVerified. A marker of the producer, or a batch of a
// newer epoch, in the meantime voids the verification: the held batches
// are refused INVALID_TXN_STATE, so a late batch of a transaction that
// ended cannot start one that nobody will end.

// Marker ends a producer's transaction in a partition: Kafka's
// WriteTxnMarkers entry. Under transaction version 2 (TV2) its epoch is
// the one the coordinator bumped to when the transaction ended, which the
// producer's next transaction uses.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	TV2              bool
}

// markerAttributes are a marker batch's: transactional (bit 4) and control
// (bit 5).
const markerAttributes = 0x10 | 0x20

// markerBatch returns the control batch of a marker, at time now (ms).
func markerBatch(m *Marker, now int64) ([]byte, error) {
	k := kmsg.NewControlRecordKey()
	k.Type = kmsg.ControlRecordKeyTypeAbort
	if m.Commit {
		k.Type = kmsg.ControlRecordKeyTypeCommit
	}
	v := kmsg.NewEndTxnMarker()
	v.CoordinatorEpoch = m.CoordinatorEpoch
	h := store.Header{Attributes: markerAttributes, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, BaseSequence: -1}
	return store.AppendBatch(nil, h, []store.Record{{Key: k.AppendTo(nil), Value: v.AppendTo(nil)}}, store.CodecNone)
}

// ParseMarker reads the marker of a control batch: the transaction it
// ends, and how. ok is false for a control batch that holds no marker
// (compaction emptied it, or a control record of another type).
func ParseMarker(batch []byte, dec *store.Decompressor) (m Marker, ok bool, err error) {
	h, err := store.ParseHeader(batch)
	if err != nil {
		return m, false, err
	}
	m.ProducerID, m.ProducerEpoch = h.ProducerID, h.ProducerEpoch
	err = store.ForEachRecord(batch, dec, func(r *store.Record) error {
		if ok {
			return nil
		}
		var k kmsg.ControlRecordKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("%w: control record key: %v", store.ErrCorrupt, err)
		}
		if k.Type != kmsg.ControlRecordKeyTypeAbort && k.Type != kmsg.ControlRecordKeyTypeCommit {
			return nil
		}
		var v kmsg.EndTxnMarker
		if err := v.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("%w: end transaction marker: %v", store.ErrCorrupt, err)
		}
		m.Commit, m.CoordinatorEpoch, ok = k.Type == kmsg.ControlRecordKeyTypeCommit, v.CoordinatorEpoch, true
		return nil
	})
	return m, ok, err
}

// applyControl takes a control batch now in the log (replicated or
// replayed) into the producer state and the aborted-transaction index.
func (p *partition) applyControl(l *store.Log, batch []byte, h *store.Header, now int64) error {
	m, ok, err := ParseMarker(batch, &p.dec)
	if err != nil || !ok {
		return err
	}
	if a, aborted := p.producers.endTxn(h, m, now); aborted {
		return l.AddAbortedTxn(a)
	}
	return nil
}

// stageMarker checks a marker and stages its control batch.
func (p *partition) stageMarker(m *Append, now int64) appendOutcome {
	mk := m.Marker
	if err, msg := p.producers.checkMarker(mk); err != nil {
		m.Reply(AppendResult{Err: err, Message: msg})
		return appendOutcome{answered: true}
	}
	if p.belowMinISR(m) { // markers are written with acks=all
		return appendOutcome{answered: true}
	}
	batch, err := markerBatch(mk, now)
	if err != nil {
		m.Reply(appendError(err))
		return appendOutcome{answered: true}
	}
	res, ok := p.stage(m, batch)
	if !ok {
		return appendOutcome{answered: true}
	}
	h, err := store.ParseHeader(batch) // with its offset now
	if err != nil {
		panic(fmt.Sprintf("partition: a marker batch of our own does not parse: %v", err))
	}
	if a, aborted := p.producers.endTxn(&h, *mk, now); aborted {
		p.abortedTxns = append(p.abortedTxns, a)
	}
	// The verification of a batch of the transaction that ended is void.
	// Under TV2 the next transaction's batches carry the marker's epoch,
	// and may be verified already: the producer starts it as soon as
	// EndTxn answers, before the markers are written.
	if v, ok := p.verifiedEpoch(mk.ProducerID); ok && (v < mk.ProducerEpoch || !mk.TV2) {
		p.endVerification(mk.ProducerID, kerr.InvalidTxnState, "the producer's transaction ended while the batch was verified")
	}
	return appendOutcome{res: res}
}

// verification is a producer's transactional batches held while the
// coordinator is asked about them.
type verification struct {
	epoch   int16
	guard   uint64
	appends []*Append
}

// txnVerified is the coordinator's answer to a verification, sent by the
// Verify reply to the actor.
type txnVerified struct {
	producerID int64
	guard      uint64
	err        *kerr.Error
}

// verified reports whether the Append passed a verification that still
// holds for its producer and epoch.
func (p *partition) verified(m *Append, h *store.Header) bool {
	g, ok := p.verifiedGuards[h.ProducerID]
	return ok && m.guard != 0 && g.guard == m.guard && g.epoch == h.ProducerEpoch
}

// holdBehind holds an Append of a producer whose batch waits for the
// coordinator's verification, behind it: the producer's batches keep their
// order, and each is checked (sequence, epoch, duplicates) once those
// before it are in.
func (p *partition) holdBehind(v *verification, m *Append) {
	m.held = true
	v.appends = append(v.appends, m)
}

// holdForVerification holds a transactional Append whose producer has no
// transaction in progress here, and asks the coordinator about it.
func (p *partition) holdForVerification(m *Append, h *store.Header) {
	m.held = true
	if p.verifying[h.ProducerID] != nil {
		p.endVerification(h.ProducerID, kerr.InvalidTxnState, "the producer moved to a newer epoch while the batch was verified")
	}
	p.guards++
	v := &verification{epoch: h.ProducerEpoch, guard: p.guards, appends: []*Append{m}}
	if p.verifying == nil {
		p.verifying = map[int64]*verification{}
	}
	p.verifying[h.ProducerID] = v
	self, root, id, guard := p.self, p.sys.Root, h.ProducerID, v.guard
	m.Verify(func(err *kerr.Error) { root.Send(self, &txnVerified{producerID: id, guard: guard, err: err}) })
}

// onVerified takes the coordinator's answer: the held Appends go on, in
// their order, or are refused.
func (p *partition) onVerified(m *txnVerified) {
	v := p.verifying[m.producerID]
	if v == nil || v.guard != m.guard {
		return // voided meanwhile: its Appends were answered
	}
	if m.err != nil {
		p.endVerification(m.producerID, m.err, "")
		return
	}
	delete(p.verifying, m.producerID)
	if p.verifiedGuards == nil {
		p.verifiedGuards = map[int64]verifiedGuard{}
	}
	p.verifiedGuards[m.producerID] = verifiedGuard{epoch: v.epoch, guard: v.guard}
	// Ahead of the Appends queued meanwhile, which came after them: a
	// later batch of the producer among those must follow its first.
	for _, a := range v.appends {
		a.held, a.guard = false, v.guard
	}
	p.appends = append(v.appends, p.appends...)
	if !p.writeQueued {
		p.writeQueued = true
		p.sys.Root.Send(p.self, &writeAppends{})
	}
}

// verifiedEpoch returns the epoch of the producer's verification pending
// or passed, if it has one.
func (p *partition) verifiedEpoch(producerID int64) (int16, bool) {
	if v := p.verifying[producerID]; v != nil {
		return v.epoch, true
	}
	g, ok := p.verifiedGuards[producerID]
	return g.epoch, ok
}

// verifiedGuard is the verification a producer passed last.
type verifiedGuard struct {
	epoch int16
	guard uint64
}

// endVerification voids the producer's verification: the Appends held for
// it are refused with err.
func (p *partition) endVerification(producerID int64, err *kerr.Error, msg string) {
	delete(p.verifiedGuards, producerID)
	v := p.verifying[producerID]
	if v == nil {
		return
	}
	delete(p.verifying, producerID)
	for _, a := range v.appends {
		a.held = false
		a.Reply(AppendResult{Err: err, Message: msg})
		a.release()
	}
}

// dropVerifications refuses every held Append (a restart, a new role).
func (p *partition) dropVerifications(err *kerr.Error, msg string) {
	for id := range p.verifying {
		p.endVerification(id, err, msg)
	}
	clear(p.verifiedGuards)
}

// updateLastStable sets the log's last stable offset from the producer
// state, after the high watermark or the transactions moved.
func (p *partition) updateLastStable() {
	p.producers.replicated(p.log.HighWatermark())
	first, ok := p.producers.firstUnstable()
	if !ok {
		first = math.MaxInt64
	}
	if first != p.unstable {
		p.unstable = first
		p.log.SetLastStableOffset(first)
	}
}

// ProducerState describes one producer of a partition (DescribeProducers).
type ProducerState struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1 when none in its epoch
	LastTimestamp    int64 // ms, the broker's time of its last append
	CoordinatorEpoch int32
	TxnStartOffset   int64 // -1 when no transaction is in progress here
}

// DescribeProducers asks a leader for its producers' state. Reply is
// called once, on the actor's goroutine.
type DescribeProducers struct {
	Reply func([]ProducerState, *kerr.Error)
}

func (p *partition) describeProducers(m *DescribeProducers) {
	if p.failure != nil {
		m.Reply(nil, kerr.KafkaStorageError)
		return
	}
	out := make([]ProducerState, 0, len(p.producers.entries))
	for id, e := range p.producers.entries {
		out = append(out, ProducerState{ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch, TxnStartOffset: e.TxnFirstOffset})
	}
	m.Reply(out, nil)
}
