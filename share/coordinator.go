package share

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// CoordinatorConfig configures the share coordinator (the "sharestate"
// supervisor and its partition actors).
type CoordinatorConfig struct {
	NodeID   int32
	Registry *partition.Registry
	// Image returns the node's newest metadata image.
	Image func() *image.Image
	// SnapshotEvery is share.coordinator.snapshot.update.records.per.snapshot
	// (default 500): a key's write after that many updates is a snapshot.
	SnapshotEvery int
	// WriteTimeout is share.coordinator.write.timeout.ms (default 5 s):
	// how long an append may take before its requests are answered
	// COORDINATOR_NOT_AVAILABLE (and the partition is read again).
	WriteTimeout time.Duration
	// PruneInterval is share.coordinator.state.topic.prune.interval.ms
	// (default 5 min, internal in Kafka): how often a partition deletes
	// the records below every key's last snapshot (DeleteRecords).
	PruneInterval time.Duration
	// ColdInterval is share.coordinator.cold.partition.snapshot.interval.ms
	// (default 5 min, internal in Kafka): a key not written for that long
	// gets a snapshot at the next prune, so that it holds no old record.
	ColdInterval time.Duration
	Logger       zerolog.Logger
}

func (cfg *CoordinatorConfig) defaults() {
	if cfg.SnapshotEvery < 0 {
		cfg.SnapshotEvery = 500
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = 5 * time.Minute
	}
	if cfg.ColdInterval <= 0 {
		cfg.ColdInterval = 5 * time.Minute
	}
}

// Leading tells the sharestate supervisor which __share_group_state
// partitions this node leads, with their leader epochs, of how many: a
// partition newly led (or led in a new epoch) gets an actor that loads it,
// the others' actors stop. Sent by node's metadata actor at every image;
// no reply. It also makes every partition actor drop the state of topics
// the image no longer has.
type Leading struct {
	Partitions map[int32]int32
	Of         int32
}

// CoordinatorProps returns the props of the "sharestate" supervisor, the
// share coordinator of this node: one child per __share_group_state
// partition it leads (named by the partition number), which owns that
// partition's state (a shard: every key's last snapshot and the updates
// since), loaded from the log once, then kept by its own appends.
//
//	message                           from                      does
//	Leading                           metadata actor            spawns and stops the partition actors
//	InitializeState, ReadState,       StateClient (any node),   routed to the key's partition actor;
//	WriteState, DeleteState,          transport (83-87)         NOT_COORDINATOR for a partition not led
//	ReadSummary                                                 here, COORDINATOR_LOAD_IN_PROGRESS while
//	                                                            it loads; answered StateResult
//
// A partition actor answers a request once the records it wrote are
// durable (appended with acks=-1 to the partition's actor, which answers
// when the high watermark passes them). Requests that come while an append
// is on its way are handled together after it, in one append: a
// partition has at most one append outstanding, so the state in memory
// is the log's plus that append. A failed append answers its requests
// with the error and makes the actor read the partition again.
//
// Restart: a failed partition actor is restarted by the supervisor
// (strategy given) and reads its partition again; a restarted supervisor
// has lost its children and spawns them at the next Leading.
func CoordinatorProps(cfg CoordinatorConfig, strategy actor.SupervisorStrategy) *actor.Props {
	cfg.defaults()
	return actor.PropsFromProducer(func() actor.Actor {
		return &coordinator{cfg: cfg, children: map[int32]child{}, stopping: map[string]bool{}}
	}, actor.WithSupervisor(strategy))
}

type coordinator struct {
	cfg      CoordinatorConfig
	want     *Leading
	children map[int32]child
	// stopping holds the ids of children stopped and not yet terminated:
	// their partition gets no new child meanwhile (it would take the
	// name).
	stopping map[string]bool
}

type child struct {
	pid   *actor.PID
	epoch int32
}

func (s *coordinator) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Leading:
		s.want = m
		s.lead(c)
		for _, ch := range s.children {
			c.Send(ch.pid, checkTopics{})
		}
	case *InitializeState:
		s.route(c, m.Key)
	case *ReadState:
		s.route(c, m.Key)
	case *WriteState:
		s.route(c, m.Key)
	case *DeleteState:
		s.route(c, m.Key)
	case *ReadSummary:
		s.route(c, m.Key)
	case *actor.Terminated:
		if s.stopping[m.Who.Id] {
			delete(s.stopping, m.Who.Id)
			s.lead(c)
		}
	case *actor.Restarting:
		s.children = map[int32]child{}
	}
}

// lead stops the actors of partitions no longer led (or led in another
// epoch) and spawns those of partitions led without one.
func (s *coordinator) lead(c actor.Context) {
	if s.want == nil {
		return
	}
	for p, ch := range s.children {
		if e, ok := s.want.Partitions[p]; !ok || e != ch.epoch {
			delete(s.children, p)
			s.stopping[ch.pid.Id] = true
			c.Stop(ch.pid)
			s.cfg.Logger.Info().Int32("partition", p).Msg("sharestate: no longer coordinating a __share_group_state partition in this epoch")
		}
	}
	for p, epoch := range s.want.Partitions {
		if _, ok := s.children[p]; ok || s.stopping[c.Self().Id+"/"+strconv.Itoa(int(p))] {
			continue
		}
		cfg, p, epoch := s.cfg, p, epoch
		pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
			return &stateActor{cfg: cfg, partition: p, epoch: epoch}
		}), strconv.Itoa(int(p)))
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Int32("partition", p).Msg("sharestate: spawning a partition's coordinator")
			continue
		}
		s.children[p] = child{pid: pid, epoch: epoch}
	}
}

// route hands a request to its key's partition actor, keeping its sender.
func (s *coordinator) route(c actor.Context, k Key) {
	if s.want == nil || s.want.Of <= 0 {
		c.Respond(result(kerr.NotCoordinator, ""))
		return
	}
	p := PartitionFor(k, s.want.Of)
	if ch, ok := s.children[p]; ok {
		c.Forward(ch.pid)
		return
	}
	if _, led := s.want.Partitions[p]; led {
		c.Respond(result(kerr.CoordinatorLoadInProgress, ""))
		return
	}
	c.Respond(result(kerr.NotCoordinator, ""))
}

// Messages a partition actor sends itself, or its supervisor sends it.
type (
	retryLoad   struct{ inc uint64 }
	pruneTick   struct{ inc uint64 }
	checkTopics struct{}
	written     struct {
		inc, gen uint64
		base     int64
		err      *kerr.Error
	}
)

// stateActor is sharestate/<n>: the share coordinator of one
// __share_group_state partition this node leads in epoch, the single
// owner of its shard.
type stateActor struct {
	cfg       CoordinatorConfig
	partition int32
	epoch     int32

	self   *actor.PID
	sys    *actor.ActorSystem
	inc    uint64 // this instance: messages of an older one are ignored
	handle *partition.Handle
	shard  *shard // nil while loading

	// queue are the requests waiting for the append on its way; extra
	// the records of the coordinator's own (cold snapshots, tombstones
	// of deleted topics) to append with them.
	queue []waiting
	extra []Record
	// The append on its way: its generation, requests and their answers,
	// records.
	inflight bool
	gen      uint64
	waiters  []waiting
	answers  []*StateResult
	recs     []Record
	timer    *time.Timer
	prune    *time.Timer
	pruned   int64 // the last offset records were deleted below
}

type waiting struct {
	msg    any
	sender *actor.PID
}

var stateIncarnations atomic.Uint64

func (a *stateActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.sys, a.inc = c.Self(), c.ActorSystem(), stateIncarnations.Add(1)
		a.load()
		a.schedulePrune()
	case *actor.Stopping, *actor.Restarting:
		a.stop()
	case *retryLoad:
		if m.inc == a.inc && a.shard == nil {
			a.load()
		}
	case *InitializeState, *ReadState, *WriteState, *DeleteState, *ReadSummary:
		if a.shard == nil {
			c.Respond(result(kerr.CoordinatorLoadInProgress, ""))
			return
		}
		a.queue = append(a.queue, waiting{msg: m, sender: c.Sender()})
		a.flush()
	case checkTopics:
		if a.shard != nil {
			im := a.cfg.Image()
			a.extra = append(a.extra, a.shard.gone(func(id [16]byte) bool { return im.TopicsByID[image.TopicID(id)] != nil })...)
			a.flush()
		}
	case *pruneTick:
		if m.inc == a.inc {
			a.maintain()
			a.schedulePrune()
		}
	case *written:
		if m.inc == a.inc && a.inflight && m.gen == a.gen {
			a.written(m)
		}
	}
}

// stop answers every request waiting NOT_COORDINATOR: the key's next
// coordinator (or this one reloaded) takes them.
func (a *stateActor) stop() {
	for _, w := range append(a.waiters, a.queue...) {
		a.answer(w, result(kerr.NotCoordinator, ""))
	}
	a.waiters, a.queue, a.inflight = nil, nil, false
	if a.timer != nil {
		a.timer.Stop()
	}
	if a.prune != nil {
		a.prune.Stop()
	}
}

var errNotReady = errors.New("share: partition not ready")

// load reads the partition into a new shard once this node leads it in
// the actor's epoch, retrying every 200 ms until then.
func (a *stateActor) load() {
	err := a.read()
	if err == nil {
		return
	}
	if !errors.Is(err, errNotReady) {
		a.cfg.Logger.Warn().Err(err).Int32("partition", a.partition).Msg("sharestate: loading a __share_group_state partition")
	}
	self, root, msg := a.self, a.sys.Root, &retryLoad{inc: a.inc}
	time.AfterFunc(200*time.Millisecond, func() { root.Send(self, msg) })
}

func (a *stateActor) read() error {
	h, v, lerr := a.cfg.Registry.Led(a.cfg.Image(), a.cfg.NodeID, StateTopic, a.partition)
	if lerr != nil || v.Log == nil || v.LeaderEpoch != a.epoch {
		return errNotReady
	}
	s := newShard(a.cfg.SnapshotEvery, a.known)
	bad := 0
	err := partition.ScanLog(v.Log, func(bh *store.Header, r *store.Record) error {
		rec, err := ParseRecord(r.Key, r.Value)
		switch {
		case errors.Is(err, ErrNotStateKey):
		case err != nil:
			bad++
		default:
			s.replay(bh.BaseOffset+int64(r.OffsetDelta), rec, bh.MaxTimestamp)
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	s.end = max(s.end, v.Log.LogEndOffset)
	if bad > 0 {
		a.cfg.Logger.Warn().Int32("partition", a.partition).Int("records", bad).Msg("sharestate: skipped __share_group_state records that do not decode")
	}
	a.handle, a.shard, a.pruned = h, s, v.Log.LogStartOffset
	a.cfg.Logger.Info().Int32("partition", a.partition).Int32("leader_epoch", a.epoch).Int("share_partitions", len(s.keys)).
		Msg("sharestate: coordinating the share-partitions of a __share_group_state partition")
	return nil
}

// known says whether the image has a topic partition.
func (a *stateActor) known(id [16]byte, p int32) bool {
	t := a.cfg.Image().TopicsByID[image.TopicID(id)]
	return t != nil && p >= 0 && int(p) < len(t.Partitions)
}

// flush handles the queued requests when no append is on its way, and
// appends the records they (and the coordinator itself) wrote, as one
// batch; with none, answers them at once.
func (a *stateActor) flush() {
	if a.inflight || a.shard == nil || (len(a.queue) == 0 && len(a.extra) == 0) {
		return
	}
	now := time.Now().UnixMilli()
	batch := a.queue
	a.queue = nil
	answers := make([]*StateResult, len(batch))
	var recs []Record
	for i, w := range batch {
		var rs []Record
		switch m := w.msg.(type) {
		case *InitializeState:
			answers[i], rs = a.shard.initialize(m, now)
		case *ReadState:
			answers[i], rs = a.shard.read(m, now)
		case *WriteState:
			answers[i], rs = a.shard.write(m, now)
		case *DeleteState:
			answers[i], rs = a.shard.remove(m)
		case *ReadSummary:
			answers[i] = a.shard.summary(m)
		}
		recs = append(recs, rs...)
	}
	recs = append(recs, a.extra...)
	a.extra = nil
	if len(recs) == 0 {
		for i, w := range batch {
			a.answer(w, answers[i])
		}
		return
	}
	srs := make([]store.Record, len(recs))
	for i, r := range recs {
		k, v := EncodeRecord(r)
		srs[i] = store.Record{OffsetDelta: int32(i), Key: k, Value: v}
	}
	records, err := store.AppendBatch(nil, store.Header{LastOffsetDelta: int32(len(srs) - 1), BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, srs, store.CodecNone)
	a.gen++
	a.inflight, a.waiters, a.answers, a.recs = true, batch, answers, recs
	self, root, inc, gen := a.self, a.sys.Root, a.inc, a.gen
	if err != nil {
		root.Send(self, &written{inc: inc, gen: gen, err: kerr.UnknownServerError})
		return
	}
	root.Send(a.handle.PID, &partition.Append{Records: records, Acks: -1, Reply: func(r partition.AppendResult) {
		root.Send(self, &written{inc: inc, gen: gen, base: r.BaseOffset, err: r.Err})
	}})
	a.timer = time.AfterFunc(a.cfg.WriteTimeout, func() {
		root.Send(self, &written{inc: inc, gen: gen, err: kerr.RequestTimedOut})
	})
}

// written takes the answer to the append on its way: its requests are
// answered, and the next ones handled. A failed append leaves the shard
// ahead of the log: it is read again (the records may be there after all,
// as a timed-out write may still become durable; the epochs that every
// later write checks make that harmless, as in Kafka).
func (a *stateActor) written(m *written) {
	a.timer.Stop()
	a.inflight = false
	waiters, answers, recs := a.waiters, a.answers, a.recs
	a.waiters, a.answers, a.recs = nil, nil, nil
	if m.err != nil {
		err := writeError(m.err)
		a.cfg.Logger.Warn().Int32("partition", a.partition).Str("err", m.err.Message).Msg("sharestate: appending share state failed; reading the partition again")
		for _, w := range waiters {
			a.answer(w, result(err, ""))
		}
		a.shard = nil
		a.load()
		if a.shard == nil {
			for _, w := range a.queue {
				a.answer(w, result(kerr.CoordinatorLoadInProgress, ""))
			}
			a.queue = nil
		}
		// Read again at once: the requests that queued meanwhile go now,
		// not with the next request to come.
		a.flush()
		return
	}
	a.shard.placed(recs, m.base)
	for i, w := range waiters {
		a.answer(w, answers[i])
	}
	a.flush()
}

// writeError maps an append's error to what a share coordinator answers
// (Kafka's CoordinatorRuntime: a write the log refused is retriable at the
// same or another coordinator).
func writeError(err *kerr.Error) *kerr.Error {
	switch err {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	default:
		return kerr.UnknownServerError
	}
}

func (a *stateActor) answer(w waiting, r *StateResult) {
	if w.sender != nil {
		a.sys.Root.Send(w.sender, r)
	}
}

func (a *stateActor) schedulePrune() {
	self, root, msg := a.self, a.sys.Root, &pruneTick{inc: a.inc}
	a.prune = time.AfterFunc(a.cfg.PruneInterval, func() { root.Send(self, msg) })
}

// maintain snapshots the cold keys and deletes the records below every
// key's last snapshot, as Kafka's share coordinator does on its prune
// timer (ShareCoordinatorService.setupRecordPruning): the topic's
// cleanup.policy is delete, not compact, because a key's update records
// are needed until its next snapshot; DeleteRecords frees them after.
func (a *stateActor) maintain() {
	if a.shard == nil {
		return
	}
	now := time.Now().UnixMilli()
	a.extra = append(a.extra, a.shard.coldSnapshots(now, a.cfg.ColdInterval.Milliseconds())...)
	a.flush()
	low := a.shard.redundant()
	v := a.handle.View()
	if v == nil || v.Log == nil {
		return
	}
	low = min(low, v.Log.HighWatermark)
	if low <= a.pruned {
		return
	}
	p, logger := a.partition, a.cfg.Logger
	a.sys.Root.Send(a.handle.PID, &partition.DeleteRecords{Offset: low, Reply: func(lw int64, err *kerr.Error) {
		if err != nil {
			logger.Warn().Int32("partition", p).Int64("offset", low).Str("err", err.Message).Msg("sharestate: deleting redundant share state records")
			return
		}
		logger.Debug().Int32("partition", p).Int64("log_start_offset", lw).Msg("sharestate: deleted redundant share state records")
	}})
	a.pruned = low
}
