//go:build !race

package nodetest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skeinlog/skein/configs"
)

// TestConsumerLagFromTheCoordinator: a group's coordinator exports its lag
// on every partition it committed, those led by other nodes included,
// whose high watermarks it asks their leaders for; the other nodes export
// none of it. Three nodes on 127.0.10.x, a topic of three single-replica
// partitions (one led by each node).
func TestConsumerLagFromTheCoordinator(t *testing.T) {
	host := 1
	c := Start(t, 3, func(cfg *configs.Node) {
		a := fmt.Sprintf("127.0.10.%d:0", 10+host)
		cfg.Listen, cfg.Advertise, cfg.AdminListen = a, a, a
		cfg.OffsetsTopicNumPartitions = 1
		host++
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := produceSpread(t, ctx, c, "lagged")
	// Committed at 1, 2 and 3 of 10 records each: lags 9, 8 and 7.
	var offs kadm.Offsets
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: "lagged", Partition: p, At: int64(p) + 1, LeaderEpoch: -1})
	}
	var coordinator int
	waitFor(t, "the group's offsets committed", func() string {
		res, err := adm.CommitOffsets(ctx, "far", offs)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			return err.Error()
		}
		cs := adm.FindGroupCoordinators(ctx, "far")
		if cs["far"].Err != nil {
			return cs["far"].Err.Error()
		}
		coordinator = int(cs["far"].NodeID) - 1
		return ""
	})
	leaders := map[int32]int32{}
	for _, p := range describe(t, ctx, c, 0, "lagged") {
		leaders[p.Partition] = p.Leader
	}
	elsewhere := 0
	for _, l := range leaders {
		if int(l)-1 != coordinator {
			elsewhere++
		}
	}
	if elsewhere == 0 {
		t.Fatalf("the coordinator, node %d, leads every partition (%v): nothing to ask other nodes", coordinator+1, leaders)
	}

	lags := func(i int) map[string]float64 {
		resp, err := http.Get("http://" + c.Nodes[i].AdminAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, m := range mfs["skein_consumer_group_lag"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["group"] == "far" && labels["topic"] == "lagged" {
				out[labels["partition"]] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	// The first scrapes may find the node's client still learning the
	// cluster: the end offsets of partitions led elsewhere come within a
	// few of them.
	waitFor(t, "the lag of every partition on the coordinator", func() string {
		got := lags(coordinator)
		for p := range 3 {
			if want := float64(9 - p); got[strconv.Itoa(p)] != want {
				return fmt.Sprintf("node %d: lags %v, want 9, 8, 7 (leaders %v)", coordinator+1, got, leaders)
			}
		}
		return ""
	})
	for i := range c.Nodes {
		if got := lags(i); i != coordinator && len(got) > 0 {
			t.Errorf("node %d, not the coordinator, exports lags %v", i+1, got)
		}
	}
}
