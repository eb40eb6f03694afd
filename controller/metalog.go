package controller

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// The metadata log is a partition log (partition/store) of its own, in
// <data.dir>/__cluster_metadata-0. Each command the controller accepts is
// one batch, so it survives a crash whole or not at all; each record in it
// is one image.Record:
//
//	key:   record type, uint16 big-endian (image.RecordType)
//	value: the record's msgpack encoding
//
// The raft quorum of a later issue replicates exactly these batches.

// metaLog appends records to and replays them from the metadata log.
type metaLog struct {
	log *store.Log
	buf []byte
}

// appendRecords writes records as one batch and syncs it. It returns the
// offset of the first record.
func (m *metaLog) appendRecords(records []image.Record, now int64) (int64, error) {
	recs := make([]store.Record, len(records))
	for i, r := range records {
		body, err := msgpack.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("controller: encode %T: %w", r, err)
		}
		recs[i] = store.Record{
			OffsetDelta: int32(i),
			Key:         binary.BigEndian.AppendUint16(nil, uint16(r.Type())),
			Value:       body,
		}
	}
	h := store.Header{
		LastOffsetDelta: int32(len(records) - 1),
		BaseTimestamp:   now,
		MaxTimestamp:    now,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		BaseSequence:    -1,
	}
	b, err := store.AppendBatch(m.buf[:0], h, recs, store.CodecNone)
	if err != nil {
		return 0, err
	}
	m.buf = b
	res, err := m.log.Append(b, 0)
	if err != nil {
		return 0, err
	}
	if err := m.log.SyncTo(res.LastOffset + 1); err != nil {
		return 0, err
	}
	return res.BaseOffset, nil
}

// replay applies every record in the log to im and returns the result.
func (m *metaLog) replay(im *image.Image) (*image.Image, error) {
	v := m.log.View()
	err := forEachRecord(v, v.LogStartOffset, func(offset int64, r *store.Record) error {
		rec, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			return err
		}
		im, err = im.Apply(offset, rec)
		return err
	})
	if err != nil {
		return nil, err
	}
	return im, nil
}

// forEachRecord calls fn with each record of v from offset from on, and
// the record's offset.
func forEachRecord(v *store.View, from int64, fn func(offset int64, r *store.Record) error) error {
	var dec store.Decompressor
	for next := from; next < v.LogEndOffset; {
		b, err := v.ReadBytes(next, store.ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return fmt.Errorf("controller: metadata log: nothing at offset %d below its end %d", next, v.LogEndOffset)
		}
		err = store.ForEachBatch(b, func(batch []byte, h store.Header) error {
			next = h.NextOffset()
			return store.ForEachRecord(batch, &dec, func(r *store.Record) error {
				return fn(h.BaseOffset+int64(r.OffsetDelta), r)
			})
		})
		if err != nil {
			return fmt.Errorf("controller: metadata log: %w", err)
		}
	}
	return nil
}

// openMetadataLog opens the metadata log in dir: a partition log that
// nothing deletes by time or size.
func openMetadataLog(fsys vfs.FS, dir string, clk clock.Clock) (*store.Log, error) {
	opts := store.DefaultOptions()
	opts.RetentionMs, opts.RetentionBytes = -1, -1
	return store.Open(store.Config{FS: fsys, Dir: dir, Clock: clk, Options: opts})
}

var errUnknownRecord = errors.New("controller: unknown metadata record type")

func decodeRecord(key, value []byte) (image.Record, error) {
	if len(key) != 2 {
		return nil, fmt.Errorf("controller: metadata record key of %d bytes", len(key))
	}
	t := image.RecordType(binary.BigEndian.Uint16(key))
	rec := image.New(t)
	if rec == nil {
		return nil, fmt.Errorf("%w %d (written by a newer Skein?)", errUnknownRecord, t)
	}
	if err := msgpack.Unmarshal(value, rec); err != nil {
		return nil, fmt.Errorf("controller: decode metadata record type %d: %w", t, err)
	}
	return rec, nil
}
