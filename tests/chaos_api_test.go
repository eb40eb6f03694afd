package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
)

// A node that did not opt in refuses every fault, and says how to opt in;
// it still shows what is set (nothing) and who it is.
func TestChaosRefused(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) { c.ChaosEnable = false })
	for path, body := range map[string]string{
		"/v1/faults": `{"actor": "node/1/controller", "kind": "panic"}`,
		"/v1/links":  `{"peer": 2, "cut": true}`,
		"/v1/clock":  `{"offset": "90s"}`,
		"/v1/disk":   `{"fail": "full"}`,
	} {
		code, out := b.adminDo("POST", path, body)
		var e struct{ Error string }
		if code != http.StatusForbidden || json.Unmarshal(out, &e) != nil || !strings.Contains(e.Error, "chaos.enable") {
			t.Errorf("POST %s on a node without chaos.enable: %d %s; want 403 naming chaos.enable", path, code, out)
		}
		if code, out := b.adminDo("GET", path, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, out)
		}
	}
	code, out := b.adminDo("GET", "/v1/node", "")
	var who struct {
		Node  int32
		PID   int
		Chaos bool `json:"chaos_enable"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &who) != nil || who.Node != 1 || who.PID != os.Getpid() || who.Chaos {
		t.Fatalf("GET /v1/node: %d %s", code, out)
	}
}

// A full disk, injected, fails produce with KAFKA_STORAGE_ERROR (what a
// client retries) and shows in /metrics; healed, the partition recovers by
// itself and holds every record it acknowledged.
func TestChaosDiskFull(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustCreate(t, ctx, kadm.NewClient(newClientFor(t, b.addr())), "disk", 1, nil)
	once := newClientFor(t, b.addr(), kgo.DefaultProduceTopic("disk"), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.ProducerLinger(0))
	seq := 0
	produceOne := func(cl *kgo.Client) error {
		err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(seq)), Value: []byte("v")}).FirstErr()
		if err == nil {
			seq++
		}
		return err
	}
	for range 10 {
		if err := produceOne(once); err != nil {
			t.Fatalf("produce before the fault: %v", err)
		}
	}
	if code, out := b.adminDo("POST", "/v1/disk", `{"fail": "full", "for": "5m"}`); code != http.StatusCreated {
		t.Fatalf("POST /v1/disk: %d %s", code, out)
	}
	if err := produceOne(once); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if v, _ := metricValue(b.metrics(), "skein_chaos_faults_active", map[string]string{"type": "disk"}); v != 1 {
		t.Fatalf("skein_chaos_faults_active{type=disk} = %v, want 1", v)
	}
	if code, out := b.adminDo("DELETE", "/v1/chaos", ""); code != http.StatusOK || !strings.Contains(string(out), `"removed": 1`) {
		t.Fatalf("DELETE /v1/chaos: %d %s", code, out)
	}
	retrying := newClientFor(t, b.addr(), kgo.DefaultProduceTopic("disk"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	for range 10 {
		if err := produceOne(retrying); err != nil {
			t.Fatalf("produce after the heal: %v", err)
		}
	}
	readKeys(t, ctx, b.addr(), "disk", seq)
}

// A clock fault moves the node's clock: the broker's timestamps
// (LogAppendTime) follow it, and come back when it ends.
func TestChaosClock(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	appendTime := "LogAppendTime"
	mustCreate(t, ctx, kadm.NewClient(newClientFor(t, b.addr())), "clock", 1, map[string]*string{"message.timestamp.type": &appendTime})
	cl := newClientFor(t, b.addr(), kgo.DefaultProduceTopic("clock"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"clock": {0: kgo.NewOffset().AtStart()}}))
	// stamp produces a record and reads back the time the broker gave it.
	stamp := func() time.Time {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).First()
		if err != nil {
			t.Fatal(err)
		}
		for {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			for _, got := range fs.Records() {
				if got.Offset == r.Offset {
					return got.Timestamp
				}
			}
		}
	}
	if code, out := b.adminDo("POST", "/v1/clock", `{"offset": "-2h", "for": "5m"}`); code != http.StatusOK {
		t.Fatalf("POST /v1/clock: %d %s", code, out)
	}
	// An hour's margin either way: the test measures the fault, not the
	// machine's speed.
	if got := time.Since(stamp()); got < time.Hour || got > 3*time.Hour {
		t.Fatalf("a record appended 2h behind is stamped %v ago", got)
	}
	if code, out := b.adminDo("POST", "/v1/clock", `{"jump": "-2h", "for": "5m"}`); code != http.StatusOK || !strings.Contains(string(out), `"offset": "-4h0m0s"`) {
		t.Fatalf("POST /v1/clock jump: %d %s", code, out)
	}
	if code, out := b.adminDo("DELETE", "/v1/clock", ""); code != http.StatusOK {
		t.Fatalf("DELETE /v1/clock: %d %s", code, out)
	}
	if got := time.Since(stamp()); got > time.Hour || got < -time.Hour {
		t.Fatalf("after the heal, a record is stamped %v ago", got)
	}
}

// An actor fault ends by itself when its lifetime is over, and the
// injection is counted.
func TestChaosFaultLifetime(t *testing.T) {
	b := startBroker(t)
	code, out := b.adminDo("POST", "/v1/faults", `{"actor": "node/*/partitions/*", "kind": "delay", "delay": "1ms", "for": "100ms"}`)
	var f struct{ Expires string }
	if code != http.StatusCreated || json.Unmarshal(out, &f) != nil || f.Expires == "" {
		t.Fatalf("POST /v1/faults: %d %s", code, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, out := b.adminDo("GET", "/v1/faults", "")
		var list struct{ Faults []any }
		if json.Unmarshal(out, &list) == nil && len(list.Faults) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fault outlived its lifetime: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, _ := metricValue(b.metrics(), "skein_chaos_faults_injected_total", map[string]string{"type": "actor"}); v != 1 {
		t.Fatalf("skein_chaos_faults_injected_total{type=actor} = %v, want 1", v)
	}
}
