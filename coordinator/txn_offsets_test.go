package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTxnCommitFencing (KIP-447): a transactional commit by a member must
// carry the member's id and the group's generation, so that a zombie of an
// older generation is fenced; a producer outside the group's membership
// may commit without them.
func TestTxnCommitFencing(t *testing.T) {
	h := newHarness(t)
	m := h.stableOne("a")
	for _, c := range []struct {
		gen    int32
		member string
		want   *kerr.Error
	}{
		{1, m, nil},
		{-1, "", nil},
		{0, m, kerr.IllegalGeneration},
		{1, "ghost", kerr.UnknownMemberID},
	} {
		if err := h.g.CheckTxnCommit(c.gen, c.member, nil); err != c.want {
			t.Errorf("generation %d member %q: %v, want %v", c.gen, c.member, err, c.want)
		}
	}
}

// TestTxnOffsetsPendingUntilMarker: a transaction's offsets are pending
// (unstable, not fetched) until its marker: a commit applies them unless a
// later record committed the partition meanwhile; an abort drops them. A
// restart replays the same from the log.
func TestTxnOffsetsPendingUntilMarker(t *testing.T) {
	g := newHarness(t).g
	g.Commit("t", 0, Offset{Offset: 5, RecordOffset: 1})
	g.AddPendingTxn(7, "t", 0, Offset{Offset: 9, RecordOffset: 2})
	g.AddPendingTxn(7, "t", 1, Offset{Offset: 3, RecordOffset: 2})
	g.AddPendingTxn(8, "t", 2, Offset{Offset: 4, RecordOffset: 3})
	if !g.Unstable("t", 0) || !g.Unstable("t", 2) || g.Unstable("t", 3) {
		t.Fatal("pending offsets not unstable, or another partition unstable")
	}
	if o, _ := g.Committed("t", 0); o.Offset != 5 {
		t.Fatalf("committed %d before the marker, want 5", o.Offset)
	}
	g.Commit("t", 1, Offset{Offset: 100, RecordOffset: 4}) // committed after the transaction's record
	g.CompleteTxn(7, true)
	g.CompleteTxn(8, false)
	for p, want := range map[int32]int64{0: 9, 1: 100} {
		if o, _ := g.Committed("t", p); o.Offset != want {
			t.Errorf("partition %d: committed %d, want %d", p, o.Offset, want)
		}
	}
	if _, ok := g.Committed("t", 2); ok || g.Unstable("t", 0) || g.Unstable("t", 2) {
		t.Fatal("an aborted offset was committed, or offsets stayed unstable")
	}

	// The same from the log: transactional records, then markers.
	r := newHarness(t).g
	rec := func(p int32, o Offset, pid int64, txn bool) {
		x := OffsetRecord("g", "t", p, o)
		x.Offset, x.Transactional, x.ProducerID = o.RecordOffset, txn, pid
		if err := r.Restore(x); err != nil {
			t.Fatal(err)
		}
	}
	rec(0, Offset{Offset: 5, RecordOffset: 1}, -1, false)
	rec(0, Offset{Offset: 9, RecordOffset: 2}, 7, true)
	rec(2, Offset{Offset: 4, RecordOffset: 3}, 8, true)
	if o, _ := r.Committed("t", 0); o.Offset != 5 || !r.Unstable("t", 0) {
		t.Fatalf("restored a pending offset as committed (%d)", o.Offset)
	}
	r.CompleteTxn(7, true)
	r.CompleteTxn(8, false)
	if o, _ := r.Committed("t", 0); o.Offset != 9 {
		t.Fatalf("restored %d after the commit marker, want 9", o.Offset)
	}
	if _, ok := r.Committed("t", 2); ok {
		t.Fatal("restored an aborted offset")
	}
}

// TestTxnOffsetsUnstableWhileWritten (KIP-447): a transactional offset is
// unstable from the moment its commit is taken, before its record is
// durable (Kafka's prepareTxnOffsetCommit), and stays so until the write
// ends: pending if it succeeded, as before if it failed.
func TestTxnOffsetsUnstableWhileWritten(t *testing.T) {
	g := newHarness(t).g
	g.Commit("t", 0, Offset{Offset: 5, RecordOffset: 1})
	g.WritingTxn("t", 0)
	g.WritingTxn("t", 0) // a second producer's, at the same time
	if !g.Unstable("t", 0) || g.Unstable("t", 1) {
		t.Fatal("an offset being written is not unstable, or another partition is")
	}
	g.TxnWritten("t", 0) // failed
	if !g.Unstable("t", 0) {
		t.Fatal("stable while another commit of the partition is being written")
	}
	g.TxnWritten("t", 0)
	g.AddPendingTxn(7, "t", 0, Offset{Offset: 9, RecordOffset: 2})
	if !g.Unstable("t", 0) {
		t.Fatal("a durable transactional offset is not pending")
	}
	g.CompleteTxn(7, true)
	if o, _ := g.Committed("t", 0); g.Unstable("t", 0) || o.Offset != 9 {
		t.Fatalf("after the marker: unstable %v, committed %d", g.Unstable("t", 0), o.Offset)
	}
	g.TxnWritten("t", 0) // one too many: harmless
	if g.Unstable("t", 0) {
		t.Fatal("unstable after an unmatched TxnWritten")
	}
}
