package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// runner is the actor of one source partition of an instance on the node
// that leads it: node/<id>/extensions/<instance>/<topic>-<n>. It reads the
// partition's published view (no message to the partition's actor), hands
// the records to the Extension, writes its output through the leaders'
// appends actors, one chunk at a time, and commits its position.
//
// A restart (a panic, an error from Process, an output the cluster refuses
// for good) starts it again from the committed position; after
// parkFailures restarts without a quiet minute between them it parks: it
// stays, idle, and its status says why.
type runner struct {
	cfg  *Config
	key  runnerKey
	kind *Kind
	// settings are the instance's, resolved.
	settings map[string]string
	st       *status
	self     *actor.PID
	ctx      context.Context
	cancel   context.CancelFunc

	// remote is set for a source in another cluster (remote.go): want
	// asks its reader for records, fetched holds what it brought, polling
	// is set while it reads. sourceParts is the source topic's partition
	// count.
	remote      bool
	want        chan int
	fetched     []Record
	polling     bool
	sourceParts int32

	ext                 Extension
	maxRecords, maxSize int
	dec                 store.Decompressor

	pos        int64                   // the next source offset to process
	pid        int64                   // the producer id the output is written with
	next       map[partition.Key]int32 // the next sequence of each target
	written    map[partition.Key]int32 // after a restart: the next sequence each target lacks
	committed  position                // the last durable commit's targets
	commitAt   int64                   // its offset
	lastCommit time.Time
	committing bool

	// stateTP is the partition of the state topic this partition's state
	// goes to, and statePrefix its keys' prefix; zero for a kind without
	// state.
	stateTP     partition.Key
	statePrefix string
	// ticks are the noted ticks after the committed position, still to
	// replay, oldest first; tickDue is set when a tick came while a chunk
	// was in progress.
	ticks   []tick
	tickDue bool

	// rbuf is what the last read of the source left unprocessed, from
	// the batch that holds rbufAt on.
	rbuf   []byte
	rbufAt int64

	// busy is set while the extension processes records or ticks; calls
	// counts that goroutine while it runs, so that Close waits for it.
	busy  bool
	calls sync.WaitGroup
	// txn is the transactional output (txn.go), nil without
	// output.transactions; adding is set while partitions are added to
	// its transaction.
	txn    *txnOutput
	adding bool

	chunk   *chunk // the records in progress
	waiting bool   // a step is scheduled (a watch, or a retry)
}

// chunk is a Process call's input range and output.
type chunk struct {
	next    int64 // the source offset after its records
	records int
	out     []emitted
	// batches are its output per target once numbered; pending counts
	// those not yet acknowledged.
	batches map[partition.Key]*outBatch
	pending int
	// register is set while a commit must name new targets before the
	// output goes: the commit of the chunk's start, with the sequences the
	// chunk's output starts at (startNext).
	register  bool
	startNext map[partition.Key]int32
}

type emitted struct {
	topic     string
	partition int32
	rec       Record
}

// outBatch is a chunk's output to one target partition: its records, the
// sequence of the first, and how many are written. It goes as batches of
// at most batchBytes, one at a time.
type outBatch struct {
	key     partition.Key
	baseSeq int32
	records []Record
	sent    int // records acknowledged
	n       int // records in the batch in flight
}

// batchBytes bounds an output batch, well below the default
// max.message.bytes (1 MiB) of the targets.
const batchBytes = 256 << 10

// readBytes is how much of the source partition a read takes at least; what
// a chunk leaves of it serves the next.
const readBytes = 1 << 20

// The runner's own messages; each carries the runner it is for, so that
// what a previous instance of the actor (before a restart) set going is
// ignored.
type (
	loaded struct {
		r       *runner
		pos     int64
		p       *position
		written map[partition.Key]int32
		stateTP partition.Key
		state   map[string][]byte
		ticks   []tick
		txn     *txnOutput
		err     error
	}
	tickNow struct{ r *runner }
	// processed is a Process call's answer (or a Tick's, tick set).
	processed struct {
		r       *runner
		next    int64
		records int
		out     []emitted
		err     error
		tick    *time.Time
	}
	stepNow   struct{ r *runner }
	appendRes struct {
		r   *runner
		b   *outBatch
		res *partition.RemoteAppendResult
		err error
	}
	commitRes struct {
		r      *runner
		offset int64
		p      position
		err    error
		// pid and epoch are what a transactional producer goes on with.
		pid   int64
		epoch int16
	}
	retryNow struct {
		r     *runner
		again func()
	}
)

// owned is a message of the runner's own, which knows the runner it is
// for.
type owned interface{ owner() *runner }

func (m *loaded) owner() *runner        { return m.r }
func (m *stepNow) owner() *runner       { return m.r }
func (m *appendRes) owner() *runner     { return m.r }
func (m *commitRes) owner() *runner     { return m.r }
func (m *retryNow) owner() *runner      { return m.r }
func (m *tickNow) owner() *runner       { return m.r }
func (m *processed) owner() *runner     { return m.r }
func (m *txnAdded) owner() *runner      { return m.r }
func (m *remoteFetched) owner() *runner { return m.r }

// The runner's bounds.
const (
	parkFailures  = 5
	loadTimeout   = 30 * time.Second
	appendTimeout = 30 * time.Second
	maxBackoff    = 5 * time.Second
	// idleRecheck bounds the wait for new records: the view's watch wakes
	// the runner sooner, this catches a leadership it lost meanwhile.
	idleRecheck = time.Second
)

func (r *runner) Receive(c actor.Context) {
	if o, ok := c.Message().(owned); ok && o.owner() != r {
		return // set going by an earlier instance of the actor
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		r.start(c)
	case *actor.Stopping, *actor.Restarting:
		r.cancel()
		if r.txn != nil {
			go r.txn.close()
		}
		if cl, ok := r.ext.(io.Closer); ok {
			// Not on the actor's goroutine: the extension may still be in
			// Process or Tick on its own, which Close waits for.
			go func() {
				r.calls.Wait()
				cl.Close()
			}()
		}
	case *loaded:
		r.loaded(c, m)
	case *stepNow:
		r.waiting = false
		r.step(c)
	case *appendRes:
		r.appended(c, m)
	case *commitRes:
		r.commitDone(c, m)
	case *txnAdded:
		r.txnAdded(c, m)
	case *processed:
		r.processed(c, m)
	case *tickNow:
		r.timeTick(c)
	case *remoteFetched:
		r.remoteFetchedIn(c, m)
	case *retryNow:
		if r.ctx.Err() == nil {
			m.again()
		}
	}
}

func (r *runner) start(c actor.Context) {
	r.self = c.Self()
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if r.st.parked() || r.st.started() {
		return
	}
	r.load(c)
}

// load fetches the committed position and, after a restart, what the
// targets already hold from this producer, on a goroutine.
func (r *runner) load(c actor.Context) {
	self, sys, ctx := r.self, c.ActorSystem(), r.ctx
	go func() {
		m := &loaded{r: r}
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		m.err = r.loadOn(ctx, m)
		sys.Root.Send(self, m)
	}()
}

// loadOn fetches the committed position (from the group, or for a remote
// source from the state topic), the state as of it, and after a restart
// what the targets already hold from its producer. Called on load's
// goroutine.
func (r *runner) loadOn(ctx context.Context, m *loaded) error {
	if r.settings[SettingOutputTransactions] == "true" {
		t, err := r.initTxn(ctx)
		if err != nil {
			return err
		}
		m.txn = t
	}
	var sr *stateRead
	if r.kind.State || r.remote {
		var err error
		if sr, err = r.readState(ctx); err != nil {
			return err
		}
		m.stateTP = sr.tp
	}
	var off int64
	var meta string
	var ok bool
	if r.remote {
		off, meta, ok = decodePosRecord(sr.pos)
	} else {
		var err error
		if off, meta, ok, err = r.cfg.Positions.Fetch(ctx, GroupFor(r.key.instance), r.key.topic, r.key.partition); err != nil {
			return fmt.Errorf("fetching the committed position: %w", err)
		}
	}
	m.pos = -1
	if ok {
		m.pos = off
		// Metadata committed by something else (a Kafka tool resetting
		// the group's offsets) does not decode: the offset holds, the
		// output starts a new producer.
		m.p, _ = decodePosition(meta)
	}
	if m.pos < 0 && r.settings[SettingStart] == "latest" {
		m.pos = -2
	}
	if m.txn != nil {
		// A new epoch: sequences start again, the open transaction of
		// an earlier run is aborted, and what is committed, state
		// included, is as of the committed position.
		m.p = &position{producerID: m.txn.pid, next: map[partition.Key]int32{}}
		if r.kind.State {
			m.state, _ = sr.apply(m.p, true)
		}
		return nil
	}
	fresh := m.p == nil
	if fresh {
		id, err := r.cfg.ProducerID()
		if err != nil {
			return fmt.Errorf("taking a producer id: %w", err)
		}
		m.p = &position{producerID: id, next: map[partition.Key]int32{}}
	}
	if r.kind.State {
		m.state, m.ticks = sr.apply(m.p, fresh)
	}
	if fresh {
		return nil
	}
	m.written = map[partition.Key]int32{}
	for k, next := range m.p.next {
		seq, ok, err := r.cfg.Positions.LastSequence(ctx, k.Topic, k.Partition, m.p.producerID)
		if err != nil {
			return fmt.Errorf("asking %s-%d for the output's last sequence: %w", k.Topic, k.Partition, err)
		}
		if ok && seq+1 > next {
			m.written[k] = seq + 1
		}
	}
	return nil
}

// stateRead is what a partition's load found in its state partition:
// the records under its prefix, in order, and the last position record
// (remote sources keep their position there).
type stateRead struct {
	tp   partition.Key
	recs []stateRec
	pos  []byte
}

type stateRec struct {
	key     string // the prefix cut
	value   []byte
	headers []Header
}

// readState makes the instance's state topic if it has none and reads this
// partition's records in it. Called on load's goroutine.
func (r *runner) readState(ctx context.Context) (*stateRead, error) {
	topic := StateTopic(r.key.instance)
	parts := r.cfg.Cluster.Partitions(topic)
	if parts == 0 {
		parts = max(r.sourceParts, 1)
		if err := r.cfg.Cluster.CreateTopic(topic, parts, stateConfigs); err != nil {
			return nil, fmt.Errorf("creating the state topic: %w", err)
		}
		// A topic that existed after all has its own count.
		if n := r.cfg.Cluster.Partitions(topic); n > 0 {
			parts = n
		}
	}
	sr := &stateRead{tp: partition.Key{Topic: topic, Partition: r.key.partition % parts}}
	prefix := r.statePrefixOf()
	err := r.cfg.Positions.Read(ctx, topic, sr.tp.Partition, func(key, value []byte, headers []Header) {
		k, ok := strings.CutPrefix(string(key), prefix)
		switch {
		case !ok:
		case k == posKey:
			sr.pos = value
		default:
			sr.recs = append(sr.recs, stateRec{k, value, headers})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the state: %w", err)
	}
	return sr, nil
}

// apply returns the state as of the position p and the ticks noted after
// it: of the records p's producer wrote, only the ones numbered before
// p's next sequence for the state partition are part of it (the rest came
// from records after the position, which are processed again). A fresh
// position (none committed, or one the runtime did not write) takes them
// all, and replays no tick.
func (sr *stateRead) apply(p *position, fresh bool) (map[string][]byte, []tick) {
	state := map[string][]byte{}
	var ticks []tick
	upTo, mine := p.next[sr.tp], strconv.FormatInt(p.producerID, 10)
	for _, rec := range sr.recs {
		after := false // written after the position
		if !fresh && headerValue(rec.headers, headerStateProducer) == mine {
			seq, err := strconv.ParseInt(headerValue(rec.headers, headerStateSequence), 10, 32)
			after = err != nil || int32(seq) >= upTo
		}
		switch {
		case rec.key == tickKey:
			if t, ok := decodeTick(rec.value); ok && after {
				ticks = append(ticks, t)
			}
		case after:
		case rec.value == nil:
			delete(state, rec.key)
		default:
			state[rec.key] = rec.value
		}
	}
	return state, ticks
}

// statePrefixOf is the prefix of this partition's keys in the state topic.
func (r *runner) statePrefixOf() string { return fmt.Sprintf("%s/%d/", r.key.topic, r.key.partition) }

func headerValue(hs []Header, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (r *runner) loaded(c actor.Context, m *loaded) {
	if m.err != nil {
		r.retry(c, "waiting", m.err.Error(), func() { r.load(c) })
		return
	}
	r.st.ok()
	r.pid, r.next, r.written = m.p.producerID, m.p.next, m.written
	r.committed = position{producerID: m.p.producerID, next: cloneSeqs(m.p.next)}
	r.commitAt, r.lastCommit = m.pos, time.Now()
	r.pos = m.pos
	r.stateTP, r.statePrefix = m.stateTP, r.statePrefixOf()
	ext, err := r.kind.New(Instance{Name: r.key.instance, Kind: r.kind.Name, Settings: r.settings,
		Topic: r.key.topic, Partition: r.key.partition, SourcePartitions: r.sourceParts, Cluster: r.cfg.Cluster, State: m.state})
	if err != nil {
		r.fail(fmt.Errorf("kind %s: %w", r.kind.Name, err))
		return
	}
	r.ext = ext
	r.ticks, r.txn = m.ticks, m.txn
	if _, ok := ext.(Timed); ok {
		if !r.kind.State {
			r.fail(fmt.Errorf("kind %s ticks (Timed) but keeps no state (Kind.State), where its ticks are noted", r.kind.Name))
			return
		}
		r.startTicks(c)
	}
	r.maxRecords, r.maxSize = DefaultCreditRecords, DefaultCreditBytes
	if cr, ok := ext.(Credited); ok {
		n, b := cr.Credit()
		r.maxRecords, r.maxSize = max(n, 1), max(b, 1)
	}
	if r.remote {
		if err := r.startRemote(c); err != nil {
			r.fail(err)
			return
		}
	}
	r.st.set(func(s *Status) { s.State, s.Reason, s.ProducerID = StateRunning, "", r.pid })
	r.step(c)
}

// step moves on: sends the chunk in progress's output, or reads and
// processes the next records, or waits for some.
func (r *runner) step(c actor.Context) {
	if r.ext == nil || r.waiting || r.busy {
		return
	}
	if r.chunk != nil {
		r.sendChunk(c)
		return
	}
	if r.remote {
		r.stepRemote(c)
		return
	}
	h, v, kerr := r.cfg.Registry.Led(r.cfg.Image(), r.cfg.NodeID, r.key.topic, r.key.partition)
	if kerr != nil {
		// Not led here (yet, or any more: the supervisor stops this actor
		// when the metadata says so), or failed: look again soon.
		r.st.set(func(s *Status) { s.State, s.Reason = StateWaiting, "the source partition: "+kerr.Message })
		r.after(c, idleRecheck)
		return
	}
	log := v.Log
	switch {
	case r.pos == -1:
		r.pos = log.LogStartOffset
	case r.pos == -2:
		r.pos = log.HighWatermark
	case r.pos < log.LogStartOffset:
		r.cfg.Logger.Warn().Str("extension", r.key.instance).Str("topic", r.key.topic).Int32("partition", r.key.partition).
			Int64("position", r.pos).Int64("log_start", log.LogStartOffset).Msg("extension: records deleted before they were processed; going on from the log start")
		r.pos = log.LogStartOffset
	}
	upTo := log.LastStableOffset
	r.st.set(func(s *Status) { s.Position, s.End, s.State, s.Reason = r.pos, log.HighWatermark, StateRunning, "" })
	stopAt, ticked := r.replayTick(c)
	if ticked {
		return
	}
	if r.pos >= upTo {
		r.maybeCommit(c, true)
		r.watch(c, h)
		return
	}
	b := r.rbuf
	if len(b) == 0 || r.rbufAt != r.pos {
		var err error
		b, err = log.ReadBytes(r.pos, store.ReadOptions{MaxBytes: int64(max(r.maxSize, readBytes)), MaxOffset: upTo, MinOneBatch: true})
		if err != nil {
			r.retry(c, StateWaiting, "reading the source partition: "+err.Error(), func() { r.step(c) })
			return
		}
		if len(b) == 0 { // the next batch ends beyond the last stable offset
			r.watch(c, h)
			return
		}
	}
	recs, next, rest, err := r.decode(b, log.AbortedTxns(r.pos, upTo), stopAt)
	r.rbuf, r.rbufAt = rest, next
	if err != nil {
		r.fail(fmt.Errorf("decoding %s-%d at %d: %w", r.key.topic, r.key.partition, r.pos, err))
		return
	}
	r.process(c, recs, next)
}

// replayTick replays the next noted tick if it falls at the position
// (ticked), and otherwise returns where the records read before it stop:
// at that tick, or nowhere (math.MaxInt64) when none is left to replay.
func (r *runner) replayTick(c actor.Context) (stopAt int64, ticked bool) {
	if len(r.ticks) == 0 {
		return math.MaxInt64, false
	}
	if t := r.ticks[0]; r.pos >= t.pos {
		r.ticks = r.ticks[1:]
		r.tick(c, t.at)
		return 0, true
	}
	return r.ticks[0].pos, false
}

// process hands records to the extension, on a goroutine of their own: an
// extension that takes long, or never returns, holds up its own partition
// only, and the actor stays free to stop (the goroutine is then left to
// finish, its answer ignored). The answer, processed, makes the chunk.
func (r *runner) process(c actor.Context, recs []Record, next int64) {
	r.busy = true
	self, root := r.self, c.ActorSystem().Root
	r.calls.Add(1)
	go func() {
		defer r.calls.Done()
		out := &collector{r: r}
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("%s panicked: %v", r.kind.Name, p)
				}
			}()
			if err := r.ext.Process(recs, out); err != nil {
				return fmt.Errorf("%s: %w", r.kind.Name, err)
			}
			return out.err
		}()
		root.Send(self, &processed{r: r, next: next, records: len(recs), out: out.out, err: err})
	}()
}

// processed takes what a Process or Tick call emitted: the chunk to write.
func (r *runner) processed(c actor.Context, m *processed) {
	r.busy = false
	if m.err != nil {
		r.fail(m.err)
		return
	}
	if m.tick != nil && (len(m.out) == 0 || r.txn != nil) {
		if len(m.out) == 0 {
			r.step(c)
			return
		}
	} else if m.tick != nil {
		note := emitted{topic: r.stateTP.Topic, partition: r.stateTP.Partition,
			rec: Record{Key: []byte(r.statePrefix + tickKey), Value: encodeTick(tick{pos: r.pos, at: *m.tick}), Timestamp: *m.tick}}
		m.out = append([]emitted{note}, m.out...)
	}
	r.chunk = &chunk{next: m.next, records: m.records, out: m.out}
	r.sendChunk(c)
}

// collector is the Output a Process call writes to.
type collector struct {
	r   *runner
	out []emitted
	err error
}

func (o *collector) Emit(topic string, partition int32, r Record) {
	o.out = append(o.out, emitted{topic: topic, partition: partition, rec: r})
}

func (o *collector) Put(key string, value []byte) {
	if value == nil {
		value = []byte{} // nil is a delete
	}
	o.put(key, value)
}

func (o *collector) Delete(key string) { o.put(key, nil) }

// put emits a state record; the sequence header is set when it is numbered.
func (o *collector) put(key string, value []byte) {
	if !o.r.kind.State {
		o.err = fmt.Errorf("kind %s keeps no state (Kind.State), yet put %q", o.r.kind.Name, key)
		return
	}
	o.out = append(o.out, emitted{topic: o.r.stateTP.Topic, partition: o.r.stateTP.Partition,
		rec: Record{Key: []byte(o.r.statePrefix + key), Value: value, Timestamp: time.Now()}})
}

// sendChunk numbers the chunk's output (once its targets exist), commits
// first if it writes to targets the last commit does not name, and sends a
// batch to each target.
func (r *runner) sendChunk(c actor.Context) {
	ch := r.chunk
	if ch.batches == nil {
		ch.startNext = cloneSeqs(r.next)
		batches, missing := r.number(ch.out)
		if missing != "" {
			r.retry(c, StateWaiting, missing, func() { r.step(c) })
			return
		}
		ch.batches = batches
		for k := range batches {
			if _, ok := r.committed.next[k]; !ok {
				ch.register = true
			}
		}
	}
	if r.txn != nil {
		r.sendTxnChunk(c)
		return
	}
	if ch.register {
		// A target no commit names yet: were the actor to restart after
		// writing there, nothing would say to look for its output. The
		// position at the chunk's start, with the new targets at their
		// first sequence, goes first.
		if !r.committing {
			r.commit(c, r.pos, ch.startNext)
		}
		return
	}
	if ch.pending > 0 {
		return
	}
	r.sendBatches(c)
}

// sendBatches sends each target's batch of the chunk, or ends a chunk
// that has none.
func (r *runner) sendBatches(c actor.Context) {
	ch := r.chunk
	for _, b := range ch.batches {
		if len(b.records) > 0 {
			ch.pending++
			r.send(c, b)
		}
	}
	if ch.pending == 0 {
		r.chunkDone(c)
	}
}

// number groups a chunk's output by target partition, in order, and gives
// each record its sequence; the records a target already has (after a
// restart) are dropped. missing says which output partition does not
// exist, if one does not.
func (r *runner) number(out []emitted) (map[partition.Key]*outBatch, string) {
	im := r.cfg.Image()
	batches := map[partition.Key]*outBatch{}
	var order []*outBatch
	for _, e := range out {
		t := im.Topic(e.topic)
		switch {
		case t == nil || len(t.Partitions) == 0:
			return nil, "the output topic " + e.topic + " does not exist"
		case int(e.partition) >= len(t.Partitions):
			return nil, fmt.Sprintf("the output topic %s has no partition %d", e.topic, e.partition)
		}
		p := e.partition
		if p < 0 {
			p = partitionFor(e.rec.Key, r.key.partition, int32(len(t.Partitions)))
		}
		k := partition.Key{Topic: e.topic, Partition: p}
		b := batches[k]
		if b == nil {
			b = &outBatch{key: k}
			batches[k] = b
			order = append(order, b)
		}
		b.records = append(b.records, e.rec)
	}
	for _, b := range order {
		seq := r.next[b.key]
		skip := 0
		if w, ok := r.written[b.key]; ok {
			skip = int(min(max(w-seq, 0), int32(len(b.records))))
			if seq+int32(len(b.records)) >= w {
				delete(r.written, b.key)
			}
		}
		if b.key == r.stateTP {
			pid := []byte(strconv.FormatInt(r.pid, 10))
			for i := range b.records {
				b.records[i].Headers = []Header{{Key: headerStateProducer, Value: pid},
					{Key: headerStateSequence, Value: []byte(strconv.Itoa(int(seq) + i))}}
			}
		}
		r.next[b.key] = seq + int32(len(b.records))
		b.baseSeq, b.records = seq+int32(skip), b.records[skip:]
		if skip > 0 && r.st != nil {
			r.st.count(0, 0, int64(skip))
		}
	}
	return batches, ""
}

// send writes one batch to its target's leader.
func (r *runner) send(c actor.Context, b *outBatch) {
	b.n = partSize(b.records[b.sent:])
	batch, err := encodeBatch(b.key, b.baseSeq+int32(b.sent), b.records[b.sent:b.sent+b.n], r.producer())
	if err != nil {
		r.fail(err)
		return
	}
	self, root := r.self, c.ActorSystem().Root
	r.appendTo(c.ActorSystem(), b.key, batch, func(res *partition.RemoteAppendResult, err error) {
		root.Send(self, &appendRes{r: r, b: b, res: res, err: err})
	})
}

// partSize returns how many of records (at least one) go in the next
// batch, within batchBytes.
func partSize(records []Record) int {
	size := 0
	for i, r := range records {
		size += 24 + len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			size += 10 + len(h.Key) + len(h.Value)
		}
		if size > batchBytes && i > 0 {
			return i
		}
	}
	return len(records)
}

// appended takes a target leader's answer: done, sent again (after a
// backoff), or a failure.
func (r *runner) appended(c actor.Context, m *appendRes) {
	ch := r.chunk
	if ch == nil || ch.batches[m.b.key] != m.b {
		return
	}
	var err error
	switch {
	case m.err != nil:
		err = m.err
	case m.res.Err != nil:
		err = m.res.Err
		if m.res.Message != "" {
			err = fmt.Errorf("%w: %s", m.res.Err, m.res.Message)
		}
	}
	if err == nil {
		if w, ok := r.ext.(Written); ok {
			w.Written(m.b.key.Topic, m.b.key.Partition, m.res.BaseOffset, m.b.records[m.b.sent:m.b.sent+m.b.n])
		}
		if m.b.sent += m.b.n; m.b.sent < len(m.b.records) {
			r.send(c, m.b)
			return
		}
		m.b.records = nil
		ch.pending--
		if ch.pending == 0 {
			r.st.ok()
			r.chunkDone(c)
		}
		return
	}
	var ke *kerr.Error
	if m.err == nil && errors.As(err, &ke) && !ke.Retriable {
		// OUT_OF_ORDER_SEQUENCE_NUMBER among them: another runner of this
		// partition (on the node that led it before) wrote too. A restart
		// asks the targets again what they have.
		r.fail(fmt.Errorf("writing to %s-%d: %w", m.b.key.Topic, m.b.key.Partition, err))
		return
	}
	b := m.b
	r.retry(c, StateWaiting, fmt.Sprintf("writing to %s-%d: %v", b.key.Topic, b.key.Partition, err), func() { r.send(c, b) })
}

// chunkDone moves the position past a chunk whose output is all written.
func (r *runner) chunkDone(c actor.Context) {
	ch := r.chunk
	r.chunk = nil
	r.pos = ch.next
	r.st.set(func(s *Status) { s.Position = r.pos })
	r.st.count(int64(ch.records), int64(len(ch.out)), 0)
	r.maybeCommit(c, false)
	if r.tickDue {
		r.timeTick(c)
	}
	r.step(c)
}

// startTicks sends the actor a tickNow every TickInterval until it stops.
func (r *runner) startTicks(c actor.Context) {
	self, root, ctx := r.self, c.ActorSystem().Root, r.ctx
	go func() {
		t := time.NewTicker(TickInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				root.Send(self, &tickNow{r: r})
			}
		}
	}()
}

// timeTick ticks now, unless a chunk is in progress (then once it is done)
// or noted ticks are still to replay (then after them).
func (r *runner) timeTick(c actor.Context) {
	switch {
	case r.ext == nil || len(r.ticks) > 0:
	case r.chunk != nil || r.busy:
		r.tickDue = true
	default:
		r.tickDue = false
		r.tick(c, time.Now())
	}
}

// tick calls the extension's Tick, on a goroutine as process does; what it
// emits, if anything, goes as a chunk of no records, after a state record
// noting the tick (processed).
func (r *runner) tick(c actor.Context, now time.Time) {
	r.busy = true
	self, root, pos := r.self, c.ActorSystem().Root, r.pos
	r.calls.Add(1)
	go func() {
		defer r.calls.Done()
		out := &collector{r: r}
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("%s panicked in Tick: %v", r.kind.Name, p)
				}
			}()
			if err := r.ext.(Timed).Tick(now, out); err != nil {
				return fmt.Errorf("%s: %w", r.kind.Name, err)
			}
			return out.err
		}()
		root.Send(self, &processed{r: r, next: pos, out: out.out, err: err, tick: &now})
	}()
}

// maybeCommit commits the position if the last commit is older than the
// commit interval, or, when idle, if it is behind.
func (r *runner) maybeCommit(c actor.Context, idle bool) {
	interval := r.cfg.CommitInterval
	if r.txn != nil {
		// A transaction is open from its first output to its commit.
		if r.committing || r.pos == r.commitAt && len(r.txn.added) == 0 {
			return
		}
		interval = min(interval, maxTxnCommitInterval)
	} else if r.committing || r.pos == r.commitAt && len(r.next) == len(r.committed.next) {
		return
	}
	if idle || time.Since(r.lastCommit) >= interval {
		r.commit(c, r.pos, r.next)
	}
}

// commit commits offset with the targets' sequences, on a goroutine.
func (r *runner) commit(c actor.Context, offset int64, next map[partition.Key]int32) {
	r.committing = true
	p := position{producerID: r.pid, next: cloneSeqs(next)}
	if ch := r.chunk; ch != nil && ch.register {
		for k := range ch.batches {
			if _, ok := p.next[k]; !ok {
				p.next[k] = 0
			}
		}
	}
	if r.txn != nil {
		r.commitTxn(c, offset, p)
		return
	}
	if r.remote {
		r.commitRemote(c, offset, p)
		return
	}
	cfg, key, self, sys, ctx := r.cfg, r.key, r.self, c.ActorSystem(), r.ctx
	go func() {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		err := cfg.Positions.Commit(ctx, GroupFor(key.instance), key.topic, key.partition, offset, p.encode())
		sys.Root.Send(self, &commitRes{r: r, offset: offset, p: p, err: err})
	}()
}

func (r *runner) commitDone(c actor.Context, m *commitRes) {
	r.committing = false
	if m.err != nil && r.txn != nil {
		// The transaction's fate is unknown: a restart fences this run
		// and aborts it, and starts from the committed position.
		r.fail(fmt.Errorf("committing the transaction: %w", m.err))
		return
	}
	if m.err != nil {
		r.retry(c, StateWaiting, "committing the position: "+m.err.Error(), func() { r.step(c) })
		return
	}
	r.commitAt, r.committed, r.lastCommit = m.offset, m.p, time.Now()
	if r.txn != nil {
		clear(r.txn.added) // the next output opens the next transaction
		if m.pid != r.txn.pid || m.epoch != r.txn.epoch {
			// A new epoch (transaction version 2): sequences start again.
			r.txn.pid, r.txn.epoch = m.pid, m.epoch
			clear(r.next)
		}
	}
	r.st.set(func(s *Status) { s.Committed = m.offset })
	if ch := r.chunk; ch != nil && ch.register {
		ch.register = false
		for k := range ch.batches {
			if _, ok := r.committed.next[k]; !ok {
				ch.register = true
			}
		}
	}
	r.step(c)
}

// watch steps again once the partition publishes a new view, or after
// idleRecheck.
func (r *runner) watch(c actor.Context, h *partition.Handle) {
	r.waiting = true
	ch := make(chan struct{}, 1)
	cancel := h.Watch(ch)
	self, root, ctx := r.self, c.ActorSystem().Root, r.ctx
	go func() {
		defer cancel()
		t := time.NewTimer(idleRecheck)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return
		}
		root.Send(self, &stepNow{r: r})
	}()
}

// after steps again after d.
func (r *runner) after(c actor.Context, d time.Duration) {
	r.waiting = true
	self, root := r.self, c.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, &stepNow{r: r}) })
}

// retry records why the runner waits and calls again after a backoff
// doubling with the retries since the runner last made progress.
func (r *runner) retry(c actor.Context, state, reason string, again func()) {
	n := r.st.waitFor(reason)
	r.st.set(func(s *Status) { s.State, s.Reason = state, reason })
	d := min(50*time.Millisecond<<min(n-1, 10), maxBackoff)
	self, root := r.self, c.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, &retryNow{r: r, again: again}) })
}

// fail records a failure and restarts the actor (its supervisor's backoff
// spaces the restarts; the start after parkFailures of them parks it).
func (r *runner) fail(err error) {
	r.st.failed(err)
	panic(err)
}

func cloneSeqs(m map[partition.Key]int32) map[partition.Key]int32 {
	out := make(map[partition.Key]int32, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
