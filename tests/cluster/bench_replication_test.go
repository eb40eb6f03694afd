package cluster

// Benchmarks of replication: three `skein node` processes on one machine,
// a topic of 6 partitions with replication factor 3 (min.insync.replicas
// 2) or 1, idempotent acks=all producers, both durability modes, records
// of 1 KiB and 100 B; and the time from killing a partition's leader with
// SIGKILL to the first acknowledged produce on its successor. They run
// only with -bench, without -race:
//
//	go test -run '^$' -bench ReplicatedProduce -benchtime 1x ./tests/cluster/
//	go test -run '^$' -bench LeaderFailover -benchtime 10x ./tests/cluster/
//
// With PROFDIR=dir, the produce benchmark's nodes write CPU profiles
// there (node1.prof, ...), stopped gracefully at its end.

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/tests/procstat"
)

// benchProduceFor is how long each produce benchmark writes.
const benchProduceFor = 10 * time.Second

// BenchmarkReplicatedProduce reports, per durability, record size and
// replication factor: MB/s and records/s acknowledged, p50 and p99 produce
// latency (from Produce to its acknowledgement), and the CPU the three
// nodes spent per GB produced (replication included).
func BenchmarkReplicatedProduce(b *testing.B) {
	for _, durability := range []string{"fsync", "replicated"} {
		for _, size := range []int{1024, 100} {
			for _, rf := range []int16{1, 3} {
				b.Run(fmt.Sprintf("durability=%s/size=%d/rf=%d", durability, size, rf), func(b *testing.B) {
					benchReplicatedProduce(b, durability, size, rf)
				})
			}
		}
	}
}

func benchReplicatedProduce(b *testing.B, durability string, size int, rf int16) {
	c, _ := newBenchCluster(b, "--set", "durability="+durability)
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	topic := benchTopic("produce")
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	minISR := "2"
	if rf == 1 {
		minISR = "1"
	}
	if res, err := adm.CreateTopic(ctx, 6, rf, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || res.Err != nil {
		b.Fatalf("create: %v %v", err, res.Err)
	}
	cpu := func() time.Duration {
		var sum time.Duration
		for i := 1; i <= numNodes; i++ {
			d, err := procstat.CPU(c.nodes[i].cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			sum += d
		}
		return sum
	}
	// Random bytes, uncompressed: what the brokers carry is what is
	// counted.
	value := make([]byte, size)
	rand.Read(value)
	var mu sync.Mutex
	var latencies []time.Duration
	var acked, failed int
	b.ResetTimer()
	cpu0, start := cpu(), time.Now()
	var wg sync.WaitGroup
	for range 4 {
		cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(10000), kgo.ProducerBatchCompression(kgo.NoCompression()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < benchProduceFor {
				sent := time.Now()
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					d := time.Since(sent)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failed++
						return
					}
					acked++
					latencies = append(latencies, d)
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	elapsed, spent := time.Since(start), cpu()-cpu0
	b.StopTimer()
	if failed > 0 {
		b.Errorf("%d records failed", failed)
	}
	slices.Sort(latencies)
	bytes := float64(acked * size)
	b.ReportMetric(bytes/elapsed.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(acked)/elapsed.Seconds(), "records/s")
	b.ReportMetric(benchMs(benchPercentile(latencies, 0.5)), "p50-ms")
	b.ReportMetric(benchMs(benchPercentile(latencies, 0.99)), "p99-ms")
	b.ReportMetric(spent.Seconds()/(bytes/1e9), "cpu-s/GB")
	if os.Getenv("PROFDIR") != "" {
		for i := 1; i <= numNodes; i++ {
			c.stop(i) // the profiles are written as the nodes stop
		}
	}
}

// BenchmarkLeaderFailover measures, b.N times, the time from killing the
// leader of a partition (replication factor 3) with SIGKILL to the first
// produce acknowledged after it, by its successor: the session timeout
// that fences the dead broker, the election, and the producer finding the
// new leader. With Kafka's default timeouts and with tuned ones
// (broker.session.timeout.ms 3000, heartbeats every 500 ms).
func BenchmarkLeaderFailover(b *testing.B) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"timeouts=default", nil},
		{"timeouts=tuned", []string{"--set", "broker.session.timeout.ms=3000", "--set", "broker.heartbeat.interval.ms=500"}},
	} {
		b.Run(tc.name, func(b *testing.B) { benchLeaderFailover(b, tc.flags) })
	}
}

func benchLeaderFailover(b *testing.B, flags []string) {
	c, _ := newBenchCluster(b, flags...)
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	topic := benchTopic("failover")
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	minISR := "2"
	if res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || res.Err != nil {
		b.Fatalf("create: %v %v", err, res.Err)
	}
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c.inSync(b, ctx, topic)
		victim := c.leaderOf(b, ctx, topic, 0)
		// A producer that sends one record at a time, and reports when
		// each is acknowledged.
		cl := c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		acks := make(chan time.Time, 1024)
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for pctx.Err() == nil {
				if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
					select {
					case acks <- time.Now():
					default:
					}
				}
			}
		}()
		<-acks // the producer is going
		b.StartTimer()
		killed := time.Now()
		c.kill(victim)
		var first time.Time
		for first.Before(killed) {
			first = <-acks
		}
		b.StopTimer()
		took = append(took, first.Sub(killed))
		pcancel()
		<-done
		cl.Close()
		c.start(victim)
		c.waitReady(victim)
	}
	slices.Sort(took)
	b.ReportMetric(benchMs(benchPercentile(took, 0.5)), "p50-ms")
	b.ReportMetric(benchMs(benchPercentile(took, 0.99)), "p99-ms")
	b.ReportMetric(benchMs(took[len(took)-1]), "max-ms")
}
