package partition

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
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
	LeaderEpoch int32
	// ISR is how many replicas are in sync (for min.insync.replicas).
	ISR int
	// TickInterval paces retention, compaction, checkpoints and flush.ms.
	TickInterval time.Duration
	Logger       zerolog.Logger
}

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
// Restart: the log is reopened (and recovered) from disk in Started; the
// requests waiting on the old instance were answered REQUEST_TIMED_OUT, an
// indefinite error, so producers retry (idempotent ones without duplicates).
type partition struct {
	cfg    Config
	handle *Handle
	log    *store.Log
	self   *actor.PID
	sys    *actor.ActorSystem

	waiters []waiter // appends waiting for the high watermark, by offset

	syncReq        chan struct{}
	stop           chan struct{}
	goroutines     sync.WaitGroup
	compacting     bool
	lastCheckpoint time.Time
}

type waiter struct {
	next  int64 // the high watermark that completes it
	res   AppendResult
	reply func(AppendResult)
}

func newPartition(cfg Config, h *Handle) actor.Actor { return &partition{cfg: cfg, handle: h} }

func (p *partition) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.self, p.sys = ctx.Self(), ctx.ActorSystem()
		if err := p.start(); err != nil {
			panic(fmt.Errorf("partition %s-%d: start: %w", p.cfg.Topic, p.cfg.Partition, err))
		}
	case *actor.Stopping, *actor.Restarting:
		p.shutdown()
	case *Append:
		p.append(m)
	case *synced:
		p.onSynced(m)
	case *tick:
		p.onTick()
	case *compacted:
		p.compacting = false
		if m.err != nil && !errors.Is(m.err, store.ErrClosed) {
			p.cfg.Logger.Error().Err(m.err).Msg("compaction failed")
		}
	case *SetConfig:
		p.cfg.TopicConfig = m.Config
		if err := p.log.SetOptions(StoreOptions(m.Config)); err != nil {
			p.cfg.Logger.Error().Err(err).Msg("topic config refused by the log")
		}
		p.publish()
	case *DeleteRecords:
		p.deleteRecords(m)
	}
}

func (p *partition) start() error {
	l, err := store.Open(store.Config{FS: p.cfg.FS, Dir: p.cfg.Dir, Clock: p.cfg.Clock, Options: StoreOptions(p.cfg.TopicConfig)})
	if err != nil {
		return err
	}
	p.log = l
	// One replica: everything recovered is durable and in sync, so the
	// high watermark is the log end. (Replication will make it the
	// minimum over the ISR.)
	l.SetHighWatermark(l.LogEndOffset())
	p.lastCheckpoint = p.cfg.Clock.Now()
	p.publish()
	p.syncReq, p.stop = make(chan struct{}, 1), make(chan struct{})
	p.goroutines.Add(2)
	go p.syncer(l)
	go p.ticker()
	return nil
}

// shutdown stops the goroutines, answers waiters, and closes the log.
func (p *partition) shutdown() {
	if p.log == nil {
		return
	}
	close(p.stop)
	p.goroutines.Wait()
	for _, w := range p.waiters {
		w.res.Err, w.res.Message = kerr.RequestTimedOut, "partition restarting"
		w.reply(w.res)
	}
	p.waiters = nil
	if err := p.log.Close(); err != nil {
		p.cfg.Logger.Error().Err(err).Msg("closing the log")
	}
	p.log = nil
}

// syncer runs the log's fsyncs off the actor's goroutine. Requests that
// arrive during an fsync are covered by the next one: group commit.
func (p *partition) syncer(l *store.Log) {
	defer p.goroutines.Done()
	for {
		select {
		case <-p.stop:
			return
		case <-p.syncReq:
		}
		err := l.Sync()
		p.sys.Root.Send(p.self, &synced{durable: l.DurableOffset(), err: err})
	}
}

func (p *partition) ticker() {
	defer p.goroutines.Done()
	t := time.NewTicker(p.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.sys.Root.Send(p.self, &tick{})
		}
	}
}

func (p *partition) requestSync() {
	select {
	case p.syncReq <- struct{}{}:
	default: // one is pending already and will cover this append
	}
}

func (p *partition) publish() {
	p.handle.publish(&View{Log: p.log.View(), Config: p.cfg.TopicConfig, LeaderEpoch: p.cfg.LeaderEpoch})
}

func (p *partition) append(m *Append) {
	if m.Acks == -1 && int(p.cfg.TopicConfig.MinInsyncReplicas) > p.cfg.ISR {
		m.Reply(AppendResult{Err: kerr.NotEnoughReplicas, Message: fmt.Sprintf(
			"The size of the current ISR %d is insufficient to satisfy the min.isr requirement of %d", p.cfg.ISR, p.cfg.TopicConfig.MinInsyncReplicas)})
		return
	}
	res, err := p.log.Append(m.Records, p.cfg.LeaderEpoch)
	if err != nil {
		m.Reply(appendError(err))
		if errors.Is(err, store.ErrFailed) {
			panic(err) // the disk failed: restart and recover from what is on it
		}
		return
	}
	out := AppendResult{BaseOffset: res.BaseOffset, LogAppendTime: res.LogAppendTime, LogStartOffset: res.LogStartOffset}
	switch {
	case m.Acks == 0:
		m.Reply(out)
	case p.cfg.Durability == configs.DurabilityReplicated:
		// Kafka's model: in the page cache of every ISR member is enough.
		p.log.SetHighWatermark(p.log.LogEndOffset())
		p.publish()
		m.Reply(out)
	default:
		p.waiters = append(p.waiters, waiter{next: res.LastOffset + 1, res: out, reply: m.Reply})
	}
	if p.cfg.Durability != configs.DurabilityReplicated || p.log.FlushDue() {
		p.requestSync()
	}
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
	if m.err != nil {
		for _, w := range p.waiters {
			w.res.Err, w.res.Message = kerr.KafkaStorageError, m.err.Error()
			w.reply(w.res)
		}
		p.waiters = nil
		panic(m.err) // restart and recover from what reached the disk
	}
	if p.cfg.Durability == configs.DurabilityReplicated {
		return // the high watermark does not wait for fsync
	}
	if m.durable > p.log.HighWatermark() {
		p.log.SetHighWatermark(m.durable)
		p.publish()
	}
	hw := p.log.HighWatermark()
	n := 0
	for _, w := range p.waiters {
		if w.next > hw {
			break
		}
		w.reply(w.res)
		n++
	}
	p.waiters = append(p.waiters[:0], p.waiters[n:]...)
}

func (p *partition) onTick() {
	now := p.cfg.Clock.Now()
	if _, err := p.log.ApplyRetention(); err != nil {
		p.cfg.Logger.Error().Err(err).Msg("retention failed")
	} else if p.log.LogStartOffset() != p.handle.View().Log.LogStartOffset {
		p.publish()
	}
	if p.cfg.Durability == configs.DurabilityReplicated && p.log.FlushDue() {
		p.requestSync()
	}
	if now.Sub(p.lastCheckpoint) >= 5*time.Second {
		p.lastCheckpoint = now
		if err := p.log.Checkpoint(); err != nil {
			p.cfg.Logger.Error().Err(err).Msg("checkpoint failed")
		}
	}
	if p.cfg.TopicConfig.CleanupPolicy.Compact && !p.compacting {
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
		return
	}
	p.publish()
	m.Reply(p.log.LogStartOffset(), nil)
}
