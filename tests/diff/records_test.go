//go:build kafkadiff

package diff

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The produce cases build their record batches byte by byte, so that a
// batch can be wrong in exactly one way (its CRC, its magic, its count).

// rec is one record: key, value and its timestamp in milliseconds.
type rec struct {
	key, value string
	ts         int64
}

// batchHeader is what a case may set in a batch's header; the zero value
// is an uncompressed batch from no producer (producer id -1).
type batchHeader struct {
	baseOffset    int64
	magic         int8 // 0 means 2
	attributes    int16
	producerID    int64 // 0 means -1
	producerEpoch int16
	baseSequence  int32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batch encodes records as one magic 2 record batch with a correct CRC.
func batch(h batchHeader, recs ...rec) []byte {
	b := kmsg.RecordBatch{
		FirstOffset:   h.baseOffset,
		Magic:         2,
		Attributes:    h.attributes,
		ProducerID:    -1,
		ProducerEpoch: -1,
		FirstSequence: -1,
		NumRecords:    int32(len(recs)),
	}
	if h.magic != 0 {
		b.Magic = h.magic
	}
	if h.producerID != 0 {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = h.producerID, h.producerEpoch, h.baseSequence
	}
	if len(recs) > 0 {
		b.FirstTimestamp, b.MaxTimestamp = recs[0].ts, recs[0].ts
		b.LastOffsetDelta = int32(len(recs) - 1)
	}
	for i, r := range recs {
		b.MaxTimestamp = max(b.MaxTimestamp, r.ts)
		rr := kmsg.Record{
			TimestampDelta64: r.ts - b.FirstTimestamp,
			OffsetDelta:      int32(i),
			Key:              []byte(r.key),
			Value:            []byte(r.value),
		}
		body := rr.AppendTo(nil)[1:] // Length 0 is one varint byte
		b.Records = append(kbin.AppendVarint(b.Records, int32(len(body))), body...)
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	return fixCRC(out)
}

// fixCRC sets a magic 2 batch's CRC-32C, over everything after it.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// records returns n records "k<i>"="v<i>" of timestamps from ts on, a
// millisecond apart.
func records(n int, ts int64) []rec {
	var out []rec
	for i := range n {
		out = append(out, rec{key: "k" + strconv.Itoa(i), value: "v" + strconv.Itoa(i), ts: ts + int64(i)})
	}
	return out
}

// produce is a Produce of one batch to one partition, acks=all.
func produce(topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, batch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}
