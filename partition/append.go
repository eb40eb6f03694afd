package partition

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition/store"
)

// Appends that wait in the mailbox are written together.
//
// The actor does not handle an Append when it takes it from the mailbox:
// it queues it and, for the first of a round, sends itself writeAppends,
// which arrives after every message already in the mailbox. writeAppends
// then handles the queued Appends in their order of arrival, each as it
// would be alone (min.insync.replicas, the idempotent producer's checks
// against the state the Appends before it left, offsets, LogAppendTime),
// but stages their records in the log and writes them all at once
// (store.Log.Stage, WriteStaged: one vectored write). Replies and waiters
// follow, in the same order, once the records are written. So the Appends
// that arrive while the actor writes go out together in the next round,
// and an Append that finds the actor idle is written after one more
// message, not later.
//
// A message that depends on the Appends before it (SetConfig,
// DeleteRecords) has them written first; so does tick, so that a lost
// writeAppends (a fault may drop any message) delays the queued Appends by
// a tick at most.

// writeAppends is sent by a partition actor to itself when it queues an
// Append and none is on its way: the Appends queued when it arrives are
// handled and written. No reply.
type writeAppends struct{}

// queueAppend queues m for the next writeAppends.
func (p *partition) queueAppend(ctx actor.Context, m *Append) {
	// Should handling it panic, the old instance's Restarting answers it
	// (indefinitely: it may be in the log), not the client's timeout.
	m.Reply = replyOnce(m.Reply)
	p.appends = append(p.appends, m)
	if !p.writeQueued {
		p.writeQueued = true
		ctx.Send(ctx.Self(), &writeAppends{})
	}
}

// appendOutcome is what staging decided for a queued Append.
type appendOutcome struct {
	// answered: refused (the reply is sent), nothing left to do.
	answered bool
	// duplicate, when not nil: a retry, answered with its original's offsets.
	duplicate *batchMetadata
	// res: where its records go, when neither of the above; bytes: their
	// size.
	res   store.AppendResult
	bytes int64
}

// writeAppends handles every queued Append and writes their records with
// one write. In the failed state it refuses them all.
func (p *partition) writeAppends() {
	p.writeQueued = false
	if len(p.appends) == 0 {
		return
	}
	defer func() {
		for _, m := range p.appends {
			m.written() // after requestSync, below
		}
		clear(p.outcomes)
		p.outcomes = p.outcomes[:0]
		clear(p.appends)
		p.appends = p.appends[:0]
	}()
	if f := p.failure; f != nil {
		for _, m := range p.appends {
			m.Reply(AppendResult{Err: kerr.KafkaStorageError, Message: "partition storage failed (" + f.cause + "), retrying: " + f.err.Error()})
		}
		p.releaseAppends()
		return
	}
	p.lastAppend = p.cfg.Clock.Now()
	if p.tickEvery > p.cfg.TickInterval {
		p.scheduleTick(p.cfg.TickInterval) // an idle partition's next tick may be far
	}
	base := p.log.View().ActiveSegmentBase()
	now := p.lastAppend.UnixMilli()
	outcomes := p.outcomes[:0]
	written, acked := false, false
	for _, m := range p.appends {
		o := p.stageAppend(m, now)
		outcomes = append(outcomes, o)
		if !o.answered && o.duplicate == nil {
			written = true
			acked = acked || m.Acks != 0
		}
	}
	p.outcomes = outcomes
	err := p.log.WriteStaged()
	p.releaseAppends()
	for _, a := range p.abortedTxns {
		if err != nil {
			break
		}
		err = p.log.AddAbortedTxn(a)
	}
	clear(p.abortedTxns)
	p.abortedTxns = p.abortedTxns[:0]
	if err == nil && written && p.log.View().ActiveSegmentBase() != base {
		// The write rolled the log: snapshot there, as Kafka does at a
		// roll, so that a restart replays at most the active segment.
		// (Not at the first write into a new log: it has one segment.)
		err = p.snapshotProducers()
	}
	if err != nil {
		// The producer state counts the staged batches already: the failed
		// state's retry reopens the log and rebuilds it from what reached
		// the disk. The Appends not answered yet get an indefinite error
		// (theirs may be in the log; an idempotent retry finds it there).
		p.fail("append", err) // first: the answers are news of the failed state
		for i, o := range outcomes {
			if !o.answered {
				p.appends[i].Reply(appendError(err))
			}
		}
		return
	}
	if written {
		p.updateLastStable()
	}
	if written && p.cfg.Durability == configs.DurabilityReplicated {
		// Kafka's model: in the page cache of every ISR member is enough.
		p.leader.Appended(p.log.LogEndOffset())
		p.raiseHighWatermark()
	}
	if written && p.hasFollowers() {
		p.publish() // followers' fetches wait for the new log end
	}
	for i, o := range outcomes {
		m := p.appends[i]
		switch {
		case o.answered:
		case o.duplicate != nil:
			p.answerDuplicate(m, o.duplicate)
		default:
			if m.Counter != nil {
				m.Counter.Appended(o.res.LastOffset-o.res.BaseOffset+1, o.bytes)
			}
			p.answerAppended(m, o.res)
		}
	}
	if written && (p.cfg.Durability != configs.DurabilityReplicated || p.log.FlushDue()) {
		p.requestSync()
	}
}

// releaseAppends gives back the queued Appends' records: nothing reads
// them after the write, the log does not keep them, and producer state
// keeps header values only.
func (p *partition) releaseAppends() {
	for _, m := range p.appends {
		m.release()
	}
}

// release gives the Append's records back to its sender (Append.Release).
func (m *Append) release() {
	if m.Release != nil && !m.held {
		m.Records = nil
		m.Release()
	}
}

// written reports the Append to its announcement, once.
func (m *Append) written() {
	m.Announced.Written()
	m.Announced = nil
}

// stageAppend runs an Append's checks and, when they pass, stages its
// records in the log and updates the idempotent producer's state as if
// they were written (they are, or the actor restarts). now is the time of
// the append in ms.
func (p *partition) stageAppend(m *Append, now int64) appendOutcome {
	if m.Marker != nil {
		return p.stageMarker(m, now)
	}
	if p.belowMinISR(m) {
		return appendOutcome{answered: true}
	}
	h, idempotent, bad := idempotentBatch(m.Records)
	if bad != nil {
		m.Reply(*bad)
		return appendOutcome{answered: true}
	}
	if idempotent {
		if v := p.verifying[h.ProducerID]; v != nil && v.epoch == h.ProducerEpoch {
			// Behind its producer's batch that waits for the coordinator:
			// checked against the producer's sequence once that one is in.
			p.holdBehind(v, m)
			return appendOutcome{answered: true}
		}
		c := p.producers.check(&h, m.Coordinator)
		switch {
		case c.Err != nil:
			m.Reply(AppendResult{Err: c.Err, Message: c.Message, LogStartOffset: p.log.LogStartOffset(), ErrWithLogStart: true})
			return appendOutcome{answered: true}
		case c.Duplicate != nil:
			return appendOutcome{duplicate: c.Duplicate}
		}
		if h.Transactional() && m.Verify != nil && !p.producers.inTxn(h.ProducerID, h.ProducerEpoch) && !p.verified(m, &h) {
			p.holdForVerification(m, &h)
			return appendOutcome{answered: true}
		}
	}
	res, ok := p.stage(m, m.Records)
	if !ok {
		return appendOutcome{answered: true}
	}
	if idempotent {
		h.BaseOffset = res.BaseOffset
		if res.LogAppendTime >= 0 {
			h.MaxTimestamp = res.LogAppendTime
		}
		p.producers.update(&h, now)
	}
	return appendOutcome{res: res, bytes: int64(len(m.Records))}
}

// belowMinISR refuses an acks=all Append with NOT_ENOUGH_REPLICAS when the
// ISR is smaller than min.insync.replicas, before anything is appended.
func (p *partition) belowMinISR(m *Append) bool {
	isr := p.leader.ISRSize()
	if m.Acks != -1 || int(p.cfg.TopicConfig.MinInsyncReplicas) <= isr {
		return false
	}
	m.Reply(AppendResult{Err: kerr.NotEnoughReplicas, Message: fmt.Sprintf(
		"The size of the current ISR %d is insufficient to satisfy the min.isr requirement of %d", isr, p.cfg.TopicConfig.MinInsyncReplicas)})
	return true
}

// stage stages an Append's records (its own, or a marker's batch) in the
// log; false when it could not, the Append answered.
func (p *partition) stage(m *Append, records []byte) (store.AppendResult, bool) {
	res, err := p.log.Stage(records, p.state.LeaderEpoch)
	if err != nil {
		// Nothing staged. A storage error here means the log failed (a
		// sync that failed on its own goroutine, whose report is still on
		// its way): the partition is failed from now on.
		r := appendError(err)
		if r.Err == kerr.KafkaStorageError {
			p.fail("append", err)
		}
		m.Reply(r)
		return res, false
	}
	return res, true
}

// answerAppended answers an Append whose records are written, or makes it
// wait for the high watermark its acks ask for.
func (p *partition) answerAppended(m *Append, res store.AppendResult) {
	out := AppendResult{BaseOffset: res.BaseOffset, LogAppendTime: res.LogAppendTime, LogStartOffset: res.LogStartOffset}
	p.wait(m.Acks, res.LastOffset+1, out, m.Reply, false)
}
