package share

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// Settings are a share group's settings in force: its group configs, or
// the node's group.share.* defaults.
type Settings struct {
	// AutoOffsetReset is share.auto.offset.reset: where a share-partition
	// used for the first time starts, "earliest", "latest" or
	// "by_duration" (ResetBefore ago).
	AutoOffsetReset    string
	ResetBefore        time.Duration
	LockDuration       time.Duration // share.record.lock.duration.ms
	DeliveryCountLimit int16         // share.delivery.count.limit
	ReadCommitted      bool          // share.isolation.level
	MaxRecordLocks     int           // group.share.partition.max.record.locks
}

// States reaches the share coordinators (StateClient).
type States interface {
	Ask(key Key, msg any, reply func(*StateResult))
}

// Config configures the share-partition actors of a node.
type Config struct {
	Directory *Directory
	States    States
	// Settings returns a group's settings now.
	Settings func(group string) Settings
	Stats    *Stats
	Logger   zerolog.Logger
}

// Stats counts what share-partitions did, for /metrics.
type Stats struct {
	Acquired, Redelivered                         atomic.Int64
	Accepted, Released, Rejected, Renewed         atomic.Int64
	Archived, LockExpiries, StateWrites, Failures atomic.Int64
}

// Acquire asks a share-partition for records for a member (ShareFetch).
// Sent with a request (actors.Ask); answered with *Acquired.
type Acquire struct {
	Member     string
	MaxRecords int
	MaxBytes   int64
	// WholeBatches: batch-optimized mode, where the batch that reaches
	// MaxRecords is acquired whole (Kafka's ShareAcquireMode 0).
	WholeBatches bool
	// Wake, if not nil, gets a value (without blocking: give it a buffer
	// of one) when records this answer could not give may have become
	// available: released, expired, or the window freed.
	Wake chan struct{}
	// Until is when the fetch stops waiting: Wake is forgotten then.
	Until time.Time
}

// Acquired answers Acquire: the records acquired, as ranges with their
// delivery counts, and the log's batches that hold them.
type Acquired struct {
	Err     *kerr.Error
	Records []byte
	Ranges  []AcquiredRange
	// LockMs is the acquisition lock's duration.
	LockMs int32
}

// AcquiredRange is a run of acquired offsets delivered Count times.
type AcquiredRange struct {
	First, Last int64
	Count       int16
}

// Acknowledge applies a member's acknowledgements (ShareFetch or
// ShareAcknowledge). Sent with a request (actors.Ask); answered with
// *AckResult once they are durable, or with the error that refused
// them all.
type Acknowledge struct {
	Member  string
	Batches []AckBatch
	Renew   bool
}

// AckResult answers Acknowledge.
type AckResult struct {
	Err *kerr.Error
}

// Describe asks a share-partition actor what its in-flight window holds,
// for the admin API (node's /v1/share-partitions): Kafka's APIs carry a
// share-partition's start offset and lag, not its in-flight records.
// Sent by node's admin API to the actors of its own node with a request
// (actors.Ask), never over remoting; answered with *Described. It changes
// nothing.
type Describe struct{}

// Described answers Describe. While the actor reads its state (Loaded
// false) the offsets are -1 and the counts zero.
type Described struct {
	Loaded      bool
	LeaderEpoch int32 // the partition's leader epoch the actor serves
	// StartOffset is the share-partition start offset (SPSO); EndOffset
	// the offset after the last record read into the window. The records
	// between are in flight (Kafka's InFlightMessageCount).
	StartOffset, EndOffset int64
	// Acquired records are held by a consumer under a lock; Available
	// ones wait for one (released, or their lock expired); Acknowledged
	// and Archived ones are finished but held in the window by an
	// unfinished record before them.
	Acquired, Available, Acknowledged, Archived int
}

// stashedAck is an acknowledgement that came while loading, with where
// its answer goes.
type stashedAck struct {
	m     *Acknowledge
	reply func(*kerr.Error)
}

// partitionActor is shares/<group>/<topic>-<n>: the single owner of one
// share group's in-flight state of one partition, on that partition's
// leader. On start it reads the durable state from the share coordinator
// in its leader epoch; every change that acknowledgements, releases and
// lock expiries make is written back before the acknowledgements are
// answered. It stops when its partition's leadership moves, or when its
// durable state was changed or fenced by someone else; the next request
// spawns a fresh one that reads the state again.
type partitionActor struct {
	cfg    Config
	key    Key
	handle *partition.Handle
	self   *actor.PID
	sys    *actor.ActorSystem
	inc    uint64
	epoch  int32 // the partition's leader epoch this actor serves

	loaded     bool
	stateEpoch int32
	w          window
	dec        *store.Decompressor
	// stashed holds acknowledgements that came while loading.
	stashed []stashedAck
	// pending are replies waiting for the next write, inflight those
	// waiting for the current one.
	pending, inflight []func(*kerr.Error)
	writing           bool
	waiters           []waiter
	timerAt           time.Time
	retry             time.Duration
}

// ActorKind names the actor for the actor tree.
func (a *partitionActor) ActorKind() string { return "share-partition" }

var incarnations atomic.Uint64

// Messages the actor sends itself.
type (
	stateAnswered struct {
		inc  uint64
		res  *StateResult
		then func(*StateResult)
	}
	lockTick  struct{ inc uint64 }
	loadAgain struct{ inc uint64 }
)

func (a *partitionActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.sys, a.inc = c.Self(), c.ActorSystem(), incarnations.Add(1)
		a.dec = store.NewDecompressor()
		a.epoch = -1
		if v := a.handle.View(); v != nil {
			a.epoch = v.LeaderEpoch
		}
		a.retry = 50 * time.Millisecond
		a.load()
	case *stateAnswered:
		if m.inc == a.inc {
			m.then(m.res)
		}
	case *loadAgain:
		if m.inc == a.inc {
			a.load()
		}
	case *Acquire:
		a.acquire(m, func(r Acquired) { c.Respond(&r) })
	case *Acknowledge:
		sender, sys := c.Sender(), a.sys
		reply := func(err *kerr.Error) {
			if sender != nil {
				sys.Root.Send(sender, &AckResult{Err: err})
			}
		}
		if !a.loaded {
			a.stashed = append(a.stashed, stashedAck{m, reply})
			return
		}
		a.acknowledge(m, reply)
	case *Describe:
		c.Respond(a.describe())
	case *ReleaseMember:
		if a.loaded {
			released, archived := a.w.releaseMember(m.Member, a.settings().DeliveryCountLimit)
			a.cfg.Stats.Released.Add(int64(released))
			a.cfg.Stats.Archived.Add(int64(archived))
			a.changed()
		}
	case *lockTick:
		if m.inc == a.inc && a.loaded {
			a.timerAt = time.Time{}
			expired, archived, next := a.w.expire(time.Now(), a.settings().DeliveryCountLimit)
			a.cfg.Stats.LockExpiries.Add(int64(expired))
			a.cfg.Stats.Archived.Add(int64(archived))
			a.schedule(next)
			a.changed()
		}
	case *actor.Stopping, *actor.Restarting:
		a.fail(kerr.NotLeaderForPartition)
	}
}

func (a *partitionActor) describe() *Described {
	d := &Described{Loaded: a.loaded, LeaderEpoch: a.epoch, StartOffset: -1, EndOffset: -1}
	if a.loaded {
		d.StartOffset, d.EndOffset = a.w.start, a.w.end()
		d.Acquired, d.Available, d.Acknowledged, d.Archived = a.w.counts()
	}
	return d
}

func (a *partitionActor) settings() Settings { return a.cfg.Settings(a.key.Group) }

// ask sends the share coordinator a request; the answer comes back to the
// actor, to then.
func (a *partitionActor) ask(msg any, then func(*StateResult)) {
	self, sys, inc := a.self, a.sys, a.inc
	a.cfg.States.Ask(a.key, msg, func(res *StateResult) {
		sys.Root.Send(self, &stateAnswered{inc: inc, res: res, then: then})
	})
}

// load reads the durable state, initializing it at first use.
func (a *partitionActor) load() {
	a.ask(&ReadState{Key: a.key, LeaderEpoch: a.epoch}, func(res *StateResult) {
		switch {
		case res.Code == kerr.FencedLeaderEpoch.Code:
			a.stopSelf()
		case res.Code != 0:
			a.loadLater(res)
		case !res.Found || res.StartOffset == Uninitialized:
			a.initialize(res.StateEpoch + 1)
		default:
			a.ready(res.StateEpoch, res.StartOffset, res.Batches)
		}
	})
}

func (a *partitionActor) loadLater(res *StateResult) {
	a.cfg.Logger.Debug().Str("group", a.key.Group).Str("partition", a.name()).Int16("code", res.Code).Msg("share-partition: reading its state failed, trying again")
	self, sys, inc := a.self, a.sys, a.inc
	time.AfterFunc(a.retry, func() { sys.Root.Send(self, &loadAgain{inc}) })
	a.retry = min(2*a.retry, 2*time.Second)
}

// initialize decides the start offset of a share-partition used for the
// first time, from share.auto.offset.reset, and makes it durable.
func (a *partitionActor) initialize(stateEpoch int32) {
	v := a.handle.View()
	if v == nil || v.Log == nil {
		a.loadLater(&StateResult{Code: kerr.KafkaStorageError.Code})
		return
	}
	s := a.settings()
	start := v.Log.HighWatermark
	switch s.AutoOffsetReset {
	case "earliest":
		start = v.Log.LogStartOffset
	case "by_duration":
		ts := time.Now().Add(-s.ResetBefore).UnixMilli()
		if o, _, found, err := v.Log.OffsetForTimestamp(ts, a.dec); err == nil && found {
			start = o
		}
	}
	a.ask(&InitializeState{Key: a.key, StateEpoch: stateEpoch, StartOffset: start}, func(res *StateResult) {
		if res.Code != 0 {
			a.loadLater(res)
			return
		}
		a.ready(stateEpoch, start, nil)
	})
}

func (a *partitionActor) ready(stateEpoch int32, start int64, batches []StateBatch) {
	a.loaded, a.stateEpoch = true, stateEpoch
	a.w.reset(start, batches)
	a.cfg.Logger.Debug().Str("group", a.key.Group).Str("partition", a.name()).Int64("spso", start).Int32("state_epoch", stateEpoch).Msg("share-partition: loaded")
	a.wake()
	for _, st := range a.stashed {
		a.acknowledge(st.m, st.reply)
	}
	a.stashed = nil
}

func (a *partitionActor) name() string {
	return a.handle.Topic + "-" + itoa(a.handle.Partition)
}

// led returns the partition's view while this node leads it in the
// actor's epoch; otherwise the actor stops (its successor reads the
// state again) and led returns nil.
func (a *partitionActor) led() *partition.View {
	v := a.handle.View()
	if v == nil || v.Log == nil || v.LeaderEpoch != a.epoch || v.LeaderEpoch < 0 || v.Failure != nil {
		a.stopSelf()
		return nil
	}
	return v
}

func (a *partitionActor) acquire(m *Acquire, reply func(Acquired)) {
	if !a.loaded {
		a.await(m)
		reply(Acquired{})
		return
	}
	v := a.led()
	if v == nil {
		reply(Acquired{Err: kerr.NotLeaderForPartition})
		return
	}
	s := a.settings()
	a.w.moveStart(v.Log.LogStartOffset)
	bound := v.Log.HighWatermark
	if s.ReadCommitted {
		bound = v.Log.LastStableOffset
	}
	l := limits{member: m.Member, maxRecords: m.MaxRecords, maxBytes: m.MaxBytes, lock: s.LockDuration,
		countLimit: s.DeliveryCountLimit, maxLocks: s.MaxRecordLocks, readCommitd: s.ReadCommitted, wholeBatches: m.WholeBatches}
	now := time.Now()
	got, err := a.w.acquire(v.Log, bound, l, now, a.dec)
	if err != nil {
		a.cfg.Logger.Warn().Err(err).Str("group", a.key.Group).Str("partition", a.name()).Msg("share-partition: reading the log")
	}
	a.cfg.Stats.Acquired.Add(int64(got.n))
	a.cfg.Stats.Redelivered.Add(int64(got.redelivered))
	a.cfg.Stats.Archived.Add(int64(got.archived))
	out := Acquired{LockMs: int32(s.LockDuration.Milliseconds())}
	if got.n == 0 {
		a.await(m)
	} else {
		a.schedule(now.Add(s.LockDuration))
		out.Records = readCovering(v.Log, got.spans[0].first, got.spans[len(got.spans)-1].last)
		for _, sp := range got.spans {
			out.Ranges = append(out.Ranges, AcquiredRange{First: sp.first, Last: sp.last, Count: sp.count})
		}
	}
	reply(out)
	if got.archived > 0 {
		a.changed()
	}
}

// readCovering returns the log's batches from the one holding first to
// the one holding last, whole: one read, cut after the last one's batch,
// in the common case where the acquired records span less than a
// megabyte.
func readCovering(v *store.View, first, last int64) []byte {
	var out []byte
	for off := first; off <= last; {
		b, err := v.ReadBytes(off, store.ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil || len(b) == 0 {
			return out
		}
		cut := 0
		_ = store.ForEachBatch(b, func(_ []byte, h store.Header) error {
			if h.BaseOffset > last {
				return errStop
			}
			cut += int(h.Size())
			off = h.NextOffset()
			return nil
		})
		if out == nil {
			out = b[:cut]
		} else {
			out = append(out, b[:cut]...)
		}
	}
	return out
}

func (a *partitionActor) acknowledge(m *Acknowledge, reply func(*kerr.Error)) {
	if a.led() == nil {
		reply(kerr.NotLeaderForPartition)
		return
	}
	s := a.settings()
	l := limits{lock: s.LockDuration, countLimit: s.DeliveryCountLimit}
	counts, err := a.w.acknowledge(m.Member, m.Batches, m.Renew, l, time.Now())
	if err != nil {
		reply(err)
		return
	}
	st := a.cfg.Stats
	st.Accepted.Add(int64(counts.accepted))
	st.Released.Add(int64(counts.released))
	st.Rejected.Add(int64(counts.rejected))
	st.Renewed.Add(int64(counts.renewed))
	st.Archived.Add(int64(counts.archived + counts.rejected))
	a.pending = append(a.pending, reply)
	a.changed()
}

// changed writes what changed, and wakes the fetches waiting for records.
func (a *partitionActor) changed() {
	a.flush()
	a.wake()
}

// flush sends the changes to the share coordinator, one write at a time;
// the replies waiting are answered once their changes are durable.
func (a *partitionActor) flush() {
	if a.writing {
		return
	}
	if !a.w.dirty() {
		for _, r := range a.pending {
			r(nil)
		}
		a.pending = nil
		return
	}
	start, batches := a.w.changes()
	a.writing, a.inflight, a.pending = true, a.pending, nil
	a.cfg.Stats.StateWrites.Add(1)
	a.ask(&WriteState{Key: a.key, StateEpoch: a.stateEpoch, LeaderEpoch: a.epoch, StartOffset: start,
		DeliveryCompleteCount: a.w.deliveryComplete(), Batches: batches}, func(res *StateResult) {
		a.writing = false
		if res.Code != 0 {
			// What this actor holds is no longer what is durable: answer
			// the error and let a successor read the state again.
			err := kerr.ErrorForCode(res.Code)
			a.cfg.Stats.Failures.Add(1)
			a.cfg.Logger.Warn().Str("group", a.key.Group).Str("partition", a.name()).Int16("code", res.Code).Msg("share-partition: writing its state failed; reloading")
			a.fail(err.(*kerr.Error))
			a.stopSelf()
			return
		}
		for _, r := range a.inflight {
			r(nil)
		}
		a.inflight = nil
		a.flush()
	})
}

// fail answers every waiting reply with err.
func (a *partitionActor) fail(err *kerr.Error) {
	for _, r := range a.inflight {
		r(err)
	}
	for _, r := range a.pending {
		r(err)
	}
	for _, st := range a.stashed {
		st.reply(err)
	}
	a.inflight, a.pending, a.stashed = nil, nil, nil
	a.wake()
}

func (a *partitionActor) stopSelf() {
	a.loaded = false
	a.sys.Root.Stop(a.self)
}

// waiter is a fetch waiting for records.
type waiter struct {
	ch    chan struct{}
	until time.Time
}

// await registers a fetch's wake channel, forgetting those of fetches
// that stopped waiting, so that a consumer polling an idle partition
// does not grow the list.
func (a *partitionActor) await(m *Acquire) {
	if m.Wake == nil {
		return
	}
	now := time.Now()
	a.waiters = slices.DeleteFunc(a.waiters, func(w waiter) bool { return w.until.Before(now) })
	a.waiters = append(a.waiters, waiter{m.Wake, m.Until})
}

func (a *partitionActor) wake() {
	for _, w := range a.waiters {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	a.waiters = a.waiters[:0]
}

// schedule arranges a lockTick at t unless one comes sooner.
func (a *partitionActor) schedule(t time.Time) {
	if t.IsZero() || (!a.timerAt.IsZero() && !t.Before(a.timerAt)) {
		return
	}
	a.timerAt = t
	self, sys, inc := a.self, a.sys, a.inc
	time.AfterFunc(time.Until(t)+time.Millisecond, func() { sys.Root.Send(self, &lockTick{inc}) })
}

var _ actors.Kinded = (*partitionActor)(nil)
