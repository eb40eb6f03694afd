package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInitialRebalanceDelay: when the first generation of an Empty group
// forms, on a manual clock, for group.initial.rebalance.delay.ms and the
// first member's rebalance timeout, with members joining at given times.
// Kafka's rule (GroupMetadataManager.tryCompleteInitialRebalanceElseSchedule):
// the first wait is the delay; a member joining during a wait earns one
// more, of the delay or what the rebalance timeout leaves, whichever is
// shorter.
func TestInitialRebalanceDelay(t *testing.T) {
	const s = time.Second
	every2s := func(until time.Duration) []time.Duration {
		var at []time.Duration
		for d := time.Duration(0); d < until; d += 2 * s {
			at = append(at, d)
		}
		return at
	}
	for _, tc := range []struct {
		name           string
		delay, timeout time.Duration
		joins          []time.Duration // when each member joins
		want           time.Duration   // when generation 1 forms
		members        int             // how many members it has
	}{
		{"alone: the delay", 3 * s, 30 * s, []time.Duration{0}, 3 * s, 1},
		{"a second member extends once", 3 * s, 30 * s, []time.Duration{0, 1 * s}, 6 * s, 2},
		{"joins during the extension extend again", 3 * s, 30 * s, []time.Duration{0, 1 * s, 4 * s}, 9 * s, 3},
		{"a join just before the wait ends extends", 3 * s, 30 * s, []time.Duration{0, 3*s - time.Millisecond}, 6 * s, 2},
		{"capped at the rebalance timeout", 3 * s, 30 * s, every2s(30 * s), 30 * s, 15},
		{"the last wait is what the timeout leaves", 3 * s, 7 * s, []time.Duration{0, 2 * s, 5 * s}, 7 * s, 3},
		{"a delay over the timeout is waited once", 3 * s, 2 * s, []time.Duration{0, 1 * s}, 3 * s, 2},
		{"0: at once", 0, 30 * s, []time.Duration{0}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, members := firstGeneration(t, tc.delay, tc.timeout, tc.joins)
			if at != tc.want || members != tc.members {
				t.Errorf("generation 1 formed at %v with %d members, want at %v with %d", at, members, tc.want, tc.members)
			}
		})
	}
}

// firstGeneration runs a group on a manual clock: members join (JoinGroup
// v3, no KIP-394 round trip) at the given times and every timer fires when
// due. It returns when the first JoinGroup answer came and how many
// members got generation 1.
func firstGeneration(t *testing.T, delay, timeout time.Duration, joins []time.Duration) (time.Duration, int) {
	t.Helper()
	var (
		now     time.Duration
		ids     int
		timers  []dueTimer
		formed  = time.Duration(-1)
		members int
	)
	g := NewGroup("g", Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour,
		InitialRebalanceDelay: delay,
		NewMemberID:           func(string) string { ids++; return fmt.Sprintf("m-%d", ids) },
		Now:                   func() time.Time { return time.UnixMilli(0).Add(now) }})
	answered := func(r kmsg.Response) {
		jr := r.(*kmsg.JoinGroupResponse)
		if jr.ErrorCode != 0 {
			t.Fatalf("JoinGroup answered with error %d at %v", jr.ErrorCode, now)
		}
		if formed < 0 {
			formed = now
		}
		if jr.Generation == 1 {
			members++
		}
	}
	release := func() {
		r := g.Ready()
		for _, rep := range r.Replies {
			rep.To(rep.Resp)
		}
		for _, tm := range r.Timers {
			timers = append(timers, dueTimer{at: now + tm.After, Timer: tm})
		}
	}
	for formed < 0 {
		// The next event: a join, or the earliest due timer; a join
		// first on a tie, as a request the actor took before the timer's
		// message.
		i := -1
		for j, tm := range timers {
			if i < 0 || tm.at < timers[i].at {
				i = j
			}
		}
		switch {
		case len(joins) > 0 && (i < 0 || joins[0] <= timers[i].at):
			now, joins = joins[0], joins[1:]
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version, req.Group, req.ProtocolType = 3, "g", "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, int32(timeout.Milliseconds())
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			g.Join(req, "c", "/h", answered)
		case i >= 0:
			tm := timers[i]
			timers = append(timers[:i], timers[i+1:]...)
			now = tm.at
			g.Fire(tm.Timer)
		default:
			t.Fatalf("nothing left to happen at %v and no generation formed", now)
		}
		release()
	}
	return formed, members
}
