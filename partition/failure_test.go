package partition

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// lockedBuffer is a log sink for a test that reads it while actors write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestFailedStateAndRecovery: when the disk fails under a partition (no
// descriptor, no space, an I/O error, at open, write, sync or rename), the
// partition answers appends KAFKA_STORAGE_ERROR, keeps serving reads of what
// it had, logs the failure once however often its retries fail, and
// recovers by itself once the disk is back, with nothing acknowledged lost:
// an idempotent producer's retry of the batch that failed lands once, at
// the offset after the last acknowledged one.
func TestFailedStateAndRecovery(t *testing.T) {
	for _, tc := range []struct {
		name      string
		op        vfs.Op
		errno     syscall.Errno
		cause     string
		atStart   bool // the disk fails before the partition starts
		byTick    bool // the failure comes from periodic work, not an append
		hasOldLog bool
	}{
		{name: "open-EMFILE-at-start", op: vfs.OpOpen, errno: syscall.EMFILE, cause: CauseDescriptors, atStart: true},
		{name: "write-ENOSPC", op: vfs.OpWrite, errno: syscall.ENOSPC, cause: CauseDiskFull, hasOldLog: true},
		{name: "sync-EIO", op: vfs.OpSync, errno: syscall.EIO, cause: CauseIO, hasOldLog: true},
		{name: "rename-EIO-checkpoint", op: vfs.OpRename, errno: syscall.EIO, cause: CauseIO, byTick: true, hasOldLog: true},
		{name: "create-EMFILE-checkpoint", op: vfs.OpCreate, errno: syscall.EMFILE, cause: CauseDescriptors, byTick: true, hasOldLog: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			toggle := vfs.NewToggle(vfs.OnOp(tc.op, tc.errno))
			fs := vfs.NewErrorFS(vfs.NewCrashableMem(), toggle)
			clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
			var logs lockedBuffer
			cfg := testConfig(fs, clk)
			cfg.Logger = zerolog.New(&logs)
			cfg.Failures = logging.NewLimiter(100, time.Second)
			if tc.atStart {
				// A directory the log was made in (a new log has
				// none, and opens without a file).
				if err := fs.MkdirAll(cfg.Dir, 0o755); err != nil {
					t.Fatal(err)
				}
				toggle.On()
			}
			tp := startTestPartition(t, cfg)
			const pid = 7
			acked := int64(0)
			if !tc.atStart {
				for i := range 3 {
					tp.appendOK(batch(t, pid, 0, int32(i), 1), int64(i))
				}
				acked = 3
				toggle.On()
			}
			failing := batch(t, pid, 0, int32(acked), 1)
			if tc.byTick {
				clk.Advance(2 * checkpointInterval) // a checkpoint is due
				tp.tick()
			}
			tp.appendErr(failing, kerr.KafkaStorageError)

			v := tp.handle.View()
			if v.Failure == nil || v.Failure.Cause != tc.cause {
				t.Fatalf("view's failure %+v, want cause %s; log:\n%s", v.Failure, tc.cause, logs.b.String())
			}
			if (v.Log != nil) != tc.hasOldLog {
				t.Fatalf("view's log %v, want one: %v", v.Log, tc.hasOldLog)
			}
			if v.Log != nil {
				// Readers still see every acknowledged record.
				b, err := v.Log.ReadBytes(0, store.ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.Log.HighWatermark, MinOneBatch: true})
				if err != nil || v.Log.HighWatermark != acked {
					t.Fatalf("reading the failed partition: %d bytes, high watermark %d, %v", len(b), v.Log.HighWatermark, err)
				}
				n := 0
				store.ForEachBatch(b, func([]byte, store.Header) error { n++; return nil })
				if n != int(acked) {
					t.Fatalf("read %d batches of %d acknowledged", n, acked)
				}
			}
			// Retries while the disk is still broken fail quietly.
			for range 3 {
				clk.Advance(time.Minute)
				tp.tick()
				tp.appendErr(failing, kerr.KafkaStorageError)
			}
			toggle.Off()
			clk.Advance(time.Minute)
			tp.tick()
			if v := tp.handle.View(); v.Failure != nil || v.Log == nil {
				t.Fatalf("not recovered: %+v", v.Failure)
			}
			tp.appendOK(failing, acked)
			tp.appendOK(batch(t, pid, 0, int32(acked+1), 1), acked+1)
			if n := logs.count("partition storage failed"); n != 1 {
				t.Errorf("the failure was logged %d times:\n%s", n, logs.b.String())
			}
			if n := logs.count("partition storage recovered"); n != 1 {
				t.Errorf("the recovery was logged %d times:\n%s", n, logs.b.String())
			}
		})
	}
}
