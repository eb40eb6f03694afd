package transport

// DescribeProducers: v0
//
// Behaviour:
//   - With an authorizer: READ on each topic, TOPIC_AUTHORIZATION_FAILED
//     otherwise.
//   - Each partition's leader actor lists the producers it knows (KIP-664):
//     producer id and epoch, last sequence, the broker's time of its last
//     append, the coordinator epoch of its last marker, and the first
//     offset of its transaction in progress there (-1 when none). A
//     partition this node does not lead: NOT_LEADER_OR_FOLLOWER, or
//     UNKNOWN_TOPIC_OR_PARTITION when it does not exist.

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(61, handler{min: 0, max: 0, handle: a.handleDescribeProducers})
	})
}

func (a *API) handleDescribeProducers(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeProducersRequest)
	readable := make([]bool, len(req.Topics))
	z := c.authz()
	for i, rt := range req.Topics {
		readable[i] = z.may(read, topicResource, rt.Topic)
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
		var wg sync.WaitGroup
		resp.Topics = make([]kmsg.DescribeProducersResponseTopic, len(req.Topics))
		for i, rt := range req.Topics {
			t := &resp.Topics[i]
			*t = kmsg.NewDescribeProducersResponseTopic()
			t.Topic = rt.Topic
			t.Partitions = make([]kmsg.DescribeProducersResponseTopicPartition, len(rt.Partitions))
			for j, p := range rt.Partitions {
				if !readable[i] {
					t.Partitions[j] = kmsg.NewDescribeProducersResponseTopicPartition()
					t.Partitions[j].Partition, t.Partitions[j].ErrorCode = p, kerr.TopicAuthorizationFailed.Code
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.Partitions[j] = a.describeProducers(rt.Topic, p)
				}()
			}
		}
		wg.Wait()
		return resp
	}
}

func (a *API) describeProducers(topic string, p int32) kmsg.DescribeProducersResponseTopicPartition {
	out := kmsg.NewDescribeProducersResponseTopicPartition()
	out.Partition = p
	fail := func(err *kerr.Error) kmsg.DescribeProducersResponseTopicPartition {
		out.ErrorCode = err.Code
		return out
	}
	if _, err := topicRef(a.Image(), false, topic, [16]byte{}); err != nil {
		return fail(err)
	}
	h, _, err := a.hosted(topic, p)
	if err != nil {
		return fail(err)
	}
	type answer struct {
		states []partition.ProducerState
		err    *kerr.Error
	}
	ch := make(chan answer, 1)
	a.System.Root.Send(h.PID, &partition.DescribeProducers{Reply: func(s []partition.ProducerState, err *kerr.Error) { ch <- answer{s, err} }})
	t := time.NewTimer(a.RequestTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return fail(r.err)
		}
		for _, s := range r.states {
			ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
			ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = s.ProducerID, int32(s.ProducerEpoch), s.LastSequence
			ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = s.LastTimestamp, s.CoordinatorEpoch, s.TxnStartOffset
			out.ActiveProducers = append(out.ActiveProducers, ap)
		}
		return out
	case <-t.C:
		return fail(kerr.RequestTimedOut)
	}
}
