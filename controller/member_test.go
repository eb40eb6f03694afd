package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// memDisk is a raftDisk in memory; what Save returned survives a restart
// of the member, as on a disk that fsyncs.
type memDisk struct {
	hs      *pb.HardState
	snap    *pb.Snapshot
	entries []*pb.Entry
}

func (d *memDisk) Load() (*pb.HardState, *pb.Snapshot, []*pb.Entry, error) {
	var es []*pb.Entry
	for _, e := range d.entries {
		es = append(es, proto.Clone(e).(*pb.Entry))
	}
	var hs *pb.HardState
	if d.hs != nil {
		hs = proto.Clone(d.hs).(*pb.HardState)
	}
	var snap *pb.Snapshot
	if d.snap != nil {
		snap = proto.Clone(d.snap).(*pb.Snapshot)
	}
	return hs, snap, es, nil
}

func (d *memDisk) SaveSnapshot(snap *pb.Snapshot, replace bool) error {
	d.snap = proto.Clone(snap).(*pb.Snapshot)
	i := snap.GetMetadata().GetIndex()
	d.entries = slices.DeleteFunc(d.entries, func(e *pb.Entry) bool { return replace || e.GetIndex() <= i })
	return nil
}

func (d *memDisk) Save(hs *pb.HardState, entries []*pb.Entry) error {
	if hs != nil && !raft.IsEmptyHardState(hs) {
		d.hs = proto.Clone(hs).(*pb.HardState)
	}
	if len(entries) > 0 {
		first := entries[0].GetIndex()
		d.entries = slices.DeleteFunc(d.entries, func(e *pb.Entry) bool { return e.GetIndex() >= first })
		for _, e := range entries {
			d.entries = append(d.entries, proto.Clone(e).(*pb.Entry))
		}
	}
	return nil
}

// quorumSim runs members over a fake network that drops, duplicates,
// reorders and partitions messages, and restarts members; everything
// is decided by its random source, so a seed replays a run.
type quorumSim struct {
	t       *testing.T
	rng     *rand.Rand
	ids     []uint64
	members map[uint64]*member
	disks   map[uint64]raftDisk
	// crash returns a member's disk as a crash leaves it.
	crash func(id uint64, d raftDisk) raftDisk
	net   []*pb.Message
	cut   map[uint64]bool // members cut off from every other
	// applied is each member's state machine: the commands it applied,
	// in order, rebuilt from the snapshot and the log on restart.
	applied map[uint64][]string
	next    int // the next command's number
}

// newQuorumSim starts n members on the disks newDisk makes; crash
// returns a disk as a crash of its member leaves it.
func newQuorumSim(t *testing.T, seed uint64, n int, newDisk func(id uint64) raftDisk, crash func(id uint64, d raftDisk) raftDisk) *quorumSim {
	s := &quorumSim{t: t, rng: rand.New(rand.NewPCG(seed, seed)), members: map[uint64]*member{},
		disks: map[uint64]raftDisk{}, crash: crash, cut: map[uint64]bool{}, applied: map[uint64][]string{}}
	for i := range n {
		s.ids = append(s.ids, raftID(int32(i)))
	}
	for _, id := range s.ids {
		s.disks[id] = newDisk(id)
		s.start(id)
	}
	return s
}

func (s *quorumSim) start(id uint64) {
	m, err := newMember(id, s.ids, s.disks[id])
	if err != nil {
		s.t.Fatal(err)
	}
	s.members[id] = m
	s.applied[id] = nil
	if _, snap, _, _ := s.disks[id].Load(); snap != nil {
		s.applied[id] = decodeState(snap.GetData())
	}
}

func decodeState(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), ",")
}

// process runs a member's ready and routes its output.
func (s *quorumSim) process(id uint64) {
	m := s.members[id]
	out, err := m.ready()
	if err != nil {
		s.t.Fatal(err)
	}
	if out.Snapshot != nil {
		s.applied[id] = decodeState(out.Snapshot.GetData())
	}
	for _, e := range out.Committed {
		if e.GetType() == pb.EntryType_EntryNormal && len(e.GetData()) > 0 {
			s.applied[id] = append(s.applied[id], string(e.GetData()))
		}
	}
	for _, msg := range out.Messages {
		s.net = append(s.net, msg)
		m.sent(msg)
	}
}

func (s *quorumSim) leader() uint64 {
	for _, id := range s.ids {
		if st := s.members[id].status(); st.RaftState == raft.StateLeader && !s.cut[id] {
			return id
		}
	}
	return 0
}

// step takes one random action; lossy allows drops, duplicates, cuts and
// restarts.
func (s *quorumSim) step(lossy bool) {
	id := s.ids[s.rng.IntN(len(s.ids))]
	switch r := s.rng.IntN(100); {
	case r < 50 && len(s.net) > 0:
		i := s.rng.IntN(len(s.net))
		msg := s.net[i]
		if !lossy || s.rng.IntN(10) != 0 { // duplicates stay in the network
			s.net = slices.Delete(s.net, i, i+1)
		}
		if lossy && s.rng.IntN(10) == 0 {
			return // dropped
		}
		to, from := msg.GetTo(), msg.GetFrom()
		if s.cut[to] || s.cut[from] {
			return
		}
		if err := s.members[to].step(proto.Clone(msg).(*pb.Message)); err != nil {
			s.t.Fatalf("step %v: %v", msg.GetType(), err)
		}
		s.process(to)
	case r < 80:
		s.members[id].tick()
		s.process(id)
	case r < 92:
		s.next++
		// Only the leader takes proposals; elsewhere it fails, as
		// forwarding is the controller's business.
		if s.members[id].propose([]byte(fmt.Sprintf("c%d", s.next))) == nil {
			s.process(id)
		}
	case r < 95:
		// Compact at what this member applied.
		st := s.members[id].status()
		if st.Applied > 0 {
			if err := s.members[id].compact(st.Applied, []byte(strings.Join(s.applied[id], ","))); err != nil && err != raft.ErrSnapOutOfDate {
				s.t.Fatal(err)
			}
		}
	case lossy && r < 97:
		s.disks[id] = s.crash(id, s.disks[id]) // what was saved survives
		s.start(id)
	case lossy && r < 99:
		s.cut[id] = !s.cut[id]
	}
}

// check asserts state machine safety: every member applied a prefix of
// the longest sequence, and nothing twice.
func (s *quorumSim) check() {
	var longest []string
	for _, id := range s.ids {
		if a := s.applied[id]; len(a) > len(longest) {
			longest = a
		}
	}
	seen := map[string]bool{}
	for _, c := range longest {
		if seen[c] {
			s.t.Fatalf("command %s applied twice: %v", c, longest)
		}
		seen[c] = true
	}
	for _, id := range s.ids {
		a := s.applied[id]
		if !slices.Equal(a, longest[:len(a)]) {
			s.t.Fatalf("member %d applied %v, which is not a prefix of %v", id, a, longest)
		}
	}
}

// TestQuorumSafetyAndRecovery drives 3- and 5-member quorums through
// lossy, partitioned runs with restarts and compaction, checking after
// every step that no two members disagree on what was applied; then heals
// the network and checks that a new command reaches every member.
func TestQuorumSafetyAndRecovery(t *testing.T) {
	for _, n := range []int{3, 5} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%d members seed %d", n, seed), func(t *testing.T) {
				s := newQuorumSim(t, seed, n, func(uint64) raftDisk { return &memDisk{} }, func(_ uint64, d raftDisk) raftDisk { return d })
				s.run(4000)
			})
		}
	}
}

// TestQuorumOnDisk runs the same over the metadata log on crashable
// in-memory filesystems: a restart is a crash that keeps only what was
// synced, and the member comes back from the log, the snapshot and the
// hard state file.
func TestQuorumOnDisk(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			fss := map[uint64]*vfs.MemFS{}
			crashRand := rand.New(rand.NewPCG(seed, 1))
			open := func(id uint64) raftDisk {
				d, err := openLogDisk(fss[id], "meta", clock.Real)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			s := newQuorumSim(t, seed, 3, func(id uint64) raftDisk {
				fss[id] = vfs.NewCrashableMem()
				return open(id)
			}, func(id uint64, _ raftDisk) raftDisk {
				fss[id] = fss[id].CrashClone(vfs.CrashOptions{Rand: crashRand, KeepUnsyncedProb: 0.5})
				return open(id)
			})
			s.run(1500)
		})
	}
}

// run takes lossy steps, then heals and checks a new command reaches
// every member.
func (s *quorumSim) run(lossySteps int) {
	for range lossySteps {
		s.step(true)
		s.check()
	}
	// Heal: no cuts, no losses, every member up.
	clear(s.cut)
	var final string
	var term uint64 // the term final was proposed in
	for range 20000 {
		s.step(false)
		s.check()
		if l := s.leader(); final != "" && (l == 0 || s.members[l].status().GetTerm() != term) {
			// Leadership moved after the heal (a member restarted just
			// before it campaigns): a proposal not yet replicated may be
			// lost, as raft allows. Propose another.
			final = ""
		}
		if final == "" {
			if l := s.leader(); l != 0 {
				s.next++
				final = fmt.Sprintf("c%d", s.next)
				term = s.members[l].status().GetTerm()
				if s.members[l].propose([]byte(final)) == nil {
					s.process(l)
				} else {
					final = ""
				}
			}
			continue
		}
		done := true
		for _, id := range s.ids {
			done = done && slices.Contains(s.applied[id], final)
		}
		if done {
			return
		}
	}
	s.t.Fatalf("after healing, command %q did not reach every member: %v", final, s.applied)
}
