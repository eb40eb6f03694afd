package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer groups in a cluster: __consumer_offsets is spread over the
// nodes and each group's coordinator is the leader of its partition there,
// wherever the group's members bootstrap. Two members seeded with
// different nodes share a topic's partitions, read every record and
// commit; a third node reports the group's committed offsets at the end
// of every partition.
func TestConsumerGroupAcrossNodes(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.4%d", i) }})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client([]int{3}))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "grp"); err != nil {
		t.Fatal(err)
	}
	const n = 600
	prod := c.client([]int{1})
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Topic: "grp", Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, seed := range []int{1, 2} {
		cl := c.client([]int{seed}, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("grp"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
				})
				// NB: the end of the test cancels a commit under way.
				if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("member seeded with node %d: commit: %v", seed, err)
				}
			}
		}()
	}
	waitFor(t, readyTimeout, "every record read by the group", func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < n {
			return fmt.Sprintf("%d of %d records", len(seen), n)
		}
		return ""
	})
	ends, err := adm.ListEndOffsets(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, readyTimeout, "the group's commits at the end of every partition, as node 3 reports them", func() string {
		committed, err := adm.FetchOffsets(ctx, "g1")
		if err != nil {
			return err.Error()
		}
		var behind []string
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := committed.Lookup("grp", e.Partition); !ok || o.At != e.Offset {
				behind = append(behind, fmt.Sprintf("grp-%d at %d of %d", e.Partition, o.At, e.Offset))
			}
		})
		if len(behind) > 0 {
			return fmt.Sprint(behind)
		}
		return ""
	})
	close(done)
	cancel() // ends the members' polls
	wg.Wait()
}
