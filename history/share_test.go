package history

import (
	"errors"
	"testing"
)

// TestCheckShare checks the share group checker on histories made up for
// it: each violation it must find, and each outcome it must allow.
func TestCheckShare(t *testing.T) {
	tp := TP{Topic: "t", Partition: 1}
	refused := errors.New("NOT_LEADER_OR_FOLLOWER")
	type step func(s *Share)
	sent := func(k string) step { return func(s *Share) { s.Sent(k) } }
	produced := func(k string, o int64) step {
		return func(s *Share) { s.Sent(k); s.Produced(k, tp, o) }
	}
	failed := func(k string) step { return func(s *Share) { s.Sent(k); s.ProduceFailed(k, errors.New("timeout")) } }
	deliver := func(k, c string, o int64, n int) step {
		return func(s *Share) { s.Delivered(k, c, tp, o, n) }
	}
	ack := func(k, c string, n int, a Ack, err error) step {
		return func(s *Share) { s.Acked(k, c, n, a, err) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
		bad   string // the list that must hold a violation; "": none
		check func(v ShareVerdict) bool
	}{
		{name: "accepted", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, nil)},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 && v.Confirmed[Accept] == 1 }},
		{name: "never delivered", steps: []step{produced("a", 0)}, bad: "lost"},
		{name: "failed, never delivered", steps: []step{failed("a")},
			check: func(v ShareVerdict) bool { return v.ProduceFailed == 1 }},
		{name: "sent, no outcome, never delivered", steps: []step{sent("a")}},
		{name: "failed produce delivered and accepted", steps: []step{failed("a"), deliver("a", "c1", 3, 1), ack("a", "c1", 1, Accept, nil)},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 }},
		{name: "released then accepted", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Release, nil),
			deliver("a", "c2", 0, 2), ack("a", "c2", 2, Accept, nil)},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 && v.Redeliveries == 1 && v.MaxDeliveryCount == 2 }},
		{name: "released, never again", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Release, nil)},
			bad: "lost"},
		{name: "released at the limit", steps: []step{produced("a", 0), deliver("a", "c1", 0, 5), ack("a", "c1", 5, Release, nil)},
			check: func(v ShareVerdict) bool { return v.ArchivedAtLimit == 1 }},
		{name: "release refused, never again", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Release, refused)},
			check: func(v ShareVerdict) bool { return len(v.Unsettled) == 1 && v.Refused[refused.Error()] == 1 }},
		{name: "accept refused, never again", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, refused)},
			check: func(v ShareVerdict) bool { return len(v.Unsettled) == 1 }},
		{name: "accept refused, delivered again and accepted", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, refused),
			deliver("a", "c2", 0, 2), ack("a", "c2", 2, Accept, nil)},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 && len(v.Unsettled) == 0 }},
		{name: "delivered, never acknowledged", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1)},
			check: func(v ShareVerdict) bool { return len(v.Unsettled) == 1 }},
		// Two accepts of deliveries with one count (a crash lost the first's):
		// only one may be confirmed.
		{name: "accepted twice", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, nil),
			deliver("a", "c2", 0, 1), ack("a", "c2", 1, Accept, nil)}, bad: "settled twice"},
		{name: "accepted and rejected", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Reject, nil),
			deliver("a", "c2", 0, 1), ack("a", "c2", 1, Accept, nil)}, bad: "settled twice"},
		{name: "rejected", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Reject, nil)},
			check: func(v ShareVerdict) bool { return v.Rejected == 1 && v.Accepted == 0 }},
		{name: "delivered after a reject", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Reject, nil),
			deliver("a", "c2", 0, 2)}, bad: "delivered after settled"},
		{name: "delivered after an accept", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, nil),
			deliver("a", "c2", 0, 2), ack("a", "c2", 2, Accept, refused)}, bad: "delivered after settled"},
		// A consumer may poll a record it was given long ago, its lock long
		// expired, after another consumer's accept: an earlier acquisition,
		// by its count.
		{name: "an earlier delivery polled late", steps: []step{produced("a", 0), deliver("a", "c2", 0, 2), ack("a", "c2", 2, Accept, nil),
			deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, errors.New("INVALID_RECORD_STATE"))},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 }},
		// A crash loses an acquisition's count: the next is given it again.
		{name: "a count given twice after a crash", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), deliver("a", "c2", 0, 1),
			ack("a", "c1", 1, Accept, refused), ack("a", "c2", 1, Accept, nil)},
			check: func(v ShareVerdict) bool { return v.Accepted == 1 }},
		{name: "count above the limit", steps: []step{produced("a", 0), deliver("a", "c1", 0, 6), ack("a", "c1", 6, Accept, nil)}, bad: "bad count"},
		{name: "count zero", steps: []step{produced("a", 0), deliver("a", "c1", 0, 0), ack("a", "c1", 0, Accept, nil)}, bad: "bad count"},
		{name: "never sent", steps: []step{deliver("x", "c1", 0, 1)}, bad: "invented"},
		{name: "at another offset", steps: []step{produced("a", 0), deliver("a", "c1", 1, 1), ack("a", "c1", 1, Accept, nil)}, bad: "invented"},
		{name: "two keys at one offset", steps: []step{produced("a", 0), failed("b"), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, nil),
			deliver("b", "c1", 0, 1), ack("b", "c1", 1, Accept, nil)}, bad: "invented"},
		{name: "acknowledged, never given", steps: []step{produced("a", 0), deliver("a", "c1", 0, 1), ack("a", "c2", 1, Accept, nil)}, bad: "invented"},
		{name: "sent twice", steps: []step{produced("a", 0), sent("a"), deliver("a", "c1", 0, 1), ack("a", "c1", 1, Accept, nil)}, bad: "invented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewShare(5)
			for _, st := range tc.steps {
				st(s)
			}
			v := s.CheckShare()
			lists := map[string]int{}
			for _, l := range v.violations() {
				lists[l.name] = len(l.list)
			}
			if tc.bad == "" {
				if !v.OK() {
					t.Fatalf("violations, want none: %v", v)
				}
			} else {
				want := tc.bad
				if lists[want] == 0 {
					t.Fatalf("no %s violation: %v", want, v)
				}
				for name, n := range lists {
					if name != want && n > 0 {
						t.Errorf("a %s violation too: %v", name, v)
					}
				}
			}
			if tc.check != nil && !tc.check(v) {
				t.Errorf("counts: %v", v)
			}
		})
	}
}
