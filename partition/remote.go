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

// AppendsConfig configures a node's appends actor.
type AppendsConfig struct {
	NodeID   int32
	Registry *Registry
	// Image returns the newest cluster metadata image.
	Image func() *image.Image
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
	if m, ok := c.Message().(*appended); ok {
		c.Send(m.to, m.res)
		return
	}
	m, ok := c.Message().(*RemoteAppend)
	if !ok {
		return
	}
	sys, self, to := c.ActorSystem(), c.Self(), c.Sender()
	var once sync.Once
	var timeout *time.Timer // set before the Append leaves
	answer := func(r *RemoteAppendResult) {
		once.Do(func() {
			if timeout != nil {
				timeout.Stop()
			}
			if to != nil {
				sys.Root.Send(self, &appended{to: to, res: r})
			}
		})
	}
	failed := func(err *kerr.Error, msg string) {
		answer(&RemoteAppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: err, Message: msg})
	}
	h, v, err := a.leads(m)
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
		timeout = time.AfterFunc(time.Duration(m.TimeoutMs)*time.Millisecond, func() {
			failed(kerr.RequestTimedOut, "")
		})
	}
	reply := func(r AppendResult) {
		answer(&RemoteAppendResult{BaseOffset: r.BaseOffset, LogAppendTime: r.LogAppendTime, LogStartOffset: r.LogStartOffset, Err: r.Err, Message: r.Message})
	}
	c.Send(h.PID, &Append{Records: records, Acks: m.Acks, Reply: reply})
	if m.Acks == 0 {
		answer(&RemoteAppendResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
	}
}

// leads returns the partition's handle and view if this node leads it, in
// the epoch the writer knows.
func (a *appends) leads(m *RemoteAppend) (*Handle, *View, *kerr.Error) {
	im := a.cfg.Image()
	t := im.Topic(m.Topic)
	switch {
	case t == nil:
		return nil, nil, kerr.UnknownTopicOrPartition
	case !m.TopicID.IsZero() && m.TopicID != t.ID:
		return nil, nil, kerr.UnknownTopicID
	case m.Partition < 0 || int(m.Partition) >= len(t.Partitions):
		return nil, nil, kerr.UnknownTopicOrPartition
	}
	if p := t.Partitions[m.Partition]; p.Leader == a.cfg.NodeID {
		if err := CheckLeaderEpoch(m.LeaderEpoch, p.LeaderEpoch); err != nil {
			return nil, nil, err
		}
	}
	return a.cfg.Registry.Led(im, a.cfg.NodeID, m.Topic, m.Partition)
}
