package transport

// DeleteRecords: v0-2
//
// Behaviour:
//   - With an authorizer: DELETE on each topic, TOPIC_AUTHORIZATION_FAILED
//     otherwise, whether it exists or not.
//   - Per partition, the partition's actor moves the log start offset up to
//     the requested offset (partition.DeleteRecords); offsets below it
//     become unreadable at once, and retention deletes the segments wholly
//     below it on its next run. -1 means the high watermark.
//   - The answer is the new low watermark (the log start offset). An offset
//     already below it changes nothing and is answered with it, as Kafka
//     does; an offset above the high watermark, or negative other than -1,
//     is OFFSET_OUT_OF_RANGE.
//   - An unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; a
//     partition this node does not host: NOT_LEADER_OR_FOLLOWER.
//   - Partitions not answered within TimeoutMillis (at most the request
//     timeout, which also applies when it is not positive) get
//     REQUEST_TIMED_OUT, an indefinite error.
//
// Version notes: v1 throttling; v2 flexible.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(21, handler{min: 0, max: 2, handle: a.handleDeleteRecords})
	})
}

// deleteRecordsResult is one partition actor's answer.
type deleteRecordsResult struct {
	lowWatermark int64
	err          *kerr.Error
}

func (a *API) handleDeleteRecords(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	im := a.Image()
	z := c.authz()
	type waiting struct {
		slot *kmsg.DeleteRecordsResponseTopicPartition
		ch   chan deleteRecordsResult
	}
	var waits []waiting
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		t := &resp.Topics[i]
		*t = kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		_, topicErr := topicRef(im, false, rt.Topic, [16]byte{})
		if !z.may(del, topicResource, rt.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		t.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			slot := &t.Partitions[j]
			*slot = kmsg.NewDeleteRecordsResponseTopicPartition()
			slot.Partition, slot.LowWatermark = rp.Partition, -1
			err := topicErr
			var h *partition.Handle
			if err == nil {
				err = partitionRef(im, rt.Topic, rp.Partition)
			}
			if err == nil {
				h, _, err = a.hosted(rt.Topic, rp.Partition)
			}
			if err == nil && rp.Offset < -1 {
				err = kerr.OffsetOutOfRange
			}
			if err != nil {
				slot.ErrorCode = err.Code
				continue
			}
			// NB: the actor replies on its own goroutine; the buffer lets it
			// go on even when this request timed out.
			ch := make(chan deleteRecordsResult, 1)
			a.System.Root.Send(h.PID, &partition.DeleteRecords{Offset: rp.Offset, Reply: func(lw int64, err *kerr.Error) {
				ch <- deleteRecordsResult{lowWatermark: lw, err: err}
			}})
			waits = append(waits, waiting{slot: slot, ch: ch})
		}
	}
	// NB: never longer than the request timeout, so that a stuck actor
	// cannot hold the connection for as long as a client may ask.
	timeout := a.RequestTimeout
	if ms := time.Duration(req.TimeoutMillis) * time.Millisecond; ms > 0 && ms < timeout {
		timeout = ms
	}
	return func() kmsg.Response {
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		expired := false
		for _, w := range waits {
			var r deleteRecordsResult
			if expired {
				select {
				case r = <-w.ch:
				default:
					r.err = kerr.RequestTimedOut
				}
			} else {
				select {
				case r = <-w.ch:
				case <-deadline.C:
					expired, r.err = true, kerr.RequestTimedOut
				}
			}
			if r.err != nil {
				w.slot.ErrorCode = r.err.Code
				continue
			}
			w.slot.LowWatermark = r.lowWatermark
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				a.metrics.errorCode(21, req.Version, p.ErrorCode)
			}
		}
		return resp
	}
}

// partitionRef checks that an existing topic has partition p.
func partitionRef(im *image.Image, topic string, p int32) *kerr.Error {
	if t := im.Topic(topic); t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}
