//go:build !race

package nodetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFeatureLevelsCluster: a downgrade of share.version asked of node 1
// reaches every node's image: each stops listing the level in ApiVersions
// and refuses ShareGroupHeartbeat; an upgrade asked of node 2 turns share
// groups on again everywhere. Then node 3 is stopped, fenced, and
// unregistered through node 1, after which DescribeCluster, fenced brokers
// included, no longer lists it.
func TestFeatureLevelsCluster(t *testing.T) {
	c := Start(t, 3, fastReplication)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each node is asked itself, through its seed broker, not whichever
	// node kgo would pick.
	nodes := make([]*kgo.Broker, 3)
	for i := range nodes {
		nodes[i] = mustClient(t, c.Addr(i)).SeedBrokers()[0]
	}
	finalized := func(i int) map[string]int16 {
		t.Helper()
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, nodes[i])
		if err != nil {
			t.Fatalf("node %d ApiVersions: %v", i+1, err)
		}
		out := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			out[f.Name] = f.MaxVersionLevel
		}
		return out
	}
	waitShare := func(i int, level int16) {
		t.Helper()
		for {
			got, listed := finalized(i)["share.version"]
			if got == level && listed == (level > 0) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("node %d: share.version %d, want %d", i+1, got, level)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	heartbeat := func(i int) int16 {
		t.Helper()
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "features-sg", "55555555-5555-5555-5555-555555555555", []string{"features"}
		resp, err := hb.RequestWith(ctx, nodes[i])
		if err != nil {
			t.Fatalf("node %d ShareGroupHeartbeat: %v", i+1, err)
		}
		return resp.ErrorCode
	}
	update := func(i int, level int16, typ int8) {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		resp, err := req.RequestWith(ctx, nodes[i])
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			t.Fatalf("share.version %d through node %d: %v", level, i+1, err)
		}
	}

	for i := range nodes {
		waitShare(i, 1)
	}
	update(0, 0, 2) // a safe downgrade
	for i := range nodes {
		waitShare(i, 0)
		if code := heartbeat(i); code != kerr.UnsupportedVersion.Code {
			t.Fatalf("node %d answers a share heartbeat with share.version 0: %v", i+1, kerr.ErrorForCode(code))
		}
	}
	update(1, 1, 1)
	for i := range nodes {
		waitShare(i, 1)
		if code := heartbeat(i); code == kerr.UnsupportedVersion.Code {
			t.Fatalf("node %d refuses a share heartbeat with share.version 1", i+1)
		}
	}

	describe := func() map[int32]bool {
		t.Helper()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, nodes[0])
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			t.Fatalf("DescribeCluster: %v", err)
		}
		fenced := map[int32]bool{}
		for _, b := range resp.Brokers {
			fenced[b.NodeID] = b.IsFenced
		}
		return fenced
	}
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	if err := c.Nodes[2].Stop(sctx); err != nil {
		t.Fatal(err)
	}
	for {
		if fenced, listed := describe()[3]; listed && fenced {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node 3 never fenced: %v", describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
	unreg := kmsg.NewPtrUnregisterBrokerRequest()
	unreg.BrokerID = 3
	resp, err := unreg.RequestWith(ctx, nodes[0])
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("unregister 3: %v", err)
	}
	// The answer comes once the controller wrote it; node 1's image may
	// be a moment behind.
	for {
		brokers := describe()
		if _, listed := brokers[3]; !listed {
			if ids := slices.Sorted(maps.Keys(brokers)); !slices.Equal(ids, []int32{1, 2}) {
				t.Fatalf("brokers after unregistering 3: %v", ids)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node 3 still listed: %v", brokers)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
