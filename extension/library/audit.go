package library

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "audit",
		Doc:  "an audit tap: copies every record of its topics (or a sample, or only headers and sizes) to an audit topic, with where it was, its producer id and the client seen producing with it",
		Settings: []extension.Setting{
			{Name: "target.topic", Default: "audit", Doc: "the audit topic"},
			{Name: "content", Default: "full", Doc: "full: key, value and headers; headers: the headers and the key's and value's sizes only"},
			{Name: "sample", Default: "1", Doc: "the fraction of records copied, from 0 to 1; which ones is decided by their topic, partition and offset"},
		},
		// The audit topic is never audited.
		Skip: func(settings map[string]string, topic string) bool { return topic == settings["target.topic"] },
		New:  newAudit,
	})
}

// The headers an audit record carries besides the record's own.
const (
	auditTopic     = "audit.topic"
	auditPartition = "audit.partition"
	auditOffset    = "audit.offset"
	auditProducer  = "audit.producer.id"
	auditKeySize   = "audit.key.size"
	auditValueSize = "audit.value.size"
	// The client seen producing with the record's producer id on the
	// node that led the partition then, when it is known there.
	auditClientID      = "audit.client.id"
	auditClientAddress = "audit.client.address"
)

// audit copies records, with where each was and which producer wrote it, to
// the audit topic's partition of the source partition's number (modulo its
// count). The record's timestamp is kept.
type audit struct {
	cluster   extension.Cluster
	target    string
	full      bool
	sample    uint64 // a record is copied when its hash is below this; max: all
	topic     string // the source partition's
	partition int32  // the source partition's
	out       int32  // the audit topic's partition it goes to
}

func newAudit(in extension.Instance) (extension.Extension, error) {
	a := &audit{cluster: in.Cluster, target: strings.TrimSpace(in.Settings["target.topic"]), topic: in.Topic, partition: in.Partition}
	switch in.Settings["content"] {
	case "full":
		a.full = true
	case "headers":
	default:
		return nil, fmt.Errorf("content is %q; it takes full or headers", in.Settings["content"])
	}
	f, err := strconv.ParseFloat(in.Settings["sample"], 64)
	if err != nil || f < 0 || f > 1 {
		return nil, fmt.Errorf("sample is %q; it takes a fraction from 0 to 1", in.Settings["sample"])
	}
	a.sample = uint64(f * (1 << 63))
	if f == 1 {
		a.sample = 1 << 63
	}
	if a.target == "" || a.target == in.Topic {
		return nil, fmt.Errorf("target.topic %q: it must name another topic", a.target)
	}
	n := in.Cluster.Partitions(a.target)
	if n == 0 {
		if err := in.Cluster.CreateTopic(a.target, 1, nil); err != nil {
			return nil, err
		}
		n = 1
	}
	a.out = in.Partition % n
	return a, nil
}

func (a *audit) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		if !a.sampled(r.Offset) {
			continue
		}
		c := extension.Record{Timestamp: r.Timestamp, Headers: append([]extension.Header{
			{Key: auditTopic, Value: []byte(r.Topic)},
			{Key: auditPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
			{Key: auditOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
			{Key: auditProducer, Value: []byte(strconv.FormatInt(r.ProducerID, 10))},
			{Key: auditKeySize, Value: []byte(strconv.Itoa(len(r.Key)))},
			{Key: auditValueSize, Value: []byte(strconv.Itoa(len(r.Value)))},
		}, r.Headers...)}
		if p, ok := a.cluster.Producer(r.ProducerID); ok && r.ProducerID >= 0 {
			c.Headers = append(c.Headers, extension.Header{Key: auditClientID, Value: []byte(p.ClientID)},
				extension.Header{Key: auditClientAddress, Value: []byte(p.Address)})
		}
		if a.full {
			c.Key, c.Value = r.Key, r.Value
		}
		out.Emit(a.target, a.out, c)
	}
	return nil
}

// sampled decides, from the record's place alone, whether it is copied:
// the same record is always decided the same.
func (a *audit) sampled(offset int64) bool {
	if a.sample >= 1<<63 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(a.topic))
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(a.partition))
	binary.BigEndian.PutUint64(b[4:], uint64(offset))
	h.Write(b[:])
	return h.Sum64()>>1 < a.sample
}
