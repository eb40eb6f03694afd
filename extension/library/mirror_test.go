package library

import (
	"testing"

	"github.com/skeinlog/skein/extension"
)

// TestMirrorTranslate: offsets translate to the copy of the record they
// name when a sync names it, else to just after the copy of the last
// record synced before them: a consumer may read again, never miss.
func TestMirrorTranslate(t *testing.T) {
	m := &mirror{target: "mirror.t"}
	recs := func(offsets ...int64) []extension.Record {
		var out []extension.Record
		for _, o := range offsets {
			out = append(out, extension.Record{Offset: o})
		}
		return out
	}
	// A batch of source offsets 10..14 (one gone to compaction) copied to
	// 100..103; then 20..21 to 104..105.
	m.Written("mirror.t", 0, 100, recs(10, 11, 13, 14))
	m.Written("mirror.t", 0, 104, recs(20, 21))
	m.Written("elsewhere", 0, 7, recs(30))
	for _, c := range []struct {
		offset, want int64
		ok           bool
	}{
		{5, 0, false},
		{10, 100, true},
		{12, 101, true}, // after the copy of 10, the last synced before it
		{14, 103, true}, // the batch's last record is synced
		{15, 104, true}, // just after 14's copy
		{20, 104, true},
		{22, 106, true}, // past everything copied: after 21's copy
	} {
		got, ok := m.translate(c.offset)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("translate(%d) = %d, %v; want %d, %v", c.offset, got, ok, c.want, c.ok)
		}
	}
}

// TestMirrorSyncsBounded: syncs stay few however much is copied, the
// newest kept whole.
func TestMirrorSyncsBounded(t *testing.T) {
	m := &mirror{target: "x"}
	for b := range int64(10000) {
		rs := make([]extension.Record, 10)
		for i := range rs {
			rs[i].Offset = b*10 + int64(i)
		}
		m.Written("x", 0, b*10, rs)
	}
	if len(m.syncs) > maxSyncs {
		t.Fatalf("%d syncs, more than %d", len(m.syncs), maxSyncs)
	}
	if last := m.syncs[len(m.syncs)-1]; last.Source != 99999 || last.Target != 99999 {
		t.Fatalf("the newest sync is %+v, want the last record copied", last)
	}
	if got, ok := m.translate(99999); !ok || got != 99999 {
		t.Fatalf("translate(99999) = %d, %v", got, ok)
	}
}
