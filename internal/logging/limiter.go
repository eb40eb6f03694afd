package logging

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Limiter bounds how many lines a family of events may log node-wide:
// at most Burst in any Interval. What it holds back is counted, and the
// next line it lets through says how many ("suppressed"), so that a storm
// of failures across ten thousand partitions costs a few lines a second
// and still tells the operator its size.
//
// Concurrency: safe for concurrent use. The zero Limiter is not usable:
// make one with NewLimiter.
type Limiter struct {
	burst    int
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	start      time.Time // of the current interval
	used       int       // lines let through in it
	suppressed int64     // held back since the last line let through
	total      int64     // held back ever
}

// NewLimiter returns a Limiter letting burst lines through per interval.
func NewLimiter(burst int, interval time.Duration) *Limiter {
	return &Limiter{burst: burst, interval: interval, now: time.Now}
}

// Event returns e when the limiter lets a line through, with a
// "suppressed" field if lines were held back since the last one, and nil
// otherwise (zerolog's nil *Event discards everything sent to it). Use it
// as lim.Event(log.Error()).Err(err).Msg("...").
func (l *Limiter) Event(e *zerolog.Event) *zerolog.Event {
	if e == nil {
		return nil
	}
	l.mu.Lock()
	now := l.now()
	if now.Sub(l.start) >= l.interval {
		l.start, l.used = now, 0
	}
	if l.used >= l.burst {
		l.suppressed++
		l.total++
		l.mu.Unlock()
		e.Discard()
		return nil
	}
	l.used++
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		e = e.Int64("suppressed", n)
	}
	return e
}

// Suppressed returns how many lines the limiter has held back in all.
func (l *Limiter) Suppressed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
