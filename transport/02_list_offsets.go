package transport

// ListOffsets: v1-11
//
// Behaviour, per partition, from the published view:
//   - -1 (latest): the high watermark (read_uncommitted) or the last stable
//     offset (read_committed); -2 (earliest) and -4 (earliest local): the
//     log start offset; -5 (latest tiered): -1, as nothing is tiered;
//   - -3 (max timestamp, KIP-734): the record with the largest timestamp;
//   - a timestamp: the first record at or after it, or offset -1 when none;
//     another negative timestamp finds none, as in Kafka.
//   - Where nothing is found (offset -1), the leader epoch is -1 too, as
//     Kafka answers.
//   - Nothing at or past the high watermark (read_committed: the last
//     stable offset) is ever answered, as Kafka's fetchOffsetForTimestamp.
//   - CurrentLeaderEpoch checks as Fetch (KIP-320); errors as Fetch.
//   - With an authorizer, DESCRIBE on each topic: TOPIC_AUTHORIZATION_FAILED
//     otherwise, whether it exists or not.
//
// Version notes: v2 isolation level; v4 leader epochs; v6 flexible; v7
// max timestamp; v8 earliest local; v9 latest tiered; v10 timeout.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(2, handler{min: 1, max: 11, handle: a.handleListOffsets})
	})
}

func (a *API) handleListOffsets(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	im := a.Image()
	z := c.authz()
	var dec store.Decompressor
	for _, rt := range req.Topics {
		respTopic := kmsg.NewListOffsetsResponseTopic()
		respTopic.Topic = rt.Topic
		_, topicErr := topicRef(im, false, rt.Topic, [16]byte{})
		if !z.may(describe, topicResource, rt.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition, p.Timestamp, p.Offset, p.LeaderEpoch = rp.Partition, -1, -1, -1
			if err := a.listOffset(rt.Topic, topicErr, rp, req.IsolationLevel == 1, &p, &dec); err != nil {
				p.ErrorCode = err.Code
				a.metrics.errorCode(2, req.Version, err.Code)
			}
			respTopic.Partitions = append(respTopic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, respTopic)
	}
	return respond(resp)
}

func (a *API) listOffset(topic string, topicErr *kerr.Error, rp kmsg.ListOffsetsRequestTopicPartition, readCommitted bool,
	p *kmsg.ListOffsetsResponseTopicPartition, dec *store.Decompressor) *kerr.Error {
	if topicErr != nil {
		return topicErr
	}
	_, v, err := a.hosted(topic, rp.Partition)
	if err != nil {
		return err
	}
	if err := partition.CheckLeaderEpoch(rp.CurrentLeaderEpoch, v.LeaderEpoch); err != nil {
		return err
	}
	lv := v.Log
	p.LeaderEpoch = v.LeaderEpoch
	end := lv.HighWatermark
	if readCommitted {
		end = lv.LastStableOffset
	}
	switch rp.Timestamp {
	case -1:
		p.Offset = end
	case -2, -4:
		p.Offset = lv.LogStartOffset
	case -5:
		p.Offset, p.LeaderEpoch = -1, -1
	case -3:
		off, ts, found, err := lv.MaxTimestamp(dec)
		if err != nil {
			return kerr.KafkaStorageError
		}
		if found && off < end {
			p.Offset, p.Timestamp = off, ts
		} else {
			p.LeaderEpoch = -1
		}
	default:
		if rp.Timestamp < 0 {
			// Not one of the special timestamps above: no record is
			// that old, as Kafka answers.
			p.LeaderEpoch = -1
			return nil
		}
		off, ts, found, err := lv.OffsetForTimestamp(rp.Timestamp, dec)
		if err != nil {
			return kerr.KafkaStorageError
		}
		if found && off < end {
			p.Offset, p.Timestamp = off, ts
		} else {
			p.LeaderEpoch = -1
		}
	}
	return nil
}
