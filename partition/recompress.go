package partition

import (
	"fmt"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition/store"
)

// TargetCodec returns the codec a topic's compression.type asks the broker
// to store batches in, and false for "producer" (keep the producer's).
func TargetCodec(t configs.CompressionType) (store.Codec, bool) {
	switch t {
	case configs.CompressionUncompressed:
		return store.CodecNone, true
	case configs.CompressionGzip:
		return store.CodecGzip, true
	case configs.CompressionSnappy:
		return store.CodecSnappy, true
	case configs.CompressionLz4:
		return store.CodecLZ4, true
	case configs.CompressionZstd:
		return store.CodecZstd, true
	}
	return store.CodecNone, false
}

// Recompress rebuilds one validated batch with the records compressed by
// codec, as Kafka's LogValidator does when a topic's compression.type is
// not "producer" and differs from the producer's codec. Every header field
// the producer set (producer id, epoch, sequence, timestamps, attributes
// other than the codec) is kept; the CRC is new. It runs on the caller's
// goroutine, like Validate, and uses dec for decompressing.
func Recompress(batch []byte, h store.Header, codec store.Codec, dec *store.Decompressor) ([]byte, error) {
	recs := make([]store.Record, 0, h.NumRecords)
	// NB: the records' bytes point into batch or into dec's buffer, which
	// stays valid until dec decompresses again, after AppendBatch.
	if err := store.ForEachRecord(batch, dec, func(r *store.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		return nil, err
	}
	out, err := store.AppendBatch(make([]byte, 0, len(batch)), h, recs, codec)
	if err != nil {
		return nil, fmt.Errorf("partition: recompress to %v: %w", codec, err)
	}
	return out, nil
}
