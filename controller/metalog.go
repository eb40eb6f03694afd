package controller

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// Before the controller quorum, the metadata log of a node held its
// commands directly: one batch per command, each record one image.Record
// (key: record type, uint16 big-endian; value: its msgpack encoding).
// migrate turns such a log into the quorum's form: a snapshot of the
// image it builds, with the log empty after it. Quorum entries have no
// key, so the first record tells the two apart.
func (c *Controller) migrate(voters []uint64) error {
	l := c.disk.log
	v := l.View()
	if v.LogEndOffset == v.LogStartOffset {
		return nil
	}
	old := false
	errStop := errors.New("stop")
	err := forEachRecord(v, v.LogStartOffset, func(_ int64, r *store.Record) error {
		old = len(r.Key) == 2
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if !old {
		return nil
	}
	if len(voters) > 1 {
		return fmt.Errorf("%s holds the metadata of a one-node cluster (written by an earlier Skein), which cannot join a quorum of %d voters: start this node without controller.quorum.voters, or give it an empty data.dir", l.Dir(), len(voters))
	}
	im := image.Empty()
	err = forEachRecord(v, v.LogStartOffset, func(offset int64, r *store.Record) error {
		if len(r.Key) != 2 {
			return fmt.Errorf("controller: metadata record key of %d bytes", len(r.Key))
		}
		rec, err := decodeRecord(image.RecordType(binary.BigEndian.Uint16(r.Key)), r.Value)
		if err != nil {
			return err
		}
		im, err = im.Apply(offset, rec)
		return err
	})
	if err != nil {
		return err
	}
	data, err := encodeSnapshot(im, nil)
	if err != nil {
		return err
	}
	snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: proto.Uint64(uint64(v.LogEndOffset)), Term: proto.Uint64(1), ConfState: &pb.ConfState{Voters: voters},
	}}
	c.cfg.Logger.Info().Int64("records", v.LogEndOffset-v.LogStartOffset).Msg("controller: metadata log of an earlier Skein turned into a quorum snapshot")
	return c.disk.SaveSnapshot(snap, true)
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

// decodeRecord returns the record of type t that value encodes.
func decodeRecord(t image.RecordType, value []byte) (image.Record, error) {
	rec := image.New(t)
	if rec == nil {
		return nil, fmt.Errorf("%w %d (written by a newer Skein?)", errUnknownRecord, t)
	}
	if err := msgpack.Unmarshal(value, rec); err != nil {
		return nil, fmt.Errorf("controller: decode metadata record type %d: %w", t, err)
	}
	return rec, nil
}
