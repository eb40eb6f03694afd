package transport

// Produce: v3-13 served; v0-2 advertised (Kafka 4 does, for librdkafka
// before 2.11.1) and answered UNSUPPORTED_VERSION.
//
// Behaviour:
//   - Each partition's records are validated here, on the connection's
//     goroutine (partition.Validate: one RecordBatch v2, CRC, sizes,
//     max.message.bytes, keys on compacted topics), then appended by the
//     partition's actor, which answers when the records are as durable as
//     acks asks (see package partition). The actors get the request's
//     Appends once all are validated, announced to the node's Syncer
//     under durability fsync so that one sync round covers them.
//   - Idempotent producers (KIP-98, KIP-360), checked by the partition's
//     actor: a retried batch is answered with the offsets it got the first
//     time, once they are as durable as acks asks; a sequence gap or a new
//     epoch not starting at 0 is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
//     INVALID_PRODUCER_EPOCH, as Kafka 4.x answers at every version; a
//     producer id the partition does not know goes on at any sequence
//     (UNKNOWN_PRODUCER_ID is never returned). See partition/producers.go.
//   - Transactional batches (KIP-98) need the request's transactional id:
//     a request with one and no id is refused on every partition with
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka refuses it.
//     The partition's first batch of a producer's transaction is held
//     while the id's coordinator confirms that the transaction includes
//     the partition (KIP-890 part 1; from v12 it adds it, part 2): a late
//     batch of a finished transaction is refused, never starts one. A
//     coordinator that cannot answer now is NOT_ENOUGH_REPLICAS (retriable).
//   - A topic whose compression.type is a codec (not "producer") stores
//     batches in that codec: others are recompressed here, before the
//     append. zstd batches need v7+ (UNSUPPORTED_COMPRESSION_TYPE).
//   - With an authorizer: WRITE on the transactional id when there is one
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), WRITE on
//     each topic (TOPIC_AUTHORIZATION_FAILED, whether it exists or not; a
//     v13 topic id no topic has stays UNKNOWN_TOPIC_ID), each with a
//     message naming what would allow it.
//   - acks=0 gets no response; the records are still validated and
//     appended. acks other than -1, 0 and 1: INVALID_REQUIRED_ACKS on
//     every partition, nothing appended.
//   - Validation errors come in Kafka's order with Kafka's codes (see
//     partition.Validate); one the log would raise (the batch's contents)
//     carries the partition's log start offset, as Kafka's does.
//   - An internal topic (__consumer_offsets, __transaction_state):
//     INVALID_TOPIC_EXCEPTION, as Kafka answers a client that is not its
//     own: only the coordinators write them.
//   - A partition this node does not host: UNKNOWN_TOPIC_OR_PARTITION if
//     the topic or the partition does not exist, NOT_LEADER_OR_FOLLOWER
//     otherwise.
//   - Partitions not answered within TimeoutMillis get REQUEST_TIMED_OUT,
//     an indefinite error: the records may still become durable.
//
// Version notes:
//   - v3: RecordBatch v2 and transactional ids. v7: zstd. v8: ErrorMessage,
//     ErrorRecords. v9: flexible. v13: topic ids instead of names.

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(0, handler{min: 3, max: 13, handle: a.handleProduce, refuse: refuseProduce})
	})
}

// refuseProduce answers a Produce v0-2 with UNSUPPORTED_VERSION on every
// partition, as Kafka 4 does.
func refuseProduce(kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, kerr.UnsupportedVersion.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// produceWait collects the partitions' answers to one Produce request.
type produceWait struct {
	mu       sync.Mutex
	pending  int
	armed    bool // every partition has been sent: pending can reach zero for good
	closed   bool
	answered map[*kmsg.ProduceResponseTopicPartition]bool
	done     chan struct{}
}

func (w *produceWait) complete(slot *kmsg.ProduceResponseTopicPartition, r partition.AppendResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return // answered REQUEST_TIMED_OUT already
	}
	setAppendResult(slot, r)
	w.answered[slot] = true
	w.pending--
	// NB: an actor may answer before the request's last partition is sent;
	// done closes only once all are.
	if w.pending == 0 && w.armed {
		close(w.done)
	}
}

func setAppendResult(slot *kmsg.ProduceResponseTopicPartition, r partition.AppendResult) {
	if r.Err != nil {
		slot.ErrorCode = r.Err.Code
		if r.Message != "" {
			slot.ErrorMessage = kmsg.StringPtr(r.Message)
		}
		if r.ErrWithLogStart {
			slot.LogStartOffset = r.LogStartOffset
		}
		return
	}
	slot.BaseOffset, slot.LogAppendTime, slot.LogStartOffset = r.BaseOffset, r.LogAppendTime, r.LogStartOffset
}

func (a *API) handleProduce(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	im := a.Image()
	w := &produceWait{done: make(chan struct{}), answered: map[*kmsg.ProduceResponseTopicPartition]bool{}}
	z := c.authz()
	acksErr := req.Acks != -1 && req.Acks != 0 && req.Acks != 1
	txnErr := req.TransactionID == nil && hasTransactionalBatch(req)
	var txnDenied string
	if req.TransactionID != nil && !z.may(write, txnResource, *req.TransactionID) {
		txnDenied = z.denial(write, txnResource, *req.TransactionID)
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var sends []appendSend
	for i, rt := range req.Topics {
		respTopic := &resp.Topics[i]
		*respTopic = kmsg.NewProduceResponseTopic()
		respTopic.Topic, respTopic.TopicID = rt.Topic, rt.TopicID
		name, topicErr := topicRef(im, req.Version >= 13, rt.Topic, rt.TopicID)
		var topicDenied string
		if (topicErr == nil || req.Version < 13) && !z.may(write, topicResource, name) {
			topicErr, topicDenied = kerr.TopicAuthorizationFailed, z.denial(write, topicResource, name)
		}
		respTopic.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			slot := &respTopic.Partitions[j]
			*slot = kmsg.NewProduceResponseTopicPartition()
			slot.Partition = rp.Partition
			slot.BaseOffset, slot.LogAppendTime, slot.LogStartOffset = -1, -1, -1
			if acksErr {
				slot.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			}
			if txnErr {
				slot.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				continue
			}
			if txnDenied != "" {
				slot.ErrorCode, slot.ErrorMessage = kerr.TransactionalIDAuthorizationFailed.Code, kmsg.StringPtr(txnDenied)
				a.metrics.errorCode(0, req.Version, slot.ErrorCode)
				continue
			}
			if topicDenied != "" {
				slot.ErrorCode, slot.ErrorMessage = topicErr.Code, kmsg.StringPtr(topicDenied)
				a.metrics.errorCode(0, req.Version, slot.ErrorCode)
				continue
			}
			if t := im.Topic(name); topicErr == nil && t != nil && t.Internal {
				// As Kafka: the coordinators' topics are written by the
				// coordinators alone, which keep what they wrote in memory
				// (a group coordinator's index of its partition).
				slot.ErrorCode, slot.ErrorMessage = kerr.InvalidTopicException.Code, kmsg.StringPtr("Cannot append to internal topic "+name)
				a.metrics.errorCode(0, req.Version, slot.ErrorCode)
				continue
			}
			if err, msg := a.startAppend(c, req, name, topicErr, rp, slot, w, &sends); err != nil {
				slot.ErrorCode = err.Code
				if msg != "" {
					slot.ErrorMessage = kmsg.StringPtr(msg)
				}
				a.metrics.errorCode(0, req.Version, err.Code)
			}
		}
	}
	a.sendAppends(sends)
	if req.Acks == 0 {
		return func() kmsg.Response { return nil }
	}
	w.mu.Lock()
	w.armed = true
	if w.pending == 0 {
		close(w.done)
	}
	w.mu.Unlock()
	return func() kmsg.Response {
		t := time.NewTimer(time.Duration(req.TimeoutMillis) * time.Millisecond)
		defer t.Stop()
		select {
		case <-w.done:
		case <-t.C:
		case <-c.gone: // nobody to answer
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				slot := &resp.Topics[i].Partitions[j]
				if !w.answered[slot] && slot.ErrorCode == 0 {
					slot.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		if req.Version >= 10 {
			produceLeaderHints(a.Image(), c.listener, resp)
		}
		return resp
	}
}

// hasTransactionalBatch reports whether any partition's records start
// with a batch whose attributes mark it transactional (bit 4 of the
// attributes at byte 21), before they are validated.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.Records) > 22 && p.Records[22]&0x10 != 0 {
				return true
			}
		}
	}
	return false
}

// appendSend is an Append for a partition's actor, validated and not sent
// yet.
type appendSend struct {
	pid *actor.PID
	m   *partition.Append
}

// sendAppends sends a request's Appends to their actors, once all are
// validated, announced to the node's Syncer (durability fsync) when there
// are several: the sync round that the first of them to be written starts
// then waits for the rest (partition.Syncer.Announce).
func (a *API) sendAppends(sends []appendSend) {
	if a.Syncer != nil && len(sends) > 1 {
		announced := a.Syncer.Announce(len(sends))
		for _, s := range sends {
			s.m.Announced = announced
		}
	}
	for _, s := range sends {
		a.System.Root.Send(s.pid, s.m)
	}
}

// startAppend validates one partition's records and adds the Append for
// its actor to sends, or returns the error to answer at once.
func (a *API) startAppend(c *conn, req *kmsg.ProduceRequest, topic string, topicErr *kerr.Error, rp kmsg.ProduceRequestTopicPartition,
	slot *kmsg.ProduceResponseTopicPartition, w *produceWait, sends *[]appendSend) (*kerr.Error, string) {
	if topicErr != nil {
		return topicErr, ""
	}
	h, v, err := a.hosted(topic, rp.Partition)
	if err != nil {
		return err, ""
	}
	bh, rej := partition.Validate(rp.Records, v.Config, &c.dec)
	if rej != nil {
		if rej.Contents {
			slot.LogStartOffset = v.Log.LogStartOffset
		}
		if rej.Record >= 0 && req.Version >= 8 {
			er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			er.RelativeOffset, er.ErrorMessage = rej.Record, kmsg.StringPtr(rej.Message)
			slot.ErrorRecords = append(slot.ErrorRecords, er)
		}
		return rej.Err, rej.Message
	}
	if bh.Transactional() && a.Verifier == nil {
		return kerr.InvalidTxnState, "this node has no transaction coordinator to verify the batch with"
	}
	records := rp.Records
	// The records alias the request's body, pooled by the connection:
	// the actor releases it once done with them (body.go).
	body := c.body
	if bh.Codec() == store.CodecZstd && req.Version < 7 {
		return kerr.UnsupportedCompressionType, "zstd needs Produce v7 or later"
	}
	if codec, ok := partition.TargetCodec(v.Config.CompressionType); ok && codec != bh.Codec() {
		// compression.type asks for another codec than the producer's: the
		// broker recompresses, as Kafka does.
		b, rerr := partition.Recompress(records, bh, codec, &c.dec)
		if rerr != nil {
			return kerr.CorruptMessage, rerr.Error()
		}
		records = b
		body = nil // the new batch does not alias the body
	}
	reply := func(partition.AppendResult) {}
	if req.Acks != 0 {
		w.mu.Lock()
		w.pending++
		w.mu.Unlock()
		reply = func(r partition.AppendResult) { w.complete(slot, r) }
	}
	var release func()
	if body != nil {
		body.retain()
		release = body.release
	}
	if pc := a.ProducerClients; pc != nil && bh.ProducerID >= 0 && bh.ProducerID != c.producerID {
		c.producerID = bh.ProducerID
		pc.Seen(bh.ProducerID, ProducerClient{ClientID: c.client, Address: c.nc.RemoteAddr().String()})
	}
	m := &partition.Append{Records: records, Acks: req.Acks, Reply: reply, Release: release, Counter: a.metrics.topic(topic)}
	if bh.Transactional() {
		id, version, v := *req.TransactionID, req.Version, a.Verifier
		m.Verify = func(reply func(*kerr.Error)) {
			// Produce v12+ adds the partition to the transaction itself
			// (KIP-890 part 2); before, the producer added it.
			v.Verify(id, bh.ProducerID, bh.ProducerEpoch, topic, rp.Partition, version >= 12, func(err *kerr.Error) {
				reply(verifyProduceError(err, version))
			})
		}
	}
	*sends = append(*sends, appendSend{h.PID, m})
	return nil, ""
}
