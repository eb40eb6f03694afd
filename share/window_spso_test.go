package share

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// KIP-932: a member's acknowledgement applies only to records it holds
// acquired. A member whose lock expired, its record since delivered to
// another member and accepted, so that the SPSO moved past it, is told
// INVALID_RECORD_STATE, as Kafka tells it (the offset is no longer in its
// cache): confirming the acknowledgement would make the member believe it
// settled a record someone else did (TestShareGroupUnderFaults found
// late accepts confirmed that way). A GAP below the SPSO is still taken:
// gaps are archived when read and the SPSO may pass them first.
func TestAcknowledgeBelowStartAfterLockExpired(t *testing.T) {
	v := testLog(t, 2)
	var w window
	if a, _ := w.acquire(v, v.HighWatermark, lim("m1", 2), now, nil); a.n != 2 {
		t.Fatalf("m1 acquired %+v", a)
	}
	later := now.Add(lim("m1", 0).lock)
	if expired, _, _ := w.expire(later, 3); expired != 2 {
		t.Fatalf("expired %d, want 2", expired)
	}
	if a, _ := w.acquire(v, v.HighWatermark, lim("m2", 2), later, nil); a.n != 2 || a.spans[0] != (span{0, 1, 2}) {
		t.Fatalf("m2 acquired %+v", a)
	}
	if _, err := w.acknowledge("m2", []AckBatch{{0, 1, []int8{ackAccept}}}, false, lim("m2", 0), later); err != nil || w.start != 2 {
		t.Fatalf("m2 accepts: %v, start %d", err, w.start)
	}
	start, slots := w.start, slices.Clone(w.slots)
	for _, b := range [][]AckBatch{
		{{0, 1, []int8{ackAccept}}},
		{{0, 0, []int8{ackReject}}},
		{{1, 1, []int8{ackRelease}}},
		{{0, 1, []int8{ackGap, ackAccept}}},
	} {
		if _, err := w.acknowledge("m1", b, false, lim("m1", 0), later); err != kerr.InvalidRecordState {
			t.Errorf("m1's late %+v: %v, want INVALID_RECORD_STATE", b, err)
		}
		if w.start != start || !slices.Equal(w.slots, slots) {
			t.Errorf("m1's late %+v changed the window", b)
		}
	}
	if _, err := w.acknowledge("m1", []AckBatch{{0, 1, []int8{ackGap}}}, false, lim("m1", 0), later); err != nil {
		t.Errorf("gaps below the SPSO: %v, want none", err)
	}
}
