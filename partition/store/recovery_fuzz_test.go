package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// FuzzRecovery damages the files of a log that was not shut down cleanly and
// checks that Open recovers from whatever is left, with the invariants of
// kfake's persist fuzzer: no panic and no hang; every batch a read returns
// passes its CRC and is the very batch written at that offset, so the
// recovered log is a prefix of the one written (shorter where damage cut
// it); recovery allocates a bounded amount whatever the lengths in the
// files say; the recovered log takes appends and survives being reopened,
// after a clean shutdown and after a crash.
//
// The log (rfuzzBuild) is the same every time: a few dozen batches of
// varied sizes in three leader epochs over about ten small segments, all
// synced. The input is a program: its first byte picks a mode, the rest is
// read five bytes at a time as operations on the files (rfuzzLog.apply).
// The operations leave alone the two header fields no check can cover (see
// rfuzzLog.unchecked).
//
// Modes:
//
//	0  crash: the synced state without a Close, and no checkpoint, so that
//	   every segment is rescanned; any segment file may be damaged.
//	1  clean Close, then the clean-shutdown marker and the checkpoint
//	   removed: every segment rescanned; any segment file may be damaged.
//	2  crash with the checkpoint kept: segments below the recovery point
//	   are trusted, as they must be, so only the files of segments at or
//	   above it are damaged; nothing below it may be lost.
//
// A segment file removed, or cut at a batch boundary, in the middle of the
// log leaves a hole that recovery cannot see: offsets may have gaps
// (compaction and follower appends make them), and the store, like Kafka,
// keeps no list of its segments. After such damage the log need only be a
// subsequence of the one written, batch for batch.
//
// The seed corpus is in testdata/fuzz/FuzzRecovery/ as well as below.
func FuzzRecovery(f *testing.F) {
	crashed, closed := rfuzzBuild(f, false), rfuzzBuild(f, true)
	for _, seed := range rfuzzSeeds(crashed) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mode := 0
		if len(data) > 0 {
			mode, data = int(data[0]%3), data[1:]
		}
		base := crashed
		if mode == 1 {
			base = closed
		}
		mem := base.fs.CrashClone(vfs.CrashOptions{}) // a copy: base is shared by every run
		rp := int64(0)
		if mode == 2 {
			rp = base.recoveryPoint
		} else {
			rfuzzRemove(t, mem, checkpointFile)
			rfuzzRemove(t, mem, cleanMarkerFile)
		}
		targets := base.targets(rp)
		holes := base.apply(t, mem, targets, data)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cfg := rfuzzConfig(mem)
		l, err := Open(cfg)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		// Recovery reads in bounded chunks: a length field the damage made
		// huge must not make it allocate that much.
		if n := after.TotalAlloc - before.TotalAlloc; n > rfuzzMaxAlloc {
			t.Fatalf("recovering a %d-byte log allocated %d bytes", base.size, n)
		}
		got := rfuzzCheck(t, l, base.batches, !holes)
		if leo := l.LogEndOffset(); leo < rp {
			t.Fatalf("log ends at %d after recovery, below the recovery point %d", leo, rp)
		}
		if d := l.DurableOffset(); d != l.LogEndOffset() {
			t.Fatalf("recovered log durable to %d, ends at %d", d, l.LogEndOffset())
		}

		// The recovered log takes appends, at its end.
		leo := l.LogEndOffset()
		b := logBatch(3, 40, 1_700_000_100_000)
		res, err := l.Append(b, 7)
		if err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if res.BaseOffset != leo {
			t.Fatalf("append after recovery at %d, log ended at %d", res.BaseOffset, leo)
		}
		if err := l.SyncTo(res.LastOffset + 1); err != nil {
			t.Fatal(err)
		}
		written := make(map[int64][]byte, len(got)+1)
		for _, off := range got {
			written[off] = base.batches[off]
		}
		written[res.BaseOffset] = b
		want := append(got, res.BaseOffset)

		// And survives being reopened, cleanly and after a crash.
		if err := l.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		for _, crash := range []bool{false, true} {
			if crash {
				mem = mem.CrashClone(vfs.CrashOptions{})
				rfuzzRemove(t, mem, cleanMarkerFile)
				cfg.FS = mem
			}
			l, err := Open(cfg)
			if err != nil {
				t.Fatalf("reopen (crash %v): %v", crash, err)
			}
			if again := rfuzzCheck(t, l, written, !holes); !slices.Equal(again, want) {
				t.Fatalf("reopened (crash %v) with batches %v, want %v", crash, again, want)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

const (
	rfuzzDir      = "/data/topic-0"
	rfuzzOpSize   = 5  // bytes per operation
	rfuzzMaxOps   = 32 // operations beyond these are ignored
	rfuzzMaxAlloc = 64 << 20
)

func rfuzzOptions() Options {
	o := DefaultOptions()
	o.SegmentBytes = 2048
	o.SegmentIndexBytes = 1024
	o.IndexIntervalBytes = 200
	return o
}

func rfuzzConfig(fsys vfs.FS) Config {
	return Config{
		FS:      fsys,
		Dir:     rfuzzDir,
		Clock:   clock.NewManual(time.UnixMilli(1_700_000_200_000)),
		Options: rfuzzOptions(),
	}
}

// rfuzzLog is a log as the fuzz target starts from.
type rfuzzLog struct {
	fs            *vfs.MemFS
	batches       map[int64][]byte // by base offset, as appended
	recoveryPoint int64            // as the checkpoint says
	size          int64            // bytes of segment files
	files         []string         // names in the directory, sorted
	// unchecked holds, by .log file, the positions of the bytes that no
	// check covers and that the operations leave alone: the base offset and
	// partition leader epoch of each batch. The batch CRC leaves them out
	// because a leader rewrites them, so a flipped bit there makes a batch
	// as valid as the original, for the store as for Kafka.
	unchecked map[string]map[int64]bool
	starts    map[string]map[int64]bool // by .log file, the positions of its batches
}

// rfuzzBuild writes the fuzz target's log and leaves it synced; closed says
// whether it was shut down cleanly or crashed.
func rfuzzBuild(tb testing.TB, closed bool) *rfuzzLog {
	mem := vfs.NewCrashableMem()
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	cfg := rfuzzConfig(mem)
	cfg.Clock = clk
	l, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	out := &rfuzzLog{batches: map[int64][]byte{}, unchecked: map[string]map[int64]bool{}, starts: map[string]map[int64]bool{}}
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 40 {
		b := logBatch(1+r.IntN(4), r.IntN(160), clk.Now().UnixMilli())
		res, err := l.Append(b, int32(i/15))
		if err != nil {
			tb.Fatal(err)
		}
		out.batches[res.BaseOffset] = b
		clk.Advance(time.Millisecond)
		if i%9 == 0 {
			if err := l.SyncTo(res.LastOffset + 1); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := l.Sync(); err != nil {
		tb.Fatal(err)
	}
	if closed {
		if err := l.Close(); err != nil {
			tb.Fatal(err)
		}
		out.fs = mem.CrashClone(vfs.CrashOptions{})
	} else {
		out.fs = mem.CrashClone(vfs.CrashOptions{})
		l.Close() // the clone is what is left of it
	}
	data, err := readFile(out.fs, filepath.Join(rfuzzDir, checkpointFile))
	if err != nil {
		tb.Fatal(err)
	}
	ck, err := parseCheckpoint(data)
	if err != nil {
		tb.Fatal(err)
	}
	out.recoveryPoint = ck.RecoveryPoint
	if out.files, err = out.fs.List(rfuzzDir); err != nil {
		tb.Fatal(err)
	}
	for _, name := range out.files {
		if _, ok := rfuzzSegmentBase(name); ok {
			fi, err := out.fs.Stat(filepath.Join(rfuzzDir, name))
			if err != nil {
				tb.Fatal(err)
			}
			out.size += fi.Size()
		}
		if strings.HasSuffix(name, logSuffix) {
			f, err := out.fs.Open(filepath.Join(rfuzzDir, name))
			if err != nil {
				tb.Fatal(err)
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				tb.Fatal(err)
			}
			skip, starts := map[int64]bool{}, map[int64]bool{}
			pos := int64(0)
			err = ForEachBatch(data, func(b []byte, _ Header) error {
				starts[pos] = true
				for i := range int64(offPartitionLeaderEpoch + 4) {
					if i < offBatchLength || i >= offPartitionLeaderEpoch {
						skip[pos+i] = true
					}
				}
				pos += int64(len(b))
				return nil
			})
			if err != nil {
				tb.Fatal(err)
			}
			out.unchecked[name], out.starts[name] = skip, starts
		}
	}
	if n := len(out.files); n < 20 {
		tb.Fatalf("the fuzz log has only %d files: want several segments", n)
	}
	return out
}

// rfuzzSegmentBase returns the base offset of a segment's file of any kind.
func rfuzzSegmentBase(name string) (int64, bool) {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if stem, ok := strings.CutSuffix(name, suffix); ok {
			name = stem + logSuffix
		}
	}
	return parseSegmentName(name)
}

// targets returns the files the operations may damage: the files of every
// segment whose base is at least from, and the leader epoch checkpoint (which
// is only ever deleted: it is replaced atomically, so a torn one is not a
// crash the store must survive, and Open refuses a corrupt one).
func (b *rfuzzLog) targets(from int64) []string {
	var out []string
	for _, name := range b.files {
		if base, ok := rfuzzSegmentBase(name); ok && base >= from || name == epochFile {
			out = append(out, name)
		}
	}
	return out
}

// lastLog returns the name of the last segment's .log file.
func (b *rfuzzLog) lastLog() string {
	var last string
	for _, name := range b.files {
		if strings.HasSuffix(name, logSuffix) {
			last = name // names sort by base offset
		}
	}
	return last
}

// rfuzzRemove removes a file of the log's directory, if it is there.
func rfuzzRemove(t *testing.T, mem *vfs.MemFS, name string) {
	if err := mem.Remove(filepath.Join(rfuzzDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// apply runs the operations in data on the target files and reports whether
// they may have left a hole: a .log file deleted, or one but the last cut at
// a batch boundary. Each operation is five bytes:
//
//	op    low 2 bits: 0 truncate or extend, 1 flip bits of a byte,
//	      2 overwrite a run of 1 + op>>2 bytes, 3 delete the file
//	file  index into targets, modulo their number
//	arg   2 bytes, big-endian: for truncate, the new size modulo size+1, or
//	      with the high bit set, the size plus (arg&0x7fff)%4096 (zeros, as
//	      a file extended but never written); else a position modulo size
//	val   the XOR mask (0 means 0xff) or the byte of the run
//
// Writes skip the unchecked bytes (see rfuzzLog).
func (lg *rfuzzLog) apply(t *testing.T, mem *vfs.MemFS, targets []string, data []byte) (holes bool) {
	lastLog := lg.lastLog()
	for n := 0; len(data) >= rfuzzOpSize && n < rfuzzMaxOps; n, data = n+1, data[rfuzzOpSize:] {
		op, name := data[0], targets[int(data[1])%len(targets)]
		arg, val := int64(binary.BigEndian.Uint16(data[2:])), data[4]
		p := filepath.Join(rfuzzDir, name)
		isLog := strings.HasSuffix(name, logSuffix)
		if op%4 == 3 || name == epochFile {
			if err := mem.Remove(p); err == nil && isLog {
				holes = true
			}
			continue
		}
		fi, err := mem.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted by an earlier operation
		}
		if err != nil {
			t.Fatal(err)
		}
		size := fi.Size()
		f, err := mem.OpenReadWrite(p)
		if err != nil {
			t.Fatal(err)
		}
		// write xors (or sets) the bytes from pos on, within the file.
		write := func(pos int64, n int64, set bool) error {
			var c [1]byte
			for ; n > 0 && pos < size; pos, n = pos+1, n-1 {
				if lg.unchecked[name][pos] {
					continue
				}
				if set {
					c[0] = val
				} else {
					if _, err := f.ReadAt(c[:], pos); err != nil {
						return err
					}
					c[0] ^= val
					if val == 0 {
						c[0] ^= 0xff
					}
				}
				if _, err := f.WriteAt(c[:], pos); err != nil {
					return err
				}
			}
			return nil
		}
		switch op % 4 {
		case 0:
			to := arg % (size + 1)
			if arg&0x8000 != 0 {
				to = size + (arg&0x7fff)%4096
			}
			err = f.Truncate(to)
			holes = holes || isLog && name != lastLog && to < size && lg.starts[name][to]
		case 1:
			if size > 0 {
				err = write(arg%size, 1, false)
			}
		case 2:
			if size > 0 {
				err = write(arg%size, 1+int64(op>>2), true)
			}
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return holes
}

// rfuzzCheck reads the whole log and checks every batch against written:
// its CRC holds, it is the batch written at its base offset, byte for byte,
// and offsets increase; with contiguous, the log also starts at 0 and has no
// holes. It returns the base offsets read.
func rfuzzCheck(t *testing.T, l *Log, written map[int64][]byte, contiguous bool) []int64 {
	t.Helper()
	v := l.View()
	if contiguous && v.LogStartOffset != 0 {
		t.Fatalf("log starts at %d", v.LogStartOffset)
	}
	var bases []int64
	next := v.LogStartOffset
	for next < v.LogEndOffset {
		b, err := v.ReadBytes(next, ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		if len(b) == 0 {
			if contiguous {
				t.Fatalf("read at %d, below the log end %d, returned nothing", next, v.LogEndOffset)
			}
			// In a hole at the end, as when the segments after a deleted
			// one were dropped: right, if nothing follows.
			for i := v.find(next); i < v.numSegments(); i++ {
				if s := v.segment(i); s.size > 0 && s.next > next {
					t.Fatalf("read at %d returned nothing, but segment %d holds offsets up to %d", next, s.base, s.next-1)
				}
			}
			break
		}
		err = ForEachBatch(b, func(bb []byte, h Header) error {
			if err := CheckCRC(bb); err != nil {
				return fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
			}
			if h.BaseOffset < next || contiguous && h.BaseOffset != next {
				return fmt.Errorf("batch at %d, want %d", h.BaseOffset, next)
			}
			if w, ok := written[h.BaseOffset]; !ok || !bytes.Equal(bb, w) {
				return fmt.Errorf("batch at %d is not the one written there (written: %v)", h.BaseOffset, ok)
			}
			bases = append(bases, h.BaseOffset)
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return bases
}

// rfuzzSeeds returns the programs added with f.Add: no damage in each mode,
// and one of each kind of operation on chosen files.
func rfuzzSeeds(b *rfuzzLog) [][]byte {
	var logs []string
	for _, name := range b.files {
		if strings.HasSuffix(name, logSuffix) {
			logs = append(logs, name)
		}
	}
	first, mid, last := logs[0], logs[len(logs)/2], logs[len(logs)-1]
	index := func(name string) string { return strings.Replace(name, logSuffix, indexSuffix, 1) }
	timeIndex := func(name string) string { return strings.Replace(name, logSuffix, timeIndexSuffix, 1) }
	// prog encodes a program: mode, then operations of kind, file, arg, val.
	type op struct {
		kind byte
		name string
		arg  uint16
		val  byte
	}
	prog := func(mode byte, ops ...op) []byte {
		targets := b.targets(0)
		if mode == 2 {
			targets = b.targets(b.recoveryPoint)
		}
		out := []byte{mode}
		for _, o := range ops {
			i := slices.Index(targets, o.name)
			if i < 0 {
				panic(fmt.Sprintf("seed targets %s, not a target in mode %d", o.name, mode))
			}
			out = append(out, o.kind, byte(i), byte(o.arg>>8), byte(o.arg), o.val)
		}
		return out
	}
	return [][]byte{
		{},
		{1},
		{2},
		prog(0, op{0, mid, 1000, 0}),          // cut a middle segment inside a batch
		prog(1, op{1, first, 100, 0x10}),      // flip a bit in a record of the first batch
		prog(0, op{1, mid, 9, 0x80}),          // the top byte of a batch length
		prog(1, op{2 | 15<<2, last, 0, 0xff}), // overwrite the first header of the last segment
		prog(0, op{3, mid, 0, 0}),             // delete a middle segment
		prog(1, op{3, first, 0, 0}, op{3, index(first), 0, 0}),   // and the first
		prog(0, op{0, last, 0x8000 | 700, 0}),                    // zeros after the last batch
		prog(2, op{0, last, 130, 0}),                             // cut the active segment
		prog(2, op{3, last, 0, 0}),                               // delete the active segment
		prog(1, op{2 | 3<<2, index(mid), 0, 0x7f}),               // garbage in an index
		prog(0, op{0, timeIndex(mid), 5, 0}),                     // a torn time index
		prog(0, op{3, epochFile, 0, 0}, op{0, last, 0, 0}),       // no epochs, an empty last segment
		prog(1, op{0, mid, 0, 0}, op{1, timeIndex(first), 3, 0}), // an empty middle segment
	}
}
