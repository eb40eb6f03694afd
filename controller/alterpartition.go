package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// AlterPartition is a partition leader's request to change its ISR
// (Kafka's AlterPartition, between nodes): it is decided against the
// partition as the image has it, so a leader deposed or working from an
// older partition state is refused, and the change commits as one
// ChangePartition with the next partition epoch.
//
// ISREpochs are the broker epochs of KIP-903 (AlterPartition v3's
// NewIsrWithEpochs): for each member of ISR, in the same order, the
// incarnation of that broker whose fetches the leader saw, 0 where the
// leader does not know it (Kafka's -1). A member whose registered
// incarnation is another restarted since the leader saw it caught up:
// its log may be empty or truncated, and the change is refused with
// INELIGIBLE_REPLICA, as one naming a fenced or unregistered broker.
type AlterPartition struct {
	TopicID        image.TopicID `msgpack:"topic_id"`
	Partition      int32         `msgpack:"part"`
	Leader         int32         `msgpack:"leader"`
	LeaderEpoch    int32         `msgpack:"epoch"`
	PartitionEpoch int32         `msgpack:"part_epoch"`
	ISR            []int32       `msgpack:"isr"`
	ISREpochs      []uint64      `msgpack:"isr_epochs,omitempty"`
}

// AlterPartitionResult answers AlterPartition: the partition as committed
// (or as it is, for a refusal the leader learns from).
type AlterPartitionResult struct {
	Err       *kerr.Error     `msgpack:"err"`
	Message   string          `msgpack:"msg"`
	Partition image.Partition `msgpack:"part"`
}

func (*AlterPartition) kind() commandKind      { return kindAlterPartition }
func (*AlterPartition) timeout() time.Duration { return 0 }
func (*AlterPartition) newResult() any         { return &AlterPartitionResult{} }
func (*AlterPartition) failed(err *kerr.Error, msg string) any {
	return &AlterPartitionResult{Err: err, Message: msg}
}

func (m *AlterPartition) decide(c *Controller) (any, []image.Record) {
	t := c.head.TopicsByID[m.TopicID]
	if t == nil {
		return &AlterPartitionResult{Err: kerr.UnknownTopicID}, nil
	}
	if m.Partition < 0 || int(m.Partition) >= len(t.Partitions) {
		return &AlterPartitionResult{Err: kerr.UnknownTopicOrPartition}, nil
	}
	p := t.Partitions[m.Partition]
	refuse := func(err *kerr.Error, msg string) (any, []image.Record) {
		return &AlterPartitionResult{Err: err, Message: msg, Partition: p}, nil
	}
	switch {
	case p.Leader != m.Leader:
		return refuse(kerr.NotLeaderForPartition, fmt.Sprintf("broker %d does not lead %s-%d: %d does", m.Leader, t.Name, m.Partition, p.Leader))
	case m.LeaderEpoch != p.LeaderEpoch:
		return refuse(kerr.FencedLeaderEpoch, fmt.Sprintf("leader epoch %d, the partition's is %d", m.LeaderEpoch, p.LeaderEpoch))
	case m.PartitionEpoch != p.PartitionEpoch:
		return refuse(kerr.InvalidUpdateVersion, fmt.Sprintf("partition epoch %d, the partition's is %d", m.PartitionEpoch, p.PartitionEpoch))
	case !slices.Contains(m.ISR, m.Leader):
		return refuse(kerr.InvalidRequest, "the ISR must hold the leader")
	case len(m.ISREpochs) != 0 && len(m.ISREpochs) != len(m.ISR):
		return refuse(kerr.InvalidRequest, fmt.Sprintf("%d broker epochs for an ISR of %d", len(m.ISREpochs), len(m.ISR)))
	}
	// KIP-903: a member's fetches the leader counted must be of the
	// broker's current run.
	for i, epoch := range m.ISREpochs {
		r := m.ISR[i]
		if b, ok := c.head.Brokers[r]; ok && epoch != 0 && b.Incarnation != epoch {
			return refuse(kerr.IneligibleReplica, fmt.Sprintf("broker %d restarted: its incarnation is %d, the leader saw %d", r, b.Incarnation, epoch))
		}
	}
	isr := slices.Clone(m.ISR)
	slices.Sort(isr)
	for i, r := range isr {
		if i > 0 && isr[i-1] == r {
			return refuse(kerr.InvalidRequest, fmt.Sprintf("broker %d named twice", r))
		}
		if !slices.Contains(p.Replicas, r) {
			return refuse(kerr.InvalidRequest, fmt.Sprintf("broker %d is not a replica", r))
		}
		// A member added must be a live broker (KIP-841): a fenced one
		// (Skein's controlled shutdown fences too) could be elected
		// while it cannot serve.
		if b, ok := c.head.Brokers[r]; !slices.Contains(p.ISR, r) && (!ok || b.Fenced) {
			return refuse(kerr.IneligibleReplica, fmt.Sprintf("broker %d is fenced or not registered", r))
		}
	}
	cur := slices.Clone(p.ISR)
	slices.Sort(cur)
	if slices.Equal(cur, isr) {
		return &AlterPartitionResult{Partition: p}, nil
	}
	q := p
	q.ISR = isr
	if len(p.Adding) > 0 || len(p.Removing) > 0 {
		// The last adding replica in sync completes a reassignment.
		if done, ok := c.completeReassignment(q, isr); ok {
			q = done
		}
	}
	rec := changePartition(t, p, q).(*image.ChangePartition)
	return &AlterPartitionResult{Partition: rec.Partition}, []image.Record{rec}
}
