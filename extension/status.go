package extension

import (
	"sync"
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
	// placed here; Failures counts its failures (restarts, or parking).
	Processed int64 `json:"processed"`
	Emitted   int64 `json:"emitted"`
	// Skipped counts output records not written again after a restart:
	// their target had them.
	Skipped    int64 `json:"skipped"`
	Failures   int64 `json:"failures"`
	ProducerID int64 `json:"producer_id"`
}

// Lag is how many source records are not processed yet.
func (s *Status) Lag() int64 { return max(s.End-s.Position, 0) }

// status is a partition's Status, kept by the supervisor across the
// restarts of its actor. A waiting state is logged when it starts and when
// it ends, not at each retry.
type status struct {
	log zerolog.Logger
	mu  sync.Mutex
	s   Status
	// failures are the times of the failures since the last quiet
	// minute; waits the retries since the runner last made progress.
	failures []time.Time
	waits    int
}

func (st *status) get() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s
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

// failed records a failure and reports whether the actor parks now.
func (st *status) failed(err error) bool {
	now := time.Now()
	st.mu.Lock()
	if n := len(st.failures); n > 0 && now.Sub(st.failures[n-1]) > parkQuiet {
		st.failures = st.failures[:0]
	}
	st.failures = append(st.failures, now)
	park := len(st.failures) >= parkFailures
	st.s.Failures++
	st.s.Reason = err.Error()
	if park {
		st.s.State = StateParked
	}
	s := st.s
	st.mu.Unlock()
	ev := st.log.Warn()
	msg := "extension: failed; restarting"
	if park {
		ev, msg = st.log.Error(), "extension: failed again and again; parked until its instance is created again or the partition's leadership moves"
	}
	ev.Str("extension", s.Instance).Str("topic", s.Topic).Int32("partition", s.Partition).Err(err).Int64("failures", s.Failures).Msg(msg)
	return park
}

// parkQuiet is how long an actor must run without failing for its next
// failure to count as a first one again.
const parkQuiet = time.Minute
