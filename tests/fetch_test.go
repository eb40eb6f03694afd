package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchExchange is a Fetch request a client sent and the response it got
// (nil until read).
type fetchExchange struct {
	req  *kmsg.FetchRequest
	resp *kmsg.FetchResponse
}

// fetchLog records the Fetch requests and responses that pass through the
// connections of a sniffing dialer, so that a test can see what a real
// client does with sessions; waiters are woken at each record.
type fetchLog struct {
	mu     sync.Mutex
	ex     []*fetchExchange
	notify chan struct{}
}

func newFetchLog() *fetchLog { return &fetchLog{notify: make(chan struct{})} }

func (l *fetchLog) add(f func()) {
	l.mu.Lock()
	f()
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}

// snapshot returns the exchanges so far.
func (l *fetchLog) snapshot() []*fetchExchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*fetchExchange, len(l.ex))
	for i, e := range l.ex {
		cp := *e
		out[i] = &cp
	}
	return out
}

// waitFor blocks until cond holds for the exchanges so far.
func (l *fetchLog) eventually(ctx context.Context, t *testing.T, what string, cond func([]*fetchExchange) bool) {
	t.Helper()
	for {
		l.mu.Lock()
		ch := l.notify
		l.mu.Unlock()
		if cond(l.snapshot()) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			var sb strings.Builder
			for _, e := range l.snapshot() {
				fmt.Fprintf(&sb, "\n  session %d epoch %d: %d topics, forgotten %v", e.req.SessionID, e.req.SessionEpoch, len(e.req.Topics), e.req.ForgottenTopics)
				for _, rt := range e.req.Topics {
					fmt.Fprintf(&sb, " %x:%d", rt.TopicID[:2], len(rt.Partitions))
				}
				if e.resp != nil {
					fmt.Fprintf(&sb, " -> error %d session %d, %d topics", e.resp.ErrorCode, e.resp.SessionID, len(e.resp.Topics))
				}
			}
			t.Fatalf("waiting for %s: %v; fetches seen:%s", what, ctx.Err(), sb.String())
		}
	}
}

// dialer returns a kgo dialer whose connections record Fetch exchanges.
func (l *fetchLog) dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &sniffConn{Conn: nc, log: l, inflight: map[int32]*fetchExchange{}}, nil
	}
}

// sniffConn parses the frames a client writes and reads, recording Fetch.
type sniffConn struct {
	net.Conn
	log      *fetchLog
	mu       sync.Mutex
	inflight map[int32]*fetchExchange // by correlation id
	wbuf     []byte
	rbuf     []byte
}

// cutFrames cuts complete size-prefixed frames off *buf.
func cutFrames(buf *[]byte, fn func(frame []byte)) {
	for len(*buf) >= 4 {
		n := int(binary.BigEndian.Uint32(*buf))
		if len(*buf) < 4+n {
			return
		}
		fn((*buf)[4 : 4+n])
		*buf = (*buf)[4+n:]
	}
}

func (c *sniffConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wbuf = append(c.wbuf, b[:n]...)
	cutFrames(&c.wbuf, func(frame []byte) {
		rd := kbin.Reader{Src: frame}
		key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
		rd.NullableString()
		if key != 1 {
			return
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version = version
		if req.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		if err := req.ReadFrom(rd.Src); err != nil {
			panic(fmt.Sprintf("client sent a Fetch we cannot parse: %v", err))
		}
		e := &fetchExchange{req: req}
		c.inflight[corr] = e
		c.log.add(func() { c.log.ex = append(c.log.ex, e) })
	})
	return n, err
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rbuf = append(c.rbuf, b[:n]...)
	cutFrames(&c.rbuf, func(frame []byte) {
		rd := kbin.Reader{Src: frame}
		corr := rd.Int32()
		e := c.inflight[corr]
		if e == nil {
			return
		}
		delete(c.inflight, corr)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = e.req.Version
		if resp.IsFlexible() {
			kmsg.SkipTags(&rd)
		}
		if err := resp.ReadFrom(rd.Src); err != nil {
			panic(fmt.Sprintf("broker sent a Fetch response we cannot parse: %v", err))
		}
		c.log.add(func() { e.resp = resp })
	})
	return n, err
}

// topicIDs returns the names of the broker's topics, by id. It asks with a
// new client, as kadm answers from its cached metadata.
func topicIDs(ctx context.Context, t *testing.T, b *broker) map[[16]byte]string {
	t.Helper()
	ts, err := b.admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[[16]byte]string{}
	for _, td := range ts {
		ids[td.ID] = td.Topic
	}
	return ids
}

// respPartitions lists "topic/partition" for each partition a response
// names, with names resolved through ids for v13+.
func respPartitions(resp *kmsg.FetchResponse, ids map[[16]byte]string) []string {
	var out []string
	for _, rt := range resp.Topics {
		name := rt.Topic
		if resp.Version >= 13 {
			name = ids[rt.TopicID]
		}
		for _, p := range rt.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", name, p.Partition))
		}
	}
	return out
}

// produceTo produces n records with values prefix-<i> to one partition,
// synchronously, one batch each.
func produceTo(ctx context.Context, t *testing.T, p *kgo.Client, topic string, partition int32, prefix string, n int) {
	t.Helper()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeExactly polls until want (values by "topic/partition") have all
// arrived, in order per partition, and fails on anything else.
func consumeExactly(ctx context.Context, t *testing.T, c *kgo.Client, want map[string][]string) {
	t.Helper()
	got := map[string][]string{}
	remaining := 0
	for _, vs := range want {
		remaining += len(vs)
	}
	for remaining > 0 {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d records missing: %v", remaining, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			i := len(got[k])
			if i >= len(want[k]) || want[k][i] != string(r.Value) {
				t.Fatalf("%s: record %d is %q, want %v", k, i, r.Value, want[k])
			}
			got[k] = append(got[k], string(r.Value))
			remaining--
		})
	}
}

func seqValues(prefix string, n int) []string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return vs
}

// TestFetchSessionsWithFranzGo consumes many partitions with franz-go's
// fetch sessions (its default) and checks, on the wire, that KIP-227 is
// what happens: incremental fetches that list only the partitions with
// news, a topic subscribed mid-session added by an incremental fetch, a
// paused topic forgotten and added back, a purged one replaced by a new
// session.
func TestFetchSessionsWithFranzGo(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	const parts = 16
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, "many"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "added"); err != nil {
		t.Fatal(err)
	}
	ids := topicIDs(ctx, t, b)
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := map[string][]string{}
	for i := range int32(parts) {
		produceTo(ctx, t, p, "many", i, fmt.Sprintf("a%d", i), 5)
		want[fmt.Sprintf("many/%d", i)] = seqValues(fmt.Sprintf("a%d", i), 5)
	}

	log := newFetchLog()
	c := b.client(kgo.Dialer(log.dialer()), kgo.ConsumeTopics("many"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	consumeExactly(ctx, t, c, want)

	// Only partitions 0-2 get news: every incremental response from here
	// on lists nothing else.
	before := log.snapshot()
	from := len(before)
	if from > 0 && before[from-1].resp == nil {
		from-- // the fetch waiting now is answered with the news
	}
	want = map[string][]string{}
	for i := range int32(3) {
		produceTo(ctx, t, p, "many", i, fmt.Sprintf("b%d", i), 3)
		want[fmt.Sprintf("many/%d", i)] = seqValues(fmt.Sprintf("b%d", i), 3)
	}
	consumeExactly(ctx, t, c, want)
	incremental := 0
	for _, e := range log.snapshot()[from:] {
		if e.resp == nil || e.req.SessionEpoch <= 0 {
			continue
		}
		incremental++
		if e.resp.ErrorCode != 0 || e.resp.SessionID != e.req.SessionID {
			t.Fatalf("incremental fetch answered error %d, session %d (asked %d)", e.resp.ErrorCode, e.resp.SessionID, e.req.SessionID)
		}
		for _, tp := range respPartitions(e.resp, ids) {
			if !slices.Contains([]string{"many/0", "many/1", "many/2"}, tp) {
				t.Fatalf("incremental response lists %s, which has no news", tp)
			}
		}
	}
	if incremental == 0 {
		t.Fatal("franz-go made no incremental fetch")
	}

	// A topic subscribed mid-session joins through an incremental fetch.
	want = map[string][]string{}
	for i := range int32(4) {
		produceTo(ctx, t, p, "added", i, fmt.Sprintf("c%d", i), 4)
		want[fmt.Sprintf("added/%d", i)] = seqValues(fmt.Sprintf("c%d", i), 4)
	}
	c.AddConsumeTopics("added")
	consumeExactly(ctx, t, c, want)
	addedBy := func(e *fetchExchange) bool {
		for _, rt := range e.req.Topics {
			if ids[rt.TopicID] == "added" {
				return true
			}
		}
		return false
	}
	found := false
	for _, e := range log.snapshot() {
		if addedBy(e) && e.req.SessionEpoch > 0 && e.resp != nil && e.resp.ErrorCode == 0 {
			found = true
		}
	}
	if !found {
		t.Fatal("the new topic's partitions were not added by an incremental fetch")
	}

	// A paused topic is forgotten by incremental fetches, and no longer
	// answered.
	c.PauseFetchTopics("added")
	forgotten := -1
	log.eventually(ctx, t, "incremental fetches forgetting the paused topic", func(ex []*fetchExchange) bool {
		gone := map[int32]bool{}
		for i, e := range ex {
			for _, ft := range e.req.ForgottenTopics {
				if ids[ft.TopicID] == "added" && e.req.SessionEpoch > 0 && e.resp != nil && e.resp.ErrorCode == 0 {
					for _, p := range ft.Partitions {
						gone[p] = true
					}
					forgotten = i
				}
			}
		}
		return len(gone) == 4
	})
	produceTo(ctx, t, p, "added", 0, "d0", 2)
	produceTo(ctx, t, p, "many", 5, "d5", 2)
	consumeExactly(ctx, t, c, map[string][]string{"many/5": seqValues("d5", 2)})
	for _, e := range log.snapshot()[forgotten+1:] {
		if e.resp == nil || e.req.SessionEpoch <= 0 {
			continue
		}
		for _, tp := range respPartitions(e.resp, ids) {
			if strings.HasPrefix(tp, "added/") {
				t.Fatalf("incremental response lists forgotten %s", tp)
			}
		}
	}

	// Resumed, it is added back and its records arrive.
	c.ResumeFetchTopics("added")
	consumeExactly(ctx, t, c, map[string][]string{"added/0": seqValues("d0", 2)})

	// Purging a topic makes franz-go replace its session (epoch 0 with its
	// id): the broker closes the old one and opens another.
	c.PurgeTopicsFromConsuming("added")
	produceTo(ctx, t, p, "many", 6, "e6", 2)
	consumeExactly(ctx, t, c, map[string][]string{"many/6": seqValues("e6", 2)})
	for _, e := range log.snapshot() {
		if e.req.SessionEpoch == 0 && e.req.SessionID != 0 && e.resp != nil &&
			(e.resp.ErrorCode != 0 || e.resp.SessionID == e.req.SessionID || e.resp.SessionID == 0) {
			t.Fatalf("replacing session %d: error %d, session %d", e.req.SessionID, e.resp.ErrorCode, e.resp.SessionID)
		}
	}
}

// TestFetchWithoutSessionsWithFranzGo consumes with franz-go's sessions
// disabled: every fetch is a sessionless full fetch, answered with every
// partition and no session.
func TestFetchWithoutSessionsWithFranzGo(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 8, 1, nil, "nosession"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := map[string][]string{}
	for i := range int32(8) {
		produceTo(ctx, t, p, "nosession", i, fmt.Sprintf("v%d", i), 4)
		want[fmt.Sprintf("nosession/%d", i)] = seqValues(fmt.Sprintf("v%d", i), 4)
	}
	log := newFetchLog()
	c := b.client(kgo.Dialer(log.dialer()), kgo.ConsumeTopics("nosession"), kgo.DisableFetchSessions(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	consumeExactly(ctx, t, c, want)
	produceTo(ctx, t, p, "nosession", 3, "w3", 2)
	consumeExactly(ctx, t, c, map[string][]string{"nosession/3": seqValues("w3", 2)})
	ex := log.snapshot()
	if len(ex) == 0 {
		t.Fatal("no fetch seen")
	}
	for _, e := range ex {
		if e.req.SessionEpoch != -1 || e.req.SessionID != 0 {
			t.Fatalf("fetch with session %d epoch %d", e.req.SessionID, e.req.SessionEpoch)
		}
		if e.resp != nil && (e.resp.SessionID != 0 || e.resp.ErrorCode != 0) {
			t.Fatalf("sessionless fetch answered session %d, error %d", e.resp.SessionID, e.resp.ErrorCode)
		}
	}
}

// rawClient speaks the Kafka protocol on one connection, for requests a
// client library would not send.
type rawClient struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// A bound on a stuck test, not a timing assertion.
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	return &rawClient{t: t, nc: nc}
}

// send writes req at version and returns its correlation id.
func (c *rawClient) send(req kmsg.Request, version int16) int32 {
	c.t.Helper()
	c.corr++
	req.SetVersion(version)
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "raw"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// recv reads the response to the request sent as corr into resp.
func (c *rawClient) recv(corr int32, resp kmsg.Response) {
	c.t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.t.Fatal(err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		c.t.Fatal(err)
	}
	rd := kbin.Reader{Src: frame}
	if got := rd.Int32(); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if resp.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) fetch(req *kmsg.FetchRequest, version int16) *kmsg.FetchResponse {
	c.t.Helper()
	corr := c.send(req, version)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	c.recv(corr, resp)
	return resp
}

// fetchOf builds a Fetch for partitions of one topic from offset 0.
func fetchOf(topic string, id [16]byte, sessionID, epoch int32, parts ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SessionID, req.SessionEpoch = sessionID, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 50<<20
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// partitionsIn lists the partitions a response names, and those with
// records.
func partitionsIn(t *testing.T, resp *kmsg.FetchResponse) (all, withRecords []int32) {
	t.Helper()
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			if p.RecordBatches == nil {
				t.Fatalf("partition %d: null records (Kafka sends zero-length ones)", p.Partition)
			}
			all = append(all, p.Partition)
			if len(p.RecordBatches) > 0 {
				withRecords = append(withRecords, p.Partition)
			}
		}
	}
	return all, withRecords
}

// TestFetchSessionErrorsRaw walks a session with hand-made requests, at v12
// (topics by name) and v13 (by id): incremental answers, added and
// forgotten partitions, and each session error code.
func TestFetchSessionErrorsRaw(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c := dialRaw(t, b.addr())
	for _, version := range []int16{12, 13} {
		// A topic per version, each partition holding one record.
		topic := fmt.Sprintf("s%d", version)
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		var id [16]byte
		for tid, name := range topicIDs(ctx, t, b) {
			if name == topic {
				id = tid
			}
		}
		for i := range int32(3) {
			produceTo(ctx, t, p, topic, i, "x", 1)
		}

		// Epoch 0 opens a session over partitions 0 and 1.
		resp := c.fetch(fetchOf(topic, id, 0, 0, 0, 1), version)
		session := resp.SessionID
		if resp.ErrorCode != 0 || session <= 0 {
			t.Fatalf("v%d: opening fetch: error %d, session %d", version, resp.ErrorCode, session)
		}
		if all, recs := partitionsIn(t, resp); !slices.Equal(all, []int32{0, 1}) || !slices.Equal(recs, []int32{0, 1}) {
			t.Fatalf("v%d: full fetch answered %v with records %v", version, all, recs)
		}

		// Epoch 1 moves partition 0's offset on (1 is still at 0): only
		// partition 1 has records to send again.
		req := fetchOf(topic, id, session, 1, 0)
		req.Topics[0].Partitions[0].FetchOffset = 1
		resp = c.fetch(req, version)
		if all, recs := partitionsIn(t, resp); resp.SessionID != session || !slices.Equal(all, []int32{1}) || !slices.Equal(recs, []int32{1}) {
			t.Fatalf("v%d: epoch 1 answered %v with records %v, session %d", version, all, recs, resp.SessionID)
		}

		// Session errors: each answers the error, session 0, no topics,
		// and leaves the session as it was.
		for _, tc := range []struct {
			req     *kmsg.FetchRequest
			version int16
			want    *kerr.Error
		}{
			{fetchOf(topic, id, session, 1), version, kerr.InvalidFetchSessionEpoch},
			{fetchOf(topic, id, session, 5), version, kerr.InvalidFetchSessionEpoch},
			{fetchOf(topic, id, session+1, 2), version, kerr.FetchSessionIDNotFound},
			{fetchOf(topic, id, 0, 2), version, kerr.FetchSessionIDNotFound},
			{fetchOf(topic, id, session, 2), 25 - version, kerr.FetchSessionTopicIDError}, // v12 <-> v13
		} {
			resp := c.fetch(tc.req, tc.version)
			if resp.ErrorCode != tc.want.Code || resp.SessionID != 0 || len(resp.Topics) != 0 {
				t.Fatalf("v%d session %d epoch %d: error %v, session %d, %d topics; want %v",
					tc.version, tc.req.SessionID, tc.req.SessionEpoch, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, len(resp.Topics), tc.want)
			}
		}

		// Epoch 2 moves partition 1 on and adds 2 (it has a record); epoch
		// 3 forgets 0.
		req = fetchOf(topic, id, session, 2, 1, 2)
		req.Topics[0].Partitions[0].FetchOffset = 1
		resp = c.fetch(req, version)
		if all, recs := partitionsIn(t, resp); !slices.Equal(all, []int32{2}) || !slices.Equal(recs, []int32{2}) {
			t.Fatalf("v%d: epoch 2 answered %v with records %v", version, all, recs)
		}
		req = fetchOf(topic, id, session, 3, 2)
		req.Topics[0].Partitions[0].FetchOffset = 1
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: topic, TopicID: id, Partitions: []int32{0}}}
		resp = c.fetch(req, version)
		if all, _ := partitionsIn(t, resp); len(all) != 0 {
			t.Fatalf("v%d: epoch 3 answered %v, want nothing new", version, all)
		}
		// News on the forgotten partition 0 and on 1: only 1 is answered.
		produceTo(ctx, t, p, topic, 0, "y", 1)
		produceTo(ctx, t, p, topic, 1, "y", 1)
		resp = c.fetch(fetchOf(topic, id, session, 4), version)
		if all, recs := partitionsIn(t, resp); !slices.Equal(all, []int32{1}) || !slices.Equal(recs, []int32{1}) {
			t.Fatalf("v%d: epoch 4 answered %v with records %v", version, all, recs)
		}

		// Epoch -1 closes the session with a full sessionless fetch.
		resp = c.fetch(fetchOf(topic, id, session, -1, 0), version)
		if all, _ := partitionsIn(t, resp); resp.ErrorCode != 0 || resp.SessionID != 0 || !slices.Equal(all, []int32{0}) {
			t.Fatalf("v%d: closing fetch: error %d, session %d, partitions %v", version, resp.ErrorCode, resp.SessionID, all)
		}
		resp = c.fetch(fetchOf(topic, id, session, 5), version)
		if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("v%d: closed session answered %v", version, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// batchSizes walks record batches and returns each one's size, failing on
// a batch cut short.
func batchSizes(t *testing.T, b []byte) []int {
	t.Helper()
	var sizes []int
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("%d bytes left: a partial batch header", len(b))
		}
		n := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		if n > len(b) {
			t.Fatalf("batch of %d bytes cut to %d", n, len(b))
		}
		sizes = append(sizes, n)
		b = b[n:]
	}
	return sizes
}

// TestFetchByteLimits checks MaxBytes and PartitionMaxBytes, and KIP-74: the
// first batch of the first partition with records comes whole even when it
// is larger than both limits. Large records are then consumed with franz-go
// under small limits.
func TestFetchByteLimits(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	large := bytes.Repeat([]byte("L"), 300<<10)
	huge := bytes.Repeat([]byte("H"), 900<<10)
	for _, v := range [][]byte{large, huge} {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "big", Partition: 0, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceTo(ctx, t, p, "big", 0, "small", 10) // offsets 2-11
	produceTo(ctx, t, p, "big", 1, "small", 10)
	c := dialRaw(t, b.addr())
	fetch := func(maxBytes, partMaxBytes int32, offsets ...int64) [][]int {
		t.Helper()
		req := fetchOf("big", [16]byte{}, 0, -1, 0, 1)
		req.MaxBytes = maxBytes
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].FetchOffset = offsets[i]
			req.Topics[0].Partitions[i].PartitionMaxBytes = partMaxBytes
		}
		resp := c.fetch(req, 12)
		partitionsIn(t, resp)
		out := make([][]int, 2)
		for _, rp := range resp.Topics[0].Partitions {
			out[rp.Partition] = batchSizes(t, rp.RecordBatches)
		}
		return out
	}

	// KIP-74: the 300 KiB batch comes whole under limits of 1000 bytes;
	// partition 1 then gets nothing, the response being over MaxBytes.
	got := fetch(1000, 1000, 0, 0)
	if len(got[0]) != 1 || got[0][0] < 300<<10 || len(got[1]) != 0 {
		t.Fatalf("batches %v, want one of over 300 KiB and none", got)
	}
	// KIP-74 is for the first batch of the response only: after the 900
	// KiB batch, partition 1 keeps to its PartitionMaxBytes.
	got = fetch(1<<20, 1000, 1, 0)
	p1 := 0
	for _, s := range got[1] {
		p1 += s
	}
	if len(got[0]) != 1 || got[0][0] < 900<<10 || len(got[1]) < 2 || p1 > 1000 {
		t.Fatalf("batches %v, want one of over 900 KiB, then whole batches up to 1000 bytes", got)
	}
	// PartitionMaxBytes: small batches fill each partition up to its limit
	// and no further.
	got = fetch(1<<20, 300, 2, 0)
	for i, sizes := range got {
		sum := 0
		for _, s := range sizes {
			sum += s
		}
		if len(sizes) < 2 || sum > 300 {
			t.Fatalf("partition %d: batches %v (total %d), want whole batches up to 300 bytes", i, sizes, sum)
		}
	}
	// MaxBytes bounds the response across partitions.
	got = fetch(400, 1<<20, 2, 0)
	total, n := 0, 0
	for _, sizes := range got {
		for _, s := range sizes {
			total += s
			n++
		}
	}
	if total > 400 || n < 2 {
		t.Fatalf("batches %v: %d bytes, want at most 400", got, total)
	}

	// franz-go under limits smaller than a record still gets them all.
	cl := b.client(kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(1000), kgo.FetchMaxPartitionBytes(1000))
	want := map[string][]string{"big/0": append([]string{string(large), string(huge)}, seqValues("small", 10)...), "big/1": seqValues("small", 10)}
	consumeExactly(ctx, t, cl, want)
}

// TestFetchLongPollWakesOnProduce checks that a fetch waiting with MaxWait
// 10 s is answered by the produce that follows it, not by its deadline: the
// records must come in the response to that very request (a broker that
// slept to the deadline would answer it empty).
func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, "poll"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))

	// A raw fetch at the log end of both partitions (the records produced
	// first also wait until the partitions are hosted).
	produceTo(ctx, t, p, "poll", 0, "pre", 1)
	produceTo(ctx, t, p, "poll", 1, "pre", 1)
	c := dialRaw(t, b.addr())
	req := fetchOf("poll", [16]byte{}, 0, -1, 0, 1)
	req.Topics[0].Partitions[0].FetchOffset = 1
	req.Topics[0].Partitions[1].FetchOffset = 1
	req.MaxWaitMillis = 10000
	corr := c.send(req, 12)
	produceTo(ctx, t, p, "poll", 1, "woke", 1)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	c.recv(corr, resp)
	if _, recs := partitionsIn(t, resp); !slices.Equal(recs, []int32{1}) {
		t.Fatalf("the waiting fetch was answered with records from %v, want [1]", recs)
	}

	// franz-go with a 10 s MaxWait, in a session: the fetch it sends at
	// the log end gets the record produced after it was sent.
	log := newFetchLog()
	cl := b.client(kgo.Dialer(log.dialer()), kgo.ConsumeTopics("poll"), kgo.FetchMaxWait(10*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	got := make(chan *kgo.Record, 1)
	go func() {
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			for _, r := range fs.Records() {
				got <- r
				return
			}
		}
	}()
	var waiting *kmsg.FetchRequest
	log.eventually(ctx, t, "a fetch at the log end", func(ex []*fetchExchange) bool {
		for _, e := range ex {
			for _, rt := range e.req.Topics {
				for _, rp := range rt.Partitions {
					if rp.Partition == 0 && rp.FetchOffset == 1 && e.resp == nil {
						waiting = e.req
						return true
					}
				}
			}
		}
		return false
	})
	produceTo(ctx, t, p, "poll", 0, "late", 1)
	select {
	case r := <-got:
		if string(r.Value) != "late-0" {
			t.Fatalf("got %q", r.Value)
		}
	case <-ctx.Done():
		t.Fatal("record never consumed")
	}
	for _, e := range log.snapshot() {
		if e.resp == nil {
			continue
		}
		for _, rt := range e.resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.Partition == 0 && len(rp.RecordBatches) > 0 && e.req != waiting {
					t.Fatalf("the record came in a later fetch (session epoch %d) than the one waiting (epoch %d)",
						e.req.SessionEpoch, waiting.SessionEpoch)
				}
			}
		}
	}
}
