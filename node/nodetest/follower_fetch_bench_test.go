//go:build !race

package nodetest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkFetchFromFollower measures, with three in-process nodes in
// racks a, b and c and a partition led by node 1 (rack a), how long a
// record takes from the start of its produce (acks=all) to a consumer
// that reads it from the leader (client.rack=a) or from the follower in
// its rack (client.rack=b), one record at a time: the producer sends the
// next once the consumer has the last. It reports the median and 99th
// percentile of that produce-to-consume latency, of the produce's
// acknowledgement alone, and of the time from the acknowledgement to the
// consumer having the record. Reported, not asserted:
//
//	go test ./node/nodetest/ -run '^$' -bench FetchFromFollower -benchtime 2000x
//
// On loopback there is no distance for a follower to save; what the
// figures show is what reading from a follower costs here: the follower
// learns the high watermark that makes a record readable one answer of
// its leader after the answer that brought the record.
func BenchmarkFetchFromFollower(b *testing.B) {
	for _, tc := range []struct{ name, rack string }{{"leader", "a"}, {"follower", "b"}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			c := rackCluster(b, ctx, "bench")
			p, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.DefaultProduceTopic("bench"),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.Rack(tc.rack), kgo.ConsumeTopics("bench"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			one := func(i int) (acked, consumed time.Duration) {
				start := time.Now()
				if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				acked = time.Since(start)
				for got := false; !got; {
					fs := cl.PollFetches(ctx)
					if ctx.Err() != nil {
						b.Fatal(ctx.Err())
					}
					fs.EachRecord(func(r *kgo.Record) { got = string(r.Value) == strconv.Itoa(i) })
				}
				return acked, time.Since(start)
			}
			for i := range 50 { // connections, sessions, the move to the follower
				one(-1 - i)
			}
			before := scrapeTB(b, c, 1)
			acks := make([]time.Duration, 0, b.N)
			lat := make([]time.Duration, 0, b.N)
			after := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				a, l := one(i)
				acks, lat, after = append(acks, a), append(lat, l), append(after, l-a)
			}
			b.StopTimer()
			if served := scrapeTB(b, c, 1) - before; tc.rack == "b" && served < float64(b.N) {
				b.Fatalf("node 2 served %v of the %d records as a follower", served, b.N)
			}
			slices.Sort(acks)
			slices.Sort(lat)
			slices.Sort(after)
			q := func(d []time.Duration, f float64) float64 {
				return float64(d[min(len(d)-1, int(f*float64(len(d))))].Nanoseconds()) / 1e6
			}
			b.ReportMetric(q(lat, 0.5), "p50-ms")
			b.ReportMetric(q(lat, 0.99), "p99-ms")
			b.ReportMetric(q(acks, 0.5), "ack-p50-ms")
			b.ReportMetric(q(acks, 0.99), "ack-p99-ms")
			b.ReportMetric(q(after, 0.5), "after-ack-p50-ms")
			b.ReportMetric(q(after, 0.99), "after-ack-p99-ms")
		})
	}
}

// scrapeTB returns node i's skein_fetch_follower_records_total.
func scrapeTB(t testing.TB, c *Cluster, i int) float64 {
	return series(t, c, i, "skein_fetch_follower_records_total")
}
