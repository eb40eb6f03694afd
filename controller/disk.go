package controller

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// logDisk is a member's raftDisk in its metadata log directory, which
// holds a partition log (partition/store) and a small state file:
//
//   - each raft entry is one record of the log, at offset index-1, its
//     value the entry's protobuf encoding; the entries of one Save are
//     one batch, written with the term as its leader epoch and synced;
//   - the newest snapshot is quorum-snapshot and the log starts at its
//     index;
//   - the hard state (term, vote, commit) is quorum-state.
//
// Both state files are replaced atomically, a CRC-32C before the
// protobuf encoding.
type logDisk struct {
	fs  vfs.FS
	log *store.Log
	buf []byte
	// written is the hard state as last written.
	written *pb.HardState
}

// The state files beside the log.
const (
	quorumStateFile = "quorum-state"
	snapshotFile    = "quorum-snapshot"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (d *logDisk) Load() (*pb.HardState, *pb.Snapshot, []*pb.Entry, error) {
	hs, err := d.loadHardState()
	if err != nil {
		return nil, nil, nil, err
	}
	snap, err := d.loadSnapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	after := snap.GetMetadata().GetIndex()
	var entries []*pb.Entry
	v := d.log.View()
	err = forEachRecord(v, max(v.LogStartOffset, int64(after)), func(offset int64, r *store.Record) error {
		e := &pb.Entry{}
		if err := proto.Unmarshal(r.Value, e); err != nil {
			return err
		}
		if e.GetIndex() != uint64(offset)+1 {
			return fmt.Errorf("entry %d at offset %d", e.GetIndex(), offset)
		}
		if e.GetIndex() > after {
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if n := len(entries); n > 0 && entries[0].GetIndex() != after+1 {
		return nil, nil, nil, fmt.Errorf("controller: metadata log starts at entry %d, after a snapshot at %d", entries[0].GetIndex(), after)
	}
	return hs, snap, entries, nil
}

func (d *logDisk) loadHardState() (*pb.HardState, error) {
	hs := &pb.HardState{}
	if ok, err := d.readState(quorumStateFile, hs); err != nil || !ok {
		return nil, err
	}
	d.written = proto.Clone(hs).(*pb.HardState)
	return hs, nil
}

func (d *logDisk) loadSnapshot() (*pb.Snapshot, error) {
	snap := &pb.Snapshot{}
	if ok, err := d.readState(snapshotFile, snap); err != nil || !ok {
		return nil, err
	}
	return snap, nil
}

// readState reads a state file written by writeState into m; ok is
// false if there is none.
func (d *logDisk) readState(name string, m proto.Message) (ok bool, err error) {
	f, err := d.fs.Open(filepath.Join(d.log.Dir(), name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return false, err
	}
	if len(b) < 4 || crc32.Checksum(b[4:], castagnoli) != binary.BigEndian.Uint32(b) {
		return false, fmt.Errorf("controller: %s is corrupt", name)
	}
	if err := proto.Unmarshal(b[4:], m); err != nil {
		return false, fmt.Errorf("controller: %s: %w", name, err)
	}
	return true, nil
}

// writeState replaces a state file atomically and durably: a CRC-32C,
// then m's protobuf encoding.
func (d *logDisk) writeState(name string, m proto.Message) error {
	body, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), crc32.Checksum(body, castagnoli))
	return d.log.WriteFile(name, append(b, body...))
}

func (d *logDisk) Save(hs *pb.HardState, entries []*pb.Entry) error {
	if len(entries) > 0 {
		first := int64(entries[0].GetIndex()) - 1
		if leo := d.log.LogEndOffset(); first < leo {
			if err := d.log.Truncate(first); err != nil {
				return err
			}
		} else if first > leo {
			return fmt.Errorf("controller: entry %d after a log ending at %d", first+1, leo)
		}
		recs := make([]store.Record, len(entries))
		for i, e := range entries {
			v, err := proto.Marshal(e)
			if err != nil {
				return err
			}
			recs[i] = store.Record{OffsetDelta: int32(i), Value: v}
		}
		h := store.Header{LastOffsetDelta: int32(len(entries) - 1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		b, err := store.AppendBatch(d.buf[:0], h, recs, store.CodecNone)
		if err != nil {
			return err
		}
		d.buf = b
		res, err := d.log.Append(b, int32(entries[len(entries)-1].GetTerm()))
		if err != nil {
			return err
		}
		if err := d.log.SyncTo(res.LastOffset + 1); err != nil {
			return err
		}
		// The high watermark of this log is only its readers' bound:
		// everything written is the member's own.
		d.log.SetHighWatermark(res.LastOffset + 1)
	}
	// Only the term and the vote must never go back. A commit index
	// written late is safe (a member restarted with an older one applies
	// less until the leader tells it the newer), as long as it is not
	// below the snapshot's (SaveSnapshot), and writing it at every
	// command would double the syncs of each.
	if hs == nil || raft.IsEmptyHardState(hs) || hs.GetTerm() == d.written.GetTerm() && hs.GetVote() == d.written.GetVote() {
		return nil
	}
	return d.writeHardState(hs)
}

func (d *logDisk) writeHardState(hs *pb.HardState) error {
	if err := d.writeState(quorumStateFile, hs); err != nil {
		return err
	}
	d.written = proto.Clone(hs).(*pb.HardState)
	return nil
}

func (d *logDisk) SaveSnapshot(snap *pb.Snapshot, replace bool) error {
	// The snapshot is durable before the log gives anything up, so a
	// crash in between leaves entries it covers (which Load skips), never
	// a gap.
	if err := d.writeState(snapshotFile, snap); err != nil {
		return err
	}
	// Raft refuses to start with a commit index below the snapshot's.
	if d.written.GetCommit() < snap.GetMetadata().GetIndex() {
		hs := &pb.HardState{Term: proto.Uint64(d.written.GetTerm()), Vote: proto.Uint64(d.written.GetVote()), Commit: proto.Uint64(snap.GetMetadata().GetIndex())}
		if err := d.writeHardState(hs); err != nil {
			return err
		}
	}
	index := int64(snap.GetMetadata().GetIndex())
	if replace || index > d.log.LogEndOffset() {
		return d.log.TruncateFullyAndStartAt(index)
	}
	if err := d.log.AdvanceLogStartOffset(index); err != nil {
		return err
	}
	_, err := d.log.ApplyRetention()
	return err
}

// openLogDisk opens the metadata log in dir.
func openLogDisk(fsys vfs.FS, dir string, clk clock.Clock) (*logDisk, error) {
	l, err := openMetadataLog(fsys, dir, clk)
	if err != nil {
		return nil, err
	}
	// Everything in this log is the member's own (see Save).
	l.SetHighWatermark(l.LogEndOffset())
	return &logDisk{fs: fsys, log: l}, nil
}
