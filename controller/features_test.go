package controller

import (
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/vfs"
)

// UpdateFeatures as Kafka's QuorumController decides it: upgrades, safe
// and unsafe downgrades, validate-only, levels no broker supports, and
// metadata.version's downgrade rule; the levels survive a restart, and a
// registered broker that supports less holds an upgrade back until it is
// unregistered.
func TestUpdateFeatures(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	h.stop()
	h.cfg.Broker.Features = image.SupportedFeatures()
	h.spawn()
	waitFor(t, "registered", func() bool { im := h.latest.Load(); return im != nil && len(im.Brokers) == 1 })
	if got := h.latest.Load(); !maps.Equal(got.Features, image.DefaultFeatureLevels()) {
		t.Fatalf("a new cluster's levels %v, want the defaults written", got.Features)
	}
	update := func(validateOnly bool, us ...FeatureUpdate) *UpdateFeaturesResult {
		t.Helper()
		return h.ask(&UpdateFeatures{Updates: us, ValidateOnly: validateOnly}).(*UpdateFeaturesResult)
	}
	const prefix = "The update failed for all features since the following feature had an error: "
	for _, tc := range []struct {
		name string
		u    FeatureUpdate
		want string
	}{
		{"downgrade as an upgrade", FeatureUpdate{image.ShareVersion, 0, UpgradeTypeUpgrade},
			"Invalid update version 0 for feature share.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"beyond the range", FeatureUpdate{image.ShareVersion, 2, UpgradeTypeUpgrade},
			"Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1"},
		{"unknown feature", FeatureUpdate{"no.such.version", 1, UpgradeTypeUpgrade},
			"Invalid update version 1 for feature no.such.version. Local controller 1 does not support this feature."},
		{"negative", FeatureUpdate{image.GroupVersion, -1, UpgradeTypeSafeDowngrade},
			"Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{"unknown upgrade type", FeatureUpdate{image.GroupVersion, 1, 7},
			"Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{"upgrade as a downgrade", FeatureUpdate{image.TransactionVersion, 2, UpgradeTypeSafeDowngrade}, ""},
		{"metadata lost", FeatureUpdate{image.MetadataVersion, 22, UpgradeTypeSafeDowngrade},
			"Unsupported metadata.version downgrade from 29 to 22. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata lost, unsafe", FeatureUpdate{image.MetadataVersion, 22, UpgradeTypeUnsafeDowngrade},
			"Unsupported metadata.version downgrade from 29 to 22. Unsafe metadata downgrade is not supported in this version."},
	} {
		res := update(false, tc.u)
		if tc.want == "" {
			if res.Err != nil {
				t.Errorf("%s: %v %s", tc.name, res.Err, res.Message)
			}
			continue
		}
		if res.Err != kerr.InvalidUpdateVersion || res.Message != prefix+tc.want {
			t.Errorf("%s: %v %q", tc.name, res.Err, res.Message)
		}
	}
	// One refused update refuses them all.
	if res := update(false, FeatureUpdate{image.GroupVersion, 0, UpgradeTypeSafeDowngrade}, FeatureUpdate{image.ShareVersion, 5, UpgradeTypeUpgrade}); res.Err == nil {
		t.Error("a request with a bad update was made")
	}
	if got := h.latest.Load().FeatureLevel(image.GroupVersion); got != 1 {
		t.Errorf("group.version %d after a refused request", got)
	}

	if res := update(false, FeatureUpdate{image.ShareVersion, 0, UpgradeTypeSafeDowngrade}, FeatureUpdate{image.MetadataVersion, 23, UpgradeTypeSafeDowngrade}); res.Err != nil {
		t.Fatalf("downgrade: %v %s", res.Err, res.Message)
	}
	if res := update(true, FeatureUpdate{image.ShareVersion, 1, UpgradeTypeUpgrade}); res.Err != nil {
		t.Fatalf("validate only: %v %s", res.Err, res.Message)
	}
	im := h.latest.Load()
	if im.FeatureLevel(image.ShareVersion) != 0 || im.FeatureLevel(image.MetadataVersion) != 23 {
		t.Fatalf("levels %v", im.Features)
	}

	h.stop()
	h.spawn()
	waitFor(t, "the levels after a restart", func() bool {
		im := h.latest.Load()
		return im.Brokers[1].Incarnation == h.cfg.Incarnation && im.FeatureLevel(image.ShareVersion) == 0 && im.FeatureLevel(image.MetadataVersion) == 23
	})

	// A broker whose binary has no share groups holds share.version at 0,
	// fenced or not, until it is unregistered.
	old := image.Broker{ID: 2, Host: "127.0.0.1", Port: 9093, Incarnation: 1, Features: map[string]image.VersionRange{image.MetadataVersion: {Min: 7, Max: 29}}}
	if d := h.ask(&registerBroker{Broker: old}).(*commandDone); d.Err != nil {
		t.Fatal(d.Err)
	}
	if res := update(false, FeatureUpdate{image.ShareVersion, 1, UpgradeTypeUpgrade}); res.Err != kerr.InvalidUpdateVersion ||
		res.Message != prefix+"Invalid update version 1 for feature share.version. Broker 2 does not support this feature." {
		t.Fatalf("upgrade past broker 2: %v %q", res.Err, res.Message)
	}
	if r := h.ask(&UnregisterBroker{ID: 9}).(*UnregisterBrokerResult); r.Err != kerr.BrokerIDNotRegistered || r.Message != "Broker ID 9 is not currently registered" {
		t.Fatalf("unregister 9: %v %q", r.Err, r.Message)
	}
	if r := h.ask(&UnregisterBroker{ID: 2}).(*UnregisterBrokerResult); r.Err != nil {
		t.Fatalf("unregister 2: %v %s", r.Err, r.Message)
	}
	if _, ok := h.latest.Load().Brokers[2]; ok {
		t.Fatal("broker 2 still registered")
	}
	if res := update(false, FeatureUpdate{image.ShareVersion, 1, UpgradeTypeUpgrade}); res.Err != nil {
		t.Fatalf("upgrade: %v %s", res.Err, res.Message)
	}
	if got := h.latest.Load().FinalizedFeatures()[image.ShareVersion]; got != 1 {
		t.Fatalf("share.version %d", got)
	}
}

// waitFor polls cond until it holds, for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
