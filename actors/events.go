package actors

import (
	"sync"
	"time"
)

// EventType says what happened to an actor in an Event.
type EventType string

// The types of Event, in the order an actor's life goes through them.
const (
	// EventStarted: the actor has handled its first Started.
	EventStarted EventType = "started"
	// EventFailed: the actor panicked and its supervisor decided what to
	// do (Event.Directive), for the reason in Event.Cause.
	EventFailed EventType = "failed"
	// EventRestarted: a new instance of the actor, restarted after a
	// failure, has handled its Started: it serves again, Event.Recovery
	// after the failure.
	EventRestarted EventType = "restarted"
	// EventStopped: the actor has handled Stopped; it is gone.
	EventStopped EventType = "stopped"
	// EventRole: the actor's role changed (Roled); Event.Role is the new
	// one, empty when the actor has none, and Event.Epoch its epoch.
	EventRole EventType = "role"
	// EventEpoch: the actor's epoch changed under the same role.
	EventEpoch EventType = "epoch"
)

// Event is one entry of a Journal: something that happened to one actor.
type Event struct {
	// Seq numbers the events of a Journal from 1, without gaps: a reader
	// that sees a gap lost the events the journal no longer holds.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Actor is the actor's id, its path in the tree.
	Actor string `json:"actor"`
	// Kind is the actor's kind, as ActorInfo.Kind.
	Kind string    `json:"kind,omitempty"`
	Type EventType `json:"type"`
	// Cause is the failure's reason (the panic value, formatted), for
	// failed and restarted. An injected fault's says so ("actors:
	// injected panic 3 in ...", InjectedFault).
	Cause string `json:"cause,omitempty"`
	// Directive is the supervisor's decision on a failure: restart,
	// resume or stop.
	Directive string `json:"directive,omitempty"`
	// DelaySeconds is how long a Backoff supervisor keeps the failed
	// actor suspended before it restarts it, for failed.
	DelaySeconds float64 `json:"delay_seconds,omitempty"`
	// Role and Epoch are the actor's, for role and epoch.
	Role  string `json:"role,omitempty"`
	Epoch int32  `json:"epoch,omitempty"`
	// RecoverySeconds is the time from the failure (the supervisor's
	// decision, published on the EventStream) to the end of the restarted
	// actor's Started, where Skein's actors reopen what they own: the
	// time the actor did not serve. It includes the supervisor's backoff
	// delay. For restarted.
	RecoverySeconds float64 `json:"recovery_seconds,omitempty"`
}

// DefaultJournalCapacity is the number of events a Tree's journal keeps.
const DefaultJournalCapacity = 4096

// Journal is a bounded, in-memory journal of events: a ring that keeps the
// newest events, numbered in the order appended. Readers poll it with
// Since, from the last sequence number they saw.
//
// Concurrency: safe for concurrent use. Append takes a mutex for a copy
// into the ring, O(1), so that it may run on any goroutine, EventStream
// handlers included; Since holds the same mutex while it copies out.
type Journal struct {
	mu   sync.Mutex
	ring []Event
	last uint64 // Seq of the newest event; 0 while empty
}

// NewJournal returns an empty journal that keeps the newest capacity events
// (DefaultJournalCapacity if capacity is not positive).
func NewJournal(capacity int) *Journal {
	if capacity <= 0 {
		capacity = DefaultJournalCapacity
	}
	return &Journal{ring: make([]Event, capacity)}
}

// Append numbers e, stamps it with the current time unless it has one, and
// adds it, dropping the oldest event if the journal is full. It returns
// e's sequence number.
func (j *Journal) Append(e Event) uint64 {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.last++
	e.Seq = j.last
	j.ring[j.index(e.Seq)] = e
	return e.Seq
}

// Since returns, oldest first, at most limit of the events after seq that
// the journal still holds (all of them if limit is not positive). A seq
// past the newest event (a reader that polled a journal before the node
// restarted) reads from the oldest event held.
func (j *Journal) Since(seq uint64, limit int) []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq > j.last {
		seq = 0
	}
	first := max(seq+1, j.oldest())
	n := j.last + 1 - first
	if limit > 0 && uint64(limit) < n {
		n = uint64(limit)
	}
	out := make([]Event, n)
	for i := range out {
		out[i] = j.ring[j.index(first+uint64(i))]
	}
	return out
}

// Last returns the sequence number of the newest event, 0 if none.
func (j *Journal) Last() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

// oldest is the Seq of the oldest event held (last+1 while empty). Called
// with mu held.
func (j *Journal) oldest() uint64 {
	if c := uint64(len(j.ring)); j.last > c {
		return j.last - c + 1
	}
	return 1
}

func (j *Journal) index(seq uint64) uint64 { return (seq - 1) % uint64(len(j.ring)) }
