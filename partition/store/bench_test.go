package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// Benchmarks of the log on the operating system's filesystem, in
// b.TempDir(), which is under $TMPDIR or /tmp. A benchmark of storage must
// hit a disk: if /tmp is a tmpfs (`findmnt -T /tmp`), point TMPDIR at a
// directory on the disk the broker would use. Every write here reaches the
// page cache, and the disk when synced or when the kernel writes back;
// reads of a log just written come from the page cache, as a consumer's
// tail reads do.
//
//	go test -run '^$' -bench 'BenchmarkAppend$' -benchtime 3s -count 5 ./partition/store/
//
// The record batches are those of the issue: 16 records of 1 KiB values,
// 16 KiB and a bit per batch, uncompressed.

// benchBatch returns a batch of 16 records of 1 KiB values.
func benchBatch() []byte { return logBatch(16, 1024, time.Now().UnixMilli()) }

func openBenchLog(b *testing.B, fsys vfs.FS, dir string) *Log {
	b.Helper()
	l, err := Open(Config{FS: fsys, Dir: dir, Options: DefaultOptions()})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAppend appends 16 KiB batches with Kafka's default options (1 GiB
// segments) and no sync but the one each roll makes, as a broker under
// `durability: replicated` does: sets=1 writes each as it comes (Append),
// sets=60 stages 60 and writes them together (Stage, WriteStaged: one
// pwritev of 1 MB, under maxWriteBytes), as a partition actor does with
// the Appends that queued up behind a write. MB/s is the append rate; "MB/s+sync" counts the final
// sync of what is still dirty too, which makes it comparable to
// `dd bs=16k` and `dd bs=1M` with conv=fdatasync.
func BenchmarkAppend(b *testing.B) {
	for _, sets := range []int{1, 60} {
		b.Run(fmt.Sprintf("sets=%d", sets), func(b *testing.B) {
			l := openBenchLog(b, vfs.Default, filepath.Join(b.TempDir(), "topic-0"))
			defer l.Close()
			batches := make([][]byte, sets)
			for i := range batches {
				batches[i] = benchBatch()
			}
			b.SetBytes(int64(len(batches[0])))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := l.Stage(batches[n], 0); err != nil {
					b.Fatal(err)
				}
				if n++; n == sets {
					if err := l.WriteStaged(); err != nil {
						b.Fatal(err)
					}
					n = 0
				}
			}
			start := time.Now()
			if err := l.WriteStaged(); err != nil {
				b.Fatal(err)
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			total := b.Elapsed() + time.Since(start)
			b.ReportMetric(float64(b.N)*float64(len(batches[0]))/1e6/total.Seconds(), "MB/s+sync")
		})
	}
}

// BenchmarkAppendDurable appends from several writers at once, each waiting
// for its batch to be durable before the next, as producers with acks=1
// under `durability: fsync` do: Append serialised by a mutex (the partition
// actor is the single writer), then SyncTo outside it, group-committed.
// syncs/s counts fsyncs of segment files; appends/sync is how many appends
// each covered.
func BenchmarkAppendDurable(b *testing.B) {
	for _, writers := range []int{4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			var syncs atomic.Int64
			fsys := syncCountingFS{FS: vfs.Default, syncs: &syncs}
			l := openBenchLog(b, fsys, filepath.Join(b.TempDir(), "topic-0"))
			defer l.Close()
			batches := make([][]byte, writers)
			for i := range batches {
				batches[i] = benchBatch()
			}
			b.SetBytes(int64(len(batches[0])))
			b.ReportAllocs()
			var (
				mu      sync.Mutex // the partition actor
				tickets atomic.Int64
				wg      sync.WaitGroup
				errs    = make(chan error, writers)
			)
			b.ResetTimer()
			syncs.Store(0)
			for _, batch := range batches {
				wg.Go(func() {
					for tickets.Add(1) <= int64(b.N) {
						mu.Lock()
						res, err := l.Append(batch, 0)
						mu.Unlock()
						if err == nil {
							err = l.SyncTo(res.LastOffset + 1)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			n := max(syncs.Load(), 1)
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "syncs/s")
			b.ReportMetric(float64(b.N)/float64(n), "appends/sync")
		})
	}
}

// syncCountingFS counts Sync calls on segment (.log) files.
type syncCountingFS struct {
	vfs.FS
	syncs *atomic.Int64
}

func (c syncCountingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(name, f, err)
}

func (c syncCountingFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(name, f, err)
}

func (c syncCountingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return syncCountingFile{File: f, syncs: c.syncs}, nil
}

type syncCountingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f syncCountingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

// buildBenchLog writes a log of at least size bytes of 16 KiB batches in dir
// and closes it cleanly.
func buildBenchLog(b *testing.B, dir string, size int64) {
	b.Helper()
	l := openBenchLog(b, vfs.Default, dir)
	batch := benchBatch()
	for written := int64(0); written < size; written += int64(len(batch)) {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRead reads a 1 GiB log from start to end, again and again, 1 MiB
// at a time as a fetch with fetch.max.bytes of 1 MiB would: Read finds the
// byte range, one ReadAt copies it into a reused buffer. The log is built
// once, outside the timer, and is in the page cache.
func BenchmarkRead(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "topic-0")
	buildBenchLog(b, dir, 1<<30)
	l := openBenchLog(b, vfs.Default, dir)
	defer l.Close()
	v := l.View()
	o := ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset}
	first, err := v.Read(0, o)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, o.MaxBytes)
	b.SetBytes(first.Size)
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		sl, err := v.Read(off, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sl.File.ReadAt(buf[:sl.Size], sl.Pos); err != nil {
			b.Fatal(err)
		}
		if off = sl.NextOffset; off >= v.LogEndOffset {
			off = 0
		}
	}
}

// BenchmarkRecovery opens a 256 MiB log that was not shut down cleanly and
// has no checkpoint, so Open rescans all of it: reads it, checks every
// batch's header and CRC, rebuilds the indexes. MB/s is the scanning speed
// (from the page cache).
func BenchmarkRecovery(b *testing.B) {
	const size = 256 << 20
	dir := filepath.Join(b.TempDir(), "topic-0")
	buildBenchLog(b, dir, size)
	crash := func() {
		for _, name := range []string{cleanMarkerFile, checkpointFile} {
			if err := vfs.Default.Remove(filepath.Join(dir, name)); err != nil {
				b.Fatal(err)
			}
		}
	}
	crash()
	_, logSize := dirSegmentBytes(b, dir)
	b.SetBytes(logSize)
	b.ReportAllocs()
	for b.Loop() {
		l := openBenchLog(b, vfs.Default, dir)
		b.StopTimer()
		if got := l.LogEndOffset(); got == 0 {
			b.Fatal("recovered an empty log")
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		crash()
		b.StartTimer()
	}
}

// dirSegmentBytes returns the number of segments in dir and the bytes of
// their .log files.
func dirSegmentBytes(tb testing.TB, dir string) (n int, size int64) {
	tb.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range names {
		if _, ok := parseSegmentName(name); ok {
			fi, err := vfs.Default.Stat(filepath.Join(dir, name))
			if err != nil {
				tb.Fatal(err)
			}
			n, size = n+1, size+fi.Size()
		}
	}
	return n, size
}
