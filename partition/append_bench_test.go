package partition

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// BenchmarkAppendActor appends 16 KiB batches (16 records of 1 KiB) to one
// partition actor on the OS filesystem (b.TempDir(): see
// partition/store/bench_test.go on pointing TMPDIR at the broker's disk)
// from several producers at once, each waiting for its acks=all answer
// before its next batch, under either durability: the Appends that queue
// up in the mailbox behind a write go out together. appends/write counts
// Appends per write of segment data; cpu-s/GB is the whole process's CPU
// time per GB appended.
func BenchmarkAppendActor(b *testing.B) {
	for _, bc := range []struct {
		durability configs.Durability
		producers  int
	}{
		{configs.DurabilityFsync, 1}, {configs.DurabilityFsync, 16},
		{configs.DurabilityReplicated, 1}, {configs.DurabilityReplicated, 16},
	} {
		b.Run(fmt.Sprintf("%s/producers=%d", bc.durability, bc.producers), func(b *testing.B) {
			producers := bc.producers
			fsys := &writeCounter{FS: vfs.Default}
			cfg := testConfig(fsys, clock.Real)
			cfg.Dir = filepath.Join(b.TempDir(), "t-0")
			cfg.Durability = bc.durability
			tp := startTestPartition(b, cfg)
			batches := make([][]byte, producers)
			for i := range batches {
				recs := make([]store.Record, 16)
				for j := range recs {
					recs[j] = store.Record{OffsetDelta: int32(j), Value: make([]byte, 1024)}
				}
				var err error
				batches[i], err = store.AppendBatch(nil, store.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: 15,
					ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, store.CodecNone)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(batches[0])))
			b.ReportAllocs()
			var (
				tickets atomic.Int64
				wg      sync.WaitGroup
				failed  atomic.Value
			)
			cpu0 := cpuTime()
			b.ResetTimer()
			fsys.writes.Store(0)
			for _, batch := range batches {
				wg.Go(func() {
					for tickets.Add(1) <= int64(b.N) {
						if r := <-tp.send(batch, -1); r.Err != nil {
							failed.Store(r.Err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatal(err)
			}
			gb := float64(b.N) * float64(len(batches[0])) / 1e9
			b.ReportMetric((cpuTime()-cpu0).Seconds()/gb, "cpu-s/GB")
			b.ReportMetric(float64(b.N)/float64(max(fsys.writes.Load(), 1)), "appends/write")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeCounter counts writes of segment data: WriteAt calls, and vectored
// writes (one descriptor borrow each).
type writeCounter struct {
	vfs.FS
	writes atomic.Int64
}

func (c *writeCounter) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(name, f, err)
}

func (c *writeCounter) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	return c.wrap(name, f, err)
}

func (c *writeCounter) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return writeCountedFile{File: f, writes: &c.writes}, nil
}

type writeCountedFile struct {
	vfs.File
	writes *atomic.Int64
}

func (f writeCountedFile) WriteAt(p []byte, off int64) (int, error) {
	f.writes.Add(1)
	return f.File.WriteAt(p, off)
}

func (f writeCountedFile) SyscallConn() (syscall.RawConn, error) {
	f.writes.Add(1)
	return f.File.(syscall.Conn).SyscallConn()
}
