//go:build kafkadiff

package diff

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// featureUpdate builds an UpdateFeatures request of one update.
func featureUpdate(name string, level int16, upgradeType int8, validateOnly bool) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	req.FeatureUpdates, req.ValidateOnly = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, validateOnly
	return req
}

// apiVersionsReq is an ApiVersions request Kafka takes at v3+ (a client
// software name).
func apiVersionsReq() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "skein-diff", "1"
	return req
}

// finalizedLevel is a feature's finalized level on the broker at addr, 0
// when it is not finalized.
func finalizedLevel(t *testing.T, addr, name string) int16 {
	t.Helper()
	req := apiVersionsReq()
	req.Version = 4
	o := send(addr, req)
	if o.err != nil {
		t.Fatal(o.err)
	}
	for _, f := range o.resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel
		}
	}
	return 0
}

// TestUpdateFeatures compares UpdateFeatures' answers, at v1 (results per
// feature) and v2: levels beyond the supported ranges, unknown features
// and upgrade types, a downgrade asked as an upgrade and the reverse,
// metadata.version downgrades Kafka refuses and one it allows (validate
// only), and a real downgrade of share.version to 0, under which the share
// group APIs answer alike, and back to 1.
func TestUpdateFeatures(t *testing.T) {
	const upgrade, safe, unsafe = 1, 2, 3
	cases := []struct {
		name         string
		feature      string
		level        int16
		upgradeType  int8
		validateOnly bool
	}{
		{"share beyond its range", "share.version", 2, upgrade, false},
		{"metadata beyond its range", "metadata.version", 30, upgrade, false},
		{"unknown feature", "no.such.version", 1, upgrade, false},
		{"unknown feature to 0", "no.such.version", 0, safe, false},
		{"negative level", "group.version", -1, safe, false},
		{"unknown upgrade type", "group.version", 1, 9, false},
		{"downgrade as an upgrade", "share.version", 0, upgrade, false},
		{"upgrade as a downgrade", "metadata.version", 29, safe, false},
		{"same level", "transaction.version", 2, upgrade, false},
		{"metadata downgrade losing records", "metadata.version", 22, safe, false},
		{"metadata downgrade losing records, unsafe", "metadata.version", 22, unsafe, false},
		{"metadata downgrade, validate only", "metadata.version", 23, safe, true},
		{"share downgrade, validate only", "share.version", 0, unsafe, true},
		{"kraft.version", "kraft.version", 1, upgrade, true},
	}
	for _, v := range []int16{1, 2} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("v%d/%s", v, tc.name), func(t *testing.T) {
				newCase(t).compareAt(featureUpdate(tc.feature, tc.level, tc.upgradeType, tc.validateOnly), v)
			})
		}
	}

	t.Run("share.version 0", func(t *testing.T) {
		c := newCase(t)
		c.compare(featureUpdate("share.version", 0, safe, false))
		t.Cleanup(func() {
			k, sk := newCase(t).compare(featureUpdate("share.version", 1, upgrade, false))
			if r := k.(*kmsg.UpdateFeaturesResponse); r.ErrorCode != 0 {
				t.Fatalf("kafka refused share.version 1: %v", r.ErrorMessage)
			}
			if r := sk.(*kmsg.UpdateFeaturesResponse); r.ErrorCode != 0 {
				t.Fatalf("skein refused share.version 1: %v", r.ErrorMessage)
			}
			waitFor(t, "share.version 1 on both", func() bool {
				return finalizedLevel(t, kafkaAddr, "share.version") == 1 && finalizedLevel(t, skeinAddr, "share.version") == 1
			})
		})
		waitFor(t, "share.version 0 on both", func() bool {
			return finalizedLevel(t, kafkaAddr, "share.version") == 0 && finalizedLevel(t, skeinAddr, "share.version") == 0
		})
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "diff-uf-share", "66666666-6666-6666-6666-666666666666", 0, []string{"diff-uf"}
		c.compare(hb)
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"diff-uf-share"}
		c.compare(d)
		o := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "diff-uf-share"
		o.Groups = append(o.Groups, g)
		c.compare(o)
		del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		del.GroupID = "diff-uf-share"
		c.compare(del)
	})
}

// TestUnregisterBroker compares UnregisterBroker's answer for a broker id
// that was never registered.
func TestUnregisterBroker(t *testing.T) {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 4242
	newCase(t).compare(req)
}
