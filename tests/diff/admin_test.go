//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitions compares CreatePartitions' answers for growing a
// topic, keeping its count, shrinking it, an unknown topic and a topic
// named twice, each with ValidateOnly and for real.
func TestCreatePartitions(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-cp", 2, 1))
	cases := []struct {
		name  string
		topic string
		count int32
		twice bool
	}{
		{"grow", "diff-cp", 4, false},
		{"same count", "diff-cp", 2, false},
		{"shrink", "diff-cp", 1, false},
		{"zero", "diff-cp", 0, false},
		{"unknown topic", "diff-cp-unknown", 3, false},
		{"named twice", "diff-cp", 5, true},
	}
	bothModes(t, "create", func(t *testing.T, validateOnly bool) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = tc.topic, tc.count
				req.Topics = append(req.Topics, rt)
				if tc.twice {
					req.Topics = append(req.Topics, rt)
				}
				newCase(t).compare(req)
			})
		}
	})
}

// TestDeleteRecords compares DeleteRecords' answers for offsets before,
// at and past the high watermark, -1 (the high watermark) and an unknown
// partition.
func TestDeleteRecords(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-dr", 2, 1))
	for range 3 {
		c.compareAt(produce("diff-dr", 0, batch(batchHeader{}, records(2, 1000)...)), 12)
	}
	for _, tc := range []struct {
		name      string
		partition int32
		offset    int64
	}{
		{"below the high watermark", 0, 2},
		{"the same again", 0, 2},
		{"below the log start", 0, 1},
		{"the high watermark", 0, -1},
		{"past the high watermark", 0, 100},
		{"empty partition", 1, 0},
		{"partition out of range", 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 30000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "diff-dr"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tc.partition, tc.offset
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			newCase(t).compare(req)
		})
	}
	// What the log start offset is now, as ListOffsets sees it.
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "diff-dr"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -2, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.compare(req)
}

// TestDescribeCluster compares DescribeCluster's answer (brokers and the
// controller; hosts, ports and the cluster id by nature differ).
func TestDescribeCluster(t *testing.T) {
	req := kmsg.NewPtrDescribeClusterRequest()
	newCase(t).compare(req)
}

// TestListGroups compares ListGroups' answers, all groups and filtered by
// state and type, once the group cases made some (their names only).
func TestListGroups(t *testing.T) {
	c := newCase(t)
	const group = "diff-list-groups"
	waitCoordinator(t, group)
	ko, so := c.exchange(joinGroup(group, "", groupTopic), -1)
	kid, sid := memberIDs(t, ko.resp, so.resp)
	c.name(kid, sid, "member-A")
	c.compareEach(-1, func(kafka bool) kmsg.Request { return joinGroup(group, pick(kafka, kid, sid), groupTopic) })
	for _, tc := range []struct {
		name   string
		states []string
		types  []string
	}{
		{"all", nil, nil},
		{"completing rebalance", []string{"CompletingRebalance"}, nil},
		{"empty and dead", []string{"Empty", "Dead"}, nil},
		{"classic", nil, []string{"classic"}},
		{"consumer", nil, []string{"consumer"}},
		{"unknown state", []string{"Sleeping"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrListGroupsRequest()
			req.StatesFilter, req.TypesFilter = tc.states, tc.types
			newCase(t).compare(req)
		})
	}
}
