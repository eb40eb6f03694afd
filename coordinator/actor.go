package coordinator

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// Open asks the groups supervisor for a group's actor, spawning it if
// needed. Sent by transport with actors.Ask; answered with *OpenResult.
// Partition is the group's __consumer_offsets partition, hosted and
// loaded here (transport checked).
type Open struct {
	Group     string
	Partition *partition.Handle
}

// OpenResult answers Open.
type OpenResult struct {
	PID *actor.PID
}

// Request carries one request of one group to its actor: JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch (one group),
// OffsetDelete, DescribeGroups (one group) or DeleteGroups (one group).
// Sent by transport; the actor calls Reply once, from its goroutine, when
// the answer is ready (JoinGroup waits for the rebalance, OffsetCommit for
// the records to be durable). Reply must not block. A request lost to a
// failing actor is never answered: the sender bounds its wait.
type Request struct {
	Req                  kmsg.Request
	ClientID, ClientHost string
	// TopicError says why a topic partition cannot take a commit
	// (UNKNOWN_TOPIC_OR_PARTITION), nil if it can; transport reads its
	// image. Used by OffsetCommit.
	TopicError func(topic string, partition int32) *kerr.Error
	// CreateTopics creates a streams group's missing internal topics
	// (StreamsGroupHeartbeat); set by transport, called on the group's
	// actor, it must not block. nil creates none.
	CreateTopics func([]InternalTopic)
	Reply        func(kmsg.Response)
}

// Directory maps group ids to their actors, for transport's lookups
// without a message, and holds the index of each __consumer_offsets
// partition this node leads (index.go). The groups supervisor writes the
// actors; any goroutine reads them.
type Directory struct {
	m       sync.Map // group id → *actor.PID
	indexes sync.Map // partition → *offsetsIndex
	// newGroup makes an empty group as the supervisor's actors do, for
	// ListGroups' answers from an index; set by SupervisorProps.
	newGroup atomic.Pointer[func(id string) *Group]
}

// index returns the index of a __consumer_offsets partition, a new one
// (built at its first use) if it has none or one of another hosting.
func (d *Directory) index(h *partition.Handle) *offsetsIndex {
	for {
		v, ok := d.indexes.Load(h.Partition)
		if ok && v.(*offsetsIndex).h == h {
			return v.(*offsetsIndex)
		}
		x := &offsetsIndex{h: h}
		if !ok {
			if _, loaded := d.indexes.LoadOrStore(h.Partition, x); !loaded {
				return x
			}
		} else if d.indexes.CompareAndSwap(h.Partition, v, x) {
			return x
		}
	}
}

// MarkerWritten tells the index of a __consumer_offsets partition that a
// transaction's marker is written at offset. Called by node when the
// marker's append is answered, on the partition's goroutine, so that the
// index takes it in log order with the group actors' appends.
func (d *Directory) MarkerWritten(partition int32, producerID int64, commit bool, offset int64) {
	if x, ok := d.indexes.Load(partition); ok {
		x.(*offsetsIndex).markerWritten(producerID, commit, offset)
	}
}

// Get returns a group's actor, or nil if it has none yet.
func (d *Directory) Get(group string) *actor.PID {
	if v, ok := d.m.Load(group); ok {
		return v.(*actor.PID)
	}
	return nil
}

// Groups returns the ids of the groups that have an actor.
func (d *Directory) Groups() []string {
	var out []string
	d.m.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	return out
}

// SupervisorConfig configures the groups supervisor.
type SupervisorConfig struct {
	Directory *Directory
	// MinSessionTimeout and MaxSessionTimeout: see Config.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// OffsetsRetention: see Config.
	OffsetsRetention time.Duration
	// InitialRebalanceDelay: see Config.
	InitialRebalanceDelay time.Duration
	// OffsetMetadataMaxBytes caps a commit's metadata
	// (offset.metadata.max.bytes, 4096).
	OffsetMetadataMaxBytes int
	// ConsumerTimeouts returns a group's consumer-protocol session timeout
	// and heartbeat interval (see Config); nil gives Kafka's defaults.
	ConsumerTimeouts func(group string) (session, heartbeat time.Duration)
	// AllowUpgrade and AllowDowngrade: see Config.
	AllowUpgrade, AllowDowngrade bool
	// Image returns the node's metadata image, nil before the first.
	Image func() *image.Image
	// VerifyTxn asks a transaction's coordinator whether the transaction is
	// in progress and includes the group's __consumer_offsets partition
	// (add: adds it, KIP-890 part 2), for a transactional offset commit,
	// and calls reply once; nil verifies nothing (see partition.Append).
	VerifyTxn func(txnID string, producerID int64, epoch int16, partition int32, add bool, reply func(*kerr.Error))
	// ShareTimeouts returns a share group's session timeout and heartbeat
	// interval (see Config); nil gives Kafka's defaults.
	ShareTimeouts func(group string) (session, heartbeat time.Duration)
	// ShareMaxSize is group.share.max.size; 0 gives Kafka's 200.
	ShareMaxSize int
	// StreamsSettings returns a streams group's settings (see Config);
	// nil gives Kafka's defaults.
	StreamsSettings func(group string) StreamsSettings
	// StreamsMaxSize is group.streams.max.size; 0 is no limit.
	StreamsMaxSize int
	// ShareStates reaches share-partitions' durable state (the share
	// coordinator, package share) for the share group admin APIs and
	// DeleteGroups; node wires it. nil answers DescribeShareGroupOffsets,
	// AlterShareGroupOffsets and DeleteShareGroupOffsets
	// COORDINATOR_NOT_AVAILABLE.
	ShareStates ShareStates
	// ShareMemberGone is called, on the group actor, when a share group
	// member left or was fenced, once the group's records saying so are
	// durable: the records it acquired are to be released (node tells
	// every share-partition of the group). nil does nothing. It must not
	// block.
	ShareMemberGone func(group, member string)
	// HighWatermark returns a partition's high watermark if this node
	// leads it, for DescribeShareGroupOffsets' lag; nil knows none.
	HighWatermark func(topic string, partition int32) (int64, bool)
	Logger        zerolog.Logger
}

// topics returns the topics of the node's image.
func (cfg SupervisorConfig) topics() Topics {
	if cfg.Image == nil {
		return nil
	}
	if im := cfg.Image(); im != nil {
		return ImageTopics(im)
	}
	return nil
}

// SupervisorProps returns the props of the "groups" supervisor: it spawns
// one actor per group, named by the group id path-escaped (a group id may
// hold '/'), and restarts a failed one, which rebuilds its state from the
// group's __consumer_offsets partition.
func SupervisorProps(cfg SupervisorConfig, strategy actor.SupervisorStrategy) *actor.Props {
	if cfg.OffsetMetadataMaxBytes <= 0 {
		cfg.OffsetMetadataMaxBytes = 4096
	}
	newG := func(id string) *Group { return newGroup(id, cfg) }
	cfg.Directory.newGroup.Store(&newG)
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{cfg: cfg, groups: map[string]*actor.PID{}, stopping: map[string]bool{}}
	}, actor.WithSupervisor(strategy))
}

type supervisor struct {
	cfg    SupervisorConfig
	groups map[string]*actor.PID
	// stopping holds the ids of group actors stopped because their
	// partition's leadership moved and not yet terminated: the group gets
	// no new actor meanwhile (it would take the same name).
	stopping map[string]bool
}

// Leading tells the groups supervisor which __consumer_offsets partitions
// this node leads, of how many: the groups of the others are stopped.
// Sent by node's metadata actor at every image; no reply.
type Leading struct {
	Partitions map[int32]bool
	Of         int32
}

func (s *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Open:
		c.Respond(&OpenResult{PID: s.open(c, m)})
	case *TopicsDeleted:
		s.topicsDeleted(c, m)
	case *Leading:
		s.leading(c, m)
	case *TxnCompleted:
		for g, pid := range s.groups {
			if PartitionFor(g, m.Of) == m.Partition {
				c.Send(pid, m)
			}
		}
	case *actor.Terminated:
		if s.stopping[m.Who.Id] {
			delete(s.stopping, m.Who.Id)
			return
		}
		// By its name, not a search: a node stopping with 10,000 groups
		// took 9 s of its 10 s to search for each.
		g, err := url.PathUnescape(strings.TrimPrefix(m.Who.Id, c.Self().Id+"/"))
		if pid := s.groups[g]; err == nil && pid != nil && pid.Equal(m.Who) {
			delete(s.groups, g)
			s.cfg.Directory.m.Delete(g)
		}
	case *actor.Restarting, *actor.Stopping:
		for g := range s.groups {
			s.cfg.Directory.m.Delete(g)
		}
	}
}

// open returns a group's actor, spawning it if it has none; nil if it
// cannot be spawned.
func (s *supervisor) open(c actor.Context, m *Open) *actor.PID {
	if pid := s.groups[m.Group]; pid != nil {
		return pid
	}
	name := url.PathEscape(m.Group)
	if s.stopping[c.Self().Id+"/"+name] {
		return nil // the client retries once it has gone
	}
	pid, err := c.SpawnNamed(s.groupProps(c.ActorSystem(), m), name)
	if err != nil {
		return nil
	}
	s.groups[m.Group] = pid
	s.cfg.Directory.m.Store(m.Group, pid)
	return pid
}

// leading stops the actors of the groups whose partition this node no
// longer leads, and drops those partitions' indexes.
func (s *supervisor) leading(c actor.Context, m *Leading) {
	s.cfg.Directory.indexes.Range(func(k, _ any) bool {
		if !m.Partitions[k.(int32)] {
			s.cfg.Directory.indexes.Delete(k)
		}
		return true
	})
	for g, pid := range s.groups {
		p := PartitionFor(g, m.Of)
		if m.Partitions[p] {
			continue
		}
		s.cfg.Logger.Info().Str("group", g).Int32("partition", p).Msg("groups: unloading a group whose offsets partition this node no longer leads")
		delete(s.groups, g)
		s.cfg.Directory.m.Delete(g)
		s.stopping[pid.Id] = true
		c.Stop(pid)
	}
}

func (s *supervisor) groupProps(sys *actor.ActorSystem, m *Open) *actor.Props {
	cfg := s.cfg
	return actor.PropsFromProducer(func() actor.Actor {
		return &groupActor{id: m.Group, handle: m.Partition, cfg: cfg, sys: sys}
	})
}

// incarnations numbers group actor instances, so that a timer set by a
// failed instance does nothing in its successor.
var incarnations atomic.Uint64

// groupActor is groups/<group id>: the single owner of one group's state.
// It drives the Group state machine, schedules its timers as messages to
// itself, and appends its records to the group's __consumer_offsets
// partition through the partition actor. On (re)start it rebuilds the
// group from that partition, up to its log end.
type groupActor struct {
	id     string
	handle *partition.Handle
	cfg    SupervisorConfig
	sys    *actor.ActorSystem
	self   *actor.PID
	inc    uint64
	g      *Group
	err    *kerr.Error // set when the group could not be loaded
	// writes counts the offset writes (commits, deletions) not yet
	// durable: expiry waits for none, so that its tombstones and the
	// offsets in memory cannot disagree on the order of writes.
	writes int
	// expiryDue is set when the expiry timer fired during such a write.
	expiryDue bool
	// seqFloor is where a reloaded group's timer sequences start, past
	// those of the group it replaces.
	seqFloor uint64
}

// timerFired is a Timer coming due, sent by time.AfterFunc.
type timerFired struct {
	inc   uint64
	timer Timer
}

// appended is the outcome of an append, sent by the partition actor's
// Reply; then runs on the group actor.
type appended struct {
	inc  uint64
	err  *kerr.Error
	then func(err *kerr.Error)
}

func (a *groupActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.inc = c.Self(), incarnations.Add(1)
		a.load()
	case *Request:
		a.handle0(m)
	case *forgetTopics:
		a.forgetTopics(m.topics)
	case *TxnCompleted:
		if a.g != nil {
			a.g.CompleteTxn(m.ProducerID, m.Commit)
		}
	case *timerFired:
		if m.inc == a.inc && a.g != nil {
			a.g.Fire(m.timer)
		}
	case *appended:
		if m.inc == a.inc {
			m.then(m.err)
		}
	case *shareStateReplied:
		if m.inc == a.inc && a.g != nil {
			m.then()
		}
	case *actor.Restarting, *actor.Stopping:
		// The state may be half-updated by a panic: answer only the
		// requests waiting on it, so that their clients rejoin at once
		// instead of waiting for their timeouts.
		if a.g != nil {
			a.g.Abort(kerr.NotCoordinator)
			for _, rep := range a.g.Ready().Replies {
				rep.To(rep.Resp)
			}
		}
		return
	}
	a.flush()
}

// consumerTimeouts returns a group's Config.ConsumerTimeouts.
func consumerTimeouts(cfg SupervisorConfig, id string) func() (time.Duration, time.Duration) {
	if cfg.ConsumerTimeouts == nil {
		return nil
	}
	return func() (time.Duration, time.Duration) { return cfg.ConsumerTimeouts(id) }
}

func (a *groupActor) newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

// load rebuilds the group from its records in its partition's index.
func (a *groupActor) load() {
	g := newGroup(a.id, a.cfg)
	g.cfg.NewMemberID = a.newMemberID
	g.seq = a.seqFloor
	recs, err := a.cfg.Directory.index(a.handle).load(a.id)
	switch {
	case errors.Is(err, errIndexLoading):
		// Loading, or its storage failed before it loaded.
		a.err = kerr.CoordinatorLoadInProgress
		return
	case err != nil:
		a.cfg.Logger.Error().Err(err).Str("group", a.id).Msg("reading the group's offsets partition")
		a.err = kerr.CoordinatorNotAvailable
		return
	}
	for _, r := range recs {
		if err := g.Restore(r); err != nil {
			a.cfg.Logger.Warn().Err(err).Str("group", a.id).Msg("skipping a record")
		}
	}
	g.Loaded()
	a.g = g
}

// newGroup returns an empty group configured as cfg says.
func newGroup(id string, cfg SupervisorConfig) *Group {
	var shareTimeouts func() (time.Duration, time.Duration)
	if cfg.ShareTimeouts != nil {
		shareTimeouts = func() (time.Duration, time.Duration) { return cfg.ShareTimeouts(id) }
	}
	var streamsSettings func() StreamsSettings
	if cfg.StreamsSettings != nil {
		streamsSettings = func() StreamsSettings { return cfg.StreamsSettings(id) }
	}
	return NewGroup(id, Config{MinSessionTimeout: cfg.MinSessionTimeout, MaxSessionTimeout: cfg.MaxSessionTimeout,
		OffsetsRetention: cfg.OffsetsRetention, Now: time.Now,
		InitialRebalanceDelay: cfg.InitialRebalanceDelay,
		ConsumerTimeouts:      consumerTimeouts(cfg, id),
		ShareTimeouts:         shareTimeouts, ShareMaxSize: cfg.ShareMaxSize,
		StreamsSettings: streamsSettings, StreamsMaxSize: cfg.StreamsMaxSize,
		Topics: cfg.topics, AllowUpgrade: cfg.AllowUpgrade, AllowDowngrade: cfg.AllowDowngrade})
}

// readPartition calls fn with every record of a view of a
// __consumer_offsets partition, in order, from its log start offset to
// its log end, and marker (when not nil) with each transaction marker
// among them. The Record is fn's to keep.
func readPartition(v *store.View, fn func(Record), marker func(producerID int64, commit bool)) error {
	var markers func(partition.Marker) error
	if marker != nil {
		markers = func(m partition.Marker) error { marker(m.ProducerID, m.Commit); return nil }
	}
	return partition.ScanLog(v, func(bh *store.Header, r *store.Record) error {
		var val []byte
		if r.Value != nil {
			val = bytes.Clone(r.Value)
		}
		fn(Record{Key: bytes.Clone(r.Key), Value: val, Offset: bh.BaseOffset + int64(r.OffsetDelta),
			Transactional: bh.Transactional(), ProducerID: bh.ProducerID})
		return nil
	}, markers)
}

// flush performs what the state machine's last steps asked for.
func (a *groupActor) flush() {
	if a.g == nil {
		return
	}
	r := a.g.Ready()
	records := r.Records
	if r.GroupMetadata {
		records = append(records, a.g.MetadataRecord())
	}
	if len(records) > 0 {
		// A change is answered once its records are durable, as Kafka
		// answers it: a classic group's SyncGroup too, once its
		// membership record is, or a restart before the record reached
		// the log would start the group over at a generation its
		// members already had.
		replies := r.Replies
		a.append(records, func(err *kerr.Error) {
			if err != nil {
				a.cfg.Logger.Warn().Str("group", a.id).Str("err", err.Message).Msg("writing group records: reloading the group")
				failHeartbeats(replies, err)
				a.reload()
			}
			// NB: a member gone stays gone even if its records were not
			// written: its session ended either way, and releasing its
			// records early only redelivers them sooner.
			a.shareMembersGone(r.ShareGone)
			for _, rep := range replies {
				rep.To(rep.Resp)
			}
		})
	} else {
		a.shareMembersGone(r.ShareGone)
		for _, rep := range r.Replies {
			rep.To(rep.Resp)
		}
	}
	for _, t := range r.Timers {
		msg := &timerFired{inc: a.inc, timer: t}
		time.AfterFunc(t.After, func() { a.sys.Root.Send(a.self, msg) })
	}
	if r.ExpireOffsets {
		a.expiryDue = true
		a.maybeExpire()
	}
}

// shareMembersGone tells node which share group members left or were
// fenced, so that the records they hold are released.
func (a *groupActor) shareMembersGone(members []string) {
	if a.cfg.ShareMemberGone == nil {
		return
	}
	for _, m := range members {
		a.cfg.ShareMemberGone(a.id, m)
	}
}

// failHeartbeats turns the answers of a step whose records were not
// written into errors: the members retry (a classic member rejoins),
// against the group as the log has it.
func failHeartbeats(replies []Reply, err *kerr.Error) {
	for _, rep := range replies {
		switch r := rep.Resp.(type) {
		case *kmsg.ConsumerGroupHeartbeatResponse:
			r.ErrorCode, r.ErrorMessage, r.MemberEpoch, r.Assignment = err.Code, nil, -1, nil
		case *kmsg.ShareGroupHeartbeatResponse:
			r.ErrorCode, r.ErrorMessage, r.MemberEpoch, r.Assignment = err.Code, nil, 0, nil
		case *kmsg.StreamsGroupHeartbeatResponse:
			r.ErrorCode, r.ErrorMessage, r.MemberEpoch = err.Code, nil, 0
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks, r.Status = nil, nil, nil, nil
		case *kmsg.AlterShareGroupOffsetsResponse:
			r.ErrorCode, r.ErrorMessage = err.Code, nil
		case *kmsg.DeleteShareGroupOffsetsResponse:
			r.ErrorCode, r.ErrorMessage = err.Code, nil
		case *kmsg.SyncGroupResponse:
			r.ErrorCode, r.MemberAssignment = err.Code, []byte{}
		case *kmsg.JoinGroupResponse:
			r.ErrorCode, r.Members = err.Code, nil
		}
	}
}

// reload rebuilds the group from its partition after a write failed: the
// state in memory is ahead of the log. Timers set before stay stale: the
// sequence goes on from the old group's.
func (a *groupActor) reload() {
	a.seqFloor = a.g.seq
	a.g = nil
	a.load()
}

// maybeExpire expires the offsets when expiry is due and no offset write
// is in flight; the group must still be empty.
func (a *groupActor) maybeExpire() {
	if !a.expiryDue || a.writes > 0 {
		return
	}
	a.expiryDue = false
	if a.g.State() == Empty && !a.g.IsConsumer() && len(a.g.offsets) > 0 {
		a.expireOffsets()
	}
}

// expireOffsets deletes the offsets of a group that stayed empty for
// their retention: tombstones for them and for the group, then the offsets
// unchanged since are forgotten.
func (a *groupActor) expireOffsets() {
	expired := a.g.Offsets()
	var recs []Record
	for tp := range expired {
		recs = append(recs, OffsetTombstone(a.id, tp.Topic, tp.Partition))
	}
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, a.id
	recs = append(recs, Record{Key: k.AppendTo(nil)})
	recs = append(recs, a.g.ConsumerTombstones()...)
	a.writes++
	a.append(recs, func(err *kerr.Error) {
		a.writes--
		defer a.maybeExpire()
		if err != nil {
			a.cfg.Logger.Warn().Str("group", a.id).Str("err", err.Message).Msg("expiring offsets")
			a.reload() // the consumer group's records may be half gone
			return
		}
		for tp, o := range expired {
			if cur, ok := a.g.Committed(tp.Topic, tp.Partition); ok && cur == o {
				a.g.DeleteOffset(tp.Topic, tp.Partition)
			}
		}
		if a.g.State() == Empty && !a.g.IsConsumer() && len(a.g.offsets) == 0 {
			// Gone, as the group tombstone says after a restart.
			fresh := NewGroup(a.id, a.g.cfg)
			fresh.seq = a.g.seq
			a.g = fresh
		}
		a.cfg.Logger.Info().Str("group", a.id).Int("offsets", len(expired)).Msg("expired the offsets of an empty group")
	})
}

// append writes records to the group's partition (acks=-1: the reply
// comes once they are durable) and runs then on the actor with the outcome.
func (a *groupActor) append(recs []Record, then func(err *kerr.Error)) {
	a.appendBatch(recs, nil, func(_ int64, err *kerr.Error) { then(err) })
}

// txnWriter is the producer whose transaction a batch of offsets is part of.
type txnWriter struct {
	id         string // transactional id
	producerID int64
	epoch      int16
	add        bool // TxnOffsetCommit v5+: the coordinator adds the partition (KIP-890)
}

// appendBatch writes records as one batch, of txn's transaction when not
// nil, and runs then on the actor with the offset of the first record and
// the outcome.
func (a *groupActor) appendBatch(recs []Record, txn *txnWriter, then func(base int64, err *kerr.Error)) {
	now := time.Now().UnixMilli()
	srs := make([]store.Record, len(recs))
	for i, r := range recs {
		srs[i] = store.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	h := store.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	m := &partition.Append{Acks: -1}
	if txn != nil {
		// A coordinator's batch: no sequence numbers (Kafka writes 0 too).
		h.Attributes, h.ProducerID, h.ProducerEpoch, h.BaseSequence = transactionalAttribute, txn.producerID, txn.epoch, 0
		m.Coordinator = true
		if verify := a.cfg.VerifyTxn; verify != nil {
			p := a.handle.Partition
			m.Verify = func(reply func(*kerr.Error)) { verify(txn.id, txn.producerID, txn.epoch, p, txn.add, reply) }
		}
	}
	batch, err := store.AppendBatch(nil, h, srs, store.CodecNone)
	if err != nil {
		then(-1, kerr.UnknownServerError)
		return
	}
	self, inc, sys := a.self, a.inc, a.sys
	idx := a.cfg.Directory.index(a.handle)
	m.Records = batch
	m.Reply = func(res partition.AppendResult) {
		// On the partition's goroutine, in log order.
		idx.appended(recs, res.BaseOffset, txn != nil, h.ProducerID, res.Err)
		sys.Root.Send(self, &appended{inc: inc, err: commitError(res.Err), then: func(err *kerr.Error) { then(res.BaseOffset, err) }})
	}
	sys.Root.Send(a.handle.PID, m)
}

// transactionalAttribute is a RecordBatch's transactional bit.
const transactionalAttribute = 0x10

// commitError maps an append's error to what a committer is told, as
// Kafka's GroupMetadataManager does.
func commitError(err *kerr.Error) *kerr.Error {
	switch err {
	case nil:
		return nil
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	case kerr.InvalidProducerEpoch, kerr.ProducerFenced:
		// A transactional commit of a producer whose epoch was bumped: a
		// zombie, fenced.
		return kerr.ProducerFenced
	case kerr.InvalidTxnState, kerr.InvalidProducerIDMapping, kerr.TransactionCoordinatorFenced, kerr.ConcurrentTransactions:
		return err
	default:
		return kerr.UnknownServerError
	}
}

func (a *groupActor) handle0(m *Request) {
	if a.g == nil {
		a.load()
	}
	if a.g == nil {
		m.Reply(errorResponse(m.Req, a.err))
		return
	}
	reply := Responder(m.Reply)
	switch req := m.Req.(type) {
	case *kmsg.JoinGroupRequest:
		a.g.Join(req, m.ClientID, m.ClientHost, reply)
	case *kmsg.SyncGroupRequest:
		a.g.Sync(req, reply)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		a.g.ConsumerHeartbeat(req, m.ClientID, m.ClientHost, reply)
	case *kmsg.HeartbeatRequest:
		a.g.Heartbeat(req, reply)
	case *kmsg.LeaveGroupRequest:
		a.g.Leave(req, reply)
	case *kmsg.OffsetCommitRequest:
		a.commit(req, m)
	case *kmsg.TxnOffsetCommitRequest:
		a.txnCommit(req, m)
	case *kmsg.OffsetFetchRequest:
		m.Reply(a.fetch(req))
	case *kmsg.OffsetDeleteRequest:
		a.deleteOffsets(req, m)
	case *kmsg.DescribeGroupsRequest:
		m.Reply(a.describe(req))
	case *kmsg.ConsumerGroupDescribeRequest:
		m.Reply(a.g.DescribeConsumer(req))
	case *kmsg.ShareGroupHeartbeatRequest:
		a.g.ShareHeartbeat(req, m.ClientID, m.ClientHost, reply)
	case *kmsg.ShareGroupDescribeRequest:
		m.Reply(a.g.DescribeShare(req))
	case *kmsg.StreamsGroupHeartbeatRequest:
		a.g.StreamsHeartbeat(req, m.ClientID, m.ClientHost, reply)
		if ts := a.g.TakeStreamsTopics(); len(ts) > 0 && m.CreateTopics != nil {
			m.CreateTopics(ts)
		}
	case *kmsg.StreamsGroupDescribeRequest:
		m.Reply(a.g.DescribeStreams(req))
	case *kmsg.DescribeShareGroupOffsetsRequest:
		a.describeShareOffsets(req, m)
	case *kmsg.AlterShareGroupOffsetsRequest:
		a.alterShareOffsets(req, m)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		a.deleteShareOffsets(req, m)
	case *kmsg.DeleteGroupsRequest:
		a.deleteGroup(req, m)
	case *kmsg.ListGroupsRequest:
		m.Reply(a.list(req))
	default:
		panic(fmt.Sprintf("coordinator: unexpected request %T", m.Req))
	}
}
