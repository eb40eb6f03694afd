package cli

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalizedLevel reads a feature's finalized level from cluster features
// -o json.
func finalizedLevel(t *testing.T, addr, name string) (featureView, int64) {
	t.Helper()
	var v featuresView
	decodeJSON(t, ok(t, addr, "", "cluster", "features", "-o", "json"), &v)
	for _, f := range v.Features {
		if f.Name == name {
			return f, v.Epoch
		}
	}
	t.Fatalf("cluster features lists no %s: %+v", name, v)
	return featureView{}, 0
}

// waitLevel polls cluster features until name is finalized at level.
func waitLevel(t *testing.T, addr, name string, level int16) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := finalizedLevel(t, addr, name); f.Finalized == level {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never finalized at %d", name, level)
		}
	}
}

// shareHeartbeatCode sends a raw ShareGroupHeartbeat and returns its
// error code, waiting out the share coordinator's first load.
func shareHeartbeatCode(t *testing.T, addr string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "features-sg", "55555555-5555-5555-5555-555555555555", 0, []string{"features"}
		resp, err := hb.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ShareGroupHeartbeat: %v", err)
		}
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			return resp.ErrorCode
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClusterFeatures: cluster features shows share.version on; a dry-run
// downgrade changes nothing; a downgrade to 0 turns share groups off (a
// ShareGroupHeartbeat is UNSUPPORTED_VERSION) and an upgrade on again;
// refused updates print the controller's reason with exit 1, a malformed
// --feature is a usage error, and unregistering an unknown broker is
// BROKER_ID_NOT_REGISTERED.
func TestClusterFeatures(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "features", "-p", "1", "-r", "1")
	share, epoch := finalizedLevel(t, addr, "share.version")
	if share.Finalized != 1 || share.SupportedMin != 0 || share.SupportedMax != 1 || epoch < 0 {
		t.Fatalf("share.version %+v, epoch %d", share, epoch)
	}
	out := ok(t, addr, "", "cluster", "features")
	if r := row(out, "share.version"); len(r) != 3 || r[1] != "0-1" || r[2] != "1" {
		t.Fatalf("text row %v\n%s", r, out)
	}
	if r := row(out, "EPOCH"); len(r) != 2 {
		t.Fatalf("no epoch line\n%s", out)
	}

	out = ok(t, addr, "", "cluster", "features", "downgrade", "--feature", "share.version=0", "--dry-run")
	if out != "share.version can be downgraded to 0 (dry run: nothing changed)\n" {
		t.Fatalf("dry run printed %q", out)
	}
	if f, e := finalizedLevel(t, addr, "share.version"); f.Finalized != 1 || e != epoch {
		t.Fatalf("after a dry run: share.version %d, epoch %d (was %d)", f.Finalized, e, epoch)
	}
	if code := shareHeartbeatCode(t, addr); code != 0 {
		t.Fatalf("share heartbeat with share.version 1: %v", kerr.ErrorForCode(code))
	}

	if out := ok(t, addr, "", "cluster", "features", "downgrade", "--feature", "share.version=0"); out != "share.version downgraded to 0\n" {
		t.Fatalf("downgrade printed %q", out)
	}
	waitLevel(t, addr, "share.version", 0)
	if code := shareHeartbeatCode(t, addr); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("share heartbeat with share.version 0: %v", kerr.ErrorForCode(code))
	}

	fails(t, addr, 1, "INVALID_UPDATE_VERSION", "", "cluster", "features", "upgrade", "--feature", "share.version=2")
	fails(t, addr, 1, "Local controller 1 only supports versions 0-1", "", "cluster", "features", "upgrade", "--feature", "share.version=2")
	fails(t, addr, 1, "Invalid update version 0 for feature group.version. Can't downgrade", "", "cluster", "features", "upgrade",
		"--feature", "group.version=0")
	fails(t, addr, 2, `--feature "share.version": want name=level`, "", "cluster", "features", "upgrade", "--feature", "share.version")
	fails(t, addr, 2, `unknown command "upgrad" for "skein cluster features"`, "", "cluster", "features", "upgrad")
	fails(t, addr, 2, "give at least one --feature", "", "cluster", "features", "upgrade")

	if out := ok(t, addr, "", "cluster", "features", "upgrade", "--feature", "share.version=1"); out != "share.version upgraded to 1\n" {
		t.Fatalf("upgrade printed %q", out)
	}
	waitLevel(t, addr, "share.version", 1)
	if code := shareHeartbeatCode(t, addr); code != 0 {
		t.Fatalf("share heartbeat after the upgrade: %v", kerr.ErrorForCode(code))
	}

	fails(t, addr, 1, "BROKER_ID_NOT_REGISTERED", "", "cluster", "unregister-broker", "7")
	fails(t, addr, 1, "Broker ID 7 is not currently registered", "", "cluster", "unregister-broker", "7")
	fails(t, addr, 2, `broker id "x"`, "", "cluster", "unregister-broker", "x")
}
