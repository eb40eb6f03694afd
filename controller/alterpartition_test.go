package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// AlterPartition is decided against the partition as the image has it:
// only its leader, in its leader and partition epochs, may change the ISR,
// within the replicas, keeping itself, adding no fenced broker.
func TestAlterPartitionDecisions(t *testing.T) {
	im := image.Empty()
	for _, r := range []image.Record{
		&image.RegisterBroker{ID: 1, Incarnation: 1}, &image.RegisterBroker{ID: 2, Incarnation: 1},
		&image.RegisterBroker{ID: 3, Incarnation: 1}, &image.RegisterBroker{ID: 4, Incarnation: 1},
		&image.FenceBroker{ID: 3, Incarnation: 1, Fenced: true},
		&image.CreateTopic{Name: "r", ID: image.TopicID{1}, Partitions: []image.Partition{
			{Index: 0, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
		}},
	} {
		var err error
		if im, err = im.Apply(0, r); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{head: im}
	alter := func(leader, epoch, pepoch int32, isr ...int32) (*AlterPartitionResult, []image.Record) {
		res, recs := (&AlterPartition{TopicID: image.TopicID{1}, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: pepoch, ISR: isr}).decide(c)
		return res.(*AlterPartitionResult), recs
	}
	for _, tc := range []struct {
		name                  string
		leader, epoch, pepoch int32
		isr                   []int32
		want                  *kerr.Error
	}{
		{"another broker", 2, 4, 7, []int32{1, 2}, kerr.NotLeaderForPartition},
		{"an older leader epoch", 1, 3, 7, []int32{1}, kerr.FencedLeaderEpoch},
		{"an older partition epoch", 1, 4, 6, []int32{1}, kerr.InvalidUpdateVersion},
		{"without the leader", 1, 4, 7, []int32{2}, kerr.InvalidRequest},
		{"a broker not a replica", 1, 4, 7, []int32{1, 2, 4}, kerr.InvalidRequest},
		{"a fenced broker added", 1, 4, 7, []int32{1, 2, 3}, kerr.IneligibleReplica},
	} {
		res, recs := alter(tc.leader, tc.epoch, tc.pepoch, tc.isr...)
		if res.Err != tc.want || len(recs) != 0 || res.Partition.PartitionEpoch != 7 {
			t.Errorf("%s: %v (%s), %d records, partition %+v; want %v and the partition as it is", tc.name, res.Err, res.Message, len(recs), res.Partition, tc.want)
		}
	}
	if res, recs := alter(1, 4, 7, 2, 1); res.Err != nil || len(recs) != 0 {
		t.Errorf("the same ISR: %v, %d records", res.Err, len(recs))
	}
	res, recs := alter(1, 4, 7, 1)
	if res.Err != nil || len(recs) != 1 || !slices.Equal(res.Partition.ISR, []int32{1}) || res.Partition.PartitionEpoch != 8 || res.Partition.LeaderEpoch != 4 {
		t.Fatalf("shrink to [1]: %v %s, %d records, %+v", res.Err, res.Message, len(recs), res.Partition)
	}
	if _, err := im.Apply(1, recs[0]); err != nil {
		t.Fatalf("the shrink's record does not apply: %v", err)
	}
}
