package partition

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// countingAppends is an AppendCounter that sums what it is told.
type countingAppends struct{ appends, records, bytes atomic.Int64 }

func (c *countingAppends) Appended(records, bytes int64) {
	c.appends.Add(1)
	c.records.Add(records)
	c.bytes.Add(bytes)
}

// TestAppendCounterCountsWrittenRecordsOnce: an Append's Counter (the
// per-topic records and bytes in of /metrics) hears of its records once
// they are written, and only then: an idempotent retry answered with the
// original's offsets and a refused batch count nothing.
func TestAppendCounterCountsWrittenRecordsOnce(t *testing.T) {
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.NewManual(time.UnixMilli(1e12))))
	c := &countingAppends{}
	send := func(records []byte) AppendResult {
		ch := make(chan AppendResult, 1)
		tp.sys.Root.Send(tp.pid, &Append{Records: records, Acks: -1, Counter: c, Reply: func(r AppendResult) { ch <- r }})
		return <-ch
	}
	first, second := batch(t, 1, 0, 0, 3), batch(t, 1, 0, 3, 2)
	size := int64(len(first) + len(second))
	for _, b := range [][]byte{first, second, batch(t, 1, 0, 0, 3)} { // the last a retry of the first
		if r := send(b); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if r := send(batch(t, 1, 0, 9, 1)); r.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("a sequence gap answered %v", r.Err)
	}
	if a, r, b := c.appends.Load(), c.records.Load(), c.bytes.Load(); a != 2 || r != 5 || b != size {
		t.Fatalf("counted %d appends, %d records, %d bytes; want 2, 5, %d", a, r, b, size)
	}
}
