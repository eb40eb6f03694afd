// Package clock is the node's clock. The partitions, their logs
// (partition/store) and the controller ask a Clock for the time instead of
// calling time.Now, and so does the supervisors' backoff (actors), so that
// tests can move time by hand (Manual) and a clock fault can skew or jump
// one node's clock (Skewed, which node gives its partitions and its
// controller). The rest of a node (coordinators, transport, extension
// actors) reads time.Now.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// Real is the operating system's clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Manual is a clock that moves only when told to. Its zero value is not
// usable; make one with NewManual.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a clock standing at t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	m.mu.Unlock()
}

// Set moves the clock to t.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	m.now = t
	m.mu.Unlock()
}

// Skewed is a clock that runs at an offset from another one; the offset
// can be changed at any time to model a step of the system clock (NTP, an
// operator): every reading after it, and every duration measured across
// it, moves by the step.
type Skewed struct {
	base   Clock
	offset atomic.Int64 // nanoseconds
}

// NewSkewed returns base shifted by offset.
func NewSkewed(base Clock, offset time.Duration) *Skewed {
	s := &Skewed{base: base}
	s.offset.Store(int64(offset))
	return s
}

// Now returns the base clock's time plus the offset.
func (s *Skewed) Now() time.Time {
	return s.base.Now().Add(time.Duration(s.offset.Load()))
}

// Jump changes the offset by d.
func (s *Skewed) Jump(d time.Duration) { s.offset.Add(int64(d)) }

// SetOffset sets the offset to d.
func (s *Skewed) SetOffset(d time.Duration) { s.offset.Store(int64(d)) }

// Offset returns the offset.
func (s *Skewed) Offset() time.Duration { return time.Duration(s.offset.Load()) }
