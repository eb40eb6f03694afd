package transport

// Fetch: v4-18
//
// Behaviour:
//   - Reads each partition's published view (no actor message): batches
//     from the fetch offset up to the high watermark (read_uncommitted) or
//     the last stable offset (read_committed, equal to the high watermark
//     until transactions exist), within the partition's and the response's
//     byte limits. The first batch of the first non-empty partition is
//     returned whole even above the limits (KIP-74).
//   - With fewer than MinBytes available, the request waits up to
//     MaxWaitMillis for any of its partitions to publish a new view (no
//     polling), then reads again.
//   - Errors per partition: OFFSET_OUT_OF_RANGE below the log start or past
//     the log end; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the
//     client's CurrentLeaderEpoch is older / newer (KIP-320);
//     UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+),
//     NOT_LEADER_OR_FOLLOWER for a partition this node does not host.
//   - Sessions (KIP-227): see fetch_session.go.
//
// Version notes:
//   - v4: isolation level. v5: log start offset. v7: sessions. v9: current
//     leader epoch. v11: rack (no read replicas: PreferredReadReplica -1).
//     v12: flexible, diverging epoch. v13: topic ids. v15: ReplicaState.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(1, handler{min: 4, max: 18, handle: a.handleFetch})
	})
}

func (a *API) handleFetch(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.FetchRequest)
	return func() kmsg.Response {
		deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		for {
			resp, f := a.fetchOnce(req)
			if f.bytes >= int64(req.MinBytes) || f.errors || !time.Now().Before(deadline) || len(f.handles) == 0 {
				return resp
			}
			if !f.wait(deadline, c.stop, c.gone) {
				return resp
			}
		}
	}
}

// fetched is what one pass over a fetch found.
type fetched struct {
	bytes   int64
	errors  bool
	handles []*partition.Handle
	views   []*partition.View // the views read, by handle
}

// wait blocks until one of the partitions publishes a view newer than the
// one read, the deadline passes, the node stops or the client goes. It
// reports whether to read again.
func (f *fetched) wait(deadline time.Time, stop, gone <-chan struct{}) bool {
	wake := make(chan struct{}, 1)
	for _, h := range f.handles {
		cancel := h.Watch(wake)
		defer cancel()
	}
	// A view published between the read and the Watch would not wake us.
	for i, h := range f.handles {
		if h.View() != f.views[i] {
			return true
		}
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
		return false
	case <-stop:
		return false
	case <-gone:
		return false
	}
}

func (a *API) fetchOnce(req *kmsg.FetchRequest) (*kmsg.FetchResponse, *fetched) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	im := a.Image()
	f := &fetched{}
	budget := int64(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	for _, rt := range req.Topics {
		respTopic := kmsg.NewFetchResponseTopic()
		respTopic.Topic, respTopic.TopicID = rt.Topic, rt.TopicID
		name, topicErr := topicRef(im, req.Version >= 13, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			p.PreferredReadReplica = -1
			err := a.fetchPartition(req, name, topicErr, rp, &p, &budget, f)
			if err != nil {
				p.ErrorCode = err.Code
				f.errors = true
				a.metrics.errorCode(1, req.Version, err.Code)
			}
			respTopic.Partitions = append(respTopic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, respTopic)
	}
	return resp, f
}

func (a *API) fetchPartition(req *kmsg.FetchRequest, topic string, topicErr *kerr.Error, rp kmsg.FetchRequestTopicPartition,
	p *kmsg.FetchResponseTopicPartition, budget *int64, f *fetched) *kerr.Error {
	if topicErr != nil {
		return topicErr
	}
	h, v, err := a.hosted(topic, rp.Partition)
	if err != nil {
		return err
	}
	f.handles, f.views = append(f.handles, h), append(f.views, v)
	lv := v.Log
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = lv.HighWatermark, lv.HighWatermark, lv.LogStartOffset
	if err := checkLeaderEpoch(rp.CurrentLeaderEpoch, v.LeaderEpoch); err != nil {
		return err
	}
	if rp.FetchOffset < lv.LogStartOffset || rp.FetchOffset > lv.LogEndOffset {
		return kerr.OffsetOutOfRange
	}
	limit := min(int64(rp.PartitionMaxBytes), *budget)
	if limit <= 0 && f.bytes > 0 {
		return nil
	}
	b, rerr := lv.ReadBytes(rp.FetchOffset, store.ReadOptions{
		MaxBytes:    max(limit, 0),
		MaxOffset:   lv.HighWatermark,
		MinOneBatch: f.bytes == 0,
	})
	if rerr != nil {
		a.Logger.Warn().Err(rerr).Str("topic", topic).Int32("partition", rp.Partition).Msg("fetch read failed")
		return kerr.KafkaStorageError
	}
	p.RecordBatches = b
	f.bytes += int64(len(b))
	*budget -= int64(len(b))
	return nil
}
