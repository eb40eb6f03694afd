package tests

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "<default>" {
			c.Name = &parts[i+1]
		}
		e = append(e, c)
	}
	return e
}

// TestClientQuotasAPI: kadm sets, describes and removes quotas with
// Kafka's entities and filters, and gets Kafka's refusals.
func TestClientQuotasAPI(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	set := func(entity kadm.ClientQuotaEntity, key string, v float64) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
		if err != nil {
			return err
		}
		if res[0].Err != nil {
			return fmt.Errorf("%w: %s", res[0].Err, res[0].ErrMessage)
		}
		return nil
	}
	for _, s := range []struct {
		entity kadm.ClientQuotaEntity
		key    string
		v      float64
	}{
		{quotaEntity("user", "alice"), "producer_byte_rate", 1024},
		{quotaEntity("user", "alice", "client-id", "app"), "consumer_byte_rate", 2048},
		{quotaEntity("user", "<default>"), "request_percentage", 50},
		{quotaEntity("client-id", "app"), "controller_mutation_rate", 10},
		{quotaEntity("ip", "127.0.0.9"), "connection_creation_rate", 5},
	} {
		if err := set(s.entity, s.key, s.v); err != nil {
			t.Fatalf("set %s %s: %v", s.entity, s.key, err)
		}
	}
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
		d, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range d {
			out = append(out, q.Entity.String()+" "+fmt.Sprint(q.Values))
		}
		return out
	}
	alice := "alice"
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   int
	}{
		{"user alice", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &alice, MatchType: 0}}, 2},
		{"user alice, strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &alice, MatchType: 0}}, 1},
		{"default user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 1}}, 1},
		{"any user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, 3},
		{"any client id", false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 2}}, 2},
		{"any ip", false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: 2}}, 1},
		{"everything", false, nil, 5},
	} {
		if got := describe(tc.strict, tc.comps...); len(got) != tc.want {
			t.Errorf("describe %s: %v, want %d entities", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		entity kadm.ClientQuotaEntity
		key    string
		v      float64
		want   string
	}{
		{quotaEntity("user", "bob"), "producer_byte_rate", 0, "Quota producer_byte_rate must be greater than 0"},
		{quotaEntity("user", "bob"), "producer_byte_rate", 1.5, "must be a Long value"},
		{quotaEntity("user", "bob"), "connection_creation_rate", 5, "Invalid configuration key connection_creation_rate"},
		{quotaEntity("user", "bob", "ip", "127.0.0.1"), "producer_byte_rate", 5, "IP entity shouldnot be combined"},
		{quotaEntity("ip", "no such host.invalid"), "connection_creation_rate", 5, "is not a valid IP or resolvable host"},
	} {
		if err := set(tc.entity, tc.key, tc.v); !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set %s %s=%v: %v, want INVALID_REQUEST saying %q", tc.entity, tc.key, tc.v, err, tc.want)
		}
	}

	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("user", "alice"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("remove: %v %+v", err, res)
	}
	if got := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: &alice}); len(got) != 0 {
		t.Errorf("alice's quota is still there: %v", got)
	}
}

// TestProduceQuota: a producer_byte_rate holds a producing client to its
// rate, measured over the windows, within 10 %, while a client without a
// quota on the same node produces as fast as it can; the throttled
// client is told to wait, and the node counts it.
func TestProduceQuota(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.QuotaWindowNum, c.QuotaWindowSizeSeconds = 2, 1
	})
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "quota", 1, nil)
	const quota = 512 << 10
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "slow"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, res)
	}
	// Quotas count the bytes sent, compressed: these are not.
	value := make([]byte, 16<<10)
	rand.Read(value)
	rates := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, client := range []string{"slow", "fast"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := b.client(kgo.ClientID(client), kgo.DefaultProduceTopic("quota"), kgo.ProducerLinger(0),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			// A client's bucket starts with the windows' worth (2 s of
			// the quota) to spend at once: the rate is measured after.
			start, sent := time.Now(), 0
			var measuredFrom time.Time
			for time.Since(start) < 9*time.Second {
				if measuredFrom.IsZero() && time.Since(start) >= 3*time.Second {
					measuredFrom, sent = time.Now(), 0
				}
				var batch sync.WaitGroup
				for range 8 {
					batch.Add(1)
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							t.Errorf("%s: %v", client, err)
						}
						batch.Done()
					})
				}
				batch.Wait()
				sent += 8 * len(value)
			}
			mu.Lock()
			rates[client] = float64(sent) / time.Since(measuredFrom).Seconds()
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("slow %.0f B/s (quota %d), fast %.0f B/s", rates["slow"], quota, rates["fast"])
	if r := rates["slow"]; r > 1.1*quota || r < 0.9*quota {
		t.Errorf("the throttled client produced %.0f B/s, want %d within 10%%", r, quota)
	}
	if rates["fast"] < 2*quota {
		t.Errorf("the client without a quota produced %.0f B/s, want well above the other's quota", rates["fast"])
	}
	if v, _ := metricValue(b.metrics(), "skein_quota_throttle_seconds_total", map[string]string{"quota": "producer_byte_rate"}); v <= 0 {
		t.Errorf("skein_quota_throttle_seconds_total{producer_byte_rate} = %v, want some", v)
	}
}

// TestControllerMutationQuota: past its controller_mutation_rate a
// client's CreateTopics is refused THROTTLING_QUOTA_EXCEEDED, and told
// how long to wait.
func TestControllerMutationQuota(t *testing.T) {
	// A bucket of 2 s of the quota: the client is told to wait at most
	// that, and waits it before its next request.
	b := startBroker(t, func(c *configs.Node) { c.QuotaWindowNum = 2 })
	ctx := ctxFor(t)
	adm := b.admin()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "creator"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, res)
	}
	creator := kadm.NewClient(b.client(kgo.ClientID("creator"), kgo.RequestRetries(0)))
	if _, err := creator.CreateTopic(ctx, 40, 1, nil, "many"); err != nil {
		t.Fatalf("the first creation (within an empty window): %v", err)
	}
	_, err = creator.CreateTopic(ctx, 1, 1, nil, "one-more")
	if !errors.Is(err, kerr.ThrottlingQuotaExceeded) {
		t.Errorf("a creation past the quota: %v, want THROTTLING_QUOTA_EXCEEDED", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "another-client"); err != nil {
		t.Errorf("another client's creation: %v", err)
	}
}

// TestFetchQuota: a consumer_byte_rate holds a consuming client to its
// rate within 10 %, once its bucket's burst is spent.
func TestFetchQuota(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.QuotaWindowNum, c.QuotaWindowSizeSeconds = 2, 1
	})
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "quota-fetch", 1, nil)
	const quota = 1 << 20
	value := make([]byte, 16<<10)
	rand.Read(value)
	p := b.client(kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	for range 512 { // 8 MiB
		p.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("client-id", "reader"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quota}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, res)
	}
	cl := b.client(kgo.ClientID("reader"), kgo.ConsumeTopics("quota-fetch"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxPartitionBytes(128<<10))
	// The bucket starts with 2 s of the quota: the rate is measured from
	// the first fetch after 3 s to the last record.
	start, total, got := time.Now(), 0, 0
	var from time.Time
	for total < 512*len(value) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		if from.IsZero() && time.Since(start) >= 3*time.Second {
			from = time.Now()
		}
		fs.EachRecord(func(r *kgo.Record) {
			total += len(r.Value)
			if !from.IsZero() {
				got += len(r.Value)
			}
		})
	}
	if from.IsZero() {
		t.Fatalf("consumed everything within the burst, in %v", time.Since(start))
	}
	r := float64(got) / time.Since(from).Seconds()
	t.Logf("consumed %.0f B/s (quota %d)", r, quota)
	if r > 1.1*quota || r < 0.9*quota {
		t.Errorf("the throttled consumer read %.0f B/s, want %d within 10%%", r, quota)
	}
}
