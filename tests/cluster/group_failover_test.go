package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// consumption is what a group's members read: by record value, each
// (member, generation) that read it.
type consumption struct {
	mu   sync.Mutex
	read map[string][]readBy
}

type readBy struct {
	member     string
	generation int32
}

func (c *consumption) add(value, member string, generation int32) {
	c.mu.Lock()
	c.read[value] = append(c.read[value], readBy{member, generation})
	c.mu.Unlock()
}

func (c *consumption) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.read)
}

// A consumer group on a replicated __consumer_offsets (replication factor
// 3): the node coordinating the group is killed with SIGKILL while two
// members consume and commit, and started again. The coordinator moves
// with the leadership of the group's offsets partition; the members find
// the new one and go on from the committed offsets: every record is read,
// none by two members of one generation, and the committed offsets end at
// every partition's end.
func TestGroupCoordinatorKilled(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.17%d", i) }, flags: replicationFlags})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, group, records, partitions = "orders-g", "g-failover", 6000, 6
	createReplicated(t, ctx, c, topic, partitions)
	h := history.New()
	produceN(t, c.client([]int{1, 2, 3}, kgo.DefaultProduceTopic(topic)), h, 1, records)
	for p := range int32(partitions) {
		h.ExpectConsumedFrom(history.TP{Topic: topic, Partition: p}, 0)
	}

	got := &consumption{read: map[string][]readBy{}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for m := range 2 {
		// Rebalances happen between polls only, so that the generation a
		// poll's records are read in is the one GroupMetadata says.
		cl := c.client([]int{m + 1}, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.LeaveGroup()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pctx, 20)
				pcancel()
				time.Sleep(20 * time.Millisecond) // the members' work: they read slowly, so the kill finds them busy
				member, gen := cl.GroupMetadata()
				fs.EachRecord(func(r *kgo.Record) {
					got.add(string(r.Value), member, gen)
					h.Consumed(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
				})
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Logf("member %d: commit: %v", m, err)
				}
				cl.AllowRebalance()
			}
		}()
	}
	waitFor(t, time.Minute, "a third of the records read", func() string {
		if n := got.count(); n < records/3 {
			return fmt.Sprintf("%d read", n)
		}
		return ""
	})
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	coord := adm.FindGroupCoordinators(ctx, group)[group]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	victim := int(coord.NodeID)
	t.Logf("killing node %d, the group's coordinator (%d records read)", victim, got.count())
	c.kill(victim)
	waitFor(t, time.Minute, "another coordinator", func() string {
		coord := adm.FindGroupCoordinators(ctx, group)[group]
		if id := int(coord.NodeID); id == victim || coord.Err != nil {
			return fmt.Sprintf("coordinator %d, %v", id, coord.Err)
		}
		return ""
	})
	c.start(victim)
	c.waitReady(victim)
	waitFor(t, 2*time.Minute, "every record read", func() string {
		if n := got.count(); n < records {
			return fmt.Sprintf("%d read", n)
		}
		return ""
	})
	// The committed offsets reach every partition's end.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the committed offsets at the partitions' ends", func() string {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err.Error()
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if co, _ := committed.Lookup(topic, o.Partition); co.At != o.Offset {
				behind = append(behind, fmt.Sprintf("%d: %d of %d", o.Partition, co.At, o.Offset))
			}
		})
		if len(behind) > 0 {
			return fmt.Sprint(behind)
		}
		return ""
	})
	close(stop)
	wg.Wait()
	// The members read nothing that was not sent, every acknowledged
	// record, each where the log has it.
	readBack(t, ctx, c, []int{1, 2, 3}, topic, h)
	if v := h.Check(); !v.OK() {
		t.Errorf("history: %v", v)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for v, by := range got.read {
		byGen := map[int32]string{} // generation: member
		for _, r := range by {
			if other, ok := byGen[r.generation]; ok && other != r.member {
				t.Errorf("%s read by two members of generation %d: %s and %s", v, r.generation, other, r.member)
			}
			byGen[r.generation] = r.member
		}
	}
	if len(got.read) != records {
		t.Errorf("%d distinct records read, %d produced", len(got.read), records)
	}
}
