package controller

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A member is one controller's seat in the raft quorum: etcd raft's
// RawNode, its in-memory log, and the disk that keeps what raft must not
// lose. It is a deterministic state machine with no goroutine and no
// clock: ticks, messages and proposals go in; each call to ready persists
// what raft asks (entries and hard state, durably, before any message
// that depends on them leaves) and returns the messages to send and the
// entries committed since the last call. The controller actor does the
// sending, the timing and the applying; tests drive a member directly,
// with a fake network.
type member struct {
	id   uint64
	rn   *raft.RawNode
	mem  *raft.MemoryStorage
	disk raftDisk
	cs   *pb.ConfState
}

// raftDisk keeps a member's raft state across restarts.
type raftDisk interface {
	// Load returns what was saved: the hard state, the newest snapshot,
	// and the entries after it, in index order. Empty values for a new
	// member.
	Load() (*pb.HardState, *pb.Snapshot, []*pb.Entry, error)
	// Save makes entries (replacing every saved entry from the first
	// one's index on) and then hs, if not empty, durable before it
	// returns.
	Save(hs *pb.HardState, entries []*pb.Entry) error
	// SaveSnapshot makes snap durable. With replace (a snapshot from the
	// leader), every saved entry goes; otherwise (compaction) the entries
	// up to its index.
	SaveSnapshot(snap *pb.Snapshot, replace bool) error
}

// Raft ids are node ids plus one: node ids start at 0, and raft reserves
// 0 for "none".
func raftID(node int32) uint64 { return uint64(node) + 1 }
func nodeID(id uint64) int32   { return int32(id) - 1 }

// Raft timing, in ticks of the controller's timer. A follower that hears
// nothing from a leader for ElectionTick to twice that campaigns.
const (
	electionTicks  = 10
	heartbeatTicks = 1
)

// newMember starts a member of the quorum of voters (raft ids) from what
// disk holds. The voters are static (controller.quorum.voters): the
// membership is the configuration's, never a log entry, so a new member
// starts with an empty log and the same voters as every other.
func newMember(id uint64, voters []uint64, disk raftDisk) (*member, error) {
	hs, snap, entries, err := disk.Load()
	if err != nil {
		return nil, err
	}
	mem := raft.NewMemoryStorage()
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := mem.ApplySnapshot(snap); err != nil {
			return nil, err
		}
	}
	if err := mem.Append(entries); err != nil {
		return nil, err
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := mem.SetHardState(hs); err != nil {
			return nil, err
		}
	}
	cs := &pb.ConfState{Voters: voters}
	m := &member{id: id, mem: mem, disk: disk, cs: cs}
	var applied uint64
	if snap != nil {
		applied = snap.GetMetadata().GetIndex()
	}
	m.rn, err = raft.NewRawNode(&raft.Config{
		ID:              id,
		ElectionTick:    electionTicks,
		HeartbeatTick:   heartbeatTicks,
		Storage:         staticVoters{mem, cs},
		Applied:         applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 64,
		// MaxUncommittedEntriesSize bounds what a leader cut off from its
		// quorum accepts before proposals fail.
		MaxUncommittedEntriesSize: 64 << 20,
		// A partitioned voter neither disrupts the quorum when it comes
		// back (pre-vote) nor keeps acting as leader alone (check quorum).
		PreVote:     true,
		CheckQuorum: true,
		// Commands reach the leader's controller, which proposes them;
		// a follower's raft never forwards one (the controller forwards
		// with a request id, so that a retry applies at most once).
		DisableProposalForwarding: true,
		Logger:                    discardRaftLog{},
	})
	if err != nil {
		return nil, fmt.Errorf("controller: raft: %w", err)
	}
	return m, nil
}

// staticVoters is the member's storage, whose configuration is always
// the configured voters.
type staticVoters struct {
	*raft.MemoryStorage
	cs *pb.ConfState
}

func (s staticVoters) InitialState() (*pb.HardState, *pb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	return hs, s.cs, err
}

func (m *member) tick() { m.rn.Tick() }

// step hands the member a message from another member; one from a
// member it does not know is dropped.
func (m *member) step(msg *pb.Message) error {
	if raft.IsLocalMsg(msg.GetType()) {
		return fmt.Errorf("controller: raft: local message %v from the network", msg.GetType())
	}
	err := m.rn.Step(msg)
	if errors.Is(err, raft.ErrStepPeerNotFound) || errors.Is(err, raft.ErrProposalDropped) {
		return nil
	}
	return err
}

// propose asks the quorum to commit data; it fails unless this member
// leads. Committed, it comes out of ready on every member.
func (m *member) propose(data []byte) error { return m.rn.Propose(data) }

// lastIndex returns the index of the member's last entry.
func (m *member) lastIndex() uint64 {
	i, _ := m.mem.LastIndex()
	return i
}

// status returns the member's view: leader (raft id, 0 for none), term,
// commit index.
func (m *member) status() raft.BasicStatus { return m.rn.BasicStatus() }

// readyResult is what one call to ready hands the controller.
type readyResult struct {
	// Messages to send, after the persisting ready has done.
	Messages []*pb.Message
	// Snapshot, when not nil, replaces the state machine: apply it before
	// Committed.
	Snapshot *pb.Snapshot
	// Committed entries to apply, in order.
	Committed []*pb.Entry
}

// ready persists what raft produced since the last call and returns what
// is to be sent and applied. Raft counts the entries returned as applied:
// the caller must apply them before calling again.
func (m *member) ready() (readyResult, error) {
	var out readyResult
	for m.rn.HasReady() {
		rd := m.rn.Ready()
		if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
			if err := m.disk.SaveSnapshot(rd.Snapshot, true); err != nil {
				return out, err
			}
			if err := m.mem.ApplySnapshot(rd.Snapshot); err != nil {
				return out, err
			}
			out.Snapshot, out.Committed = rd.Snapshot, nil
		}
		if err := m.disk.Save(rd.HardState, rd.Entries); err != nil {
			return out, err
		}
		if err := m.mem.Append(rd.Entries); err != nil {
			return out, err
		}
		if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
			if err := m.mem.SetHardState(rd.HardState); err != nil {
				return out, err
			}
		}
		out.Messages = append(out.Messages, rd.Messages...)
		out.Committed = append(out.Committed, rd.CommittedEntries...)
		m.rn.Advance(rd)
	}
	return out, nil
}

// sent tells raft a message left: a snapshot counts as delivered, so
// that the leader goes back to appending (remoting is at-most-once: if the
// snapshot was lost, the follower refuses the next append and the leader
// sends it again).
func (m *member) sent(msg *pb.Message) {
	if msg.GetType() == pb.MessageType_MsgSnap {
		m.rn.ReportSnapshot(msg.GetTo(), raft.SnapshotFinish)
	}
}

// compact takes a snapshot of the state machine at index (applied), with
// data its encoding, and drops the log before it from memory and disk.
func (m *member) compact(index uint64, data []byte) error {
	snap, err := m.mem.CreateSnapshot(index, m.cs, data)
	if err != nil {
		return err
	}
	if err := m.disk.SaveSnapshot(snap, false); err != nil {
		return err
	}
	return m.mem.Compact(index)
}

// discardRaftLog drops raft's own log: the controller logs what matters
// (leader changes) itself.
type discardRaftLog struct{}

func (discardRaftLog) Debug(...any)                   {}
func (discardRaftLog) Debugf(string, ...any)          {}
func (discardRaftLog) Error(...any)                   {}
func (discardRaftLog) Errorf(string, ...any)          {}
func (discardRaftLog) Info(...any)                    {}
func (discardRaftLog) Infof(string, ...any)           {}
func (discardRaftLog) Warning(...any)                 {}
func (discardRaftLog) Warningf(string, ...any)        {}
func (discardRaftLog) Fatal(v ...any)                 { panic(fmt.Sprint(v...)) }
func (discardRaftLog) Fatalf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
func (discardRaftLog) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (discardRaftLog) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
