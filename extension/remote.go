package extension

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
)

// A remote source is a partition of another Kafka-compatible cluster
// (source.bootstrap.servers): the runner reads it with a Kafka client,
// read_committed, and keeps its position in the instance's state topic,
// since the group's offsets can only name this cluster's topics: under the
// partition's prefix, key posKey, the offset and the position's metadata,
// the last such record being the position. They are written with no
// producer id: a position written twice is the same position.
const posKey = "\x00position"

func encodePosRecord(offset int64, meta string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(offset)), meta...)
}

func decodePosRecord(b []byte) (int64, string, bool) {
	if len(b) < 8 {
		return 0, "", false
	}
	return int64(binary.BigEndian.Uint64(b)), string(b[8:]), true
}

// remoteFetched is what the reader of a remote source read for its runner.
type remoteFetched struct {
	r    *runner
	recs []Record
	hw   int64
	err  error
}

// startRemote starts the runner's reader of its remote source, at r.pos (-1
// the start, -2 the end): a goroutine that polls the source for up to
// maxRecords records each time the runner asks (r.want), and sends them to
// it.
func (r *runner) startRemote(c actor.Context) error {
	at := kgo.NewOffset().At(r.pos)
	switch r.pos {
	case -1:
		at = kgo.NewOffset().AtStart()
	case -2:
		at = kgo.NewOffset().AtEnd()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(splitList(r.settings[SettingSourceBootstrap])...), kgo.ClientID("skein-extension-"+r.key.instance),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.key.topic: {r.key.partition: at}}))
	if err != nil {
		return fmt.Errorf("a client of %s: %w", r.settings[SettingSourceBootstrap], err)
	}
	r.want = make(chan int, 1)
	self, root, ctx, want, key := r.self, c.ActorSystem().Root, r.ctx, r.want, r.key
	go func() {
		defer cl.Close()
		for {
			var n int
			select {
			case <-ctx.Done():
				return
			case n = <-want:
			}
			fs := cl.PollRecords(ctx, n)
			if ctx.Err() != nil {
				return
			}
			m := &remoteFetched{r: r, hw: -1}
			fs.EachError(func(_ string, _ int32, err error) { m.err = err })
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				if p.Topic == key.topic && p.Partition == key.partition {
					m.hw = max(m.hw, p.HighWatermark)
				}
			})
			fs.EachRecord(func(kr *kgo.Record) {
				rec := Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp,
					Key: kr.Key, Value: kr.Value, ProducerID: kr.ProducerID}
				for _, h := range kr.Headers {
					rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
				}
				m.recs = append(m.recs, rec)
			})
			root.Send(self, m)
		}
	}()
	return nil
}

// stepRemote processes the records the reader brought, or asks it for
// more: the remote counterpart of step's local read.
func (r *runner) stepRemote(c actor.Context) {
	stopAt, ticked := r.replayTick(c)
	if ticked {
		return
	}
	if len(r.fetched) == 0 {
		r.maybeCommit(c, true)
		if !r.polling {
			r.polling = true
			r.want <- r.maxRecords
		}
		return
	}
	n := 0
	for n < len(r.fetched) && r.fetched[n].Offset < stopAt && n < r.maxRecords {
		n++
	}
	recs := r.fetched[:n]
	r.fetched = r.fetched[n:]
	next := r.pos
	if n > 0 {
		next = recs[n-1].Offset + 1
	}
	r.process(c, recs, next)
}

// remoteFetchedIn takes what the reader read.
func (r *runner) remoteFetchedIn(c actor.Context, m *remoteFetched) {
	r.polling = false
	if m.err != nil && len(m.recs) == 0 {
		r.retry(c, StateWaiting, "reading the remote source: "+m.err.Error(), func() { r.step(c) })
		return
	}
	r.st.ok()
	if m.hw >= 0 {
		r.st.set(func(s *Status) { s.End = m.hw })
	}
	if r.pos < 0 && len(m.recs) > 0 {
		r.pos = m.recs[0].Offset
	}
	r.fetched = append(r.fetched, m.recs...)
	r.step(c)
}

// commitRemote writes the position to the state partition (acks=all, no
// producer id), on the leader's appends actor.
func (r *runner) commitRemote(c actor.Context, offset int64, p position) {
	rec := Record{Key: []byte(r.statePrefix + posKey), Value: encodePosRecord(offset, p.encode()), Timestamp: time.Now()}
	batch, err := encodeBatch(r.stateTP, -1, []Record{rec}, producer{pid: -1})
	if err != nil {
		r.fail(err)
		return
	}
	self, root := r.self, c.ActorSystem().Root
	r.appendTo(c.ActorSystem(), r.stateTP, batch, func(res *partition.RemoteAppendResult, err error) {
		if err == nil && res.Err != nil {
			err = res.Err
		}
		root.Send(self, &commitRes{r: r, offset: offset, p: p, err: err})
	})
}

// appendTo sends batch to the leader of target's appends actor; done gets
// its answer, on another goroutine. No leader is LEADER_NOT_AVAILABLE.
func (r *runner) appendTo(sys *actor.ActorSystem, target partition.Key, batch []byte, done func(*partition.RemoteAppendResult, error)) {
	im := r.cfg.Image()
	t := im.Topic(target.Topic)
	if t == nil || int(target.Partition) >= len(t.Partitions) {
		done(nil, fmt.Errorf("the output partition %s-%d is gone", target.Topic, target.Partition))
		return
	}
	p := t.Partitions[target.Partition]
	addr := sys.Address()
	if p.Leader != r.cfg.NodeID {
		br, ok := im.Brokers[p.Leader]
		if p.Leader < 0 || !ok || br.ClusterAddr == "" {
			done(nil, fmt.Errorf("%s-%d has no leader", target.Topic, target.Partition))
			return
		}
		addr = br.ClusterAddr
	}
	to := actor.NewPID(addr, "node/"+strconv.Itoa(int(p.Leader))+"/appends")
	msg := &partition.RemoteAppend{Origin: r.cfg.Origin, Topic: target.Topic, Partition: target.Partition, TopicID: t.ID,
		LeaderEpoch: -1, Acks: -1, TimeoutMs: int32(appendTimeout / time.Millisecond), Records: batch}
	actors.Call(sys.Root, to, msg, appendTimeout+time.Second, func(res any, err error) {
		rr, _ := res.(*partition.RemoteAppendResult)
		if rr == nil && err == nil {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		done(rr, err)
	})
}
