package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// A reassignment adds the target replicas at once and marks the others
// removing; it completes when the leader's AlterPartition brings the last
// adding replica into the ISR, and a leader outside the target hands over.
// One cancelled goes back to the replicas before it. Bad targets are
// refused.
func TestReassignments(t *testing.T) {
	q := newQuorum(t, 1, 2, 3)
	q.waitRegistered()
	res := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: "r", NumPartitions: -1, ReplicationFactor: -1, Assignments: [][]int32{{1, 2}, {1, 2}}}}}).(*CreateTopicsResult)
	if res.Topics[0].Err != nil {
		t.Fatal(res.Topics[0].Err, res.Topics[0].Message)
	}
	move := func(p int32, target []int32) ReassignmentResult {
		t.Helper()
		r := q.ask(1, &AlterReassignments{AllowRFChange: true, Partitions: []Reassignment{{Topic: "r", Partition: p, Replicas: target}}}).(*AlterReassignmentsResult)
		return r.Partitions[0]
	}
	part := func(p int32) image.Partition { return q.latest[1].Load().Topic("r").Partitions[p] }
	if r := move(0, []int32{3, 2}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	q.waitFor(1, "partition 0 being reassigned", func(im *image.Image) bool { return len(im.Topic("r").Partitions[0].Adding) == 1 })
	p := part(0)
	if !slices.Equal(p.Replicas, []int32{3, 2, 1}) || !slices.Equal(p.Adding, []int32{3}) || !slices.Equal(p.Removing, []int32{1}) || p.Leader != 1 {
		t.Fatalf("reassigning: %+v", p)
	}
	// The leader finds node 3 caught up.
	tp := q.latest[1].Load().Topic("r")
	ar := q.ask(1, &AlterPartition{TopicID: tp.ID, Partition: 0, Leader: 1, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 3}}).(*AlterPartitionResult)
	if ar.Err != nil {
		t.Fatal(ar.Err, ar.Message)
	}
	if done := ar.Partition; !slices.Equal(done.Replicas, []int32{3, 2}) || !slices.Equal(done.ISR, []int32{2, 3}) || done.Leader != 3 ||
		done.Adding != nil || done.Removing != nil || done.LeaderEpoch != p.LeaderEpoch+1 {
		t.Fatalf("completed: %+v", done)
	}

	if r := move(1, []int32{3, 1}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	q.waitFor(1, "partition 1 being reassigned", func(im *image.Image) bool { return len(im.Topic("r").Partitions[1].Adding) == 1 })
	if r := move(1, nil); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	q.waitFor(1, "partition 1's reassignment cancelled", func(im *image.Image) bool { return im.Topic("r").Partitions[1].Adding == nil })
	if p := part(1); !slices.Equal(p.Replicas, []int32{1, 2}) || p.Removing != nil || p.Leader != 1 {
		t.Fatalf("cancelled: %+v", p)
	}
	for _, tc := range []struct {
		target []int32
		want   *kerr.Error
	}{
		{nil, kerr.NoReassignmentInProgress},
		{[]int32{}, kerr.InvalidReplicaAssignment},
		{[]int32{1, 1}, kerr.InvalidReplicaAssignment},
		{[]int32{1, 9}, kerr.InvalidReplicaAssignment},
	} {
		if r := move(1, tc.target); r.Err != tc.want {
			t.Errorf("reassign to %v: %v, want %v", tc.target, r.Err, tc.want)
		}
	}
	if r := q.ask(1, &AlterReassignments{Partitions: []Reassignment{{Topic: "r", Partition: 1, Replicas: []int32{1, 2, 3}}}}).(*AlterReassignmentsResult); r.Partitions[0].Err != kerr.InvalidReplicationFactor {
		t.Errorf("a larger target where the request forbids it: %+v", r.Partitions[0])
	}
}
