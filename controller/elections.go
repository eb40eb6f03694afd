package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
)

// Leader elections beyond fencing (brokers.go): preferred-replica
// elections, which give a partition back to the first of its replicas
// once that one is live and in sync, and unclean elections, which make a
// live replica outside the ISR leader of a partition with no live ISR
// member. Both are the ElectLeaders command, which clients send
// (ElectLeaders, API 43) and the active controller takes itself every
// leader.imbalance.check.interval.seconds: preferred elections when
// auto.leader.rebalance.enable, unclean ones for the topics whose
// unclean.leader.election.enable allows them.

// ElectLeaders elects leaders for partitions (every partition when
// Partitions is nil): their preferred replicas, or, with Unclean, any
// live replica for those that have no leader. An unclean election loses
// whatever only the ISR held; ByConfig limits it to the topics whose
// unclean.leader.election.enable is true (the periodic check's).
type ElectLeaders struct {
	Unclean    bool              `msgpack:"unclean"`
	ByConfig   bool              `msgpack:"by_config"`
	Partitions []TopicPartitions `msgpack:"parts"`
	TimeoutMs  int32             `msgpack:"timeout"`
}

// TopicPartitions names partitions of a topic.
type TopicPartitions struct {
	Topic      string  `msgpack:"topic"`
	Partitions []int32 `msgpack:"parts"`
}

// ElectLeadersResult answers ElectLeaders: per partition asked (or, for
// all, per partition that changed or could not), the outcome.
type ElectLeadersResult struct {
	Err        *kerr.Error        `msgpack:"err"`
	Message    string             `msgpack:"msg"`
	Partitions []ElectedPartition `msgpack:"parts"`
}

// ElectedPartition is one partition's outcome: nil Err when it has the
// leader asked for now, ELECTION_NOT_NEEDED when it had one already,
// PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE when no
// replica could lead, UNKNOWN_TOPIC_OR_PARTITION.
type ElectedPartition struct {
	Topic     string      `msgpack:"topic"`
	Partition int32       `msgpack:"part"`
	Err       *kerr.Error `msgpack:"err"`
	Message   string      `msgpack:"msg"`
}

func (*ElectLeaders) kind() commandKind { return kindElectLeaders }
func (m *ElectLeaders) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (*ElectLeaders) newResult() any { return &ElectLeadersResult{} }
func (*ElectLeaders) failed(err *kerr.Error, msg string) any {
	return &ElectLeadersResult{Err: err, Message: msg}
}

func (m *ElectLeaders) decide(c *Controller) (any, []image.Record) {
	res := &ElectLeadersResult{}
	var records []image.Record
	elect := func(t *image.Topic, p image.Partition, named bool) {
		out := ElectedPartition{Topic: t.Name, Partition: p.Index}
		q, err, msg := c.elect(t, p, m.Unclean, m.ByConfig)
		switch {
		case err == nil:
			records = append(records, changePartition(t, p, q))
		case !named && (err == kerr.ElectionNotNeeded || err == kerr.PreferredLeaderNotAvailable ||
			err == kerr.EligibleLeadersNotAvailable):
			return // asked for all: only what changed is news
		}
		out.Err, out.Message = err, msg
		res.Partitions = append(res.Partitions, out)
	}
	if m.Partitions == nil {
		for _, name := range c.head.TopicNames() {
			t := c.head.Topics[name]
			for _, p := range t.Partitions {
				elect(t, p, false)
			}
		}
		return res, records
	}
	for _, tp := range m.Partitions {
		t := c.head.Topics[tp.Topic]
		for _, i := range tp.Partitions {
			if t == nil || i < 0 || int(i) >= len(t.Partitions) {
				res.Partitions = append(res.Partitions, ElectedPartition{Topic: tp.Topic, Partition: i, Err: kerr.UnknownTopicOrPartition})
				continue
			}
			elect(t, t.Partitions[i], true)
		}
	}
	return res, records
}

// elect returns p with the leader an election gives it, or why there is
// none to give.
func (c *Controller) elect(t *image.Topic, p image.Partition, unclean, byConfig bool) (image.Partition, *kerr.Error, string) {
	if !unclean {
		pref := p.Replicas[0]
		switch {
		case p.Leader == pref:
			return p, kerr.ElectionNotNeeded, ""
		case !c.live(pref) || !slices.Contains(p.ISR, pref):
			return p, kerr.PreferredLeaderNotAvailable, fmt.Sprintf("the preferred replica, broker %d, is not live and in sync", pref)
		}
		p.Leader = pref
		return p, nil, ""
	}
	if p.Leader >= 0 {
		return p, kerr.ElectionNotNeeded, ""
	}
	if byConfig && !c.uncleanAllowed(t) {
		return p, kerr.EligibleLeadersNotAvailable, "unclean.leader.election.enable is false"
	}
	if l := c.electLive(p, -1); l >= 0 {
		p.Leader = l // an ISR member came back: a clean election after all
		return p, nil, ""
	}
	if l := c.firstLive(p, -1); l >= 0 {
		return c.leadUnclean(t, p, l), nil, ""
	}
	return p, kerr.EligibleLeadersNotAvailable, "no replica is live"
}

// live reports whether broker is registered and not fenced.
func (c *Controller) live(broker int32) bool {
	b, ok := c.head.Brokers[broker]
	return ok && !b.Fenced
}

// firstLive returns the first live replica of p other than except, in
// the preferred order; -1 if none.
func (c *Controller) firstLive(p image.Partition, except int32) int32 {
	for _, r := range p.Replicas {
		if r != except && c.live(r) {
			return r
		}
	}
	return -1
}

// leadUnclean returns p led by leader, a replica outside its ISR, which
// becomes the whole ISR: what only the ISR held is lost, and the log says
// so.
func (c *Controller) leadUnclean(t *image.Topic, p image.Partition, leader int32) image.Partition {
	c.cfg.Logger.Warn().Str("topic", t.Name).Int32("partition", p.Index).Int32("leader", leader).Ints32("isr", p.ISR).
		Msg("controller: unclean leader election: a replica outside the ISR leads, and what only the ISR held is lost")
	p.Leader, p.ISR = leader, []int32{leader}
	return p
}

// uncleanAllowed reports whether topic t allows unclean leader elections.
func (c *Controller) uncleanAllowed(t *image.Topic) bool {
	node, _ := c.cfg.Node.WithDynamic(c.head.BrokerConfigs, nil)
	cfg, err := configs.ResolveTopic(node, t.Configs)
	return err == nil && cfg.UncleanLeaderElectionEnable
}

// checkLeaders runs, at the active controller, the periodic elections:
// unclean ones where topics allow them, and preferred ones with
// auto.leader.rebalance.enable; one of each at a time.
func (c *Controller) checkLeaders() {
	interval := time.Duration(c.cfg.Node.LeaderImbalanceCheckIntervalSeconds) * time.Second
	now := c.cfg.Clock.Now()
	if !c.active() || interval <= 0 || now.Sub(c.lastLeaderCheck) < interval || now.Sub(c.activeSince) < interval {
		return
	}
	c.lastLeaderCheck = now
	for _, p := range c.outbox {
		if _, ok := p.cmd.(*ElectLeaders); ok {
			return
		}
	}
	c.takeOwn(&ElectLeaders{Unclean: true, ByConfig: true})
	if c.cfg.Node.AutoLeaderRebalanceEnable {
		c.takeOwn(&ElectLeaders{})
	}
}

// changePartition is the record that changes p of t to q: a new partition
// epoch, and a new leader epoch when the leader changed.
func changePartition(t *image.Topic, p, q image.Partition) image.Record {
	if q.Leader != p.Leader {
		q.LeaderEpoch++
	}
	q.PartitionEpoch++
	q.Replicas, q.ISR = slices.Clone(q.Replicas), slices.Clone(q.ISR)
	return &image.ChangePartition{ID: t.ID, Partition: q}
}
