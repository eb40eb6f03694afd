package tests

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalizedFeatures returns the finalized feature levels and their epoch
// a node reports in ApiVersions.
func finalizedFeatures(t *testing.T, cl *kgo.Client) (map[string]int16, int64) {
	t.Helper()
	resp := rawReq[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, resp.FinalizedFeaturesEpoch
}

// updateFeature asks UpdateFeatures for one feature's level.
func updateFeature(t *testing.T, cl *kgo.Client, name string, level int16, upgradeType int8, validateOnly bool) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	req.FeatureUpdates, req.ValidateOnly = append(req.FeatureUpdates, u), validateOnly
	return rawReq[*kmsg.UpdateFeaturesResponse](t, cl, req)
}

// waitFeature polls a node's ApiVersions until the feature has level (0:
// not finalized).
func waitFeature(t *testing.T, cl *kgo.Client, name string, level int16) int64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, epoch := finalizedFeatures(t, cl)
		if got[name] == level {
			return epoch
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %d, want %d", name, got[name], level)
		}
	}
}

// shareHeartbeat joins a share group and returns the error code,
// waiting out the coordinator's first load.
func shareHeartbeat(t *testing.T, cl *kgo.Client, group, topic string) int16 {
	t.Helper()
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, "55555555-5555-5555-5555-555555555555", 0, []string{topic}
	resp := rawReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb)
	for deadline := time.Now().Add(time.Minute); resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		resp = rawReq[*kmsg.ShareGroupHeartbeatResponse](t, cl, hb)
	}
	return resp.ErrorCode
}

// TestFeatureLevels: UpdateFeatures on a node turns share groups off and
// on again through the controller; the share group APIs answer
// UNSUPPORTED_VERSION while share.version is 0, as Kafka's do; the levels
// survive a restart, and one beyond what the node supports is refused.
func TestFeatureLevels(t *testing.T) {
	b := startBroker(t)
	const topic, group = "features-share", "features-sg"
	if _, err := b.admin().CreateTopic(ctxFor(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := b.client()
	defer cl.Close()
	levels, epoch := finalizedFeatures(t, cl)
	if levels["share.version"] != 1 || levels["metadata.version"] != 29 || levels["transaction.version"] != 2 || epoch < 0 {
		t.Fatalf("a new node's levels %v (epoch %d)", levels, epoch)
	}

	resp := updateFeature(t, cl, "share.version", 2, 1, false)
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "The update failed for all features since the following feature had an error: Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1" {
		t.Fatalf("share.version 2: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	if resp := updateFeature(t, cl, "share.version", 0, 1, false); resp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("a downgrade as an upgrade: %d", resp.ErrorCode)
	}
	if resp := updateFeature(t, cl, "share.version", 0, 2, true); resp.ErrorCode != 0 {
		t.Fatalf("validate only: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	if got, _ := finalizedFeatures(t, cl); got["share.version"] != 1 {
		t.Fatalf("validate only changed share.version to %d", got["share.version"])
	}
	if resp := updateFeature(t, cl, "share.version", 0, 2, false); resp.ErrorCode != 0 {
		t.Fatalf("safe downgrade: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	off := waitFeature(t, cl, "share.version", 0)
	if off <= epoch {
		t.Errorf("finalized features epoch %d after the downgrade, was %d", off, epoch)
	}
	wantErr(t, "share heartbeat with share.version 0", shareHeartbeat(t, cl, group, topic), kerr.UnsupportedVersion)

	b.restart()
	cl.Close()
	cl = b.client()
	if got, _ := finalizedFeatures(t, cl); got["share.version"] != 0 || got["group.version"] != 1 {
		t.Fatalf("after a restart: %v", got)
	}
	wantErr(t, "share heartbeat after a restart", shareHeartbeat(t, cl, group, topic), kerr.UnsupportedVersion)

	if resp := updateFeature(t, cl, "share.version", 1, 1, false); resp.ErrorCode != 0 {
		t.Fatalf("upgrade: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	waitFeature(t, cl, "share.version", 1)
	wantErr(t, "share heartbeat with share.version 1", shareHeartbeat(t, cl, group, topic), nil)

	unreg := kmsg.NewPtrUnregisterBrokerRequest()
	unreg.BrokerID = 7
	if resp := rawReq[*kmsg.UnregisterBrokerResponse](t, cl, unreg); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code ||
		resp.ErrorMessage == nil || *resp.ErrorMessage != "Broker ID 7 is not currently registered" {
		t.Fatalf("unregister 7: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
}
