package image

import (
	"maps"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// An image from before feature levels (no FeatureLevel record, brokers
// registered without their supported features) keeps the levels Skein
// served then; a FeatureLevel record changes one feature, 0 included,
// and an unregistered broker is gone.
func TestFeatureLevelsOfAnOldImage(t *testing.T) {
	// A registration as a Skein before feature levels encoded it.
	old, err := msgpack.Marshal(map[string]any{"id": 1, "host": "h1", "port": 9092, "rack": "", "cluster": "h1:9093", "inc": 5})
	if err != nil {
		t.Fatal(err)
	}
	var reg RegisterBroker
	if err := msgpack.Unmarshal(old, &reg); err != nil {
		t.Fatal(err)
	}
	im, err := Empty().Apply(0, &Cluster{ClusterID: "c"})
	if err == nil {
		im, err = im.Apply(1, &reg)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{MetadataVersion: 29, TransactionVersion: 2, GroupVersion: 1, ShareVersion: 1, StreamsVersion: 1}
	if got := im.FinalizedFeatures(); !maps.Equal(got, want) {
		t.Errorf("finalized %v, want %v", got, want)
	}
	if got := im.Brokers[1].SupportedFeatures(); got[ShareVersion] != (VersionRange{0, 1}) || got[MetadataVersion] != (VersionRange{7, 29}) {
		t.Errorf("an old broker supports %v", got)
	}

	im, err = im.Apply(2, &FeatureLevel{Name: ShareVersion, Level: 0})
	if err != nil {
		t.Fatal(err)
	}
	if im.FeatureLevel(ShareVersion) != 0 || im.FeatureLevel(GroupVersion) != 1 {
		t.Errorf("share.version %d, group.version %d", im.FeatureLevel(ShareVersion), im.FeatureLevel(GroupVersion))
	}
	if _, ok := im.FinalizedFeatures()[ShareVersion]; ok {
		t.Error("share.version at 0 is listed as finalized")
	}
	if _, err := im.Apply(3, &FeatureLevel{Name: ShareVersion, Level: -1}); err == nil {
		t.Error("a negative level applied")
	}

	if _, err := im.Apply(3, &UnregisterBroker{ID: 1, Incarnation: 4}); err == nil {
		t.Error("another incarnation's unregistration applied")
	}
	im, err = im.Apply(3, &UnregisterBroker{ID: 1, Incarnation: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := im.Brokers[1]; ok {
		t.Error("the unregistered broker is still there")
	}
}

// Kafka's rule for a metadata.version downgrade: safe only when no level
// between the two changed the metadata records.
func TestMetadataChanged(t *testing.T) {
	for _, tc := range []struct {
		from, to int16
		want     bool
	}{
		{29, 29, false}, {29, 23, false}, {29, 22, true}, {23, 22, true}, {22, 18, false}, {17, 16, true}, {8, 7, true},
	} {
		if got := MetadataChanged(tc.from, tc.to); got != tc.want {
			t.Errorf("MetadataChanged(%d, %d) = %v", tc.from, tc.to, got)
		}
	}
	if MetadataVersionName(29) != "4.2-IV1" || MetadataVersionName(7) != "3.3-IV3" || MetadataVersionName(30) != "" {
		t.Error("metadata.version names")
	}
}
