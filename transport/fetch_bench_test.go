package transport_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
	"github.com/skeinlog/skein/transport"
)

// BenchmarkFetchPath compares the two ways the writer can send records:
// sendfile(2) from the segment file to the socket, and reading them into a
// pooled buffer and writing that. A node in this process holds 256 MiB of
// 1 KiB records in 4 partitions (written just before, so in the page
// cache); each round fetches all of it over one loopback connection with a
// raw Fetch v12 client that does nothing with the records but find the next
// offset, with PartitionMaxBytes 1 MiB (franz-go's default) and 8 MiB.
//
//	go test ./transport/ -run '^$' -bench FetchPath -benchtime 8x
//
// The client runs in two places, the same code in both:
//   - client=inproc: a goroutine of this process. cpu-s/GB is the
//     process's user+system CPU (getrusage) per GB fetched, broker and
//     client together.
//   - client=process: a child process (this test binary, see TestMain).
//     broker-cpu-s/GB is then this process's CPU alone, the broker's, and
//     client-cpu-s/GB the child's.
//
// The split matters on loopback: the receiving side of a loopback socket
// reads the very pages the sender handed over, so a client reading what
// sendfile sent touches page-cache pages no CPU cache holds, while after a
// copy the bytes are still hot. In-process figures charge that to the
// broker; a client on another machine would never see it.
func BenchmarkFetchPath(b *testing.B) {
	const (
		partitions = 4
		valueSize  = 1 << 10
		total      = 256 << 20
	)
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(b.TempDir(), "data")
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	n, err := node.Start(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Stop(context.Background()) })
	addr := n.Addr().String()
	ctx := context.Background()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, valueSize)
	for i := range total / valueSize {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
		if i%(1<<14) == 0 && b.Failed() {
			b.FailNow()
		}
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	ends := make([]int64, partitions)
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	offs.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })

	for _, client := range []string{"inproc", "process"} {
		for _, partMax := range []int32{1 << 20, 8 << 20} {
			for _, path := range []struct {
				name string
				min  int64
			}{{"sendfile", 1}, {"copy", math.MaxInt64}} {
				name := fmt.Sprintf("client=%s/partition_max=%dMiB/%s", client, partMax>>20, path.name)
				b.Run(name, func(b *testing.B) {
					old := transport.SetSendfileMin(path.min)
					defer transport.SetSendfileMin(old)
					spec := benchSpec{Addr: addr, PartitionMaxBytes: partMax, Ends: ends, Rounds: b.N}
					if client == "inproc" {
						benchInProcess(b, spec)
					} else {
						benchChild(b, spec)
					}
				})
			}
		}
	}
}

// benchSpec is what a fetching client does: Rounds fetches of the topic
// "bench" from offset 0 to Ends, after one round to warm up.
type benchSpec struct {
	Addr              string
	PartitionMaxBytes int32
	Ends              []int64
	Rounds            int
}

func benchInProcess(b *testing.B, spec benchSpec) {
	nc, err := net.Dial("tcp", spec.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	fc := &fetchClient{nc: nc, partMax: spec.PartitionMaxBytes}
	bytes, err := fc.fetchAll(spec.Ends) // warm up: page cache, buffers
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for range spec.Rounds {
		if _, err := fc.fetchAll(spec.Ends); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuSeconds() - cpu0
	b.StopTimer()
	b.ReportMetric(cpu/(float64(bytes)*float64(spec.Rounds)/1e9), "cpu-s/GB")
}

// benchClientEnv holds a benchSpec as JSON in a child process started by
// benchChild; TestMain then runs the client instead of the tests.
const benchClientEnv = "SKEIN_BENCH_FETCH_CLIENT"

func TestMain(m *testing.M) {
	if spec := os.Getenv(benchClientEnv); spec != "" {
		if err := runBenchClient(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runBenchClient is the child's side: warm up, say "warm", wait for a line
// on stdin, fetch the rounds, say "done <bytes per round>".
func runBenchClient(js string) error {
	var spec benchSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		return err
	}
	nc, err := net.Dial("tcp", spec.Addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	fc := &fetchClient{nc: nc, partMax: spec.PartitionMaxBytes}
	bytes, err := fc.fetchAll(spec.Ends)
	if err != nil {
		return err
	}
	fmt.Println("warm")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for range spec.Rounds {
		if _, err := fc.fetchAll(spec.Ends); err != nil {
			return err
		}
	}
	fmt.Println("done", bytes)
	return nil
}

// benchChild runs the client in a child process and measures this
// process's CPU (the broker's) while the child fetches.
func benchChild(b *testing.B, spec benchSpec) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), benchClientEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "warm\n" {
		b.Fatalf("client: %q %v", line, err)
	}
	b.ResetTimer()
	cpu0 := cpuSeconds()
	fmt.Fprintln(stdin, "go")
	line, err := out.ReadString('\n')
	cpu := cpuSeconds() - cpu0
	b.StopTimer()
	var bytes int64
	if _, serr := fmt.Sscanf(line, "done %d", &bytes); err != nil || serr != nil {
		b.Fatalf("client: %q %v %v", line, err, serr)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(bytes)
	gb := float64(bytes) * float64(spec.Rounds) / 1e9
	b.ReportMetric(cpu/gb, "broker-cpu-s/GB")
	// The child's CPU includes its warm-up round and start; a bound, not
	// an exact figure.
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b.ReportMetric(client.Seconds()/(gb+float64(bytes)/1e9), "client-cpu-s/GB")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// fetchClient fetches a topic's partitions to their ends on one connection.
type fetchClient struct {
	nc      net.Conn
	partMax int32
	corr    int32
	req     []byte
	frame   []byte
}

// fetchAll fetches every partition from offset 0 to ends and returns the
// record bytes received.
func (c *fetchClient) fetchAll(ends []int64) (int64, error) {
	offsets := make([]int64, len(ends))
	var bytes int64
	for {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "bench"
		for p, off := range offsets {
			if off < ends[p] {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, c.partMax
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if len(rt.Partitions) == 0 {
			return bytes, nil
		}
		req.Topics = append(req.Topics, rt)
		resp, err := c.do(req)
		if err != nil {
			return 0, err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, fmt.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
				}
				bytes += int64(len(p.RecordBatches))
				if next := nextOffset(p.RecordBatches); next > 0 {
					offsets[p.Partition] = next
				}
			}
		}
	}
}

func (c *fetchClient) do(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	const version = 12
	req.SetVersion(version)
	c.corr++
	r := binary.BigEndian.AppendUint32(c.req[:0], 0)
	r = binary.BigEndian.AppendUint16(r, 1)
	r = binary.BigEndian.AppendUint16(r, version)
	r = binary.BigEndian.AppendUint32(r, uint32(c.corr))
	r = binary.BigEndian.AppendUint16(r, 0xffff) // null client id
	r = append(r, 0)                             // no tagged fields
	r = req.AppendTo(r)
	binary.BigEndian.PutUint32(r, uint32(len(r)-4))
	c.req = r
	if _, err := c.nc.Write(r); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(c.frame) < n {
		c.frame = make([]byte, n)
	}
	c.frame = c.frame[:n]
	if _, err := io.ReadFull(c.nc, c.frame); err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	// Correlation id, then the header's tagged fields (none).
	if err := resp.UnsafeReadFrom(c.frame[5:]); err != nil {
		return nil, err
	}
	return resp, nil
}

// nextOffset returns the offset after the last batch in b, 0 for none.
func nextOffset(b []byte) int64 {
	var next int64
	for len(b) >= 27 {
		size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		next = int64(binary.BigEndian.Uint64(b[0:8])) + int64(int32(binary.BigEndian.Uint32(b[23:27]))) + 1
		if size > len(b) {
			break
		}
		b = b[size:]
	}
	return next
}
