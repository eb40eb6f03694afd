package partition

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/replica"
)

// Config configures one partition actor.
type Config struct {
	Topic     string
	Partition int32
	TopicID   image.TopicID
	// Dir is the partition's directory, <data.dir>/<topic>-<partition>.
	Dir         string
	FS          vfs.FS
	Clock       clock.Clock
	TopicConfig configs.Topic
	Durability  configs.Durability
	// NodeID is this node's id: the partition leads when State.Leader is.
	NodeID int32
	// State is the partition's state in the metadata at the spawn (later
	// ones come as SetState).
	State State
	// ReplicaLagMax is replica.lag.time.max.ms: a leader asks to remove
	// from the ISR a follower not caught up for this long. 0 means 30 s.
	ReplicaLagMax time.Duration
	// AlterISR asks the active controller to change the ISR and calls
	// reply once with its answer, from any goroutine; nil means the ISR
	// never changes (a partition without followers never asks).
	AlterISR func(req ISRChange, reply func(ISRChanged))
	// TickInterval paces retention, compaction, checkpoints, flush.ms and
	// producer expiry.
	TickInterval time.Duration
	// ProducerIDExpirationMs is producer.id.expiration.ms: an idempotent
	// producer idle this long is forgotten. 0 means Kafka's default,
	// configs.DefaultProducerIDExpirationMs.
	ProducerIDExpirationMs int64
	// FileIdleTimeout is how long the log may go without appends before the
	// partition gives its active segment's descriptor back to the node's
	// descriptor cache (store.Log.ReleaseFiles). 0 means 30 s.
	FileIdleTimeout time.Duration
	Logger          zerolog.Logger
	// Failures rate-limits the lines logged when partitions fail and
	// recover, node-wide; nil means no limit.
	Failures *logging.Limiter
	// LogDirs, when set, hears of the partition's failures and recovery
	// (LogDirs.Failing, LogDirs.Working).
	LogDirs *LogDirs
	// Syncer, when set, makes appends durable together with the node's
	// other partitions' (one sync of the filesystem); nil means one fsync
	// of the log's own files each time.
	Syncer *Syncer
	// Stats counts replication events node-wide; nil counts nothing.
	Stats *Stats
	// Trash takes Dir out of the way when it holds another topic's
	// partition (a deleted topic of the same name): the log is never
	// opened from it. Nil means the partition fails instead.
	Trash *Trash
	// gate, set by the supervisor, bounds the partitions opening their
	// logs at once; nil means no bound.
	gate *openGate
}

// openGate bounds how many partitions of a supervisor open their logs at
// once (each open of a new log is a few fsyncs), and lets those waiting
// for a turn give up once the supervisor stops: a node stopped while
// 10,000 new partitions opened waited for every one (13 s), past the
// 10 s its stop is given.
type openGate struct {
	turns   chan struct{}
	leaving chan struct{} // closed when the supervisor stops or restarts
}

// openTurns is how many partitions open their logs, or make a new log's
// directory (store.Config.Turns), at once: more do not make more fsyncs a
// second (3,000 new directories, each a file and two directory syncs: 6.4 s
// at 64 at once, 5.4 to 8.8 s at 256).
const openTurns = 64

// StoreOptions maps a topic's configs to the log's options.
func StoreOptions(t configs.Topic) store.Options {
	o := store.DefaultOptions()
	o.SegmentBytes = int64(t.SegmentBytes)
	o.SegmentMs = t.SegmentMs
	o.SegmentIndexBytes = t.SegmentIndexBytes
	o.IndexIntervalBytes = t.IndexIntervalBytes
	o.RetentionMs = t.RetentionMs
	o.RetentionBytes = t.RetentionBytes
	o.Compact = t.CleanupPolicy.Compact
	o.Delete = t.CleanupPolicy.Delete
	o.DeleteRetentionMs = t.DeleteRetentionMs
	o.MinCompactionLagMs = t.MinCompactionLagMs
	o.FlushMessages = t.FlushMessages
	o.FlushMs = t.FlushMs
	o.LogAppendTime = t.MessageTimestampType == configs.LogAppendTime
	return o
}

// partition is the actor that owns one hosted replica's log: the single
// writer. It appends, tracks the high watermark, answers producers when
// their records are as durable as their acks ask, and publishes views that
// fetches read without messages.
//
// Failed state: when the log cannot be opened, or a write, sync, roll or
// periodic task fails (no descriptor, no space, an I/O error), the actor
// answers appends KAFKA_STORAGE_ERROR (retriable: clients retry), keeps
// the last good view for readers (nothing above the high watermark, so
// nothing torn), and tries to open the log anew on ticks, with backoff;
// once it opens, the new log replaces the old, recovered from disk as after
// a restart. The failure is logged when it starts and when it ends.
//
// Restart: the log is reopened (and recovered) from disk in Started, and
// the idempotent producers' state rebuilt from its newest snapshot and the
// batches after it; the requests waiting on the old instance were answered
// REQUEST_TIMED_OUT, an indefinite error, so producers retry (idempotent
// ones without duplicates).
type partition struct {
	cfg    Config
	handle *Handle
	log    *store.Log // nil while failed before any log opened
	self   *actor.PID
	sys    *actor.ActorSystem

	// failure is set while the partition is in the failed state.
	failure *failure
	// compactionOff is set when compaction met corruption it cannot clean:
	// it stays off until the actor restarts.
	compactionOff bool
	lastAppend    time.Time

	// state is the partition's state in force; leader or follower the
	// account of this replica's role in it (neither while no log is open).
	state    State
	leader   *replica.Leader
	follower *replica.Follower
	// fetchedBy is, while leading, the incarnation of each follower's
	// node whose fetch the leader's account last took: the broker epochs
	// of its ISR changes (KIP-903).
	fetchedBy map[int32]uint64
	// behavior is the role's: leading, following or common (assumeRole).
	behavior actor.Behavior
	// role is the role and leader epoch ActorRole reports, published
	// where they change (showRole); nil until then.
	role atomic.Pointer[roleView]

	waiters []waiter // acks=all appends waiting for the high watermark, by offset
	// durableWaiters are acks=1 appends waiting for the leader's own fsync
	// (durability fsync), by offset.
	durableWaiters []waiter
	// followerSyncs are Replicates waiting for the fsync of what they
	// appended, by offset.
	followerSyncs []followerSync

	// appends are queued for the next writeAppends (append.go), and
	// answered if the actor stops or restarts before they are handled.
	appends     []*Append
	writeQueued bool // a writeAppends is on its way
	outcomes    []appendOutcome

	producers *producers
	// unstable is the first unstable offset last given to the log
	// (MaxInt64: none); abortedTxns the index entries of the markers
	// staged, added once they are written (txns.go).
	unstable    int64
	abortedTxns []store.AbortedTxn
	// verifying holds the transactional Appends waiting for their
	// coordinator's answer, by producer; verifiedGuards the verification
	// each producer passed last; guards numbers verifications.
	verifying      map[int64]*verification
	verifiedGuards map[int64]verifiedGuard
	guards         uint64
	dec            store.Decompressor // for control records
	// lastSnapshot is the offset of the newest producer-state snapshot
	// written or loaded (-1: none), lastSnapshotTime when it was written.
	lastSnapshot     int64
	lastSnapshotTime time.Time

	// syncing is the log an fsync runs on (nil: none); syncAgain asks for
	// another once it ends, for what was appended meanwhile (group commit).
	// Both unused with a Syncer, which groups the requests itself.
	syncing   *store.Log
	syncAgain bool
	// tickTimer sends the next tick, tickEvery after the last: the tick
	// interval while the partition works, doubling up to idleTickMax
	// while it idles, so ten thousand idle partitions cost little.
	tickTimer      *time.Timer
	tickEvery      time.Duration
	lastTick       time.Time
	started        bool
	goroutines     sync.WaitGroup // fsyncs and cleaner passes in flight
	compacting     bool
	lastCheckpoint time.Time
}

// checkpointInterval paces the checkpoint of the recovery point, log start
// offset and high watermark, when they changed: Kafka's
// log.flush.offset.checkpoint.interval.ms. (Kafka writes one file for all
// the partitions of a log directory; here each partition has its own, and a
// new file costs ten thousand partitions dearly: creating one took 0.6 ms
// of CPU on the test VM.) Moves of the log start offset are checkpointed at
// once, and a clean stop checkpoints everything.
const checkpointInterval = time.Minute

// idleTickMax bounds the time between two ticks of an idle partition: its
// retention, producer expiry and file release are checked at least this
// often (Kafka checks retention every 5 minutes).
const idleTickMax = 30 * time.Second

// tickMsg is the one tick message every partition sends itself.
var tickMsg = &tick{}

type waiter struct {
	next  int64 // the high watermark that completes it
	res   AppendResult
	reply func(AppendResult)
}

func newPartition(cfg Config, h *Handle) actor.Actor {
	p := &partition{cfg: cfg, handle: h, state: cfg.State, behavior: actor.NewBehavior()}
	p.behavior.Become(p.common)
	return p
}

// Receive hands the message to the behaviour of the partition's role
// (protoactor's Become): leading, following, or, with no log open, the
// common one alone.
func (p *partition) Receive(ctx actor.Context) { p.behavior.Receive(ctx) }

// leading is the behaviour of a leader: it takes appends and record
// deletions, and its followers' positions.
func (p *partition) leading(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Append:
		p.queueAppend(ctx, m)
	case *DeleteRecords:
		p.writeAppends()
		p.deleteRecords(m)
	case *FollowerFetched:
		p.followerFetched(m)
	case *isrChanged:
		p.onISRChanged(m)
	case *txnVerified:
		p.onVerified(m)
	case *DescribeProducers:
		p.describeProducers(m)
	default:
		p.common(ctx)
	}
}

// following is the behaviour of a follower: it applies its leader's
// answers, and refuses what only a leader does.
func (p *partition) following(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Replicate:
		p.replicate(m)
	case *Append:
		m.Reply(AppendResult{Err: kerr.NotLeaderForPartition, Message: fmt.Sprintf("node %d follows node %d for this partition", p.cfg.NodeID, p.state.Leader)})
		m.release()
		m.written()
	case *DeleteRecords:
		m.Reply(-1, kerr.NotLeaderForPartition)
	case *DescribeProducers:
		m.Reply(nil, kerr.NotLeaderForPartition)
	default:
		p.common(ctx)
	}
}

// common is what every role does, and all a partition does without an
// open log (failed before it ever opened): its appends are refused.
func (p *partition) common(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.self, p.sys = ctx.Self(), ctx.ActorSystem()
		p.start()
	case *actor.Stopping:
		p.shutdown(true)
	case *actor.Restarting:
		// NB: no producer snapshot: after a panic the state in memory may
		// be half updated; the next instance rebuilds it from the log.
		p.shutdown(false)
	case *Append:
		p.queueAppend(ctx, m) // refused: the partition is failed
	case *DeleteRecords:
		m.Reply(-1, kerr.KafkaStorageError)
	case *DescribeProducers:
		m.Reply(nil, kerr.KafkaStorageError)
	case *Replicate:
		m.Done() // an answer for another role
	case *writeAppends:
		p.writeAppends()
	case *synced:
		p.onSynced(m)
	case *tick:
		p.writeAppends()
		p.onTick()
	case *compacted:
		p.compacting = false
		p.onCompacted(m)
	case *SetState:
		p.setState(m.State)
	case *SetConfig:
		p.writeAppends()
		p.cfg.TopicConfig = m.Config
		if p.log != nil {
			if err := p.log.SetOptions(StoreOptions(m.Config)); err != nil {
				p.cfg.Logger.Error().Err(err).Msg("topic config refused by the log")
			}
		}
		p.publish()
	}
}

// start opens the log and arms the first tick; a log that does not open
// puts the partition in the failed state, from which the ticks retry. An
// idle partition has no goroutine: fsyncs run on goroutines of their own
// while they last, ticks come from a timer.
func (p *partition) start() {
	if g := p.cfg.gate; g != nil {
		select {
		case g.turns <- struct{}{}:
		case <-g.leaving:
			return // stopping before it opened: nothing to open or close
		}
	}
	p.started = true
	p.lastCheckpoint, p.lastAppend, p.lastTick = p.cfg.Clock.Now(), p.cfg.Clock.Now(), p.cfg.Clock.Now()
	p.scheduleTick(p.cfg.TickInterval)
	l, err := p.openLog()
	if g := p.cfg.gate; g != nil {
		<-g.turns // given back before anything may write: a write may take a turn to make the log's directory
	}
	if err != nil {
		p.fail("open", err)
		return
	}
	p.log = l
	// A log that opens again after its log dir failed (a restarted actor).
	p.cfg.LogDirs.Working(Key{Topic: p.cfg.Topic, Partition: p.cfg.Partition}, false)
	p.assumeRole()
	p.updateLastStable()
	p.publish()
}

// openLog opens (and recovers) the log and rebuilds the producer state
// from it. The high watermark starts at the checkpointed one; a leader
// raises it over its ISR (assumeRole), a follower from its leader.
func (p *partition) openLog() (*store.Log, error) {
	cfg := store.Config{FS: p.cfg.FS, Dir: p.cfg.Dir, Clock: p.cfg.Clock, TopicID: p.cfg.TopicID, Options: StoreOptions(p.cfg.TopicConfig)}
	if p.cfg.gate != nil {
		cfg.Turns = p.cfg.gate.turns // the turns of opening logs, not held while one opens
	}
	l, err := store.Open(cfg)
	var stale *store.TopicIDMismatchError
	if errors.As(err, &stale) && p.cfg.Trash != nil {
		// A deleted topic's partition whose directory outlived it (the
		// node stopped before removing it): never served, deleted now.
		p.cfg.Logger.Warn().Str("dir", p.cfg.Dir).Msg("partition directory holds a deleted topic's partition: deleting it")
		if err := p.cfg.Trash.Delete(p.cfg.Dir, stale.Found); err != nil {
			return nil, err
		}
		l, err = store.Open(cfg)
	}
	if err != nil {
		return nil, err
	}
	if err := p.rebuildProducers(l); err != nil {
		l.Abandon()
		return nil, err
	}
	return l, nil
}

// shutdown stops the goroutines, answers waiters, snapshots the producer
// state when it can be trusted (clean), and closes the log.
func (p *partition) shutdown(clean bool) {
	if !p.started {
		return
	}
	p.started = false
	if clean {
		// Stopping: no longer a failed partition of its log dir.
		p.cfg.LogDirs.Working(Key{Topic: p.cfg.Topic, Partition: p.cfg.Partition}, true)
	}
	p.tickTimer.Stop() // a tick already sent goes to the dead letters, or to the next instance
	p.goroutines.Wait()
	for _, m := range p.appends {
		m.Reply(AppendResult{Err: kerr.RequestTimedOut, Message: "partition restarting"})
		m.written()
	}
	p.appends = nil
	p.dropVerifications(kerr.RequestTimedOut, "partition restarting")
	p.answerWaiters(kerr.RequestTimedOut, "partition restarting")
	p.dropFollowerSyncs()
	if p.log == nil {
		return
	}
	if p.handle.deleted.Load() {
		// Its directory is deleted next: nothing of it need be durable,
		// and a deletion of 100,000 partitions would otherwise sync each.
		p.log.Abandon()
		p.log = nil
		return
	}
	if clean && p.failure == nil {
		if err := p.snapshotProducers(); err != nil {
			p.cfg.Logger.Error().Err(err).Msg("producer-state snapshot failed")
		}
	}
	if err := p.log.Close(); err != nil && p.failure == nil {
		p.cfg.Logger.Error().Err(err).Msg("closing the log")
	}
	p.log = nil
}

// requestSync makes what was appended durable, reporting with synced: in
// the node's next sync of the filesystem (Config.Syncer, which groups the
// requests of every partition), or by an fsync on a goroutine of its own;
// while one runs, another once it ends, covering everything appended
// meanwhile (group commit).
func (p *partition) requestSync() {
	l, self, root := p.log, p.self, p.sys.Root
	if p.cfg.Syncer != nil {
		p.cfg.Syncer.Sync(l, func(err error) { root.Send(self, &synced{log: l, durable: l.DurableOffset(), err: err}) })
		return
	}
	if p.syncing != nil {
		p.syncAgain = true
		return
	}
	p.syncing = l
	p.goroutines.Add(1)
	go func() {
		defer p.goroutines.Done()
		err := l.Sync()
		root.Send(self, &synced{log: l, durable: l.DurableOffset(), err: err})
	}()
}

// scheduleTick arms the next tick d from now.
func (p *partition) scheduleTick(d time.Duration) {
	p.tickEvery = d
	if p.tickTimer == nil {
		self, root := p.self, p.sys.Root
		p.tickTimer = time.AfterFunc(d, func() { root.Send(self, tickMsg) })
		return
	}
	p.tickTimer.Reset(d)
}

// nextTick arms the tick after this one: soon while the partition works
// or waits to retry, later and later while it idles.
func (p *partition) nextTick(now time.Time) {
	switch {
	case p.failure != nil:
		p.scheduleTick(max(p.failure.retryAt.Sub(now), p.cfg.TickInterval))
	case p.lastAppend.After(p.lastTick) || len(p.waiters) > 0 || len(p.durableWaiters) > 0 || p.compacting || p.syncing != nil ||
		p.log.DurableOffset() < p.log.LogEndOffset():
		p.scheduleTick(p.cfg.TickInterval)
	default:
		idle := idleTickMax
		if p.leader != nil && p.hasFollowers() {
			// Followers that stop fetching leave the ISR within half a
			// lag time of the deadline.
			idle = min(idle, p.cfg.ReplicaLagMax/2)
		}
		p.scheduleTick(min(2*p.tickEvery, max(idle, p.cfg.TickInterval)))
	}
	p.lastTick = now
}

func (p *partition) publish() {
	v := &View{Config: p.cfg.TopicConfig, LeaderEpoch: -1, State: p.state}
	if p.leads() {
		v.LeaderEpoch = p.state.LeaderEpoch
	}
	if p.log != nil {
		v.Log = p.log.View()
	}
	if p.follower != nil {
		if pos, ok := p.follower.Fetch(); ok && pos.Leader >= 0 {
			v.Follow = &pos
		}
	}
	if p.leader != nil && p.hasFollowers() {
		p.leader.Lag(func(r int32, offset, behind int64, caughtUp time.Time) {
			v.Followers = append(v.Followers, FollowerLag{Replica: r, FetchOffset: offset, Offsets: behind, CaughtUp: caughtUp})
		})
	}
	if f := p.failure; f != nil {
		v.Failure = &Failure{Cause: f.cause, Err: f.err.Error(), Since: f.since}
	}
	p.handle.publish(v)
}

// idempotentBatch returns the header of records when they are one batch
// of an idempotent producer. Produce v3+ sends exactly one batch per
// partition (Validate checks it); a record set of several batches may not
// hold an idempotent one, whose sequence check and duplicate answer are
// per batch, so it is refused (INVALID_RECORD, nothing appended). Records
// whose header does not parse are left to the log, which refuses them.
func idempotentBatch(records []byte) (store.Header, bool, *AppendResult) {
	h, err := store.ParseHeader(records)
	if err != nil {
		return h, false, nil
	}
	if h.Size() == int64(len(records)) {
		return h, h.ProducerID >= 0, nil
	}
	err = store.ForEachBatch(records, func(_ []byte, bh store.Header) error {
		if bh.ProducerID >= 0 {
			return errIdempotentInSet
		}
		return nil
	})
	if errors.Is(err, errIdempotentInSet) {
		return h, false, &AppendResult{Err: kerr.InvalidRecord, Message: err.Error()}
	}
	return h, false, nil
}

var errIdempotentInSet = errors.New("an idempotent producer's batch must be the only batch of its record set")

// answerDuplicate answers a retried batch with the offsets the original got
// (KIP-98). Like the original, it is answered only once those offsets are
// as durable as its acks ask, so that a retry never hears of success before
// the original could have.
func (p *partition) answerDuplicate(m *Append, b *batchMetadata) {
	// NB: Kafka answers a duplicate with its original's max timestamp as
	// the log append time whatever the topic's timestamp type (UnifiedLog
	// sets it from the producer state's BatchMetadata); so does Skein.
	out := AppendResult{BaseOffset: b.FirstOffset, LogAppendTime: b.Timestamp, LogStartOffset: p.log.LogStartOffset()}
	p.wait(m.Acks, b.LastOffset+1, out, m.Reply, true)
}

// wait answers an append whose records end before next once they are as
// durable as acks asks: acks=0 at once; acks=1 once the leader has them
// (on disk, under durability fsync); acks=all once the high watermark
// passes them. sorted is false when next is past every waiter's (a new
// append), true when it may fall among them (a duplicate's original is
// among them, and so may be later appends).
func (p *partition) wait(acks int16, next int64, res AppendResult, reply func(AppendResult), sorted bool) {
	list := &p.waiters
	switch {
	case acks == 0:
		reply(res)
		return
	case acks == 1 && (p.cfg.Durability == configs.DurabilityReplicated || next <= p.log.DurableOffset()):
		reply(res)
		return
	case acks == 1:
		list = &p.durableWaiters
	case next <= p.log.HighWatermark():
		reply(res)
		return
	}
	w := waiter{next: next, res: res, reply: reply}
	if !sorted {
		*list = append(*list, w)
		return
	}
	i, _ := slices.BinarySearchFunc(*list, next, func(w waiter, next int64) int {
		if w.next <= next {
			return -1
		}
		return 1
	})
	*list = slices.Insert(*list, i, w)
}

func appendError(err error) AppendResult {
	switch {
	case errors.Is(err, store.ErrCorrupt):
		return AppendResult{Err: kerr.CorruptMessage, Message: err.Error()}
	case errors.Is(err, store.ErrInvalidRecord):
		return AppendResult{Err: kerr.InvalidRecord, Message: err.Error()}
	case errors.Is(err, store.ErrMessageTooLarge):
		return AppendResult{Err: kerr.MessageTooLarge, Message: err.Error()}
	}
	return AppendResult{Err: kerr.KafkaStorageError, Message: err.Error()}
}

func (p *partition) onSynced(m *synced) {
	if m.log == p.syncing {
		p.syncing = nil
		if p.syncAgain && p.failure == nil {
			p.syncAgain = false
			p.requestSync()
		}
	}
	if m.log != p.log || p.failure != nil {
		return // a log given up since: its waiters were answered
	}
	if m.err != nil {
		p.fail("sync", m.err)
		return
	}
	p.releaseFollowerSyncs(m.durable)
	if p.cfg.Durability == configs.DurabilityReplicated || p.leader == nil {
		return // the high watermark does not wait for fsync
	}
	n := 0
	for _, w := range p.durableWaiters {
		if w.next > m.durable {
			break
		}
		w.reply(w.res)
		n++
	}
	p.durableWaiters = append(p.durableWaiters[:0], p.durableWaiters[n:]...)
	p.leader.Appended(m.durable)
	p.raiseHighWatermark()
}

func (p *partition) onTick() {
	now := p.cfg.Clock.Now()
	defer p.nextTick(now)
	if p.failure != nil {
		if !now.Before(p.failure.retryAt) {
			p.retry()
		}
		return
	}
	if p.leader != nil {
		if isr := p.leader.Tick(now); isr != nil {
			p.alterISR(isr, now)
		}
	}
	if n := p.producers.expire(now.UnixMilli()); n > 0 {
		p.cfg.Logger.Debug().Int("producers", n).Msg("expired idle producers")
	}
	if now.Sub(p.lastSnapshotTime) >= producerSnapshotInterval {
		if err := p.snapshotProducers(); err != nil {
			p.fail("producer-state snapshot", err)
			return
		}
	}
	if _, err := p.log.ApplyRetention(); err != nil {
		p.fail("retention", err)
		return
	} else if p.log.LogStartOffset() != p.handle.View().Log.LogStartOffset {
		p.publish()
	}
	if p.cfg.Durability == configs.DurabilityReplicated && p.log.FlushDue() {
		p.requestSync()
	}
	if now.Sub(p.lastCheckpoint) >= checkpointInterval {
		p.lastCheckpoint = now
		if err := p.log.Checkpoint(); err != nil {
			p.fail("checkpoint", err)
			return
		}
	}
	if now.Sub(p.lastAppend) >= p.cfg.FileIdleTimeout {
		p.log.ReleaseFiles()
	}
	// Kafka cleans a log once half of it is dirty (min.cleanable.dirty.ratio
	// 0.5) or a kept tombstone's delete horizon passed.
	if p.cfg.TopicConfig.CleanupPolicy.Compact && !p.compacting && !p.compactionOff && p.log.CompactionDue(minCleanableDirtyRatio) {
		p.compacting = true
		l, self, root := p.log, p.self, p.sys.Root
		p.goroutines.Add(1)
		go func() {
			defer p.goroutines.Done()
			_, err := l.Compact()
			root.Send(self, &compacted{err: err})
		}()
	}
}

func (p *partition) deleteRecords(m *DeleteRecords) {
	if p.failure != nil {
		m.Reply(-1, kerr.KafkaStorageError)
		return
	}
	hw := p.log.HighWatermark()
	off := m.Offset
	if off == -1 {
		off = hw
	}
	if off < 0 || off > hw {
		m.Reply(-1, kerr.OffsetOutOfRange)
		return
	}
	if err := p.log.AdvanceLogStartOffset(off); err != nil {
		m.Reply(-1, kerr.KafkaStorageError)
		p.fail("delete records", err)
		return
	}
	p.publish()
	m.Reply(p.log.LogStartOffset(), nil)
}

// producerSnapshotInterval paces the periodic producer-state snapshot,
// beside those at segment rolls and at a clean stop: it bounds what a
// restart after a crash replays from the log when segments are large. A
// snapshot costs two fsyncs, so it is taken only when the log has grown.
const producerSnapshotInterval = time.Minute

// snapshotProducers writes the producer state at the log end offset, if
// the log has grown since the last snapshot (Kafka's takeSnapshot). The
// state covers every batch below the log end, durable or not: a crash that
// loses the tail also loses the snapshot (store.Open deletes snapshots above
// the log end). After a failure the older snapshot and the log still
// rebuild the state.
func (p *partition) snapshotProducers() error {
	leo := p.log.LogEndOffset()
	if leo == p.lastSnapshot || (leo == p.log.LogStartOffset() && len(p.producers.entries) == 0) {
		return nil // nothing new; or nothing at all (a partition never written)
	}
	if err := p.log.WriteSnapshot(leo, p.producers.encode()); err != nil {
		return fmt.Errorf("producer-state snapshot at offset %d: %w", leo, err)
	}
	p.lastSnapshot, p.lastSnapshotTime = leo, p.cfg.Clock.Now()
	return nil
}

// rebuildProducers restores the producer state from the newest snapshot
// and replays the batch headers after it to the log end (Kafka's
// loadProducerState). Without a usable snapshot it replays the whole log.
// Producers whose batches retention removed before any snapshot kept them
// stay unknown, and may go on at any sequence (KIP-360).
func (p *partition) rebuildProducers(l *store.Log) error {
	expiration := p.cfg.ProducerIDExpirationMs
	if expiration <= 0 {
		expiration = configs.DefaultProducerIDExpirationMs
	}
	p.producers = newProducers(expiration)
	p.lastSnapshot = -1
	p.lastSnapshotTime = p.cfg.Clock.Now()
	off, data, ok, err := l.ReadLatestSnapshot()
	if err != nil {
		return err
	}
	v := l.View()
	from := v.LogStartOffset
	if ok {
		if err := p.producers.restore(data); err != nil {
			p.cfg.Logger.Warn().Err(err).Int64("offset", off).Msg("ignoring producer-state snapshot; replaying the whole log")
		} else {
			from = max(from, off)
			p.lastSnapshot = off
		}
	}
	now := p.cfg.Clock.Now().UnixMilli()
	p.unstable = -1 // the log is told again
	err = replayHeaders(v, from, func(h *store.Header, control []byte) error {
		if control != nil {
			return p.applyControl(l, control, h, now)
		}
		p.producers.update(h, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuilding producer state from offset %d: %w", from, err)
	}
	p.producers.expire(now)
	return nil
}

// replayChunk is how much of a segment replayHeaders reads at once: small
// batches cost one read per chunk, large ones one read each.
const replayChunk = 64 << 10

// replayHeaders calls fn with the header of every batch that ends at or
// after from, up to the view's log end, in order, and for control batches
// (transaction markers) with the batch too, nil otherwise. It reads
// headers only (never decompresses), through the view's segment files, and
// whole batches for control batches, which are small.
func replayHeaders(v *store.View, from int64, fn func(h *store.Header, control []byte) error) error {
	buf := make([]byte, replayChunk)
	for off := max(from, v.LogStartOffset); off < v.LogEndOffset; {
		sl, err := v.Read(off, store.ReadOptions{MaxBytes: 1 << 40, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			return err
		}
		if sl.Size == 0 {
			return nil
		}
		var bufPos, bufEnd int64 // the file range buf holds
		for pos, end := sl.Pos, sl.Pos+sl.Size; pos < end; {
			if pos+store.HeaderSize > bufEnd {
				n := min(int64(len(buf)), end-pos)
				if err := readFull(sl.File, buf[:n], pos); err != nil {
					return err
				}
				bufPos, bufEnd = pos, pos+n
			}
			h, err := store.ParseHeader(buf[pos-bufPos:])
			if err != nil {
				return err
			}
			if h.LastOffset() >= from {
				var control []byte
				if h.Control() {
					if control, err = readBatch(sl.File, buf[:bufEnd-bufPos], bufPos, pos, h.Size()); err != nil {
						return err
					}
				}
				if err := fn(&h, control); err != nil {
					return err
				}
			}
			pos += h.Size()
		}
		off = sl.NextOffset
	}
	return nil
}

// readFull reads len(b) bytes at pos, at least a batch header's worth.
func readFull(f io.ReaderAt, b []byte, pos int64) error {
	if len(b) < store.HeaderSize {
		return fmt.Errorf("%w: partial batch header at position %d", store.ErrCorrupt, pos)
	}
	got, err := f.ReadAt(b, pos)
	if got < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: short read at position %d", store.ErrCorrupt, pos)
		}
		return err
	}
	return nil
}

// readBatch returns the size bytes of the batch at pos: from buf, which
// holds the file from bufPos, when it is all there, else read anew.
func readBatch(f io.ReaderAt, buf []byte, bufPos, pos, size int64) ([]byte, error) {
	if pos+size <= bufPos+int64(len(buf)) {
		return buf[pos-bufPos : pos-bufPos+size], nil
	}
	b := make([]byte, size)
	if err := readFull(f, b, pos); err != nil {
		return nil, err
	}
	return b, nil
}

// minCleanableDirtyRatio is Kafka's default min.cleanable.dirty.ratio.
const minCleanableDirtyRatio = 0.5

// replyOnce guards a reply callback so that a second call does nothing.
func replyOnce(reply func(AppendResult)) func(AppendResult) {
	var once sync.Once
	return func(r AppendResult) { once.Do(func() { reply(r) }) }
}
