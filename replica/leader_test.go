package replica

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// The high watermark is the smallest end over the leader and the ISR, and
// never goes back.
func TestHighWatermarkOverTheISR(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 30*time.Second, at(0))
	l.Appended(10)
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d before any follower fetched, want 0", hw)
	}
	l.Fetched(2, 10, at(1))
	if hw := l.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d with follower 3 not fetched, want 0", hw)
	}
	l.Fetched(3, 6, at(1))
	if hw := l.HighWatermark(); hw != 6 {
		t.Fatalf("hw %d, want 6 (follower 3's end)", hw)
	}
	l.Fetched(3, 4, at(2)) // a follower that truncated fetches lower
	if hw := l.HighWatermark(); hw != 6 {
		t.Fatalf("hw went back to %d", hw)
	}
	l.Fetched(3, 12, at(3)) // beyond the leader: capped by the leader's end
	if hw := l.HighWatermark(); hw != 10 {
		t.Fatalf("hw %d, want the leader's end 10", hw)
	}
}

// A follower that does not catch up for the lag time is to be removed; the
// high watermark then goes on without it once the controller commits.
func TestSlowFollowerLeavesTheISR(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 30*time.Second, at(0))
	l.Appended(100)
	for s := 1; s <= 40; s++ {
		l.Fetched(2, 100, at(s))
		l.Fetched(3, 50, at(s)) // behind the leader, and behind where it was each time
		if s <= 30 {
			if isr := l.Tick(at(s)); isr != nil {
				t.Fatalf("at %ds: shrink to %v before the lag time", s, isr)
			}
		}
	}
	if hw := l.HighWatermark(); hw != 50 {
		t.Fatalf("hw %d, want 50 while 3 is in the ISR", hw)
	}
	isr := l.Tick(at(40))
	if !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("shrink to %v, want [1 2]", isr)
	}
	if again := l.Tick(at(41)); again != nil {
		t.Fatalf("a second change %v while one is in flight", again)
	}
	if hw := l.HighWatermark(); hw != 50 {
		t.Fatalf("hw %d before the shrink commits, want 50", hw)
	}
	l.Committed(isr)
	if hw := l.HighWatermark(); hw != 100 {
		t.Fatalf("hw %d after the shrink, want 100", hw)
	}
}

// A follower caught up as of its previous fetch is not removed, even if
// the leader's end has moved on since (Kafka's lastCaughtUpTime rule).
func TestCaughtUpAsOfThePreviousFetch(t *testing.T) {
	l := NewLeader(1, []int32{1, 2}, []int32{1, 2}, 0, 0, 30*time.Second, at(0))
	for s := 0; s <= 100; s += 10 {
		l.Appended(int64(s + 10)) // the leader always a step ahead
		l.Fetched(2, int64(s), at(s))
		if isr := l.Tick(at(s)); isr != nil {
			t.Fatalf("at %ds: shrink to %v of a follower keeping up", s, isr)
		}
	}
}

// A follower outside the ISR whose fetch reaches the high watermark is
// asked back; it counts for the high watermark from the moment it is
// asked for, and a refused change may be asked again.
func TestFollowerRejoins(t *testing.T) {
	l := NewLeader(1, []int32{1, 2, 3}, []int32{1, 2}, 0, 0, 30*time.Second, at(0))
	l.Appended(20)
	l.Fetched(2, 20, at(1))
	if hw := l.HighWatermark(); hw != 20 {
		t.Fatalf("hw %d, want 20", hw)
	}
	if isr := l.Fetched(3, 5, at(2)); isr != nil {
		t.Fatalf("follower 3 asked back at 5 below hw 20: %v", isr)
	}
	isr := l.Fetched(3, 20, at(3))
	if !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("expand to %v, want [1 2 3]", isr)
	}
	l.Appended(30)
	l.Fetched(2, 30, at(4))
	if hw := l.HighWatermark(); hw != 20 {
		t.Fatalf("hw %d with 3 (at 20) asked back, want 20", hw)
	}
	l.Refused()
	again := l.Fetched(3, 30, at(5))
	if !slices.Equal(again, []int32{1, 2, 3}) {
		t.Fatalf("after a refusal, expand to %v", again)
	}
	l.Committed(again)
	if hw := l.HighWatermark(); hw != 30 || !slices.Equal(l.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("hw %d, ISR %v after the expand", hw, l.ISR())
	}
}

// A replica the partition does not have is ignored.
func TestStrangerIgnored(t *testing.T) {
	l := NewLeader(1, []int32{1, 2}, []int32{1, 2}, 10, 0, time.Second, at(0))
	if isr := l.Fetched(9, 10, at(1)); isr != nil {
		t.Fatalf("a stranger's fetch asked for %v", isr)
	}
	l.Fetched(2, 10, at(1))
	if hw := l.HighWatermark(); hw != 10 {
		t.Fatalf("hw %d", hw)
	}
}
