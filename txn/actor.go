package txn

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// txnActor is txns/<escaped id>: the single owner of one transactional
// id's state. It drives the Txn state machine: appends its records to the
// id's __transaction_state partition (led here), writes its markers to
// the partitions' leaders (over remoting to their appends actors, retrying
// until each is written), and ticks it at the time it asks.
type txnActor struct {
	id               string
	cfg              SupervisorConfig
	handle           *partition.Handle
	partition        int32
	coordinatorEpoch int32
	sys              *actor.ActorSystem
	// initial is the state the supervisor read for the first instance;
	// fresh says it is current (a restarted instance reads the log).
	initial *Metadata
	fresh   bool

	self *actor.PID
	inc  uint64 // this instance's number: messages of an older one are ignored
	t    *Txn
	err  *kerr.Error // set when the id's state could not be read

	// markers are the partitions whose marker of the current batch
	// (markersGen) is on its way or waiting to be sent again.
	markers    *Markers
	markersGen uint64
	backoff    map[TopicPartition]time.Duration

	timer    *time.Timer
	lastTick time.Time
	ongoing  bool // counted in Stats.Ongoing

	// waiting are the additions of partitions held while the id is busy
	// (Txn.Busy), oldest first: added together once it is idle.
	waiting []waitingAdd
}

// waitingAdd is an AddRequest held while its id is busy, since when.
type waitingAdd struct {
	m     *AddRequest
	since time.Time
}

// addWaitMax bounds how long an addition waits for a busy id: then it is
// answered CONCURRENT_TRANSACTIONS, which clients and the Verifier retry.
const addWaitMax = time.Second

// Messages a txn actor sends itself.
type (
	written struct {
		inc uint64
		err *kerr.Error
	}
	markerDone struct {
		inc, gen uint64
		tp       TopicPartition
		res      any
		err      error
	}
	markerRetry struct {
		inc, gen uint64
		tp       TopicPartition
	}
	tickFired struct{ inc uint64 }
	// waitExpired: the oldest held addition may have waited addWaitMax.
	waitExpired struct{ inc uint64 }
)

// markerTimeout bounds a marker's wait for its leader's high watermark,
// and so how long a marker sent to a leader that died waits before it is
// sent again, to the leader the image names then. NB: a marker that is
// written but not answered in time is written again: a second marker of a
// transaction over in the partition changes nothing but the log.
const markerTimeout = 5 * time.Second

func (a *txnActor) Receive(c actor.Context) {
	now := time.Now().UnixMilli()
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.inc = c.Self(), incarnations.Add(1)
		a.load(now)
	case *actor.Stopping, *actor.Restarting:
		if a.timer != nil {
			a.timer.Stop()
		}
		if a.t != nil {
			a.t.Abort(kerr.NotCoordinator)
			for _, r := range a.t.Ready().Replies {
				r()
			}
		}
		for _, w := range a.waiting {
			w.m.Reply(AddResult{Err: kerr.NotCoordinator})
		}
		a.waiting = nil
		a.count(false)
		return
	case *InitRequest:
		if a.ready(func(err *kerr.Error) { m.Reply(initError(m, err)) }) {
			a.t.InitProducerID(m.Req, now, m.Reply)
		}
	case *AddRequest:
		if a.ready(func(err *kerr.Error) { m.Reply(AddResult{Err: err}) }) {
			a.add(m, now)
		}
	case *OffsetsRequest:
		if a.ready(m.Reply) {
			tp := TopicPartition{Topic: partition.OffsetsTopic, Partition: a.offsetsPartition(m.Group)}
			a.add(&AddRequest{ProducerID: m.ProducerID, Epoch: m.Epoch, Partitions: []TopicPartition{tp},
				Reply: func(r AddResult) { m.Reply(r.Err) }}, now)
		}
	case *waitExpired:
		if m.inc == a.inc {
			a.expireWaiting()
		}
	case *EndRequest:
		if a.ready(func(err *kerr.Error) { m.Reply(EndResult{Err: err, ProducerID: -1, Epoch: -1}) }) {
			a.t.EndTxn(m.ProducerID, m.Epoch, m.Commit, m.TV2, now, m.Reply)
		}
	case *DescribeRequest:
		if a.ready(func(err *kerr.Error) { d := New(a.id, a.cfg.Txn).Describe(); d.ErrorCode = err.Code; m.Reply(d) }) {
			m.Reply(a.t.Describe())
		}
	case *ListRequest:
		r := &ListResult{}
		if a.t != nil {
			r.State, r.OK = a.t.List(m.Filter, now)
		}
		c.Respond(r)
	case *written:
		if m.inc == a.inc && a.t != nil {
			a.t.Written(m.err, now)
		}
	case *markerDone:
		if m.inc == a.inc && m.gen == a.markersGen {
			a.markerDone(c, m, now)
		}
	case *markerRetry:
		if m.inc == a.inc && m.gen == a.markersGen {
			a.sendMarker(c, m.tp)
		}
	case *tickFired:
		if m.inc == a.inc && a.t != nil {
			a.lastTick = time.Now()
			a.t.Tick(now)
		}
	}
	a.flush(c)
}

// incarnations numbers txn actor instances.
var incarnations atomic.Uint64

// load builds the state machine from the state the supervisor read, or
// from the log.
func (a *txnActor) load(now int64) {
	m := a.initial
	if !a.fresh {
		v := a.handle.View()
		if v == nil || v.Log == nil {
			a.err = kerr.CoordinatorLoadInProgress
			return
		}
		states, _, err := readState(v.Log, a.id)
		if err != nil {
			a.cfg.Logger.Warn().Err(err).Str("transactional_id", a.id).Msg("txns: reading the id's state")
			a.err = kerr.CoordinatorNotAvailable
			return
		}
		m = states[a.id]
	}
	a.fresh, a.initial = false, nil
	cfg := a.cfg.Txn
	cfg.OffsetsPartition = a.offsetsPartition
	t := New(a.id, cfg)
	if m != nil {
		t.Restore(m)
	}
	t.Loaded(a.coordinatorEpoch, now)
	a.t, a.err = t, nil
}

// offsetsPartition is a group's __consumer_offsets partition.
func (a *txnActor) offsetsPartition(group string) int32 {
	if t := a.cfg.Image().Topic(partition.OffsetsTopic); t != nil {
		return partition.ForKey(group, int32(len(t.Partitions)))
	}
	return 0
}

// add handles an AddRequest: a verification at once; an addition at once
// when the id is idle, else held until it is (Kafka answers
// CONCURRENT_TRANSACTIONS: under transaction version 2 each partition
// leader adds its partitions itself, and the first write would refuse the
// others one by one, each retried after a backoff; held, they are added
// together in the next write).
func (a *txnActor) add(m *AddRequest, now int64) {
	if m.VerifyOnly || !a.t.Busy() {
		a.t.AddPartitions(m.ProducerID, m.Epoch, m.Partitions, m.VerifyOnly, now, m.Reply)
		return
	}
	if len(a.waiting) == 0 {
		a.armWaitExpiry(addWaitMax)
	}
	a.waiting = append(a.waiting, waitingAdd{m: m, since: time.Now()})
}

// addWaiting adds the held additions of the first one's producer and
// epoch, in one write, once the id is idle; the others stay held.
func (a *txnActor) addWaiting(now int64) {
	if len(a.waiting) == 0 || a.t.Busy() {
		return
	}
	first := a.waiting[0].m
	var parts []TopicPartition
	var replies []func(AddResult)
	rest := a.waiting[:0]
	for _, w := range a.waiting {
		if w.m.ProducerID == first.ProducerID && w.m.Epoch == first.Epoch {
			parts = append(parts, w.m.Partitions...)
			replies = append(replies, w.m.Reply)
		} else {
			rest = append(rest, w)
		}
	}
	a.waiting = rest
	a.t.AddPartitions(first.ProducerID, first.Epoch, parts, false, now, func(r AddResult) {
		for _, reply := range replies {
			reply(r)
		}
	})
}

// armWaitExpiry sends waitExpired after d.
func (a *txnActor) armWaitExpiry(d time.Duration) {
	self, root, msg := a.self, a.sys.Root, &waitExpired{inc: a.inc}
	time.AfterFunc(d, func() { root.Send(self, msg) })
}

// expireWaiting answers the additions held for addWaitMax
// CONCURRENT_TRANSACTIONS, and arms the next expiry.
func (a *txnActor) expireWaiting() {
	n := 0
	for n < len(a.waiting) && time.Since(a.waiting[n].since) >= addWaitMax {
		a.waiting[n].m.Reply(AddResult{Err: kerr.ConcurrentTransactions})
		n++
	}
	a.waiting = append(a.waiting[:0], a.waiting[n:]...)
	if len(a.waiting) > 0 {
		a.armWaitExpiry(addWaitMax - time.Since(a.waiting[0].since))
	}
}

// ready reports whether the state machine can take a request; if not, it
// answers fail with why, after trying to load it again.
func (a *txnActor) ready(fail func(*kerr.Error)) bool {
	if a.t == nil {
		a.load(time.Now().UnixMilli())
	}
	if a.t == nil {
		fail(a.err)
		return false
	}
	return true
}

// flush does what the state machine's last step asked for, and adds the
// held additions once the id is idle.
func (a *txnActor) flush(c actor.Context) {
	if a.t == nil {
		return
	}
	a.addWaiting(time.Now().UnixMilli())
	r := a.t.Ready()
	if r.Write != nil {
		a.write(r.Write)
	}
	if r.Markers != nil {
		a.markers, a.backoff = r.Markers, map[TopicPartition]time.Duration{}
		a.markersGen++
		for _, tp := range r.Markers.Partitions {
			a.sendMarker(c, tp)
		}
	}
	for _, reply := range r.Replies {
		reply()
	}
	for _, done := range r.Completed {
		switch {
		case done.TimedOut:
			a.cfg.Stats.TimedOut.Add(1)
			a.cfg.Stats.Aborted.Add(1)
		case done.Commit:
			a.cfg.Stats.Committed.Add(1)
		default:
			a.cfg.Stats.Aborted.Add(1)
		}
	}
	m, known := a.t.Metadata()
	a.count(known && (m.Status == Ongoing || m.Status.preparing()))
	if r.Gone {
		a.cfg.Logger.Info().Str("transactional_id", a.id).Msg("txns: transactional id expired")
		c.Stop(c.Self())
		return
	}
	a.schedule(r.NextTick)
}

// count keeps Stats.Ongoing.
func (a *txnActor) count(ongoing bool) {
	if ongoing != a.ongoing {
		a.ongoing = ongoing
		if ongoing {
			a.cfg.Stats.Ongoing.Add(1)
		} else {
			a.cfg.Stats.Ongoing.Add(-1)
		}
	}
}

// schedule arms the tick at ms (0: none), no sooner than AbortInterval
// after the last one, as Kafka's periodic scans.
func (a *txnActor) schedule(ms int64) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if ms == 0 {
		return
	}
	at := time.UnixMilli(ms)
	if earliest := a.lastTick.Add(a.cfg.AbortInterval); at.Before(earliest) {
		at = earliest
	}
	self, root, msg := a.self, a.sys.Root, &tickFired{inc: a.inc}
	a.timer = time.AfterFunc(time.Until(at), func() { root.Send(self, msg) })
}

// write appends the state's record to the id's partition, acks=-1.
func (a *txnActor) write(w *Write) {
	now := time.Now().UnixMilli()
	batch, err := store.AppendBatch(nil, store.Header{BaseTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]store.Record{{Key: w.Key, Value: w.Value}}, store.CodecNone)
	if err != nil {
		a.sys.Root.Send(a.self, &written{inc: a.inc, err: kerr.UnknownServerError})
		return
	}
	self, root, inc := a.self, a.sys.Root, a.inc
	root.Send(a.handle.PID, &partition.Append{Records: batch, Acks: -1, Reply: func(r partition.AppendResult) {
		root.Send(self, &written{inc: inc, err: writeError(r.Err)})
	}})
}

// writeError maps an append's error to what a client is told, as Kafka's
// TransactionStateManager does. NB: as in Kafka, a write that timed out may
// still become durable while the state machine counts it failed; the
// epochs its next transitions check make that harmless.
func writeError(err *kerr.Error) *kerr.Error {
	switch err {
	case nil:
		return nil
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	default:
		return kerr.UnknownServerError
	}
}

// sendMarker writes the current batch's marker to tp's leader.
func (a *txnActor) sendMarker(c actor.Context, tp TopicPartition) {
	mk, gen, inc := a.markers, a.markersGen, a.inc
	im := a.cfg.Image()
	t := im.Topic(tp.Topic)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		a.t.MarkerWritten(tp, time.Now().UnixMilli()) // the topic is gone: nothing to end there
		return
	}
	p := t.Partitions[tp.Partition]
	addr := c.ActorSystem().Address()
	if p.Leader != a.cfg.NodeID {
		b, ok := im.Brokers[p.Leader]
		if p.Leader < 0 || !ok || b.ClusterAddr == "" {
			a.retryMarker(c, tp)
			return
		}
		addr = b.ClusterAddr
	}
	pid := actor.NewPID(addr, "node/"+strconv.Itoa(int(p.Leader))+"/appends")
	msg := &partition.RemoteMarker{Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: p.LeaderEpoch, TimeoutMs: int32(markerTimeout / time.Millisecond),
		Marker: partition.Marker{ProducerID: mk.ProducerID, ProducerEpoch: mk.Epoch, Commit: mk.Commit, CoordinatorEpoch: mk.CoordinatorEpoch, TV2: mk.TV2}}
	self, root := a.self, a.sys.Root
	actors.Call(c, pid, msg, markerTimeout+time.Second, func(res any, err error) {
		root.Send(self, &markerDone{inc: inc, gen: gen, tp: tp, res: res, err: err})
	})
}

// markerDone takes a leader's answer to a marker: done, given up on, or
// sent again after a backoff.
func (a *txnActor) markerDone(c actor.Context, m *markerDone, now int64) {
	var err *kerr.Error
	switch r := m.res.(type) {
	case *partition.RemoteAppendResult:
		err = r.Err
	default:
		if m.err == nil {
			m.err = errors.New("unexpected answer")
		}
		a.cfg.Logger.Debug().Err(m.err).Str("transactional_id", a.id).Str("topic", m.tp.Topic).Int32("partition", m.tp.Partition).Msg("txns: marker not answered; sending it again")
		a.retryMarker(c, m.tp)
		return
	}
	// NB: UNKNOWN_TOPIC_OR_PARTITION is retried (default), as Kafka's
	// TransactionMarkerRequestCompletionHandler does: a node answers it
	// while its image does not have the topic yet (just restarted, its
	// metadata not loaded). Counted as written, the marker would be
	// missing there: an aborted transaction's offsets would stay pending
	// in their group, and the producer's next commit marker would commit
	// them. Whether the topic is gone is this node's image's to say
	// (sendMarker).
	switch err {
	case nil:
		a.t.MarkerWritten(m.tp, now)
	case kerr.InvalidProducerEpoch:
		// The partition has seen a newer epoch of the producer: this
		// transaction is over there (Kafka gives the marker up too).
		a.cfg.Logger.Info().Str("transactional_id", a.id).Str("topic", m.tp.Topic).Int32("partition", m.tp.Partition).Msg("txns: marker refused for an older producer epoch; counted as written")
		a.t.MarkerWritten(m.tp, now)
	case kerr.TransactionCoordinatorFenced:
		// A newer coordinator of this id writes its markers: stop.
		a.cfg.Logger.Info().Str("transactional_id", a.id).Msg("txns: a newer coordinator fenced this one's marker")
	default:
		a.retryMarker(c, m.tp)
	}
}

// retryMarker sends tp's marker again after a backoff doubling from 50 ms
// to 5 s.
func (a *txnActor) retryMarker(c actor.Context, tp TopicPartition) {
	d := min(max(2*a.backoff[tp], 50*time.Millisecond), 5*time.Second)
	a.backoff[tp] = d
	self, root, msg := a.self, a.sys.Root, &markerRetry{inc: a.inc, gen: a.markersGen, tp: tp}
	time.AfterFunc(d, func() { root.Send(self, msg) })
}

// initError answers an InitProducerId with err.
func initError(m *InitRequest, err *kerr.Error) *kmsg.InitProducerIDResponse {
	resp := m.Req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, err.Code
	return resp
}
