package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setGroupConfig sets a group config with IncrementalAlterConfigs.
func setGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("setting %s=%s on group %s: error %d", name, value, group, code)
	}
}

// shareLedger records, per record key, what share consumers did with it.
type shareLedger struct {
	mu       sync.Mutex
	accepted map[int]int   // key → times accepted
	released map[int]int   // key → times released
	counts   map[int]int32 // key → highest delivery count seen
}

func newShareLedger() *shareLedger {
	return &shareLedger{accepted: map[int]int{}, released: map[int]int{}, counts: map[int]int32{}}
}

// TestShareGroupDeliversEachRecordOnce runs four franz-go share consumers
// in one share group over a three-partition topic: one of them releases
// every record of the first delivery it sees; the others accept. Every
// record must be accepted exactly once, released ones delivered again
// with a higher delivery count; then the group's offsets are at the end.
func TestShareGroupDeliversEachRecordOnce(t *testing.T) {
	b := startBroker(t)
	adm := b.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group, n = "shared", "sg", 600
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := b.client()
	defer p.Close()
	setGroupConfig(t, p, group, "share.auto.offset.reset", "earliest")
	for i := range n {
		p.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	l := newShareLedger()
	total := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.accepted)
	}
	// The consumers stop once every record is accepted: polls block until
	// records come, so they poll under a context that ends then.
	pollCtx, allAccepted := context.WithCancel(ctx)
	defer allAccepted()
	// The releasing consumer starts alone and the others join once it has
	// released something: ShareFetch acquires whole batches, so consumers
	// that start together may take every record before it fetches at all.
	firstRelease := make(chan struct{})
	var releasedOnce sync.Once
	var wg sync.WaitGroup
	for c := range 4 {
		if c == 1 {
			select {
			case <-firstRelease:
			case <-ctx.Done():
				t.Fatal("the releasing consumer got no records before the deadline")
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := b.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
			defer cl.Close()
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				fs.EachRecord(func(r *kgo.Record) {
					key, _ := strconv.Atoi(string(r.Key))
					l.mu.Lock()
					defer l.mu.Unlock()
					l.counts[key] = max(l.counts[key], r.DeliveryCount())
					if c == 0 && r.DeliveryCount() == 1 {
						r.Ack(kgo.AckRelease)
						l.released[key]++
						releasedOnce.Do(func() { close(firstRelease) })
						return
					}
					r.Ack(kgo.AckAccept)
					l.accepted[key]++
					if len(l.accepted) == n {
						allAccepted()
					}
				})
			}
		}()
	}
	wg.Wait()
	if total() < n {
		t.Fatalf("accepted %d of %d records before the deadline", total(), n)
	}
	for i := range n {
		if l.accepted[i] != 1 {
			t.Errorf("record %d accepted %d times", i, l.accepted[i])
		}
		if l.released[i] > 0 && l.counts[i] < 2 {
			t.Errorf("record %d was released but never delivered again (delivery count %d)", i, l.counts[i])
		}
	}
	if len(l.released) == 0 {
		t.Errorf("the releasing consumer got no records: %s", fmt.Sprint(l.counts))
	}
}

// TestShareGroupReadCommitted: a share group with share.isolation.level
// read_committed gets the records of committed transactions only: those
// of an aborted one are never delivered, and those of a transaction still
// open come only after its commit.
func TestShareGroupReadCommitted(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group = "txn-shared", "sg-rc"
	if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	admin := b.client()
	defer admin.Close()
	setGroupConfig(t, admin, group, "share.auto.offset.reset", "earliest")
	setGroupConfig(t, admin, group, "share.isolation.level", "read_committed")

	p := b.client(kgo.TransactionalID("rc-producer"), kgo.DefaultProduceTopic(topic))
	defer p.Close()
	produce := func(prefix string, n int) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("%s-%d", prefix, i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := func(commit kgo.TransactionEndTry) {
		t.Helper()
		if err := p.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	produce("committed", 5)
	end(kgo.TryCommit)
	produce("aborted", 5)
	end(kgo.TryAbort)
	produce("open", 5) // left open until the committed records are in

	c := b.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	defer c.Close()
	got := map[string]bool{}
	committed := false
	poll := func(want int) {
		for len(got) < want && ctx.Err() == nil {
			c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				k := string(r.Key)
				switch {
				case strings.HasPrefix(k, "aborted"):
					t.Errorf("record %s of an aborted transaction was delivered", k)
				case strings.HasPrefix(k, "open") && !committed:
					t.Errorf("record %s of an open transaction was delivered", k)
				}
				got[k] = true
				r.Ack(kgo.AckAccept)
			})
		}
	}
	poll(5)
	committed = true
	end(kgo.TryCommit)
	poll(10)
	if len(got) != 10 {
		t.Fatalf("got %d committed records, want 10: %v", len(got), got)
	}
}
