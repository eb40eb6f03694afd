package extension

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The states of a source partition's extension actor (Status.State).
const (
	// StateLoading: fetching its committed position.
	StateLoading = "loading"
	// StateRunning: processing, or caught up and waiting for records.
	StateRunning = "running"
	// StateWaiting: something it needs is missing (an output topic, a
	// target's leader, the source's leadership); it tries again with
	// backoff. Reason says what.
	StateWaiting = "waiting"
	// StateParked: it failed parkFailures times without a quiet minute
	// in between and stays idle until its instance is created again or
	// the partition's leadership moves. Reason is the last failure.
	StateParked = "parked"
)

// Status is what an instance's actor for one source partition reports.
type Status struct {
	Instance  string `json:"instance"`
	Kind      string `json:"kind"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Node      int32  `json:"node"`
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	// Position is the next source offset to process; Committed the last
	// committed one; End the source's high watermark when last read.
	Position  int64 `json:"position"`
	Committed int64 `json:"committed"`
	End       int64 `json:"end"`
	// Processed and Emitted count records in and out since the actor was
	// placed here; Restarts counts its restarts, whatever failed (the
	// extension, an output refused for good, an injected fault).
	Processed int64 `json:"processed"`
	Emitted   int64 `json:"emitted"`
	// Skipped counts output records not written again after a restart:
	// their target had them.
	Skipped int64 `json:"skipped"`
	// Lag is how many source records are not processed yet: End less
	// Position.
	Lag        int64 `json:"lag"`
	Restarts   int64 `json:"restarts"`
	ProducerID int64 `json:"producer_id"`
}

// Totals counts an instance's records and restarts on this node, since
// the node started: what its actors for each source partition counted
// while they ran here.
type Totals struct {
	Instance, Kind                        string
	Processed, Emitted, Skipped, Restarts int64
}

// totals is an instance's Totals as its partitions add to them.
type totals struct {
	instance, kind                        string
	processed, emitted, skipped, restarts atomic.Int64
}

func (t *totals) get() Totals {
	return Totals{Instance: t.instance, Kind: t.kind, Processed: t.processed.Load(), Emitted: t.emitted.Load(),
		Skipped: t.skipped.Load(), Restarts: t.restarts.Load()}
}

// status is a partition's Status, kept by the supervisor across the
// restarts of its actor. A waiting state is logged when it starts and when
// it ends, not at each retry.
type status struct {
	log zerolog.Logger
	// totals are the instance's, which this partition's counts add to.
	totals *totals
	// remote is set for a source in another cluster, whose end only the
	// actor's reads tell.
	remote bool
	mu     sync.Mutex
	s      Status
	// starts are the times the actor started since the last quiet
	// minute; waits the retries since the runner last made progress.
	starts []time.Time
	waits  int
}

func (st *status) get() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.s
	s.Lag = lag(s.End, s.Position)
	return s
}

// count adds to the partition's counts and its instance's.
func (st *status) count(processed, emitted, skipped int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Processed += processed
	st.s.Emitted += emitted
	st.s.Skipped += skipped
	st.totals.processed.Add(processed)
	st.totals.emitted.Add(emitted)
	st.totals.skipped.Add(skipped)
}

func (st *status) set(f func(*Status)) {
	st.mu.Lock()
	f(&st.s)
	st.mu.Unlock()
}

func (st *status) parked() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s.State == StateParked
}

// waitFor records a retry for reason and returns how many there were in a
// row; the first is logged.
func (st *status) waitFor(reason string) int {
	st.mu.Lock()
	st.waits++
	n, s := st.waits, st.s
	st.mu.Unlock()
	if n == 1 {
		st.log.Warn().Str("extension", s.Instance).Str("topic", s.Topic).Int32("partition", s.Partition).Str("reason", reason).
			Msg("extension: waiting; trying again with backoff, and logging again once it goes on")
	}
	return n
}

// ok records progress, logging the end of a wait.
func (st *status) ok() {
	st.mu.Lock()
	n, s := st.waits, st.s
	st.waits = 0
	st.mu.Unlock()
	if n > 0 {
		st.log.Info().Str("extension", s.Instance).Str("topic", s.Topic).Int32("partition", s.Partition).Int("retries", n).
			Msg("extension: going on")
	}
}

// started records a start of the actor and reports whether it parks now:
// its parkFailures-th restart without a quiet minute in between.
func (st *status) started() bool {
	now := time.Now()
	st.mu.Lock()
	if n := len(st.starts); n > 0 && now.Sub(st.starts[n-1]) > parkQuiet {
		st.starts = st.starts[:0]
	}
	restart := st.s.State != StateLoading || len(st.starts) > 0
	st.starts = append(st.starts, now)
	park := len(st.starts) > parkFailures
	if restart {
		st.s.Restarts++
		st.totals.restarts.Add(1)
	}
	if park {
		st.s.State = StateParked
	} else {
		st.s.State = StateLoading
	}
	s := st.s
	st.mu.Unlock()
	if park {
		st.log.Error().Str("extension", s.Instance).Str("topic", s.Topic).Int32("partition", s.Partition).Str("reason", s.Reason).Int64("restarts", s.Restarts).
			Msg("extension: failed again and again; parked until its instance is created again or the partition's leadership moves")
	}
	return park
}

// failed records why the actor fails, before it restarts.
func (st *status) failed(err error) {
	st.mu.Lock()
	st.s.Reason = err.Error()
	s := st.s
	st.mu.Unlock()
	st.log.Warn().Str("extension", s.Instance).Str("topic", s.Topic).Int32("partition", s.Partition).Err(err).Msg("extension: failed; restarting")
}

// parkQuiet is how long an actor must run without failing for its next
// failure to count as a first one again.
const parkQuiet = time.Minute

// lag is how far position is behind end; a position not known yet (-1,
// -2) counts from the partition's start.
func lag(end, position int64) int64 { return max(end-max(position, 0), 0) }
