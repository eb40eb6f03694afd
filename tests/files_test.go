package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openFds counts this process's open descriptors of files and directories
// (not sockets, pipes or epoll: the test's own HTTP and Kafka clients come
// and go).
func openFds(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, "/") {
			n++
		}
	}
	return n
}

// TestPartitionRestartsGiveBackTheirFiles: partition actors restarted by
// injected panics, many times over, while franz-go produces and consumes
// through segments rolled small, give back every descriptor their previous
// incarnations held: the node's descriptor count, and the files it reports
// open, come back to what they were before.
func TestPartitionRestartsGiveBackTheirFiles(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const partitions, rounds = 6, 6
	segment := "2048"
	if _, err := b.admin().CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": &segment}, "leaky"); err != nil {
		t.Fatal(err)
	}
	seq := 0
	padding := make([]byte, 400)
	// produceAll writes 60 records to each partition, in segments of a few
	// records, and reads everything back from the start.
	produceAll := func() {
		t.Helper()
		cl := b.client(kgo.DefaultProduceTopic("leaky"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProduceRequestTimeout(2*time.Second))
		defer cl.Close()
		for range 60 {
			for p := range int32(partitions) {
				r := &kgo.Record{Partition: p, Key: padding, Value: []byte(strconv.Itoa(seq))}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
				seq++
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		readAll(t, b, "leaky", partitions)
	}
	produceAll()
	metricOpen := func() float64 {
		v, _ := metricValue(b.metrics(), "skein_open_files", nil)
		return v
	}
	// Every segment's files are open now, and the cache's cap is far
	// above them: what a restart failed to close would add up.
	baseFds, baseOpen := openFds(t), metricOpen()
	t.Logf("baseline: %d descriptors, %v files open", baseFds, baseOpen)

	// The panics hit the periodic tick, so that the segments stay the same
	// set of files throughout.
	for round := range rounds {
		for p := range partitions {
			b.injectFault(fmt.Sprintf(`{"actor": "node/1/partitions/leaky-%d", "kind": "panic", "count": 1, "message": "tick"}`, p))
		}
		eventually(t, "every partition restarted once more", func() bool {
			as := b.actors()
			for p := range partitions {
				if a := as[fmt.Sprintf("node/1/partitions/leaky-%d", p)]; a == nil || a.Restarts < int64(round+1) {
					return false
				}
			}
			return true
		})
	}
	readAll(t, b, "leaky", partitions)
	eventually(t, fmt.Sprintf("the descriptor count back to its baseline of %d", baseFds), func() bool {
		return openFds(t) <= baseFds && metricOpen() <= baseOpen
	})
	produceAll() // and the partitions still take records
}
