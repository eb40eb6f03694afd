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
	// KIP-903: broker 2's incarnation is 1; a leader that saw another
	// run of it may not count its fetches, and epochs must match the ISR.
	for _, tc := range []struct {
		name   string
		epochs []uint64
		want   *kerr.Error
	}{
		{"a stale broker epoch", []uint64{1, 2}, kerr.IneligibleReplica},
		{"a stale epoch of a member kept", []uint64{1, 9}, kerr.IneligibleReplica},
		{"fewer epochs than members", []uint64{1}, kerr.InvalidRequest},
		{"the current epochs", []uint64{1, 1}, nil},
		{"epochs unknown", []uint64{0, 0}, nil},
	} {
		res, _ := (&AlterPartition{TopicID: image.TopicID{1}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7,
			ISR: []int32{1, 2}, ISREpochs: tc.epochs}).decide(c)
		if got := res.(*AlterPartitionResult); got.Err != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, got.Err, got.Message, tc.want)
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

// A fenced broker leaves every ISR but the ones it is the last member of;
// its leaderships go to the first live replica of the ISR left, in the
// preferred order, or offline when there is none; it leads the offline
// ones again when it comes back.
func TestFencingElectsFromTheLiveISR(t *testing.T) {
	im := image.Empty()
	parts := []image.Partition{
		{Index: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, // 2 takes over
		{Index: 1, Leader: 2, Replicas: []int32{2, 1, 3}, ISR: []int32{2, 1}},    // 1 just leaves the ISR
		{Index: 2, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}},       // offline, 1 stays
		{Index: 3, Leader: 1, Replicas: []int32{1, 4, 2}, ISR: []int32{1, 4, 2}}, // 4 is fenced: 2
		{Index: 4, Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2, 3}},       // untouched
	}
	for _, r := range []image.Record{
		&image.RegisterBroker{ID: 1, Incarnation: 1}, &image.RegisterBroker{ID: 2, Incarnation: 1},
		&image.RegisterBroker{ID: 3, Incarnation: 1}, &image.RegisterBroker{ID: 4, Incarnation: 1},
		&image.FenceBroker{ID: 4, Incarnation: 1, Fenced: true},
		&image.CreateTopic{Name: "r", ID: image.TopicID{1}, Partitions: parts},
	} {
		var err error
		if im, err = im.Apply(0, r); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{head: im}
	_, recs := (&fenceBroker{ID: 1, Incarnation: 1, Fenced: true}).decide(c)
	for _, r := range recs {
		var err error
		if im, err = im.Apply(1, r); err != nil {
			t.Fatal(err)
		}
	}
	got := im.Topic("r").Partitions
	want := []struct {
		leader       int32
		isr          []int32
		leaderEpochs int32
	}{{2, []int32{2, 3}, 1}, {2, []int32{2}, 0}, {-1, []int32{1}, 1}, {2, []int32{4, 2}, 1}, {2, []int32{2, 3}, 0}}
	for i, w := range want {
		p := got[i]
		if p.Leader != w.leader || !slices.Equal(p.ISR, w.isr) || p.LeaderEpoch != w.leaderEpochs {
			t.Errorf("partition %d after fencing 1: leader %d isr %v epoch %d; want %d %v %d", i, p.Leader, p.ISR, p.LeaderEpoch, w.leader, w.isr, w.leaderEpochs)
		}
		if changed := i < 4; changed != (p.PartitionEpoch == 1) {
			t.Errorf("partition %d: partition epoch %d", i, p.PartitionEpoch)
		}
	}
	c.head = im
	_, recs = (&fenceBroker{ID: 1, Incarnation: 1, Fenced: false}).decide(c)
	for _, r := range recs {
		var err error
		if im, err = im.Apply(2, r); err != nil {
			t.Fatal(err)
		}
	}
	if p := im.Topic("r").Partitions[2]; p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Errorf("the offline partition after 1 is back: %+v", p)
	}
	if p := im.Topic("r").Partitions[0]; p.Leader != 2 {
		t.Errorf("a partition another broker took over moved back: %+v", p)
	}
}
