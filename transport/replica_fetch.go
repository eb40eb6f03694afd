package transport

// Fetch from a follower (ReplicaState.ID >= 0, v15+): replication's data
// path, as in Kafka. A follower node's fetcher (partition/fetcher.go) sends
// one at a time, for every partition it follows on this node.
//
// Behaviour:
//   - With an authorizer, the follower's principal needs CLUSTER_ACTION on
//     the cluster: CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - ReplicaState.Epoch must be the follower's incarnation in this node's
//     metadata image; otherwise the top-level error is STALE_BROKER_EPOCH
//     (a restarted follower is known once its registration arrives).
//   - Each partition is read with partition.Registry.ReadForFollower: an
//     error (NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH,
//     UNKNOWN_TOPIC_ID, OFFSET_OUT_OF_RANGE below the log start,
//     KAFKA_STORAGE_ERROR), a diverging epoch (KIP-320), or the records past
//     the follower's end up to the log end (not the high watermark), within
//     PartitionMaxBytes and MaxBytes, the first batch whole (KIP-74). The
//     partition's actor hears of the follower's position once per fetch.
//   - The answer waits, up to MaxWaitMillis, until a partition has records,
//     an error, a divergence, or a high watermark past the one the follower
//     sent (KIP-1166).
//   - Faults injected on the link to the follower (actors.Links, by its
//     remoting address) apply: a dropped fetch is not answered at all, a
//     delayed one is answered late.
//   - Replication throttling (KIP-73, partition/throttle.go): a partition
//     whose leader.replication.throttled.replicas names this node, fetched
//     by a follower outside its ISR while this node's
//     leader.replication.throttled.rate is exceeded, is answered without
//     records; the records served of such partitions count against it.
//   - No sessions: every replica fetch is a full one.
//
// The records go out as a client's do (fetchResponse): from the segment
// files to the socket, never decoded.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

func (a *API) handleReplicaFetch(c *conn, req *kmsg.FetchRequest) finish {
	follower, epoch := req.ReplicaState.ID, req.ReplicaState.Epoch
	z := c.authz()
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		if !z.may(clusterAction, clusterResource, clusterName) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			a.metrics.errorCode(1, req.Version, resp.ErrorCode)
			return resp
		}
		b, ok := a.Image().Brokers[follower]
		if !ok || req.Version < 15 || int64(b.Incarnation) != epoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			a.metrics.errorCode(1, req.Version, resp.ErrorCode)
			return resp
		}
		if a.Links != nil {
			drop, delay := a.Links.Draw(b.ClusterAddr)
			if drop {
				return nil
			}
			time.Sleep(delay)
		}
		wants := a.followerWants(req)
		deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		for first := true; ; first = false {
			reads, f, ready := a.readForFollower(req, follower, wants, first)
			if ready || !time.Now().Before(deadline) || !f.wait(deadline, c.stop, c.gone) {
				return a.followerAnswer(req, wants, reads)
			}
		}
	}
}

// followerWant is one partition of a follower's fetch.
type followerWant struct {
	pos      partition.FollowerPosition
	maxBytes int64
}

// followerWants lists the fetch's partitions in request order, their
// topics named from the image by id ("" for an id it lacks).
func (a *API) followerWants(req *kmsg.FetchRequest) []followerWant {
	im := a.Image()
	var out []followerWant
	for _, t := range req.Topics {
		name := ""
		if tt := im.TopicsByID[t.TopicID]; tt != nil {
			name = tt.Name
		}
		for _, p := range t.Partitions {
			out = append(out, followerWant{maxBytes: int64(p.PartitionMaxBytes), pos: partition.FollowerPosition{
				Topic: name, Partition: p.Partition, TopicID: t.TopicID,
				FetchOffset: p.FetchOffset, LastFetchedEpoch: p.LastFetchedEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
				HighWatermark: p.HighWatermark,
			}})
		}
	}
	return out
}

// readForFollower reads every partition of the fetch, in order, within
// its byte limits; ready says whether the answer should go now, without
// waiting for more (partition.FollowerRead.Ready).
func (a *API) readForFollower(req *kmsg.FetchRequest, follower int32, wants []followerWant, first bool) (reads []partition.FollowerRead, f *fetched, ready bool) {
	im := a.Image()
	f = &fetched{}
	budget := int64(req.MaxBytes)
	reads = make([]partition.FollowerRead, len(wants))
	for i, w := range wants {
		if w.pos.Topic == "" {
			reads[i] = partition.FollowerRead{Err: kerr.UnknownTopicID, HighWatermark: -1, LogStartOffset: -1, DivergingEpoch: -1, DivergingEnd: -1}
			ready = true
			continue
		}
		r := a.Partitions.ReadForFollower(im, a.Node.NodeID, follower, uint64(req.ReplicaState.Epoch), w.pos, min(w.maxBytes, budget), f.bytes == 0, first, a.System.Root)
		reads[i] = r
		if r.Handle != nil {
			f.handles, f.views = append(f.handles, r.Handle), append(f.views, r.View)
		}
		ready = ready || r.Ready(w.pos)
		f.bytes += r.Records.Size
		budget -= r.Records.Size
	}
	return reads, f, ready
}

// followerAnswer builds the response from the last pass's reads.
func (a *API) followerAnswer(req *kmsg.FetchRequest, wants []followerWant, reads []partition.FollowerRead) kmsg.Response {
	fr := &fetchResponse{FetchResponse: req.ResponseKind().(*kmsg.FetchResponse)}
	var sent int64
	for i, r := range reads {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = wants[i].pos.Partition
		p.HighWatermark, p.LogStartOffset = r.HighWatermark, r.LogStartOffset
		p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = r.DivergingEpoch, r.DivergingEnd
		if r.Err != nil {
			p.ErrorCode = r.Err.Code
		}
		p.RecordBatches = []byte{}
		fr.add(wants[i].pos.Topic, wants[i].pos.TopicID, p, r.Records)
		a.metrics.errorCode(1, req.Version, p.ErrorCode)
		sent += r.Records.Size
	}
	if a.Replication != nil {
		a.Replication.BytesOut.Add(uint64(sent))
	}
	if a.Partitions != nil {
		a.Partitions.RecordLeader(reads)
	}
	return fr
}
