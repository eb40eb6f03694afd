package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Partition reassignments, as KRaft does them (KIP-455): the target
// replicas are added to the partition's replicas at once, the new ones as
// Adding, the ones to go as Removing; the new replicas' nodes host them and
// fetch from the leader, which asks for each in the ISR once it is caught
// up (AlterPartition); when the last adding replica joins, the same change
// completes the reassignment: the replicas become the target, the removed
// ones leave the ISR, and a leader that is not among the target hands over
// to the first in-sync target replica. Their nodes then stop hosting them
// and delete their data.

// AlterReassignments starts, replaces or cancels (nil Replicas)
// reassignments of partitions: AlterPartitionReassignments.
type AlterReassignments struct {
	Partitions []Reassignment `msgpack:"parts"`
	// AllowRFChange lets a target change the replication factor
	// (KIP-860; Kafka's AllowReplicationFactorChange, true before v1).
	AllowRFChange bool  `msgpack:"allow_rf"`
	TimeoutMs     int32 `msgpack:"timeout"`
}

// Reassignment is one partition's target replicas; nil cancels the one in
// progress.
type Reassignment struct {
	Topic     string  `msgpack:"topic"`
	Partition int32   `msgpack:"part"`
	Replicas  []int32 `msgpack:"replicas"`
}

// AlterReassignmentsResult answers AlterReassignments, in request order.
type AlterReassignmentsResult struct {
	Err        *kerr.Error          `msgpack:"err"`
	Message    string               `msgpack:"msg"`
	Partitions []ReassignmentResult `msgpack:"parts"`
}

// ReassignmentResult is one partition's outcome.
type ReassignmentResult struct {
	Topic     string      `msgpack:"topic"`
	Partition int32       `msgpack:"part"`
	Err       *kerr.Error `msgpack:"err"`
	Message   string      `msgpack:"msg"`
}

func (*AlterReassignments) kind() commandKind { return kindAlterReassignments }
func (m *AlterReassignments) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (*AlterReassignments) newResult() any { return &AlterReassignmentsResult{} }
func (*AlterReassignments) failed(err *kerr.Error, msg string) any {
	return &AlterReassignmentsResult{Err: err, Message: msg}
}

func (m *AlterReassignments) decide(c *Controller) (any, []image.Record) {
	res := &AlterReassignmentsResult{}
	var records []image.Record
	changed := map[[2]any]image.Partition{} // a partition named twice sees the first change
	for _, r := range m.Partitions {
		out := ReassignmentResult{Topic: r.Topic, Partition: r.Partition}
		t := c.head.Topics[r.Topic]
		if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			out.Err = kerr.UnknownTopicOrPartition
			res.Partitions = append(res.Partitions, out)
			continue
		}
		key := [2]any{r.Topic, r.Partition}
		p, ok := changed[key]
		if !ok {
			p = t.Partitions[r.Partition]
		}
		q, err, msg := c.reassign(p, r.Replicas, m.AllowRFChange)
		out.Err, out.Message = err, msg
		if err == nil && !samePartition(p, q) {
			changed[key] = q
			records = append(records, changePartition(t, p, q))
		}
		res.Partitions = append(res.Partitions, out)
	}
	return res, records
}

// reassign returns p with target as its reassignment (nil: cancelled).
func (c *Controller) reassign(p image.Partition, target []int32, allowRF bool) (image.Partition, *kerr.Error, string) {
	original := without(p.Replicas, p.Adding)
	if target == nil {
		if len(p.Adding) == 0 && len(p.Removing) == 0 {
			return p, kerr.NoReassignmentInProgress, ""
		}
		q := p
		q.Replicas, q.ISR, q.Adding, q.Removing = original, without(p.ISR, p.Adding), nil, nil
		if len(q.ISR) == 0 {
			q.ISR = []int32{p.Leader}
		}
		if !slices.Contains(q.Replicas, q.Leader) {
			q.Leader = c.electLive(q, -1)
		}
		return q, nil, ""
	}
	seen := map[int32]bool{}
	for _, b := range target {
		if seen[b] {
			return p, kerr.InvalidReplicaAssignment, fmt.Sprintf("broker %d named twice", b)
		}
		seen[b] = true
		if _, ok := c.head.Brokers[b]; !ok {
			return p, kerr.InvalidReplicaAssignment, fmt.Sprintf("broker %d is not registered", b)
		}
	}
	switch {
	case len(target) == 0:
		return p, kerr.InvalidReplicaAssignment, "the target replicas are empty"
	case !allowRF && len(target) != len(original):
		return p, kerr.InvalidReplicationFactor, fmt.Sprintf("the target has %d replicas, the partition %d, and the request does not allow a change", len(target), len(original))
	}
	q := p
	q.Adding, q.Removing = nilIfEmpty(without(target, original)), nilIfEmpty(without(original, target))
	q.Replicas = append(slices.Clone(target), q.Removing...)
	q.ISR = without(p.ISR, without(p.Adding, target)) // replicas an earlier reassignment was adding and this one drops
	if done, ok := c.completeReassignment(q, q.ISR); ok {
		return done, nil, "" // nothing to add: done at once
	}
	return q, nil, ""
}

// completeReassignment finishes p's reassignment once isr holds every
// adding replica: the replicas become the target, the ISR keeps only
// target replicas, and a leader outside the target hands over to the
// first live in-sync target replica. ok is false while it cannot finish.
func (c *Controller) completeReassignment(p image.Partition, isr []int32) (image.Partition, bool) {
	for _, r := range p.Adding {
		if !slices.Contains(isr, r) {
			return p, false
		}
	}
	target := without(p.Replicas, p.Removing)
	q := p
	q.Replicas, q.ISR, q.Adding, q.Removing = target, without(isr, p.Removing), nil, nil
	if len(q.ISR) == 0 {
		return p, false
	}
	if !slices.Contains(q.Replicas, q.Leader) {
		if q.Leader = c.electLive(q, -1); q.Leader < 0 {
			return p, false
		}
	}
	return q, true
}

func nilIfEmpty(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// without returns ids less the ones in drop, in ids' order.
func without(ids, drop []int32) []int32 {
	out := []int32{}
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

func samePartition(a, b image.Partition) bool {
	return a.Leader == b.Leader && slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.Adding, b.Adding) && slices.Equal(a.Removing, b.Removing)
}
