package txn

import (
	"bytes"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// Directory maps transactional ids to their actors, and knows which
// __transaction_state partitions are loaded here, for transport's lookups
// without a message. The txns supervisor writes it; any goroutine reads it.
type Directory struct {
	m      sync.Map // id → *actor.PID
	loaded sync.Map // partition → struct{}
}

// Get returns an id's actor, nil when it has none here.
func (d *Directory) Get(id string) *actor.PID {
	if v, ok := d.m.Load(id); ok {
		return v.(*actor.PID)
	}
	return nil
}

// Loaded reports whether the ids of a __transaction_state partition are
// loaded here (this node coordinates them).
func (d *Directory) Loaded(partition int32) bool {
	_, ok := d.loaded.Load(partition)
	return ok
}

// All returns the actors of every id coordinated here.
func (d *Directory) All() []*actor.PID {
	var out []*actor.PID
	d.m.Range(func(_, v any) bool {
		out = append(out, v.(*actor.PID))
		return true
	})
	return out
}

// Stats counts transactions node-wide, for /metrics.
type Stats struct {
	Ongoing                      atomic.Int64 // transactions begun and not complete
	Committed, Aborted, TimedOut atomic.Uint64
}

// SupervisorConfig configures the txns supervisor.
type SupervisorConfig struct {
	NodeID    int32
	Directory *Directory
	Registry  *partition.Registry
	// Image returns the node's newest metadata image.
	Image func() *image.Image
	// Txn configures each id's state machine; its OffsetsPartition is
	// set from the image.
	Txn Config
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms:
	// a coordinator looks at its transactions' timeouts no more often.
	AbortInterval time.Duration
	Stats         *Stats
	Logger        zerolog.Logger
}

// Leading tells the txns supervisor which __transaction_state partitions
// this node leads, with their leader epochs, of how many: the ids of
// partitions newly led are loaded, those of the others stopped. Sent by
// node's metadata actor at every image; no reply.
type Leading struct {
	Partitions map[int32]int32
	Of         int32
}

// Open asks the txns supervisor for an id's actor, spawning one for an id
// it does not know if its partition is loaded here. Sent by transport with
// actors.Ask; answered *OpenResult.
type Open struct {
	ID string
}

// OpenResult answers Open: the actor, or NOT_COORDINATOR /
// COORDINATOR_LOAD_IN_PROGRESS.
type OpenResult struct {
	PID *actor.PID
	Err *kerr.Error
}

// SupervisorProps returns the props of the "txns" supervisor: it loads the
// ids of the __transaction_state partitions this node leads, one actor per
// id (named by the id, path-escaped), and restarts a failed one, which
// reloads its id from the partition.
func SupervisorProps(cfg SupervisorConfig, strategy actor.SupervisorStrategy) *actor.Props {
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &supervisor{cfg: cfg, ids: map[string]*actor.PID{}, led: map[int32]int32{}, stopping: map[string]bool{}}
	}, actor.WithSupervisor(strategy))
}

type supervisor struct {
	cfg SupervisorConfig
	ids map[string]*actor.PID
	// led holds the partitions loaded here, with the leader epoch they
	// were loaded in (the coordinator epoch of their ids' markers).
	led map[int32]int32
	// want is the last Leading: partitions not loaded yet are retried.
	want  *Leading
	retry bool // a retryLoad is on its way
	// stopping holds the names of actors stopped and not yet terminated:
	// an id gets no new actor meanwhile.
	stopping map[string]bool
}

// retryLoad makes the supervisor try again the partitions it could not
// load (not ready yet, or actors of the old epoch still stopping).
type retryLoad struct{}

func (s *supervisor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Leading:
		s.want = m
		s.lead(c)
	case *retryLoad:
		s.retry = false
		s.lead(c)
	case *Open:
		c.Respond(s.open(c, m.ID))
	case *Verify:
		s.verify(c, m)
	case *actor.Terminated:
		if s.stopping[m.Who.Id] {
			delete(s.stopping, m.Who.Id)
			return
		}
		for id, pid := range s.ids {
			if pid.Equal(m.Who) {
				delete(s.ids, id)
				s.cfg.Directory.m.Delete(id)
			}
		}
	case *actor.Restarting, *actor.Stopping:
		s.cfg.Directory.m.Clear()
		s.cfg.Directory.loaded.Clear()
	}
}

// lead stops the ids of the partitions no longer led (or led in a newer
// epoch) and loads the partitions led and not loaded.
func (s *supervisor) lead(c actor.Context) {
	m := s.want
	if m == nil {
		return
	}
	for p, epoch := range s.led {
		if e, ok := m.Partitions[p]; !ok || e != epoch {
			s.unload(c, p, m.Of)
		}
	}
	pending := false
	for p, epoch := range m.Partitions {
		if _, ok := s.led[p]; ok {
			continue
		}
		if err := s.load(c, p, epoch, m.Of); err != nil {
			pending = true
			if !errors.Is(err, errNotReady) {
				s.cfg.Logger.Warn().Err(err).Int32("partition", p).Msg("txns: loading a __transaction_state partition")
			}
		}
	}
	if pending && !s.retry {
		s.retry = true
		self, root := c.Self(), c.ActorSystem().Root
		time.AfterFunc(200*time.Millisecond, func() { root.Send(self, &retryLoad{}) })
	}
}

var errNotReady = errors.New("txn: partition not ready")

// load reads a __transaction_state partition this node leads and spawns
// an actor for each id it holds.
func (s *supervisor) load(c actor.Context, p, epoch, of int32) error {
	h, v, lerr := s.cfg.Registry.Led(s.cfg.Image(), s.cfg.NodeID, StateTopic, p)
	if lerr != nil || v.Log == nil || v.LeaderEpoch != epoch {
		return errNotReady
	}
	for name := range s.stopping {
		// An actor of the partition's last load is still stopping: its
		// successor would take its name.
		if id, err := url.PathUnescape(lastElem(name)); err == nil && PartitionFor(id, of) == p {
			return errNotReady
		}
	}
	states, bad, err := readState(v.Log, "")
	if err != nil {
		return err
	}
	if bad > 0 {
		s.cfg.Logger.Warn().Int32("partition", p).Int("records", bad).Msg("txns: skipped __transaction_state records that do not decode")
	}
	for id, m := range states {
		if pid := s.ids[id]; pid != nil {
			continue // spawned by an Open while the partition loaded
		}
		s.spawn(c, id, h, p, epoch, m)
	}
	s.led[p] = epoch
	s.cfg.Directory.loaded.Store(p, struct{}{})
	s.cfg.Logger.Info().Int32("partition", p).Int32("coordinator_epoch", epoch).Int("transactional_ids", len(states)).
		Msg("txns: coordinating the transactional ids of a __transaction_state partition")
	return nil
}

// unload stops the actors of a partition's ids: their waiting requests are
// answered NOT_COORDINATOR.
func (s *supervisor) unload(c actor.Context, p, of int32) {
	delete(s.led, p)
	s.cfg.Directory.loaded.Delete(p)
	for id, pid := range s.ids {
		if PartitionFor(id, of) != p {
			continue
		}
		delete(s.ids, id)
		s.cfg.Directory.m.Delete(id)
		s.stopping[pid.Id] = true
		c.Stop(pid)
	}
	s.cfg.Logger.Info().Int32("partition", p).Msg("txns: no longer coordinating a __transaction_state partition")
}

// open returns an id's actor, spawning one for a new id of a partition
// loaded here.
func (s *supervisor) open(c actor.Context, id string) *OpenResult {
	if pid := s.ids[id]; pid != nil {
		return &OpenResult{PID: pid}
	}
	of := int32(0)
	if s.want != nil {
		of = s.want.Of
	}
	if of == 0 {
		return &OpenResult{Err: kerr.NotCoordinator}
	}
	p := PartitionFor(id, of)
	epoch, ok := s.led[p]
	if !ok {
		if _, wanted := s.want.Partitions[p]; wanted {
			return &OpenResult{Err: kerr.CoordinatorLoadInProgress}
		}
		return &OpenResult{Err: kerr.NotCoordinator}
	}
	h := s.cfg.Registry.Get(StateTopic, p)
	if h == nil || s.stopping[c.Self().Id+"/"+url.PathEscape(id)] {
		return &OpenResult{Err: kerr.CoordinatorLoadInProgress}
	}
	pid := s.spawn(c, id, h, p, epoch, nil)
	if pid == nil {
		return &OpenResult{Err: kerr.CoordinatorNotAvailable}
	}
	return &OpenResult{PID: pid}
}

// spawn starts an id's actor with the state the log holds (nil: none).
func (s *supervisor) spawn(c actor.Context, id string, h *partition.Handle, p, epoch int32, m *Metadata) *actor.PID {
	cfg := s.cfg
	sys := c.ActorSystem()
	var restarted atomic.Bool
	props := actor.PropsFromProducer(func() actor.Actor {
		a := &txnActor{id: id, cfg: cfg, handle: h, partition: p, coordinatorEpoch: epoch, sys: sys}
		if !restarted.Swap(true) {
			a.initial, a.fresh = m, true // read just now by the supervisor
		}
		return a
	})
	pid, err := c.SpawnNamed(props, url.PathEscape(id))
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("transactional_id", id).Msg("txns: spawning a coordinator")
		return nil
	}
	s.ids[id] = pid
	s.cfg.Directory.m.Store(id, pid)
	return pid
}

// verify hands a partition leader's Verify to the id's actor.
func (s *supervisor) verify(c actor.Context, m *Verify) {
	// NB: answered from the id's actor's goroutine, or this one's: a
	// link's faults apply to any sender (actors.Links).
	to, root := c.Sender(), c.ActorSystem().Root
	answer := func(err *kerr.Error) {
		if to != nil {
			root.Send(to, &VerifyResult{Err: err})
		}
	}
	o := s.open(c, m.TransactionalID)
	if o.Err != nil {
		answer(o.Err)
		return
	}
	tp := TopicPartition{Topic: m.Topic, Partition: m.Partition}
	c.Send(o.PID, &AddRequest{ProducerID: m.ProducerID, Epoch: m.Epoch, Partitions: []TopicPartition{tp}, VerifyOnly: !m.Add,
		Reply: func(r AddResult) { answer(r.PartitionErr(tp)) }})
}

// readState returns the last state of every id (only id, when not empty)
// in a __transaction_state partition's log; expired ids are left out, and
// records that do not decode skipped and counted in bad.
func readState(v *store.View, only string) (states map[string]*Metadata, bad int, err error) {
	out := map[string]*Metadata{}
	err = partition.ScanLog(v, func(_ *store.Header, r *store.Record) error {
		if only != "" && !bytes.Contains(r.Key, []byte(only)) {
			return nil // cheap pre-filter; ParseRecord decides
		}
		id, m, err := ParseRecord(r.Key, r.Value)
		switch {
		case errors.Is(err, ErrNotTxnKey):
		case err != nil:
			bad++
		case only != "" && id != only:
		case m == nil:
			delete(out, id)
		default:
			out[id] = m
		}
		return nil
	}, nil)
	return out, bad, err
}

func lastElem(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[i+1:]
		}
	}
	return name
}
