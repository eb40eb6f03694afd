package transport

// Fetch: v4-18
//
// Behaviour:
//   - Reads each partition's published view (no actor message): batches
//     from the fetch offset up to the high watermark (read_uncommitted) or
//     the last stable offset (read_committed), within the partition's and
//     the response's byte limits. A read_committed fetch also gets the
//     aborted transactions that overlap what it read (from the
//     aborted-transaction index), which the client skips; an empty list
//     when none, null for read_uncommitted, as Kafka answers. The first batch of the first non-empty partition is
//     returned whole even above the limits (KIP-74).
//   - With fewer than MinBytes available, the request waits up to
//     MaxWaitMillis for any of its partitions to publish a new view (no
//     polling), then reads again.
//   - Reads from followers (KIP-392, v11+; partition/read_replica.go): a
//     partition this node follows is read from its own log, up to the high
//     watermark its leader told it or its last stable offset (a follower
//     keeps the producers' state and aborted transactions as the leader
//     does, so read_committed is served too). A follower not in sync (out
//     of the ISR it knows, or not brought up to its leader's high
//     watermark within replica.lag.time.max.ms) answers with its leader as
//     PreferredReadReplica and no records, so the consumer goes back to
//     the leader. With replica.selector.class set to the
//     RackAwareReplicaSelector, a leader answers a consumer whose Rack it
//     does not share, and that an in-sync replica does, with that replica
//     as PreferredReadReplica and no records, as Kafka's leader does. An
//     answer that names a PreferredReadReplica goes without waiting.
//   - Errors per partition: OFFSET_OUT_OF_RANGE below the log start or past
//     the log end (on a follower, past its log end with no
//     CurrentLeaderEpoch given: no records and no error, as Kafka answers
//     since KAFKA-14255, as the client may have come on stale metadata);
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the
//     client's CurrentLeaderEpoch is older / newer (KIP-320; a follower
//     compares with the epoch of the leader it follows);
//     UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+),
//     NOT_LEADER_OR_FOLLOWER for a partition this node does not host (or
//     follows, to a Fetch before v11);
//     KAFKA_STORAGE_ERROR when the log cannot be read. A partition without
//     records (or with an error) gets zero-length records, never null:
//     librdkafka and sarama reject a null record set, and Kafka never
//     sends one.
//   - With an authorizer, READ on each topic: TOPIC_AUTHORIZATION_FAILED
//     otherwise, whether it exists or not (a v13 topic id no topic has
//     stays UNKNOWN_TOPIC_ID). A follower's fetch: replica_fetch.go.
//   - Sessions (KIP-227): see fetch_session.go. Top-level errors
//     FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
//     FETCH_SESSION_TOPIC_ID_ERROR.
//
// Records are never decoded nor re-encoded: a response is a
// kmsg.FetchResponse for the framing plus, per partition, a store.Slice of
// its segment file. The connection's writer (conn.go) writes the framing
// from memory and each slice from the file: read into its pooled buffer and
// written (the default), or with sendfile(2) straight from the page cache.
// appendFraming builds the framing with kmsg itself, so it is byte for byte
// what kmsg would write with the records inline (TestFetchFramingMatchesKmsg
// checks every version, 4-18, by both paths).
//
// Sendfile or copy, measured on this 2-core VM (AMD EPYC, Linux 6.18, other
// work running beside it) with BenchmarkFetchPath in fetch_bench_test.go: a
// node in the test process holding 256 MiB of 1 KiB records in 4
// partitions, in the page cache; each round fetches all of it over one
// loopback connection with a raw Fetch v12 client; medians of 3 runs:
//
//	go test ./transport/ -run '^$' -bench FetchPath -benchtime 8x -count 3
//
//	client in process,       PartitionMaxBytes 1 MiB      8 MiB
//	  sendfile               1227 MB/s 0.93 cpu-s/GB      1211 MB/s 0.79 cpu-s/GB
//	  copy                   1242 MB/s 0.81 cpu-s/GB      1358 MB/s 0.71 cpu-s/GB
//	client in a child process (broker / client CPU-s per GB)
//	  sendfile               1087 MB/s 0.54 / 0.60        1183 MB/s 0.51 / 0.60
//	  copy                   1276 MB/s 0.53 / 0.37        1307 MB/s 0.49 / 0.36
//
// Copy is the default: it is as fast or faster, costs the broker the same
// CPU per GB (within the noise of a shared machine), and costs a loopback
// client less, as it reads bytes the copy left in the CPU cache where
// sendfile hands over cold page-cache pages. perf shows where sendfile's
// saved copies go on loopback: into splicing, softirq processing and
// context switches, as the TCP stack pushes smaller pieces more often.
// Neither TCP_CORK nor MSG_MORE on the framing changed the figures. It
// stays available (conn.go's sendfileMin) for hardware where it measures
// better.
//
// Version notes:
//   - v4: isolation level. v5: log start offset. v7: sessions. v9: current
//     leader epoch. v11: rack and PreferredReadReplica (KIP-392).
//     v12: flexible, diverging epoch. v13: topic ids. v15: ReplicaState (a
//     follower's fetch: replica_fetch.go). v18: the follower's high watermark.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.fetchSessions = newFetchSessionCache(defaultFetchSessionSlots, defaultFetchSessionEvictionAge)
		a.register(1, handler{min: 4, max: 18, handle: a.handleFetch})
	})
}

func (a *API) handleFetch(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.FetchRequest)
	if req.ReplicaState.ID >= 0 || req.ReplicaID >= 0 {
		return a.handleReplicaFetch(c, req) // replica_fetch.go
	}
	readable := c.authz().memo(read, topicResource)
	user, client := c.quotaUser(), c.client
	return func() kmsg.Response {
		// The session is looked up here, on the writer goroutine, so that
		// fetches pipelined on one connection meet it in request order.
		fc := a.fetchSessions.begin(req)
		if fc.err != nil {
			return a.fetchSessionError(req, fc.err)
		}
		deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		for {
			res, f := a.fetchOnce(req, c.listener, fc.wants, readable)
			if f.bytes >= int64(req.MinBytes) || f.errors || f.redirects || !time.Now().Before(deadline) || len(f.handles) == 0 ||
				!f.wait(deadline, c.stop, c.gone) {
				resp := a.fetchAnswer(req, c.listener, fc, res)
				a.chargeFetch(c, user, client, res, resp)
				return resp
			}
		}
	}
}

// fetchSessionError answers a fetch whose session is unusable: the error,
// SessionID 0 and nothing else, as Kafka's SessionErrorContext.
func (a *API) fetchSessionError(req *kmsg.FetchRequest, err *kerr.Error) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = err.Code
	a.metrics.errorCode(1, req.Version, err.Code)
	return resp
}

// fetchResult is what a fetch found for one partition it wants.
type fetchResult struct {
	topic   string // as resolved, for the response
	topicID [16]byte
	part    kmsg.FetchResponseTopicPartition // RecordBatches always empty
	slice   store.Slice                      // the records, Size 0 for none
	from    int64                            // the fetch offset, for the records served
	// follower is set when this node read the records as a follower.
	follower bool
}

// fetched is what one pass over a fetch found.
type fetched struct {
	bytes  int64
	errors bool
	// redirects is set when a partition names a PreferredReadReplica:
	// the answer goes at once, as Kafka's does.
	redirects bool
	handles   []*partition.Handle
	views     []*partition.View // the views read, by handle
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

// fetchOnce reads every wanted partition, in order, within the response's
// byte budget; a topic the client may not read is
// TOPIC_AUTHORIZATION_FAILED.
func (a *API) fetchOnce(req *kmsg.FetchRequest, listener string, wants []fetchWant, readable func(string) bool) ([]fetchResult, *fetched) {
	im := a.Image()
	f := &fetched{}
	budget := int64(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	res := make([]fetchResult, len(wants))
	for i := range wants {
		w, r := &wants[i], &res[i]
		r.topicID = w.key.topicID
		r.part = kmsg.NewFetchResponseTopicPartition()
		p := &r.part
		p.Partition = w.key.partition
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
		p.RecordBatches = []byte{}
		name, topicErr := topicRef(im, req.Version >= 13, w.key.topic, w.key.topicID)
		if (topicErr == nil || req.Version < 13) && !readable(name) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		r.topic = name
		if err := a.fetchPartition(im, req, listener, name, topicErr, w, r, &budget, f); err != nil {
			p.ErrorCode = err.Code
			f.errors = true
		}
	}
	return res, f
}

func (a *API) fetchPartition(im *image.Image, req *kmsg.FetchRequest, listener, topic string, topicErr *kerr.Error, w *fetchWant, r *fetchResult, budget *int64, f *fetched) *kerr.Error {
	if topicErr != nil {
		return topicErr
	}
	readCommitted := req.IsolationLevel == 1
	h, v, err := a.hosted(topic, w.key.partition)
	if err == kerr.NotLeaderForPartition && req.Version >= 11 {
		// KIP-392: a consumer's Fetch v11+ may read from a follower.
		if fh, fv, ferr := a.Partitions.Followed(im, a.Node.NodeID, topic, w.key.partition); ferr != kerr.NotLeaderForPartition {
			h, v, err, r.follower = fh, fv, ferr, ferr == nil
		}
	}
	if err != nil {
		return err
	}
	f.handles, f.views = append(f.handles, h), append(f.views, v)
	lv, p := v.Log, &r.part
	// NB: a partition answered with an error keeps -1 for its offsets,
	// as Kafka's does.
	epoch := v.LeaderEpoch
	if r.follower {
		epoch = v.State.LeaderEpoch
	}
	if err := partition.CheckLeaderEpoch(w.currentLeaderEpoch, epoch); err != nil {
		return err
	}
	offsets := func() {
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = lv.HighWatermark, lv.LastStableOffset, lv.LogStartOffset
	}
	if id := a.readReplica(im, req, listener, h, v, r.follower, w.fetchOffset); id >= 0 {
		offsets()
		p.PreferredReadReplica = id
		f.redirects = true
		return nil
	}
	if w.fetchOffset < lv.LogStartOffset || w.fetchOffset > lv.LogEndOffset {
		if r.follower && w.currentLeaderEpoch < 0 && w.fetchOffset > lv.LogEndOffset {
			offsets()
			return nil
		}
		return kerr.OffsetOutOfRange
	}
	offsets()
	end := lv.HighWatermark
	if readCommitted {
		end = lv.LastStableOffset
		p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	limit := min(int64(w.maxBytes), *budget)
	if limit <= 0 && f.bytes > 0 {
		return nil
	}
	sl, rerr := lv.Read(w.fetchOffset, store.ReadOptions{
		MaxBytes:    max(limit, 0),
		MaxOffset:   end,
		MinOneBatch: f.bytes == 0,
	})
	if rerr != nil {
		a.limited(a.Logger.Warn()).Err(rerr).Str("topic", topic).Int32("partition", w.key.partition).Msg("fetch read failed")
		return kerr.KafkaStorageError
	}
	if readCommitted && sl.Size > 0 {
		for _, t := range lv.AbortedTxns(w.fetchOffset, sl.NextOffset) {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = t.ProducerID, t.FirstOffset
			p.AbortedTransactions = append(p.AbortedTransactions, at)
		}
	}
	r.slice, r.from = sl, w.fetchOffset
	f.bytes += sl.Size
	*budget -= sl.Size
	return nil
}

// readReplica returns the replica a consumer's fetch of a partition
// should go to instead of reading here, -1 for none (partition/read_replica.go):
// on a follower not in sync, its leader, when the image has it live; on a
// leader with the rack-aware selector, an in-sync replica in the
// consumer's rack.
func (a *API) readReplica(im *image.Image, req *kmsg.FetchRequest, listener string, h *partition.Handle, v *partition.View, follower bool, fetchOffset int64) int32 {
	switch {
	case req.Version < 11:
		return -1
	case follower:
		lag := time.Duration(a.Node.ReplicaLagTimeMaxMs) * time.Millisecond
		if partition.FollowerInSync(v, h.CaughtUp(), a.Node.NodeID, a.now(), lag) {
			return -1
		}
		// With no live leader to send the consumer to, the follower serves
		// what it has, which is committed: a new leader comes with a new
		// epoch.
		leader := v.State.Leader
		if b, ok := im.Brokers[leader]; ok && !b.Fenced {
			if _, _, ok := b.Endpoint(listener); ok {
				return leader
			}
		}
		return -1
	case a.Node.RackAwareReads():
		return partition.PreferredReadReplica(im, v, a.Node.NodeID, req.Rack, listener, fetchOffset)
	}
	return -1
}

// fetchAnswer builds the response from the last pass's results: every
// partition for a full fetch (opening a session if asked), the ones the
// client needs to hear about for an incremental one; leaders by their
// address on the client's listener.
func (a *API) fetchAnswer(req *kmsg.FetchRequest, listener string, fc *fetchContext, res []fetchResult) kmsg.Response {
	var keep []int // nil: all
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	switch {
	case fc.session != nil:
		k, err := a.fetchSessions.answer(fc, res)
		if err != nil {
			return a.fetchSessionError(req, err)
		}
		keep = append(make([]int, 0, len(k)), k...)
		resp.SessionID = fc.session.id
	case fc.openSession:
		// The new session remembers what this response tells the client.
		resp.SessionID = a.fetchSessions.open(fc, res)
	}
	fr := &fetchResponse{FetchResponse: resp}
	n := len(res)
	if keep != nil {
		n = len(keep)
	}
	// The counters of the last topic served: a response's partitions come
	// by topic.
	var counted *topicCounters
	var countedTopic string
	for j := 0; j < n; j++ {
		i := j
		if keep != nil {
			i = keep[j]
		}
		r := &res[i]
		fr.add(r.topic, r.topicID, r.part, r.slice)
		a.metrics.errorCode(1, req.Version, r.part.ErrorCode)
		if r.part.PreferredReadReplica >= 0 {
			a.metrics.sentElsewhere(r.follower)
		}
		if sl := &r.slice; sl.Size > 0 {
			if counted == nil || countedTopic != r.topic {
				counted, countedTopic = a.metrics.topic(r.topic), r.topic
			}
			n := sl.NextOffset - max(sl.FirstOffset, r.from)
			counted.served(n, sl.Size)
			if r.follower {
				a.metrics.servedAsFollower(n, sl.Size)
			}
		}
	}
	if req.Version >= 12 {
		fetchLeaderHints(a.Image(), listener, resp)
	}
	return fr
}

// fetchResponse is a Fetch response whose record bytes stay in their
// segment files until the connection's writer sends them.
//
// NB: the slices stay valid for file.delete.delay.ms after the views they
// came from were replaced (see store.View); the writer sends them as soon
// as the response is finished, and a send that comes too late fails on the
// closed file and closes the connection instead of sending wrong bytes.
type fetchResponse struct {
	*kmsg.FetchResponse
	// slices holds each partition's records, in encoding order (topics,
	// then their partitions); Size 0 for none.
	slices []store.Slice
}

// add appends a partition and its records. Consecutive partitions of a
// topic share its entry; a topic split by a session's order appears twice,
// as from Kafka.
func (r *fetchResponse) add(topic string, topicID [16]byte, p kmsg.FetchResponseTopicPartition, sl store.Slice) {
	if t := len(r.Topics) - 1; t < 0 || r.Topics[t].Topic != topic || r.Topics[t].TopicID != topicID {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = topic, topicID
		r.Topics = append(r.Topics, rt)
	}
	rt := &r.Topics[len(r.Topics)-1]
	rt.Partitions = append(rt.Partitions, p)
	r.slices = append(r.slices, sl)
}

// eachPartition calls fn for each partition in encoding order with its
// slice.
func (r *fetchResponse) eachPartition(fn func(p *kmsg.FetchResponseTopicPartition, sl *store.Slice)) {
	k := 0
	for t := range r.Topics {
		for i := range r.Topics[t].Partitions {
			fn(&r.Topics[t].Partitions[i], &r.slices[k])
			k++
		}
	}
}

// AppendTo appends the response with the records read into memory: what
// kmsg would write. The writer uses appendFraming instead; this serves any
// other caller, and the writer when the framing cannot be spliced.
func (r *fetchResponse) AppendTo(dst []byte) []byte {
	r.eachPartition(func(p *kmsg.FetchResponseTopicPartition, sl *store.Slice) {
		if sl.Size == 0 {
			return
		}
		b := make([]byte, sl.Size)
		if _, err := sl.File.ReadAt(b, sl.Pos); err != nil {
			p.ErrorCode = kerr.KafkaStorageError.Code
			return
		}
		p.RecordBatches = b
	})
	dst = r.FetchResponse.AppendTo(dst)
	r.eachPartition(func(p *kmsg.FetchResponseTopicPartition, _ *store.Slice) { p.RecordBatches = []byte{} })
	return dst
}

// section is a file range to be written at an offset of a response's
// framing.
type section struct {
	at int // offset in the framing buffer where the bytes belong
	store.Slice
}

// appendFraming appends the response's encoding to dst with the records
// left out: the length prefix of each partition's RecordBatches is the one
// for its slice, and secs[i]'s bytes belong at offset secs[i].at of out.
// Writing out[:secs[0].at], secs[0], out[secs[0].at:secs[1].at], ...,
// out[secs[n-1].at:] gives exactly what AppendTo gives. ok is false if the
// framing could not be built, which would be a bug in this function; dst is
// then returned as it was.
//
// How: kmsg encodes the response twice, each partition with records holding
// one placeholder byte, 0x00 the first time and 0xff the second. The
// encodings differ exactly at the placeholders, which finds them without
// knowing the layout of any version; each placeholder's length prefix, just
// before it, is then rewritten for the slice's real size (int32 before v12;
// a uvarint of size+1 from v12, which may be longer than the placeholder's).
// scratch is a buffer to reuse; the one used is returned.
func (r *fetchResponse) appendFraming(dst, scratch []byte) (out []byte, secs []section, scratchOut []byte, ok bool) {
	var zero, ones = []byte{0}, []byte{0xff}
	n := 0
	set := func(b []byte) {
		r.eachPartition(func(p *kmsg.FetchResponseTopicPartition, sl *store.Slice) {
			if sl.Size > 0 {
				p.RecordBatches = b
			}
		})
	}
	for _, sl := range r.slices {
		if sl.Size > 0 {
			n++
		}
	}
	start := len(dst)
	set(zero)
	dst = r.FetchResponse.AppendTo(dst)
	set(ones)
	scratch = r.FetchResponse.AppendTo(scratch[:0])
	set([]byte{})
	a := dst[start:]
	if len(a) != len(scratch) {
		return dst[:start], nil, scratch, false
	}
	// The first encoding is kept in scratch while dst is rebuilt.
	at := make([]int, 0, n)
	for i := range a {
		if a[i] != scratch[i] {
			at = append(at, i)
		}
	}
	if len(at) != n {
		return dst[:start], nil, scratch, false
	}
	copy(scratch, a)
	flexible := r.IsFlexible()
	dst = dst[:start]
	secs = make([]section, 0, n)
	prev, k := 0, 0
	for _, sl := range r.slices {
		if sl.Size == 0 {
			continue
		}
		pos := at[k]
		k++
		// The placeholder's prefix says length 1.
		var prefix int
		if flexible {
			prefix = 1
			if pos < 1 || scratch[pos-1] != 2 {
				return dst[:start], nil, scratch, false
			}
		} else {
			prefix = 4
			if pos < 4 || scratch[pos-4] != 0 || scratch[pos-3] != 0 || scratch[pos-2] != 0 || scratch[pos-1] != 1 {
				return dst[:start], nil, scratch, false
			}
		}
		dst = append(dst, scratch[prev:pos-prefix]...)
		if flexible {
			dst = kbin.AppendUvarint(dst, uint32(sl.Size+1))
		} else {
			dst = kbin.AppendInt32(dst, int32(sl.Size))
		}
		secs = append(secs, section{at: len(dst), Slice: sl})
		prev = pos + 1
	}
	dst = append(dst, scratch[prev:len(a)]...)
	return dst, secs, scratch, true
}

// chargeFetch measures the records a fetch answers against its client's
// consumer_byte_rate: past it, the answer says how long to wait and the
// connection is muted for that long.
func (a *API) chargeFetch(c *conn, user, client string, res []fetchResult, resp kmsg.Response) {
	im := a.quotaImage()
	if im == nil {
		return
	}
	quota, sk, ok := resolve(im, quotaFetch, user, client)
	if !ok {
		return
	}
	var n int64
	for _, r := range res {
		n += int64(r.slice.Size)
	}
	if d := a.quotas.charge(sk, quota, float64(n), time.Now()); d > 0 {
		a.metrics.throttled(quotaFetch, d)
		setThrottle(resp, d)
		c.mute(d)
	}
}
