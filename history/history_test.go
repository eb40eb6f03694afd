package history

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	t0 = TP{"t", 0}
	t1 = TP{"t", 1}
)

// plain sends n records of worker 1 to t-0, acknowledged at offsets 0..n-1.
func plain(h *History, n int) []string {
	var vs []string
	for seq := range n {
		v := h.Send(1, seq)
		h.Acked(v, t0, int64(seq))
		vs = append(vs, v)
	}
	return vs
}

// readAll records vs read back from tp at offsets from, from+1, ...
func readAll(h *History, tp TP, from int64, vs ...string) {
	for i, v := range vs {
		h.Read(tp, from+int64(i), v)
	}
}

func consumeAll(h *History, tp TP, from int64, vs ...string) {
	for i, v := range vs {
		h.Consumed(tp, from+int64(i), v)
	}
}

// txns has worker 1 commit transaction 0 (records at t-0@0..2, its marker
// at 3), abort transaction 1 (4..5, marker 6) and leave transaction 2 of
// unknown outcome with its records not written; the read-back reads them
// all, read_committed the committed ones. committed returns transaction
// 0's values, aborted transaction 1's.
func txns(h *History) (committed, aborted, unknown []string) {
	for i := range 3 {
		v := h.SendTxn(1, 0, i)
		h.AckedTxnRecord(v, t0, int64(i))
		committed = append(committed, v)
	}
	h.TxnEnded(1, 0, TxnCommitted)
	for i := range 2 {
		aborted = append(aborted, h.SendTxn(1, 1, i)) // acknowledgements are optional
	}
	h.TxnEnded(1, 1, TxnAborted)
	for i := range 2 {
		unknown = append(unknown, h.SendTxn(1, 2, i))
	}
	h.TxnEnded(1, 2, TxnUnknown)
	readAll(h, t0, 0, committed...)
	readAll(h, t0, 4, aborted...)
	return committed, aborted, unknown
}

// nonEmpty names the violation lists of v that are not empty.
func nonEmpty(v Verdict) []string {
	var names []string
	for _, l := range v.violations() {
		if len(l.list) > 0 {
			names = append(names, l.name)
		}
	}
	return names
}

// counts are the counts of a Verdict, without its violations.
type counts struct {
	acked, failed, pending, read, readCommitted, consumed int
	committed, aborted, unknown                           int
}

func countsOf(v Verdict) counts {
	return counts{v.Acknowledged, v.Failed, v.Pending, v.Read, v.ReadCommitted, v.Consumed,
		v.TxnCommitted, v.TxnAborted, v.TxnUnknown}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(h *History)
		// want names the violation lists that must be non-empty, and
		// only those.
		want []string
		// counts, if set, are the Verdict's counts.
		counts *counts
	}{
		// Plain producers and the read-back.
		{
			name:   "faithful",
			feed:   func(h *History) { readAll(h, t0, 0, plain(h, 4)...) },
			counts: &counts{acked: 4, read: 4},
		},
		{
			name: "lost",
			feed: func(h *History) { readAll(h, t0, 0, plain(h, 4)[:3]...) },
			want: []string{"lost"},
		},
		{
			name: "lost in the middle, the log shifted",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs[0], vs[1], vs[3])
			},
			want: []string{"lost"},
		},
		{
			name: "lost: read back in another partition",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs[:3]...)
				readAll(h, t1, 0, vs[3])
			},
			want: []string{"lost"},
		},
		{
			name: "moved: two records swapped",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs[0], vs[1], vs[3], vs[2])
			},
			want: []string{"lost", "reordered"},
		},
		{
			name: "duplicated",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, append(vs, vs[3])...)
			},
			want: []string{"duplicated"},
		},
		{
			name: "duplicated in another partition",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				readAll(h, t1, 0, vs[1])
			},
			want: []string{"duplicated"},
		},
		{
			name: "invented",
			feed: func(h *History) { readAll(h, t0, 0, append(plain(h, 4), "w9-0000000")...) },
			want: []string{"invented"},
		},
		{
			name: "acknowledged, never sent",
			feed: func(h *History) {
				readAll(h, t0, 0, plain(h, 4)...)
				h.Acked("w9-0000000", t0, 4)
			},
			want: []string{"invented"},
		},
		{
			name: "sent twice",
			feed: func(h *History) {
				readAll(h, t0, 0, plain(h, 4)...)
				h.Send(1, 0)
			},
			want: []string{"duplicated"},
		},
		{
			name: "reordered: one worker's records, outcomes unknown",
			feed: func(h *History) {
				a, b := h.Send(2, 0), h.Send(2, 1)
				readAll(h, t0, 0, b, a)
			},
			want:   []string{"reordered"},
			counts: &counts{pending: 2, read: 2},
		},
		{
			name: "two workers interleaved, each in order",
			feed: func(h *History) {
				a0, b0, a1, b1 := h.Send(1, 0), h.Send(2, 0), h.Send(1, 1), h.Send(2, 1)
				readAll(h, t0, 0, b0, a0, b1, a1)
			},
			counts: &counts{pending: 4, read: 4},
		},
		{
			name: "failed and pending sends: absent or present once",
			feed: func(h *History) {
				vs := plain(h, 2)
				f1, f2, p1, p2 := h.Send(1, 2), h.Send(1, 3), h.Send(1, 4), h.Send(1, 5)
				h.Failed(f1, errors.New("timed out"))
				h.Failed(f2, errors.New("timed out"))
				readAll(h, t0, 0, vs[0], vs[1], f2, p2)
				_ = p1
			},
			counts: &counts{acked: 2, failed: 2, pending: 2, read: 4},
		},
		{
			name: "a failed send present twice",
			feed: func(h *History) {
				vs := plain(h, 2)
				f := h.Send(1, 2)
				h.Failed(f, errors.New("timed out"))
				readAll(h, t0, 0, vs[0], vs[1], f, f)
			},
			want: []string{"duplicated"},
		},
		{
			name: "a read-back out of offset order is checked by offset",
			feed: func(h *History) {
				vs := plain(h, 2)
				h.Read(t0, 1, vs[1])
				h.Read(t0, 0, vs[0])
			},
			want: []string{"reordered"}, // as read; both are where acknowledged
		},

		// The consumer group.
		{
			name: "consumed all, some twice, committed forward",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				consumeAll(h, t0, 0, vs...)
				consumeAll(h, t0, 2, vs[2:]...)
				h.Committed(t0, 2)
				h.Committed(t0, 2)
				h.Committed(t0, 4)
			},
			counts: &counts{acked: 4, read: 4, consumed: 6},
		},
		{
			name: "unseen",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				consumeAll(h, t0, 0, vs[:3]...)
			},
			want: []string{"unseen"},
		},
		{
			name: "unseen: a group that only committed",
			feed: func(h *History) {
				readAll(h, t0, 0, plain(h, 4)...)
				h.Committed(t0, 4)
			},
			want: []string{"unseen"},
		},
		{
			name: "the group starts past the first records",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				h.ExpectConsumedFrom(t0, 2)
				consumeAll(h, t0, 2, vs[2:]...)
			},
		},
		{
			name: "the group on another topic only",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				h.Committed(TP{"other", 0}, 0)
			},
		},
		{
			name: "consumed at another offset than the log has it",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				consumeAll(h, t0, 0, vs...)
				h.Consumed(t0, 1, vs[3])
			},
			want: []string{"invented"},
		},
		{
			name: "consumed, never sent",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				consumeAll(h, t0, 0, vs...)
				h.Consumed(t0, 4, "w9-0000000")
			},
			want: []string{"invented"},
		},
		{
			name: "committed offset going back",
			feed: func(h *History) {
				vs := plain(h, 4)
				readAll(h, t0, 0, vs...)
				consumeAll(h, t0, 0, vs...)
				h.Committed(t0, 3)
				h.Committed(t0, 4)
				h.Committed(t0, 2)
			},
			want: []string{"offsets back"},
		},

		// Transactions.
		{
			name: "transactions: faithful",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
			},
			counts: &counts{read: 5, readCommitted: 3, committed: 1, aborted: 1, unknown: 1},
		},
		{
			name: "transactions: unknown outcome, read whole",
			feed: func(h *History) {
				committed, _, unknown := txns(h)
				readAll(h, t0, 7, unknown...)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t0, 7, unknown...)
			},
		},
		{
			name: "transactions: a committed record lost",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed[:2]...)
			},
			want: []string{"lost", "partial"},
		},
		{
			name: "transactions: a committed transaction lost whole",
			feed: func(h *History) { txns(h) },
			want: []string{"lost"},
		},
		{
			name: "transactions: a committed record read elsewhere than acknowledged",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed[0], committed[1])
				readCommitted(h, t1, 0, committed[2])
			},
			want: []string{"lost"},
		},
		{
			name: "transactions: aborted read",
			feed: func(h *History) {
				committed, aborted, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t0, 4, aborted...)
			},
			want: []string{"aborted read"},
		},
		{
			name: "transactions: unknown outcome, read in part",
			feed: func(h *History) {
				committed, _, unknown := txns(h)
				readAll(h, t0, 7, unknown...)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t0, 7, unknown[0])
			},
			want: []string{"partial"},
		},
		{
			name: "transactions: a transaction never ended is of unknown outcome",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				v := h.SendTxn(1, 3, 0)
				h.SendTxn(1, 3, 1)
				readAll(h, t0, 7, v)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t0, 7, v)
			},
			want: []string{"partial"},
		},
		{
			name: "transactions: duplicated by read_committed",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t1, 0, committed[0])
			},
			want: []string{"duplicated"},
		},
		{
			name: "transactions: one worker's transactions out of order",
			feed: func(h *History) {
				a, b := h.SendTxn(2, 0, 0), h.SendTxn(2, 1, 0)
				h.TxnEnded(2, 0, TxnCommitted)
				h.TxnEnded(2, 1, TxnCommitted)
				readAll(h, t1, 0, b, a)
				readCommitted(h, t1, 0, b, a)
			},
			want: []string{"reordered"},
		},
		{
			name: "transactions: read_committed invents",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
				readCommitted(h, t0, 7, "t9-00000-000")
			},
			want: []string{"invented"},
		},
		{
			name: "transactions: consumed whole",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
				consumeAll(h, t0, 0, committed...)
			},
		},
		{
			name: "transactions: a committed record unseen by the group",
			feed: func(h *History) {
				committed, _, _ := txns(h)
				readCommitted(h, t0, 0, committed...)
				consumeAll(h, t0, 0, committed[:2]...)
			},
			want: []string{"unseen"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			tc.feed(h)
			v := h.Check()
			if got := nonEmpty(v); !slices.Equal(got, tc.want) {
				t.Errorf("violations %v, want %v: %v", got, tc.want, v)
			}
			if tc.want == nil && !v.OK() || tc.want != nil && v.OK() {
				t.Errorf("OK() = %v: %v", v.OK(), v)
			}
			if tc.counts != nil {
				if got := countsOf(v); got != *tc.counts {
					t.Errorf("counts %+v, want %+v", got, *tc.counts)
				}
			}
			if again := h.Check(); !reflect.DeepEqual(again, v) {
				t.Errorf("a second Check differs: %v, then %v", v, again)
			}
		})
	}
}

func readCommitted(h *History, tp TP, from int64, vs ...string) {
	for i, v := range vs {
		h.ReadCommitted(tp, from+int64(i), v)
	}
}

// TestCheckDescribes: each violation names the record, where it was
// acknowledged and where it was read.
func TestCheckDescribes(t *testing.T) {
	h := New()
	vs := plain(h, 4)
	f := h.Send(1, 4)
	h.Failed(f, errors.New("timed out"))
	readAll(h, t0, 0, vs[0], vs[1], vs[3])
	h.Read(t1, 0, vs[3])
	v := h.Check()
	for _, want := range []string{
		"w1-0000002 acknowledged at t-0@2, not read back there (read nowhere)",
		"w1-0000003 acknowledged at t-0@3, not read back there (read back at t-0@2, read back at t-1@0)",
	} {
		if !slices.Contains(v.Lost, want) {
			t.Errorf("lost %q, want %q among them", v.Lost, want)
		}
	}
	if want := []string{"w1-0000003 read back at t-0@2, read back at t-1@0"}; !slices.Equal(v.Duplicated, want) {
		t.Errorf("duplicated %q, want %q", v.Duplicated, want)
	}
	if v.Errors["timed out"] != 1 {
		t.Errorf("errors %v, want one timed out", v.Errors)
	}
	for _, want := range []string{"4 acknowledged, 1 failed map[timed out:1]", "lost 2 [", "duplicated 1 [", "reordered 0;"} {
		if !strings.Contains(v.String(), want) {
			t.Errorf("String() = %q, want it to contain %q", v.String(), want)
		}
	}
}

// TestStringShortens: a long violation list is cut to five entries.
func TestStringShortens(t *testing.T) {
	h := New()
	plain(h, 8)
	s := h.Check().String()
	if !strings.Contains(s, "lost 8 [") || !strings.Contains(s, "and 3 more]") {
		t.Errorf("String() = %q, want 8 lost shortened to 5 and 3 more", s)
	}
}

// TestConcurrent records from many goroutines at once (for -race), then
// checks.
func TestConcurrent(t *testing.T) {
	const workers, perWorker = 8, 500
	h := New()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tp := TP{"t", int32(w)}
			for seq := range perWorker {
				v := h.Send(w, seq)
				h.Acked(v, tp, int64(seq))
				if seq%100 == 0 {
					h.Check()
					h.Acknowledged()
				}
			}
			for seq := range perWorker {
				h.Read(tp, int64(seq), fmt.Sprintf("w%d-%07d", w, seq))
				h.Consumed(tp, int64(seq), fmt.Sprintf("w%d-%07d", w, seq))
				h.Committed(tp, int64(seq+1))
			}
		})
	}
	wg.Wait()
	v := h.Check()
	if !v.OK() || v.Acknowledged != workers*perWorker || h.Acknowledged() != workers*perWorker {
		t.Fatalf("%v", v)
	}
}

// FuzzCheck: any sequence of calls, however wrong, gives a verdict without
// panicking, and the same one twice.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0, 0, 1, 1, 2, 9, 9, 7, 3, 3, 12, 12})
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := New()
		var values []string
		value := func(i int) string {
			if len(values) == 0 {
				return "w0-0000000"
			}
			return values[i%len(values)]
		}
		for i, op := range ops {
			n := int(op >> 4)
			tp := TP{"t", int32(n % 2)}
			switch op % 13 {
			case 0:
				values = append(values, h.Send(n%3, n))
			case 1:
				values = append(values, h.SendTxn(n%3, n%4, n))
			case 2:
				h.Acked(value(i), tp, int64(n))
			case 3:
				h.AckedTxnRecord(value(i), tp, int64(n))
			case 4:
				h.Failed(value(i), nil)
			case 5:
				h.TxnEnded(n%3, n%4, TxnOutcome(n%3))
			case 6:
				h.Read(tp, int64(n), value(i))
			case 7:
				h.ReadCommitted(tp, int64(n), value(i))
			case 8:
				h.Consumed(tp, int64(n), value(i))
			case 9:
				h.Committed(tp, int64(n))
			case 10:
				h.ExpectConsumedFrom(tp, int64(n))
			case 11:
				h.Read(tp, int64(n), "x")
			case 12:
				h.Failed(value(i), errors.New("e"))
			}
		}
		v := h.Check()
		_ = v.String()
		if again := h.Check(); !reflect.DeepEqual(again, v) {
			t.Fatalf("a second Check differs: %v, then %v", v, again)
		}
	})
}

// BenchmarkCheck checks a faithful history of two million records, read
// back and consumed: a long chaos run's size.
func BenchmarkCheck(b *testing.B) {
	const workers, perWorker, partitions = 8, 1 << 18, 16
	h := New()
	next := make([]int64, partitions)
	for seq := range perWorker {
		for w := range workers {
			tp := TP{"t", int32((seq*workers + w) % partitions)}
			v := h.Send(w, seq)
			h.Acked(v, tp, next[tp.Partition])
			h.Read(tp, next[tp.Partition], v)
			h.Consumed(tp, next[tp.Partition], v)
			next[tp.Partition]++
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := h.Check(); !v.OK() {
			b.Fatal(v)
		}
	}
}
