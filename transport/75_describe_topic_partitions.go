package transport

// DescribeTopicPartitions: v0
//
// Behaviour (KIP-966; Kafka's DescribeTopicPartitionsRequestHandler):
//   - Any node answers from its newest image, as Metadata does: per
//     partition the leader (-1 when none, or when it has no address on
//     the client's listener), leader epoch, replicas, ISR,
//     the eligible leader replicas and last known ELR (KIP-966), and the
//     offline replicas (on brokers fenced or unknown). A partition's
//     ErrorCode is always 0, with or without a leader, as in Kafka.
//   - Topics by name; an empty list means every topic. They are answered
//     in name order from the cursor's topic on (names sorting before it are
//     left out), the cursor's topic from the cursor's partition, the
//     others from partition 0.
//   - Pagination: at most ResponsePartitionLimit partitions (at least 1,
//     at most 2000, Kafka's max.request.partition.size.limit default)
//     per answer. When a topic is cut, NextCursor names it and its first
//     partition left out; when the limit is reached exactly at a topic's
//     end and topics remain, NextCursor names the next topic at
//     partition 0 (it need not exist).
//   - A named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (an
//     invalid name INVALID_TOPIC_EXCEPTION), with no partitions; when
//     every topic is asked for, none can be missing.
//   - A cursor with a negative partition, or naming a topic not among
//     those answered (explicit names, or every topic), makes the request
//     INVALID_REQUEST: each named topic is answered with it and nothing
//     else, as Kafka's getErrorResponse does.
//   - With an authorizer: DESCRIBE on each topic. Of every topic, those
//     the client may not describe are left out; a topic named explicitly
//     that it may not describe is TOPIC_AUTHORIZATION_FAILED without its
//     id, whether it exists or not, after the others (Kafka adds them at
//     the end). A cursor on a topic the client may not describe is no
//     error: that topic is simply not described.
//   - TopicAuthorizedOperations (KIP-430) of every topic answered but the
//     denied ones, whether asked or not and whether the topic exists or
//     not, as Kafka 4.2 does.
//
// Version notes:
//   - v0: flexible; Kafka 3.8+ (the Java admin client's describeTopics
//     uses it, falling back to Metadata when a broker lacks it).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(75, handler{min: 0, max: 0, handle: a.handleDescribeTopicPartitions})
	})
}

// describeTopicPartitionsLimit is Kafka's max.request.partition.size.limit
// default: the most partitions one answer carries, whatever the request's
// ResponsePartitionLimit.
const describeTopicPartitionsLimit = 2000

func (a *API) handleDescribeTopicPartitions(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := a.Image()
	z := c.authz()
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	// The topics to answer: named or all, from the cursor's topic on,
	// each once, in name order.
	var names []string
	if all {
		names = im.TopicNames()
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < cursorTopic })
	if req.Cursor != nil && (req.Cursor.Partition < 0 || !slices.Contains(names, cursorTopic)) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(t.Topic), kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return respond(resp)
	}
	var denied []string
	names = slices.DeleteFunc(names, func(n string) bool {
		if all {
			return !z.sees(describe, topicResource, n)
		}
		if !z.may(describe, topicResource, n) {
			denied = append(denied, n)
			return true
		}
		return false
	})

	limit := min(req.ResponsePartitionLimit, describeTopicPartitionsLimit)
	remaining := max(limit, 1)
	for _, name := range names {
		if remaining == 0 {
			// The limit fell at the end of the last topic: the next
			// answer starts at this one.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.AuthorizedOperations = z.operations(topicResource, name)
		t := im.Topic(name)
		if t == nil {
			if all {
				continue
			}
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if controller.ValidateTopicName(name) != "" {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			rt.IsInternal = isInternalTopicName(name)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID, rt.IsInternal = t.ID, t.Internal
		start := int32(0)
		if name == cursorTopic {
			start = req.Cursor.Partition
		}
		end := min(int32(len(t.Partitions)), start+remaining)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for i := start; i < end; i++ {
			rt.Partitions = append(rt.Partitions, describePartition(im, c.listener, t.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, rt)
		remaining -= int32(len(rt.Partitions))
		if end < int32(len(t.Partitions)) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: end}
			break
		}
	}
	for _, name := range denied {
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, rt)
	}
	return respond(resp)
}

// describePartition is one partition as DescribeTopicPartitions shows it.
func describePartition(im *image.Image, listener string, p image.Partition) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition, dp.LeaderID, dp.LeaderEpoch = p.Index, p.Leader, p.LeaderEpoch
	if _, _, ok := im.Brokers[p.Leader].Endpoint(listener); p.Leader >= 0 && !ok {
		dp.LeaderID = -1 // as Kafka: no leader this client can reach
	}
	dp.Replicas, dp.ISR = nonNil(p.Replicas), nonNil(p.ISR)
	dp.EligibleLeaderReplicas, dp.LastKnownELR = nonNil(p.ELR), nonNil(p.LastKnownELR)
	dp.OfflineReplicas = offlineReplicas(im, p.Replicas)
	return dp
}

// isInternalTopicName reports whether Kafka counts a topic name as
// internal (Topic.isInternal), for a topic that does not exist.
func isInternalTopicName(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}
