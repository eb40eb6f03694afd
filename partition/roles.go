package partition

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
	"github.com/skeinlog/skein/replica"
)

// State is a partition as the cluster metadata has it: who leads, in
// which leader epoch, its replicas and which of them are in sync, and the
// partition epoch that counts every change to it.
type State struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
}

func (s State) equal(o State) bool {
	return s.Leader == o.Leader && s.LeaderEpoch == o.LeaderEpoch && s.PartitionEpoch == o.PartitionEpoch &&
		slices.Equal(s.Replicas, o.Replicas) && slices.Equal(s.ISR, o.ISR)
}

// older reports whether s is an earlier state of the partition than o.
func (s State) older(o State) bool {
	return s.LeaderEpoch < o.LeaderEpoch || (s.LeaderEpoch == o.LeaderEpoch && s.PartitionEpoch < o.PartitionEpoch)
}

// ISRChange is a leader's request to change its partition's ISR
// (AlterPartition), made through Config.AlterISR.
type ISRChange struct {
	TopicID        image.TopicID
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	// ISREpochs are KIP-903's broker epochs: for each member of ISR, the
	// incarnation of the run whose fetches this leader counted, 0 where
	// none (the leader itself, a member not heard from in this
	// leadership). The controller refuses a change naming a member that
	// restarted since (controller.AlterPartition).
	ISREpochs []uint64
}

// ISRChanged answers an ISRChange: the partition's state as committed, or
// an error (a refusal, or no answer in time).
type ISRChanged struct {
	Err     *kerr.Error
	Message string
	State   State
}

// SetState tells a partition actor the partition's state in the newest
// metadata: it leads or follows as that says. Sent by the partitions
// supervisor; no reply. A state older than the one in force is ignored.
type SetState struct {
	State State
}

// FollowerFetched tells a leader that a follower fetched from offset in
// leaderEpoch: it holds every offset below (durably, under durability
// fsync). Sent by the transport as it answers the follower's fetch
// (Registry.ReadForFollower); no reply.
type FollowerFetched struct {
	Replica     int32
	Offset      int64
	LeaderEpoch int32
	// Incarnation is the run of the follower's node that fetched (its
	// fetch's ReplicaState.Epoch, checked against the image then).
	Incarnation uint64
}

// Replicate hands a follower the leader's answer to its fetch from
// Position: records to append as they are, a truncation, the high
// watermark. Done is called once, on the actor's goroutine, when the
// follower may fetch again: the records are appended, and durable under
// durability fsync, or the answer was stale and dropped. Sent by the
// node's fetcher for the leader's node.
type Replicate struct {
	Position replica.FetchPosition
	Answer   replica.Answer
	Records  []byte
	Done     func()
}

// isrChanged brings an ISRChange's answer back to the actor.
type isrChanged struct {
	req ISRChange
	res ISRChanged
}

// leads reports whether this replica leads in the state in force.
func (p *partition) leads() bool { return p.state.Leader == p.cfg.NodeID }

// The roles ActorRole reports.
const (
	roleLeader   = "leader"
	roleFollower = "follower"
)

// roleView is what ActorRole reports: immutable once published.
type roleView struct {
	role  string
	epoch int32
}

// ActorRole implements actors.Roled: "leader" or "follower" and the
// leader epoch the partition acts under, or "" and 0 while no log is open
// (failed before one ever opened). It stays what it was while the actor
// stops or restarts. Safe for concurrent use: it loads what showRole
// published.
func (p *partition) ActorRole() (role string, epoch int32) {
	if v := p.role.Load(); v != nil {
		return v.role, v.epoch
	}
	return "", 0
}

// showRole publishes the role and leader epoch in force for ActorRole,
// when they changed.
func (p *partition) showRole() {
	var v roleView
	switch {
	case p.leader != nil:
		v = roleView{roleLeader, p.state.LeaderEpoch}
	case p.follower != nil:
		v = roleView{roleFollower, p.state.LeaderEpoch}
	}
	if cur := p.role.Load(); (cur == nil && v == roleView{}) || (cur != nil && *cur == v) {
		return
	}
	p.role.Store(&v)
}

// assumeRole sets up the leader's or follower's account from the state in
// force and the open log; with no log (failed) it waits for one.
func (p *partition) assumeRole() {
	defer p.showRole()
	p.leader, p.follower = nil, nil
	if p.log == nil {
		p.behavior.Become(p.common)
		return
	}
	now := p.cfg.Clock.Now()
	if p.leads() {
		p.fetchedBy = nil // this leadership's followers are heard anew
		p.leader = replica.NewLeader(p.cfg.NodeID, p.state.Replicas, p.state.ISR, p.leaderEnd(), p.log.HighWatermark(), p.cfg.ReplicaLagMax, now)
		p.behavior.Become(p.leading)
		p.raiseHighWatermark()
		return
	}
	p.follower = replica.NewFollower(p.state.Leader, p.state.LeaderEpoch, p.log.LogEndOffset(), p.log.LatestEpoch(), p.log.HighWatermark())
	p.handle.setCaughtUp(time.Time{}) // until the new leader's first answer
	p.behavior.Become(p.following)
}

// leaderEnd is the leader's own end for the high watermark: its durable
// offset under durability fsync, its log end otherwise.
func (p *partition) leaderEnd() int64 {
	if p.cfg.Durability == configs.DurabilityReplicated {
		return p.log.LogEndOffset()
	}
	return p.log.DurableOffset()
}

// hasFollowers reports whether the partition has replicas besides this one.
func (p *partition) hasFollowers() bool { return len(p.state.Replicas) > 1 }

// setState takes the partition's state from the newest metadata.
func (p *partition) setState(s State) {
	if s.older(p.state) || s.equal(p.state) {
		return
	}
	// Appends staged so far belong to the old state.
	p.writeAppends()
	old := p.state
	p.state = s
	switch {
	case p.log == nil:
	case p.leads() && p.leader != nil && old.LeaderEpoch == s.LeaderEpoch:
		// The ISR or the replicas changed under the same leader.
		p.cfg.Stats.countISRChange(old.ISR, s.ISR)
		if !slices.Equal(old.Replicas, s.Replicas) {
			p.leader.SetReplicas(s.Replicas, p.cfg.Clock.Now())
		}
		p.leader.Committed(s.ISR)
		p.raiseHighWatermark()
	case p.leads():
		p.cfg.Logger.Info().Int32("leader_epoch", s.LeaderEpoch).Ints32("isr", s.ISR).Msg("partition: leading")
		p.assumeRole()
	default:
		if p.leader != nil {
			p.cfg.Logger.Info().Int32("leader", s.Leader).Int32("leader_epoch", s.LeaderEpoch).Msg("partition: following")
			p.answerWaiters(kerr.NotLeaderForPartition, fmt.Sprintf("leadership moved to node %d", s.Leader))
			p.dropVerifications(kerr.NotLeaderForPartition, fmt.Sprintf("leadership moved to node %d", s.Leader))
			p.assumeRole()
		} else if p.follower != nil {
			p.follower.Become(s.Leader, s.LeaderEpoch)
			p.showRole() // a new leader epoch
		} else {
			p.assumeRole()
		}
	}
	p.publish()
}

// raiseHighWatermark moves the log's high watermark to the leader's and
// answers the appends it completes.
func (p *partition) raiseHighWatermark() {
	if p.leader == nil {
		return
	}
	if hw := p.leader.HighWatermark(); hw > p.log.HighWatermark() {
		p.log.SetHighWatermark(hw)
		p.updateLastStable()
		p.publish()
	}
	hw := p.log.HighWatermark()
	enough := p.leader.ISRSize() >= int(p.cfg.TopicConfig.MinInsyncReplicas)
	n := 0
	for _, w := range p.waiters {
		if w.next > hw {
			break
		}
		if !enough {
			// Kafka's rule: the records are in, but the ISR shrank below
			// min.insync.replicas while they waited.
			w.res.Err = kerr.NotEnoughReplicasAfterAppend
			w.res.Message = fmt.Sprintf("the ISR (%d) fell below min.insync.replicas (%d) while the records were replicated", p.leader.ISRSize(), p.cfg.TopicConfig.MinInsyncReplicas)
		}
		w.reply(w.res)
		n++
	}
	p.waiters = append(p.waiters[:0], p.waiters[n:]...)
}

// answerWaiters answers every append waiting for durability with err.
func (p *partition) answerWaiters(err *kerr.Error, msg string) {
	for _, ws := range [][]waiter{p.waiters, p.durableWaiters} {
		for _, w := range ws {
			w.res.Err, w.res.Message = err, msg
			w.reply(w.res)
		}
	}
	p.waiters, p.durableWaiters = nil, nil
}

// followerFetched takes a follower's fetch position at the leader.
func (p *partition) followerFetched(m *FollowerFetched) {
	if p.leader == nil || m.LeaderEpoch != p.state.LeaderEpoch {
		return
	}
	now := p.cfg.Clock.Now()
	if p.fetchedBy == nil {
		p.fetchedBy = map[int32]uint64{}
	}
	p.fetchedBy[m.Replica] = m.Incarnation
	if isr := p.leader.Fetched(m.Replica, m.Offset, now); isr != nil {
		p.alterISR(isr, now)
	}
	p.raiseHighWatermark()
}

// alterISR asks the controller for isr.
func (p *partition) alterISR(isr []int32, now time.Time) {
	if p.cfg.AlterISR == nil {
		p.leader.Refused(now)
		return
	}
	req := ISRChange{TopicID: p.cfg.TopicID, Partition: p.cfg.Partition, Leader: p.cfg.NodeID,
		LeaderEpoch: p.state.LeaderEpoch, PartitionEpoch: p.state.PartitionEpoch, ISR: isr}
	for _, r := range isr {
		req.ISREpochs = append(req.ISREpochs, p.fetchedBy[r]) // 0 for the leader and the unheard
	}
	p.cfg.Logger.Info().Ints32("isr", p.state.ISR).Ints32("asked", isr).Msg("partition: asking the controller to change the ISR")
	self, root := p.self, p.sys.Root
	p.cfg.AlterISR(req, func(r ISRChanged) { root.Send(self, &isrChanged{req: req, res: r}) })
}

// onISRChanged takes the controller's answer to an ISR change: a newer
// state of the partition under this leader is taken as the metadata's
// would be (it often comes first).
func (p *partition) onISRChanged(m *isrChanged) {
	if p.leader == nil || m.req.LeaderEpoch != p.state.LeaderEpoch {
		return
	}
	switch s := m.res.State; {
	case m.res.Err != nil:
		p.cfg.Logger.Info().Str("error", m.res.Err.Message).Str("reason", m.res.Message).Msg("partition: ISR change refused")
		p.leader.Refused(p.cfg.Clock.Now())
	case s.LeaderEpoch == p.state.LeaderEpoch && p.state.older(s):
		p.setState(s)
		return
	default:
		p.leader.Committed(p.state.ISR)
	}
	p.raiseHighWatermark()
}

// replicate applies the leader's answer to this follower's fetch.
func (p *partition) replicate(m *Replicate) {
	done := m.Done
	if p.failure != nil {
		done()
		return
	}
	if pos, ok := p.follower.Fetch(); !ok || pos != m.Position {
		done() // an answer to a fetch from before a truncation or a new epoch
		return
	}
	if err := p.applyAnswer(m); err != nil {
		p.fail("replicate", err)
		done()
		return
	}
	if m.Answer.Err == nil && m.Answer.DivergingEpoch < 0 && p.log.LogEndOffset() >= m.Answer.HighWatermark {
		p.handle.setCaughtUp(p.cfg.Clock.Now())
	}
	p.publish()
	if p.cfg.Durability != configs.DurabilityReplicated && p.log.DurableOffset() < p.log.LogEndOffset() {
		p.followerSyncs = append(p.followerSyncs, followerSync{offset: p.log.LogEndOffset(), done: done})
		p.requestSync()
		return
	}
	if p.log.FlushDue() {
		p.requestSync()
	}
	done()
}

func (p *partition) applyAnswer(m *Replicate) error {
	act := p.follower.Answered(m.Answer, p.log.EndOffsetForEpoch)
	switch {
	case act.Truncate >= 0 || act.StartAt >= 0:
		var err error
		if act.StartAt >= 0 {
			p.cfg.Logger.Info().Int64("offset", act.StartAt).Msg("partition: the leader's log starts past this follower's end: starting empty there")
			err = p.log.TruncateFullyAndStartAt(act.StartAt)
		} else {
			p.cfg.Logger.Info().Int64("offset", act.Truncate).Int64("log_end", p.log.LogEndOffset()).Msg("partition: truncating where the log diverges from the leader's")
			err = p.log.Truncate(act.Truncate)
		}
		if err != nil {
			return err
		}
		// The producer state may count batches that are gone.
		if err := p.rebuildProducers(p.log); err != nil {
			return err
		}
		p.follower.Truncated(p.log.LogEndOffset(), p.log.LatestEpoch())
		p.updateLastStable()
		return nil
	case len(m.Records) > 0:
		if _, err := p.log.AppendAsFollower(m.Records); err != nil {
			return err
		}
		if p.cfg.Stats != nil {
			p.cfg.Stats.BytesIn.Add(uint64(len(m.Records)))
		}
		p.lastAppend = p.cfg.Clock.Now()
		now := p.lastAppend.UnixMilli()
		if err := store.ForEachBatch(m.Records, func(batch []byte, h store.Header) error {
			switch {
			case h.ProducerID < 0:
			case h.Control():
				return p.applyControl(p.log, batch, &h, now)
			default:
				p.producers.update(&h, now)
			}
			return nil
		}); err != nil {
			return err
		}
		p.follower.Appended(p.log.LogEndOffset(), p.log.LatestEpoch())
	}
	if hw := p.follower.HighWatermark(); hw > p.log.HighWatermark() {
		p.log.SetHighWatermark(hw)
	}
	p.updateLastStable()
	if lso := min(m.Answer.LogStartOffset, p.log.HighWatermark()); lso > p.log.LogStartOffset() {
		if err := p.log.AdvanceLogStartOffset(lso); err != nil {
			return err
		}
	}
	return nil
}

// followerSync is a Replicate's Done waiting for the fsync that makes the
// follower's log durable up to offset.
type followerSync struct {
	offset int64
	done   func()
}

// releaseFollowerSyncs calls the Dones whose records are durable.
func (p *partition) releaseFollowerSyncs(durable int64) {
	n := 0
	for _, s := range p.followerSyncs {
		if s.offset > durable {
			break
		}
		s.done()
		n++
	}
	p.followerSyncs = append(p.followerSyncs[:0], p.followerSyncs[n:]...)
}

// dropFollowerSyncs lets the fetcher go on without waiting (a restart, a
// failure, a new role): its next fetch reports what the log holds then.
func (p *partition) dropFollowerSyncs() {
	for _, s := range p.followerSyncs {
		s.done()
	}
	p.followerSyncs = nil
}
