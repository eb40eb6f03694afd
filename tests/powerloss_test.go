package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A power loss, injected (POST /v1/power-loss: what was written but not
// synced is dropped, and the node dies), is what durability is about:
// under durability fsync every acknowledged record survives it; under
// replicated, on a node alone, what was acknowledged but not yet flushed
// is gone, as in Kafka.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		durability string
		survive    bool
	}{{"fsync", true}, {"replicated", false}} {
		t.Run(tc.durability, func(t *testing.T) {
			node := newChildNode(t)
			node.env = []string{"SKEIN_CHAOS_ENABLE=true", "SKEIN_DURABILITY=" + tc.durability}
			node.start()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			mustCreate(t, ctx, kadm.NewClient(newClientFor(t, node.addr)), "power", 1, nil)
			cl := newClientFor(t, node.addr, kgo.DefaultProduceTopic("power"), kgo.ProducerLinger(0))
			const n = 200
			for i := range n {
				if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v")}).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
			}
			cl.Close()

			resp, err := http.Post("http://"+node.admin+"/v1/power-loss", "application/json", nil)
			if err != nil {
				t.Fatalf("POST /v1/power-loss: %v", err)
			}
			var lost struct{ Files, Dropped int64 }
			err = json.NewDecoder(resp.Body).Decode(&struct {
				Files   *int64 `json:"files"`
				Dropped *int64 `json:"dropped_bytes"`
			}{&lost.Files, &lost.Dropped})
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /v1/power-loss: %d %v", resp.StatusCode, err)
			}
			select {
			case <-node.exited:
			case <-time.After(time.Minute):
				t.Fatal("the node outlived its power loss")
			}
			t.Logf("power loss: %d bytes of %d files dropped", lost.Dropped, lost.Files)
			node.start()
			end := endOffsetAt(t, ctx, node.addr, "power")
			switch {
			case tc.survive && end != n:
				t.Fatalf("after the power loss the log ends at %d; %d records were acknowledged", end, n)
			case tc.survive && lost.Dropped != 0 && end == n:
				// Bytes of files other than the log (indexes, checkpoints
				// written since their last sync) may be dropped.
			case !tc.survive && (end >= n || lost.Dropped == 0):
				t.Fatalf("under durability replicated the log ends at %d after the power loss (%d bytes dropped); the unflushed records should be gone", end, lost.Dropped)
			}
			readKeys(t, ctx, node.addr, "power", int(end))
		})
	}
}

// endOffsetAt is the high watermark of topic's partition 0 at the broker
// at addr.
func endOffsetAt(t *testing.T, ctx context.Context, addr, topic string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(newClientFor(t, addr)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s-0: %v", topic, o.Err)
	}
	return o.Offset
}
