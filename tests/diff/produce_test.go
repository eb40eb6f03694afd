//go:build kafkadiff

package diff

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicIDs returns the id each broker gave topic ([16]byte{} if it has
// none).
func topicIDs(t *testing.T, topic string) (kafka, skein [16]byte) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	id := func(addr string) [16]byte {
		o := send(addr, req)
		if o.err != nil {
			t.Fatalf("metadata for %s from %s: %v", topic, addr, o.err)
		}
		return o.resp.(*kmsg.MetadataResponse).Topics[0].TopicID
	}
	return id(kafkaAddr), id(skeinAddr)
}

// unknownTopicID is a topic id neither broker gave.
var unknownTopicID = [16]byte{0xd1, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}

// byID returns a builder of req for compareEach that names each topic by
// the id the broker gave it, as v13+ requests do (ids: topic name to
// [kafka's, skein's]); a name with no id gets unknownTopicID.
type topicIDSet map[string][2][16]byte

func (ids topicIDSet) of(topic string, kafka bool) [16]byte {
	pair, ok := ids[topic]
	if !ok {
		return unknownTopicID
	}
	if kafka {
		return pair[0]
	}
	return pair[1]
}

func (ids topicIDSet) add(t *testing.T, topics ...string) {
	for _, topic := range topics {
		k, s := topicIDs(t, topic)
		ids[topic] = [2][16]byte{k, s}
	}
}

// produceEach builds a Produce for compareEach: by topic name below v13,
// by each broker's topic id from v13.
func produceEach(ids topicIDSet, v int16, topic string, partition int32, b []byte) func(bool) kmsg.Request {
	return func(kafka bool) kmsg.Request {
		req := produce(topic, partition, b)
		if v >= 13 {
			req.Topics[0].TopicID, req.Topics[0].Topic = ids.of(topic, kafka), ""
		}
		return req
	}
}

// TestProduce compares Produce's answers for good batches and for batches
// wrong in one way each, at v12 (topics by name) and the newest version
// both speak (v13, topics by id).
func TestProduce(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-produce", 2, 1))
	createTopic(c, newTopic("diff-produce-small", 1, 1, "max.message.bytes=1000"))
	createTopic(c, newTopic("diff-produce-append-time", 1, 1, "message.timestamp.type=LogAppendTime"))
	// A topic of its own: Skein takes the record Kafka refuses, and the
	// offsets of later cases would differ.
	createTopic(c, newTopic("diff-produce-ahead", 1, 1))
	ids := topicIDSet{}
	ids.add(t, "diff-produce", "diff-produce-small", "diff-produce-append-time", "diff-produce-ahead")

	now := time.Now().UnixMilli()
	good := func() []byte { return batch(batchHeader{}, records(3, now)...) }
	type produceCase struct {
		name      string
		topic     string
		partition int32
		batch     []byte
		acks      int16 // 0 means -1
	}
	// Each version's idempotent producers are new to the brokers.
	cases := func(v int16) []produceCase {
		pid := 987650 + 10*int64(v)
		idempotent := batch(batchHeader{producerID: pid, producerEpoch: 0, baseSequence: 0}, records(1, now)...)
		return []produceCase{
			{"good", "diff-produce", 0, good(), 0},
			{"acks 1", "diff-produce", 1, good(), 1},
			{"acks 2", "diff-produce", 1, good(), 2},
			{"base offset not zero", "diff-produce", 0, batch(batchHeader{baseOffset: 7}, records(2, now)...), 0},
			{"log append time", "diff-produce-append-time", 0, good(), 0},
			{"partition out of range", "diff-produce", 5, good(), 0},
			{"negative partition", "diff-produce", -1, good(), 0},
			{"unknown topic", "diff-produce-unknown", 0, good(), 0},
			{"oversize batch", "diff-produce-small", 0,
				batch(batchHeader{}, rec{key: "k", value: strings.Repeat("x", 2000), ts: now}), 0},
			{"bad crc", "diff-produce", 0, func() []byte {
				b := good()
				b[len(b)-2] ^= 0x01 // the last value's last byte; the CRC no longer holds
				return b
			}(), 0},
			{"magic 1", "diff-produce", 0, batch(batchHeader{magic: 1}, records(1, now)...), 0},
			{"magic 3", "diff-produce", 0, batch(batchHeader{magic: 3}, records(1, now)...), 0},
			{"truncated", "diff-produce", 0, good()[:40], 0},
			{"garbage", "diff-produce", 0, []byte(strings.Repeat("not a batch ", 8)), 0},
			{"length past the end", "diff-produce", 0, func() []byte {
				b := good()
				binary.BigEndian.PutUint32(b[8:], uint32(len(b)))
				return b
			}(), 0},
			{"record count too high", "diff-produce", 0, func() []byte {
				b := good()
				binary.BigEndian.PutUint32(b[57:], 5)
				return fixCRC(b)
			}(), 0},
			{"no records", "diff-produce", 0, batch(batchHeader{}), 0},
			{"empty records field", "diff-produce", 0, []byte{}, 0},
			{"two batches", "diff-produce", 0, append(good(), good()...), 0},
			{"idempotent, unknown producer id", "diff-produce", 0, idempotent, 0},
			{"idempotent, the same batch again", "diff-produce", 0, idempotent, 0},
			{"idempotent, a sequence gap", "diff-produce", 0,
				batch(batchHeader{producerID: pid, producerEpoch: 0, baseSequence: 5}, records(1, now)...), 0},
			{"idempotent, an older epoch", "diff-produce", 0,
				batch(batchHeader{producerID: pid + 2, producerEpoch: 3, baseSequence: 0}, records(1, now)...), 0},
			{"transactional attribute, no transactional id", "diff-produce", 0,
				batch(batchHeader{attributes: 0x10, producerID: pid + 1, producerEpoch: 0, baseSequence: 0}, records(1, now)...), 0},
			{"control attribute", "diff-produce", 0, batch(batchHeader{attributes: 0x20}, records(1, now)...), 0},
			{"unknown codec", "diff-produce", 0, batch(batchHeader{attributes: 0x07}, records(1, now)...), 0},
			{"timestamp two hours ahead", "diff-produce-ahead", 0, batch(batchHeader{}, records(1, now+2*3600*1000)...), 0},
			{"timestamp before 1970", "diff-produce", 1, batch(batchHeader{}, records(1, -5)...), 0},
		}
	}
	for _, v := range []int16{12, commonMax(t, kmsg.NewPtrProduceRequest())} {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			for _, tc := range cases(v) {
				t.Run(tc.name, func(t *testing.T) {
					build := produceEach(ids, v, tc.topic, tc.partition, tc.batch)
					if tc.acks != 0 {
						inner := build
						build = func(kafka bool) kmsg.Request {
							req := inner(kafka).(*kmsg.ProduceRequest)
							req.Acks = tc.acks
							return req
						}
					}
					newCase(t).compareEach(v, build)
				})
			}
		})
	}
}
