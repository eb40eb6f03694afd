package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

// written remembers the bytes of every batch as appended (offsets and epoch
// already rewritten by Append), by base offset.
type written map[int64][]byte

// checkRecovered checks a recovered log against what was written: every
// batch below durable is there, byte for byte; everything there is a batch
// that was written, in order, with no gap (the log is a prefix of what was
// written); and no corrupt batch is returned.
func checkRecovered(t *testing.T, l *Log, w written, durable int64) {
	t.Helper()
	v := l.View()
	if v.LogEndOffset < durable {
		t.Fatalf("log end %d after recovery, but %d was durable", v.LogEndOffset, durable)
	}
	next := v.LogStartOffset
	for next < v.LogEndOffset {
		b, err := v.ReadBytes(next, ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read %d: %v", next, err)
		}
		err = ForEachBatch(b, func(bb []byte, h Header) error {
			if err := CheckCRC(bb); err != nil {
				return err
			}
			if h.BaseOffset != next {
				return fmt.Errorf("batch at %d, want %d", h.BaseOffset, next)
			}
			if !bytes.Equal(bb, w[next]) {
				return fmt.Errorf("batch at %d differs from the one written", next)
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashRecovery appends, syncs now and then, crashes the filesystem
// (keeping only synced bytes, or torn and garbled tails of the rest), and
// recovers, many times over with different seeds.
func TestCrashRecovery(t *testing.T) {
	for seed := int64(0); seed < 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 0))
			mem := vfs.NewCrashableMem()
			o := testOptions()
			o.SegmentBytes = int64(2000 + r.IntN(20000))
			tl := openTestLog(t, mem, o)
			w := written{}
			durable := int64(0)
			for round := 0; round < 3; round++ {
				for i, n := 0, r.IntN(80); i < n; i++ {
					b := logBatch(1+r.IntN(5), r.IntN(400), int64(i))
					res, err := tl.Append(b, int32(round))
					if err != nil {
						t.Fatal(err)
					}
					w[res.BaseOffset] = b
					if r.IntN(10) == 0 {
						if err := tl.SyncTo(res.LastOffset + 1); err != nil {
							t.Fatal(err)
						}
					}
				}
				durable = tl.DurableOffset()
				crashed := mem.CrashClone(vfs.CrashOptions{Rand: r, KeepUnsyncedProb: 0.5})
				tl.Close() // the old handles go; the crashed copy is what is left
				mem = crashed
				tl.cfg.FS = mem
				l, err := Open(tl.cfg)
				if err != nil {
					t.Fatalf("round %d: recover: %v", round, err)
				}
				tl.Log = l
				checkRecovered(t, l, w, durable)
				if l.DurableOffset() != l.LogEndOffset() {
					t.Fatalf("recovered log not durable: %d < %d", l.DurableOffset(), l.LogEndOffset())
				}
				// What did not survive is gone for good: forget it.
				for off := range w {
					if off >= l.LogEndOffset() {
						delete(w, off)
					}
				}
			}
		})
	}
}

// TestRecoveryRebuildsIndexes damages or removes index files and checks
// that Open rebuilds them, after a clean shutdown and after a crash.
func TestRecoveryRebuildsIndexes(t *testing.T) {
	for _, damage := range []string{"remove", "truncate", "garbage"} {
		t.Run(damage, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			tl := openTestLog(t, mem, testOptions())
			for i := 0; i < 100; i++ {
				tl.append(2, 300)
			}
			before := readLog(t, tl.View(), 0)
			if err := tl.Close(); err != nil {
				t.Fatal(err)
			}
			names, _ := mem.List(tl.Dir())
			for _, name := range names {
				if !bytes.HasSuffix([]byte(name), []byte(indexSuffix)) && !bytes.HasSuffix([]byte(name), []byte(timeIndexSuffix)) {
					continue
				}
				p := tl.Dir() + "/" + name
				switch damage {
				case "remove":
					mem.Remove(p)
				case "truncate":
					f, _ := mem.OpenReadWrite(p)
					f.Truncate(3)
					f.Close()
				case "garbage":
					f, _ := mem.OpenReadWrite(p)
					f.WriteAt(bytes.Repeat([]byte{0xff}, 24), 0)
					f.Close()
				}
			}
			l, err := Open(tl.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tl.Log = l
			after := readLog(t, l.View(), 0)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatal("batches differ after rebuilding indexes")
			}
			var dec Decompressor
			if _, _, found, err := l.View().OffsetForTimestamp(0, &dec); err != nil || !found {
				t.Fatalf("time lookup after rebuild: %v %v", found, err)
			}
		})
	}
}

// TestInjectedErrors checks that a failed write, sync or rename is reported,
// never acknowledged, and fails the log until it is reopened, and that the
// reopened log holds everything that was durable.
func TestInjectedErrors(t *testing.T) {
	tests := []struct {
		name   string
		inject vfs.Injector
	}{
		{"sync", vfs.FailAfter(0, vfs.OpSync, nil)},
		{"write", vfs.FailAfter(0, vfs.OpWrite, nil)},
		{"short write", vfs.InjectorFunc(func(op vfs.Op, _ string) error {
			if op == vfs.OpWrite {
				return vfs.ShortWrite{N: 70}
			}
			return nil
		})},
		{"rename", vfs.FailAfter(0, vfs.OpRename, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			var on bool
			fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
				if !on {
					return nil
				}
				return tt.inject.MaybeError(op, path)
			}))
			o := testOptions()
			o.SegmentBytes = 4000
			tl := openTestLog(t, fs, o)
			w := written{}
			for i := 0; i < 20; i++ {
				b := logBatch(2, 300, 0)
				res := mustAppend(t, tl.Log, b)
				w[res.BaseOffset] = b
			}
			if err := tl.Sync(); err != nil {
				t.Fatal(err)
			}
			durable := tl.DurableOffset()
			on = true
			// Keep appending and syncing until the fault shows; it must show
			// as an error, and nothing after it may be acknowledged.
			var failed error
			for i := 0; i < 40 && failed == nil; i++ {
				b := logBatch(2, 300, 0)
				res, err := tl.Append(b, 0)
				if err == nil {
					w[res.BaseOffset] = b
					err = tl.SyncTo(res.LastOffset + 1)
				}
				failed = err
			}
			if failed == nil {
				t.Fatal("no error surfaced")
			}
			if !errors.Is(failed, vfs.ErrInjected) && !errors.Is(failed, ErrFailed) {
				t.Fatalf("error %v does not say what failed", failed)
			}
			if tl.DurableOffset() != durable {
				t.Fatalf("durable offset moved from %d to %d across a failure", durable, tl.DurableOffset())
			}
			if _, err := tl.Append(logBatch(1, 1, 0), 0); !errors.Is(err, ErrFailed) {
				t.Fatalf("append after failure: %v, want ErrFailed", err)
			}
			on = false
			tl.Close()
			crashed := mem.CrashClone(vfs.CrashOptions{})
			tl.cfg.FS = crashed
			l, err := Open(tl.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tl.Log = l
			checkRecovered(t, l, w, durable)
		})
	}
}

func mustAppend(t *testing.T, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
