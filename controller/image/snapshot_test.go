package image

import (
	"reflect"
	"testing"
)

// A snapshot's records rebuild the image they were taken from.
func TestRecordsRebuildTheImage(t *testing.T) {
	v := "compact"
	steps := []Record{
		&Cluster{ClusterID: "c1"},
		&RegisterBroker{ID: 2, Host: "h2", Port: 9092, Rack: "r2", ClusterAddr: "h2:9093", Incarnation: 7},
		&FenceBroker{ID: 2, Incarnation: 7, Fenced: true},
		&RegisterBroker{ID: 1, Host: "h1", Port: 9092},
		&CreateTopic{Name: "orders", ID: TopicID{1}, Partitions: []Partition{
			{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
			{Index: 1, Leader: 2, LeaderEpoch: 3, PartitionEpoch: 4, Replicas: []int32{2}, ISR: []int32{2}},
		}, Configs: map[string]string{"retention.ms": "1000"}},
		&CreateTopic{Name: "__consumer_offsets", ID: TopicID{2}, Partitions: []Partition{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}, Internal: true},
		&CreateTopic{Name: "gone", ID: TopicID{3}, Partitions: []Partition{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}},
		&DeleteTopic{ID: TopicID{3}},
		&SetConfigs{Resource: ResourceTopic, Name: "orders", Configs: map[string]*string{"cleanup.policy": &v}},
		&SetConfigs{Resource: ResourceBroker, Configs: map[string]*string{"log.retention.ms": new("5000")}},
		&SetConfigs{Resource: ResourceBroker, Name: "2", Configs: map[string]*string{"log.retention.bytes": new("100")}},
		&SetConfigs{Resource: ResourceGroup, Name: "readers", Configs: map[string]*string{"consumer.session.timeout.ms": new("50000")}},
		&SetConfigs{Resource: ResourceGroup, Name: "gone", Configs: map[string]*string{"consumer.session.timeout.ms": new("50000")}},
		&SetConfigs{Resource: ResourceGroup, Name: "gone", Configs: map[string]*string{"consumer.session.timeout.ms": nil}},
		&AllocateProducerIDs{First: 0, Size: 1000},
		&AllocateProducerIDs{First: 1000, Size: 1000},
		&SetExtension{Extension: Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}},
		&SetExtension{Extension: Extension{Name: "audit", Kind: "count"}},
		&SetExtension{Extension: Extension{Name: "gone", Kind: "count"}},
		&DeleteExtension{Name: "gone"},
		&RegisterBroker{ID: 3, Host: "h3", Port: 9092, Incarnation: 1, Features: SupportedFeatures()},
		&RegisterBroker{ID: 4, Host: "h4", Port: 9092, Incarnation: 1},
		&UnregisterBroker{ID: 4, Incarnation: 1},
		&FeatureLevel{Name: ShareVersion, Level: 0},
		&FeatureLevel{Name: TransactionVersion, Level: 1},
	}
	im := Empty()
	for i, r := range steps {
		var err error
		if im, err = im.Apply(int64(i), r); err != nil {
			t.Fatal(err)
		}
	}
	back := Empty()
	for _, r := range im.Records() {
		var err error
		if back, err = back.Apply(im.Offset, r); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(back, im) {
		t.Fatalf("rebuilt image differs:\n got %+v\nwant %+v", back, im)
	}
	if len(Empty().Records()) != 0 {
		t.Fatal("the empty image has records")
	}
}
