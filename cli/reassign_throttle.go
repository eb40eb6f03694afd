package cli

// skein topic reassign --plan FILE --throttle and --verify --plan FILE:
// replication throttling of a reassignment (Kafka's KIP-73), as
// kafka-reassign-partitions --execute --throttle and --verify do it, with
// the same configs, so that either tool can verify the other's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The KIP-73 configs a throttled reassignment sets.
const (
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// reassignmentThrottle is what --throttle sets: per topic, the leader and
// follower throttled replicas, and the rate on each broker involved.
type reassignmentThrottle struct {
	Leader   map[string]string `json:"leader_throttled_replicas"`
	Follower map[string]string `json:"follower_throttled_replicas"`
	Brokers  []int32           `json:"brokers"`
	Rate     int64             `json:"rate"`
}

// planThrottle computes, as kafka-reassign-partitions does
// (calculateLeaderThrottles, calculateFollowerThrottles), the throttle of
// the partitions the plan moves (those whose replicas change): each one's
// current replicas are leader-throttled (any of them may lead while it
// copies), its added replicas follower-throttled, and the rate goes on
// every broker of either set.
func planThrottle(plan reassignmentPlan, current map[string]map[int32][]int32, rate int64) reassignmentThrottle {
	th := reassignmentThrottle{Leader: map[string]string{}, Follower: map[string]string{}, Rate: rate}
	leader, follower := map[string][]string{}, map[string][]string{}
	brokers := map[int32]bool{}
	for _, a := range plan.Partitions {
		cur := current[a.Topic][a.Partition]
		if slices.Equal(cur, a.Replicas) {
			continue
		}
		p := strconv.Itoa(int(a.Partition)) + ":"
		for _, r := range cur {
			leader[a.Topic] = append(leader[a.Topic], p+strconv.Itoa(int(r)))
			brokers[r] = true
		}
		for _, r := range a.Replicas {
			brokers[r] = true
			if !slices.Contains(cur, r) {
				follower[a.Topic] = append(follower[a.Topic], p+strconv.Itoa(int(r)))
			}
		}
	}
	for t, l := range leader {
		th.Leader[t] = strings.Join(l, ",")
		th.Follower[t] = strings.Join(follower[t], ",")
	}
	th.Brokers = slices.Sorted(maps.Keys(brokers))
	return th
}

// currentAssignment returns the replicas of every partition of the plan's
// topics, from the broker's metadata.
func currentAssignment(ctx context.Context, adm *kadm.Client, plan reassignmentPlan) (map[string]map[int32][]int32, error) {
	var topics []string
	for _, a := range plan.Partitions {
		if !slices.Contains(topics, a.Topic) {
			topics = append(topics, a.Topic)
		}
	}
	listed, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32][]int32{}
	for _, name := range topics {
		t, ok := listed[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("topic %s: not in the broker's metadata", name)
		case t.Err != nil:
			return nil, fmt.Errorf("topic %s: %w", name, t.Err)
		}
		out[name] = map[int32][]int32{}
		for _, p := range t.Partitions {
			out[name][p.Partition] = p.Replicas
		}
	}
	return out, nil
}

// applyThrottle sets the throttle's topic configs (replacing any lists
// there, as Kafka's tool does) and its rates on each broker involved.
func applyThrottle(ctx context.Context, adm *kadm.Client, th reassignmentThrottle, w io.Writer) error {
	var errs []error
	for _, t := range slices.Sorted(maps.Keys(th.Leader)) {
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottledReplicas, Value: kadm.StringPtr(th.Leader[t])},
			{Op: kadm.SetConfig, Name: followerThrottledReplicas, Value: kadm.StringPtr(th.Follower[t])},
		}, t)
		if err = firstAlterError(res, err); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", t, err))
		}
	}
	rate := kadm.StringPtr(strconv.FormatInt(th.Rate, 10))
	for _, b := range th.Brokers {
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: leaderThrottledRate, Value: rate},
			{Op: kadm.SetConfig, Name: followerThrottledRate, Value: rate},
		}, b)
		if err = firstAlterError(res, err); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s on brokers %s\n", th.Rate, int32List(th.Brokers))
	return nil
}

func firstAlterError(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return kafkaError(r.Err, r.ErrMessage)
		}
	}
	return nil
}

// verifiedPartition is one partition of --verify's answer.
type verifiedPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	State     string  `json:"state"` // complete, in progress, or not as planned
	Replicas  []int32 `json:"replicas"`
	Planned   []int32 `json:"planned"`
}

// verification is --verify's answer: each partition, and whether the
// throttles were cleared (once every partition is complete).
type verification struct {
	Partitions       []verifiedPartition `json:"partitions"`
	ThrottlesCleared bool                `json:"throttles_cleared"`
}

// The states of a verified partition.
const (
	reassignmentComplete   = "complete"
	reassignmentInProgress = "in progress"
	reassignmentNotPlanned = "not as planned"
)

// verifyReassignment reports each partition of the plan as complete (its
// replicas are the plan's), in progress (ListPartitionReassignments has
// it) or not as planned, and, when none is in progress, clears the
// throttles as kafka-reassign-partitions --verify does: the two rates on
// every broker of the cluster, the two lists on the plan's topics.
func verifyReassignment(ctx context.Context, adm *kadm.Client, plan reassignmentPlan) (verification, error) {
	current, err := currentAssignment(ctx, adm, plan)
	if err != nil {
		return verification{}, err
	}
	set := kadm.TopicsSet{}
	for _, a := range plan.Partitions {
		set.Add(a.Topic, a.Partition)
	}
	ongoing, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return verification{}, err
	}
	v := verification{Partitions: []verifiedPartition{}}
	inProgress := false
	for _, a := range plan.Partitions {
		p := verifiedPartition{Topic: a.Topic, Partition: a.Partition, Replicas: orEmpty(current[a.Topic][a.Partition]), Planned: a.Replicas}
		_, going := ongoing[a.Topic][a.Partition]
		switch {
		case going:
			p.State, inProgress = reassignmentInProgress, true
		case slices.Equal(p.Replicas, a.Replicas):
			p.State = reassignmentComplete
		default:
			p.State = reassignmentNotPlanned
		}
		v.Partitions = append(v.Partitions, p)
	}
	if inProgress {
		return v, nil
	}
	if err := clearThrottles(ctx, adm, plan); err != nil {
		return v, err
	}
	v.ThrottlesCleared = true
	return v, nil
}

// clearThrottles deletes the rates on every broker and the lists on the
// plan's topics (a config not set is deleted without complaint).
func clearThrottles(ctx context.Context, adm *kadm.Client, plan reassignmentPlan) error {
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range meta.Brokers.NodeIDs() {
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderThrottledRate},
			{Op: kadm.DeleteConfig, Name: followerThrottledRate},
		}, b)
		if err = firstAlterError(res, err); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", b, err))
		}
	}
	var topics []string
	for _, a := range plan.Partitions {
		if !slices.Contains(topics, a.Topic) {
			topics = append(topics, a.Topic)
		}
	}
	for _, t := range topics {
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderThrottledReplicas},
			{Op: kadm.DeleteConfig, Name: followerThrottledReplicas},
		}, t)
		if err = firstAlterError(res, err); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

// printVerification prints --verify's answer as text, with
// kafka-reassign-partitions' sentences.
func printVerification(w io.Writer, v verification) error {
	fmt.Fprintln(w, "Status of partition reassignment:")
	for _, p := range v.Partitions {
		switch p.State {
		case reassignmentComplete:
			fmt.Fprintf(w, "Reassignment of partition %s-%d is completed.\n", p.Topic, p.Partition)
		case reassignmentInProgress:
			fmt.Fprintf(w, "Reassignment of partition %s-%d is still in progress.\n", p.Topic, p.Partition)
		default:
			fmt.Fprintf(w, "There is no active reassignment of partition %s-%d, but replica set is %s rather than %s.\n",
				p.Topic, p.Partition, int32List(p.Replicas), int32List(p.Planned))
		}
	}
	if v.ThrottlesCleared {
		fmt.Fprintln(w, "Throttles removed: the replication rates on every broker and the throttled replicas of the plan's topics.")
	} else {
		fmt.Fprintln(w, "Throttles kept while a reassignment is in progress: run --verify again.")
	}
	return nil
}
