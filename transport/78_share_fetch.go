package transport

// ShareFetch: v1-2 (KIP-932)
//
// Behaviour:
//   - With share.version below 1 finalized (UpdateFeatures), UNSUPPORTED_VERSION
//     and nothing else, as Kafka answers when the feature is off (features.go).
//   - A share consumer's fetch, on each partition's leader: records are
//     acquired for the member from the share group's share-partition actor
//     (share/partition.go) under a lock of share.record.lock.duration.ms,
//     and answered as the log's batches plus AcquiredRecords ranges with
//     their delivery counts. Acknowledgements may ride along; they are
//     applied, and durable, before any acquisition (AcknowledgeErrorCode
//     per partition).
//   - Share sessions (share_sessions.go): epoch 0 opens one with the
//     request's partitions (acknowledgements there are INVALID_REQUEST);
//     a positive epoch must be the session's (INVALID_SHARE_SESSION_EPOCH,
//     SHARE_SESSION_NOT_FOUND), adds the request's partitions and drops
//     ForgottenTopicsData; -1 applies the acknowledgements, releases what
//     the member still holds and ends the session, acquiring nothing.
//   - MaxRecords bounds the records acquired by the whole request (0 or
//     less: 500, as franz-go's default): in record-limit mode (KIP-1206)
//     never exceeded; in batch-optimized mode (0, the default) the log
//     batch that reaches it is acquired whole, as Kafka does, so that a
//     round trip carries whole batches. MaxBytes bounds the batches read
//     past the first. In
//     batch-optimized mode (ShareAcquireMode 0) the AcquiredRecords
//     ranges hold at most BatchSize records each. With
//     nothing acquired the answer waits up to MaxWaitMillis for records
//     to arrive or be released.
//   - v2 IsRenewAck: the request carries RENEW acknowledgements (KIP-1222),
//     which extend locks; it must not fetch (MaxWaitMillis, MinBytes,
//     MaxBytes and MaxRecords 0) and acquires nothing.
//   - Only partitions with records, an error, acknowledgements or new to
//     the session appear in the answer (one the request names again but
//     the session had already is not new); one without records has empty,
//     never null, Records (not nullable here, unlike Fetch's).
//     NOT_LEADER_OR_FOLLOWER carries the current leader and its endpoint
//     (KIP-951); any other partition's CurrentLeader is 0/0, as Kafka's
//     (the field has no default in ShareFetchResponse.json and KafkaApis
//     sets it only for that error).
//   - READ on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic
//     (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// Version notes:
//   - v0 was Kafka's early access, removed in Kafka 4.1; not served.
//   - v1: MaxRecords, BatchSize, AcquisitionLockTimeoutMillis.
//   - v2: ShareAcquireMode, IsRenewAck.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/share"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(78, handler{min: 1, max: 2, handle: a.handleShareFetch})
	})
}

// defaultShareMaxRecords is what a ShareFetch without a positive
// MaxRecords acquires at most.
const defaultShareMaxRecords = 500

func (a *API) handleShareFetch(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ShareFetchRequest)
	if err := a.featureOff(image.ShareVersion, 1); err != nil {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	fail := func(err *kerr.Error) finish {
		resp.ErrorCode = err.Code
		return respond(resp)
	}
	z := c.authz()
	switch {
	case group == "" || member == "" || len(member) > 36:
		return fail(kerr.InvalidRequest)
	case !z.may(read, groupResource, group):
		return fail(kerr.GroupAuthorizationFailed)
	case req.IsRenewAck && (req.MaxWaitMillis != 0 || req.MinBytes != 0 || req.MaxBytes != 0 || req.MaxRecords != 0):
		return fail(kerr.InvalidRequest)
	}
	readable := z.memo(read, topicResource)
	return func() kmsg.Response {
		// On the writer goroutine, so that pipelined requests of one
		// session meet it in order.
		return a.shareFetch(c, req, resp, group, member, readable)
	}
}

// sharePart is one partition of a ShareFetch or ShareAcknowledge answer.
type sharePart struct {
	tp      shareTP
	topic   string
	topicOK *kerr.Error // the topic's error: unknown id, not authorized
	out     *kmsg.ShareFetchResponseTopicPartition
	// always: in the answer even without records or errors (new to the
	// session, or acknowledged: a client expects those)
	always bool
}

func (a *API) shareFetch(c *conn, req *kmsg.ShareFetchRequest, resp *kmsg.ShareFetchResponse, group, member string, readable func(string) bool) kmsg.Response {
	im := a.Image()
	k := shareSessionKey{group, member}
	parts := map[shareTP]*sharePart{}
	var order []*sharePart
	part := func(tp shareTP) *sharePart {
		if p := parts[tp]; p != nil {
			return p
		}
		p := &sharePart{tp: tp}
		p.topic, p.topicOK = topicRef(im, true, "", tp.topicID)
		if p.topicOK == nil && !readable(p.topic) {
			p.topicOK = kerr.TopicAuthorizationFailed
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = tp.partition // CurrentLeader 0/0 unless not led here (shareFetchAnswer)
		p.out = &rp
		parts[tp] = p
		order = append(order, p)
		return p
	}
	var requested []shareTP
	acks := map[shareTP][]share.AckBatch{}
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			tp := shareTP{t.TopicID, rp.Partition}
			requested = append(requested, tp)
			if len(rp.AcknowledgementBatches) > 0 {
				acks[tp] = ackBatches(rp.AcknowledgementBatches, func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})
			}
		}
	}
	var forgotten []shareTP
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, shareTP{t.TopicID, p})
		}
	}

	var session []shareTP
	switch req.ShareSessionEpoch {
	case 0:
		if len(acks) > 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp
		}
		ss, err := a.shareSessions.open(k, requested, c)
		if err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		session = ss.parts
		for _, tp := range requested {
			part(tp).always = true
		}
	case -1:
		closed, err := a.shareSessions.close(k)
		if err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		a.applyShareAcks(im, group, member, acks, req.IsRenewAck, part)
		a.releaseShareSession(k, closed)
		return a.shareFetchAnswer(im, c, resp, order, a.shareLockMs(group))
	default:
		ss, added, err := a.shareSessions.next(k, req.ShareSessionEpoch, requested, forgotten)
		if err != nil {
			resp.ErrorCode = err.Code
			return resp
		}
		session = ss.parts
		// NB: a partition the session has already is answered only with
		// records, an error or acknowledgements, even when the request
		// names it again (Kafka's CachedSharePartition.maybeUpdateResponseData).
		for _, tp := range added {
			part(tp).always = true
		}
	}

	a.applyShareAcks(im, group, member, acks, req.IsRenewAck, part)
	if req.IsRenewAck {
		return a.shareFetchAnswer(im, c, resp, order, a.shareLockMs(group))
	}

	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	lockMs := a.shareLockMs(group)
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		wake := make(chan struct{}, 1)
		var watched []func()
		got := 0
		n := len(session)
		for i := range n {
			// Round robin from the epoch, so that a request's record budget
			// does not always go to the same partitions.
			tp := session[(i+int(max(req.ShareSessionEpoch, 0)))%n]
			if got >= maxRecords {
				break
			}
			p := part(tp)
			if p.topicOK != nil {
				p.out.ErrorCode = p.topicOK.Code
				continue
			}
			pid, err := a.sharePartition(group, p.topic, tp.partition)
			if err != nil {
				p.out.ErrorCode = err.Code
				continue
			}
			r := a.shareAcquire(pid, &share.Acquire{Member: member, MaxRecords: maxRecords - got, MaxBytes: maxBytes, Wake: wake, Until: deadline,
				WholeBatches: req.ShareAcquireMode == 0})
			if r.Err != nil {
				p.out.ErrorCode = r.Err.Code
				continue
			}
			lockMs = max(lockMs, r.LockMs)
			if len(r.Ranges) == 0 {
				if h := a.Partitions.Get(p.topic, tp.partition); h != nil {
					watched = append(watched, h.Watch(wake))
				}
				continue
			}
			p.out.Records = r.Records
			acquired := 0
			for _, rg := range r.Ranges {
				acquired += int(rg.Last - rg.First + 1)
				// Batch-optimized mode answers ranges of at most BatchSize
				// records, which the client acknowledges as units.
				step := rg.Last - rg.First + 1
				if req.ShareAcquireMode == 0 && req.BatchSize > 0 {
					step = int64(req.BatchSize)
				}
				for first := rg.First; first <= rg.Last; first += step {
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = first, min(first+step-1, rg.Last), rg.Count
					p.out.AcquiredRecords = append(p.out.AcquiredRecords, ar)
				}
			}
			got += acquired
			a.metrics.topic(p.topic).served(int64(acquired), int64(len(r.Records)))
			maxBytes -= int64(len(r.Records))
		}
		if got > 0 || !time.Now().Before(deadline) || !waitShare(wake, deadline, c) {
			for _, cancel := range watched {
				cancel()
			}
			return a.shareFetchAnswer(im, c, resp, order, lockMs)
		}
		for _, cancel := range watched {
			cancel()
		}
	}
}

// waitShare waits for a wake, the deadline, the node's stop or the
// client's going; it reports whether to try again.
func waitShare(wake chan struct{}, deadline time.Time, c *conn) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
	case <-c.stop:
	case <-c.gone:
	}
	return false
}

// applyShareAcks sends each partition's acknowledgements to its actor and
// waits for them all; the outcome goes to the partition's
// AcknowledgeErrorCode.
func (a *API) applyShareAcks(im *image.Image, group, member string, acks map[shareTP][]share.AckBatch, renew bool, part func(shareTP) *sharePart) {
	type waiting struct {
		p    *sharePart
		wait func() *kerr.Error
	}
	var ws []waiting
	for tp, batches := range acks {
		p := part(tp)
		p.always = true
		if p.topicOK != nil {
			p.out.AcknowledgeErrorCode = p.topicOK.Code
			continue
		}
		ws = append(ws, waiting{p, a.shareAck(group, member, p.topic, tp.partition, batches, renew)})
	}
	for _, w := range ws {
		if err := w.wait(); err != nil {
			w.p.out.AcknowledgeErrorCode = err.Code
		}
	}
}

// shareLockMs is a group's record lock duration in milliseconds.
func (a *API) shareLockMs(group string) int32 {
	if a.ShareSettings == nil {
		return 30000
	}
	return int32(a.ShareSettings(group).LockDuration.Milliseconds())
}

// shareFetchAnswer assembles the answer: the partitions in order, by
// topic, with the leader hints of those not led here.
func (a *API) shareFetchAnswer(im *image.Image, c *conn, resp *kmsg.ShareFetchResponse, order []*sharePart, lockMs int32) kmsg.Response {
	resp.AcquisitionLockTimeoutMillis = lockMs
	var h hints
	byTopic := map[[16]byte]int{}
	for _, p := range order {
		if p.out.ErrorCode == 0 && p.out.AcknowledgeErrorCode == 0 && len(p.out.AcquiredRecords) == 0 && !p.always {
			continue
		}
		h.hint(im, p.topic, p.tp.partition, p.out.ErrorCode, &p.out.CurrentLeader.LeaderID, &p.out.CurrentLeader.LeaderEpoch)
		// NB: Records is not nullable in ShareFetchResponse (it is in
		// FetchResponse), but kmsg writes a nil slice as null: the Java
		// client fails to parse such an answer ("non-nullable field
		// records was serialized as null") in its network thread, and
		// that request's partitions are then never fetched again.
		if p.out.Records == nil {
			p.out.Records = []byte{}
		}
		i, ok := byTopic[p.tp.topicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = p.tp.topicID
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			byTopic[p.tp.topicID] = i
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, *p.out)
	}
	for _, b := range endpoints(im, h.leaders) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		var ok bool
		if ne.Host, ne.Port, ok = b.Endpoint(c.listener); ok {
			ne.NodeID, ne.Rack = b.ID, rack(b)
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
	}
	return resp
}
