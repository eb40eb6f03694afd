package partition

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
)

func init() {
	actors.Register[RemoteAppend](200)
	actors.Register[RemoteAppendResult](201)
	actors.Register[RemoteMarker](204)
}

// RemoteAppend is an append from inside the cluster: a writer on another
// node (a transaction coordinator's markers, an extension's output) asks
// the partition's leader, over remoting, to append record batches, as a
// Produce would. It is sent with a request (actors.Ask) to the leader
// node's appends actor (AppendsProps), which answers RemoteAppendResult.
//
// Remoting may lose the message or its answer, so a writer retries; with
// an idempotent producer id and sequence in its batches, a retry of an
// append that was made is answered with the offsets it got the first time
// (the partition's duplicate detection), never appended twice.
type RemoteAppend struct {
	Origin    actors.Origin `msgpack:"origin"`
	Topic     string        `msgpack:"topic"`
	Partition int32         `msgpack:"part"`
	// TopicID, if not zero, must be the topic's: a topic deleted and
	// created again under its name is not the one the writer meant.
	TopicID image.TopicID `msgpack:"topic_id"`
	// LeaderEpoch is the leader epoch the writer knows, -1 for any.
	LeaderEpoch int32 `msgpack:"epoch"`
	Acks        int16 `msgpack:"acks"`
	// TimeoutMs bounds the wait for durability, as Produce's timeout.
	TimeoutMs int32  `msgpack:"timeout"`
	Records   []byte `msgpack:"-"`
}

func (m *RemoteAppend) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
func (m *RemoteAppend) Raw() []byte                           { return m.Records }
func (m *RemoteAppend) SetRaw(b []byte)                       { m.Records = b }

// RemoteAppendResult answers RemoteAppend as AppendResult answers Append.
type RemoteAppendResult struct {
	BaseOffset     int64       `msgpack:"base"`
	LogAppendTime  int64       `msgpack:"append_time"`
	LogStartOffset int64       `msgpack:"start"`
	Err            *kerr.Error `msgpack:"err"`
	Message        string      `msgpack:"msg"`
}

func (m *RemoteAppendResult) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// RemoteMarker asks a partition's leader to write a transaction marker
// (Kafka's WriteTxnMarkers, one partition): sent by a transaction
// coordinator with a request (actors.Ask) to the leader node's appends
// actor, local or not, and answered RemoteAppendResult once the marker is
// below the high watermark (markers are written with acks=all). A lost
// answer is retried: a second marker for a transaction that is already
// over here changes nothing but the log.
type RemoteMarker struct {
	Origin      actors.Origin `msgpack:"origin"`
	Topic       string        `msgpack:"topic"`
	Partition   int32         `msgpack:"part"`
	LeaderEpoch int32         `msgpack:"epoch"`
	Marker      Marker        `msgpack:"marker"`
	TimeoutMs   int32         `msgpack:"timeout"`
}

func (m *RemoteMarker) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// AppendsConfig configures a node's appends actor.
type AppendsConfig struct {
	NodeID   int32
	Registry *Registry
	// Image returns the newest cluster metadata image.
	Image func() *image.Image
	// Marked, when set, is called once a marker is written (below the high
	// watermark), on a goroutine of the partition's: the group coordinators
	// apply a transaction's offsets when its marker reaches their
	// __consumer_offsets partition. offset is the marker's. It must not
	// block.
	Marked func(topic string, partition int32, m Marker, offset int64)
}

// AppendsProps returns the props of the actor that takes a node's
// RemoteAppends: it checks that this node leads the partition, validates
// the batches as a Produce's, and hands them to the partition's actor.
// Spawn it as "appends" under the node.
func AppendsProps(cfg AppendsConfig) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &appends{cfg: cfg} })
}

type appends struct {
	cfg AppendsConfig
	dec store.Decompressor
}

// appended is a RemoteAppend's answer, back from the partition's reply:
// the actor sends it on, so that it leaves through the actor's sender
// middleware (the link faults of fault injection), as everything else
// between nodes does.
type appended struct {
	to  *actor.PID
	res *RemoteAppendResult
}

func (a *appends) Receive(c actor.Context) {
	var m *RemoteAppend
	switch msg := c.Message().(type) {
	case *appended:
		c.Send(msg.to, msg.res)
		return
	case *RemoteMarker:
		a.marker(c, msg)
		return
	case *RemoteAppend:
		m = msg
	default:
		return
	}
	answer, failed, timeout := a.answerer(c)
	h, v, err := a.leads(m.Topic, m.TopicID, m.Partition, m.LeaderEpoch)
	if err != nil {
		failed(err, "")
		return
	}
	bh, rej := Validate(m.Records, v.Config, &a.dec)
	if rej != nil {
		failed(rej.Err, rej.Message)
		return
	}
	records := m.Records
	if codec, ok := TargetCodec(v.Config.CompressionType); ok && codec != bh.Codec() {
		b, rerr := Recompress(records, bh, codec, &a.dec)
		if rerr != nil {
			failed(kerr.CorruptMessage, rerr.Error())
			return
		}
		records = b
	}
	if m.Acks != 0 && m.TimeoutMs > 0 {
		timeout(m.TimeoutMs)
	}
	reply := func(r AppendResult) {
		answer(&RemoteAppendResult{BaseOffset: r.BaseOffset, LogAppendTime: r.LogAppendTime, LogStartOffset: r.LogStartOffset, Err: r.Err, Message: r.Message})
	}
	c.Send(h.PID, &Append{Records: records, Acks: m.Acks, Reply: reply})
	if m.Acks == 0 {
		answer(&RemoteAppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
	}
}

// marker hands a RemoteMarker to the partition's actor.
func (a *appends) marker(c actor.Context, m *RemoteMarker) {
	answer, failed, timeout := a.answerer(c)
	h, _, err := a.leads(m.Topic, image.TopicID{}, m.Partition, m.LeaderEpoch)
	if err != nil {
		failed(err, "")
		return
	}
	if m.TimeoutMs > 0 {
		timeout(m.TimeoutMs)
	}
	mk, marked := m.Marker, a.cfg.Marked
	c.Send(h.PID, &Append{Marker: &mk, Acks: -1, Reply: func(r AppendResult) {
		if r.Err == nil && marked != nil {
			marked(m.Topic, m.Partition, mk, r.BaseOffset)
		}
		answer(&RemoteAppendResult{BaseOffset: r.BaseOffset, LogAppendTime: r.LogAppendTime, LogStartOffset: r.LogStartOffset, Err: r.Err, Message: r.Message})
	}})
}

// answerer returns how a request to the appends actor is answered, once:
// answer with a result, failed with an error, and timeout, which arms a
// REQUEST_TIMED_OUT answer after ms.
func (a *appends) answerer(c actor.Context) (answer func(*RemoteAppendResult), failed func(*kerr.Error, string), timeout func(ms int32)) {
	sys, self, to := c.ActorSystem(), c.Self(), c.Sender()
	var once sync.Once
	var mu sync.Mutex
	var t *time.Timer
	answer = func(r *RemoteAppendResult) {
		once.Do(func() {
			mu.Lock()
			if t != nil {
				t.Stop()
			}
			mu.Unlock()
			if to != nil {
				sys.Root.Send(self, &appended{to: to, res: r})
			}
		})
	}
	failed = func(err *kerr.Error, msg string) {
		answer(&RemoteAppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: err, Message: msg})
	}
	timeout = func(ms int32) {
		mu.Lock()
		defer mu.Unlock()
		t = time.AfterFunc(time.Duration(ms)*time.Millisecond, func() { failed(kerr.RequestTimedOut, "") })
	}
	return answer, failed, timeout
}

// leads returns the partition's handle and view if this node leads it, in
// the epoch the writer knows (-1: any); a zero id matches any topic id.
func (a *appends) leads(topic string, id image.TopicID, partition, epoch int32) (*Handle, *View, *kerr.Error) {
	im := a.cfg.Image()
	t := im.Topic(topic)
	switch {
	case t == nil:
		return nil, nil, kerr.UnknownTopicOrPartition
	case !id.IsZero() && id != t.ID:
		return nil, nil, kerr.UnknownTopicID
	case partition < 0 || int(partition) >= len(t.Partitions):
		return nil, nil, kerr.UnknownTopicOrPartition
	}
	if p := t.Partitions[partition]; p.Leader == a.cfg.NodeID {
		if err := CheckLeaderEpoch(epoch, p.LeaderEpoch); err != nil {
			return nil, nil, err
		}
	}
	return a.cfg.Registry.Led(im, a.cfg.NodeID, topic, partition)
}
