package controller

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Elections of replication factor 3: the fenced leader's partition goes
// to the next live ISR member, and a preferred election cannot give it
// back; restarted and in sync, the preferred replica gets it again from a
// preferred election, and an election where nothing changes says so.
func TestElections(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3)
	q.edit = func(c *Config) { c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, 300*time.Millisecond }
	q.run()
	q.waitRegistered()
	res := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: "e", NumPartitions: 1, ReplicationFactor: 3}}}).(*CreateTopicsResult)
	if res.Topics[0].Err != nil {
		t.Fatal(res.Topics[0].Err)
	}
	p := q.latest[1].Load().Topic("e").Partitions[0]
	pref := p.Replicas[0]
	if p.Leader != pref {
		t.Fatalf("a new partition led by %d, its preferred replica is %d", p.Leader, pref)
	}
	other := pref%3 + 1
	// The preferred replica's node stops: fenced, it loses the leadership.
	q.stop(pref)
	q.waitFor(other, "the preferred replica fenced", func(im *image.Image) bool { return im.Brokers[pref].Fenced })
	p2 := q.latest[other].Load().Topic("e").Partitions[0]
	if p2.Leader == pref || p2.Leader < 0 || p2.LeaderEpoch != p.LeaderEpoch+1 || len(p2.ISR) != 2 {
		t.Fatalf("after fencing %d: %+v", pref, p2)
	}
	all := []TopicPartitions{{Topic: "e", Partitions: []int32{0}}}
	er := q.ask(other, &ElectLeaders{Partitions: all}).(*ElectLeadersResult)
	if len(er.Partitions) != 1 || er.Partitions[0].Err != kerr.PreferredLeaderNotAvailable {
		t.Fatalf("preferred election with the preferred replica fenced: %+v", er)
	}
	// Started again it registers a new incarnation; its leader puts it
	// back in the ISR, as it would once it caught up.
	q.start(pref)
	q.waitFor(other, "the preferred replica back", func(im *image.Image) bool {
		b := im.Brokers[pref]
		return b.Incarnation == q.incs[pref] && !b.Fenced
	})
	p2 = q.latest[other].Load().Topic("e").Partitions[0]
	tp := q.latest[other].Load().Topic("e")
	ar := q.ask(other, &AlterPartition{TopicID: tp.ID, Leader: p2.Leader, LeaderEpoch: p2.LeaderEpoch, PartitionEpoch: p2.PartitionEpoch,
		ISR: append(p2.ISR, pref)}).(*AlterPartitionResult)
	if ar.Err != nil {
		t.Fatalf("ISR expansion: %+v", ar)
	}
	er = q.ask(other, &ElectLeaders{Partitions: all}).(*ElectLeadersResult)
	if len(er.Partitions) != 1 || er.Partitions[0].Err != nil {
		t.Fatalf("preferred election: %+v", er)
	}
	q.waitFor(other, "the preferred replica leading", func(im *image.Image) bool { return im.Topic("e").Partitions[0].Leader == pref })
	er = q.ask(other, &ElectLeaders{Partitions: all}).(*ElectLeadersResult)
	if len(er.Partitions) != 1 || er.Partitions[0].Err != kerr.ElectionNotNeeded {
		t.Fatalf("a second preferred election: %+v", er)
	}
	if er := q.ask(other, &ElectLeaders{Partitions: []TopicPartitions{{Topic: "nope", Partitions: []int32{0}}}}).(*ElectLeadersResult); er.Partitions[0].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("election of an unknown topic: %+v", er)
	}
}

// With its only ISR member fenced, a partition is offline while a replica
// outside the ISR is live: an unclean election by the topic's config is
// refused until unclean.leader.election.enable is set on the topic, and
// then makes that replica the leader and the whole ISR.
func TestUncleanElection(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3)
	q.edit = func(c *Config) { c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, time.Minute }
	q.run()
	q.waitRegistered()
	res := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: "u", NumPartitions: 1, ReplicationFactor: 2}}}).(*CreateTopicsResult)
	if res.Topics[0].Err != nil {
		t.Fatal(res.Topics[0].Err)
	}
	tp := q.latest[1].Load().Topic("u")
	p := tp.Partitions[0]
	leader, out := p.Replicas[0], p.Replicas[1]
	if ar := q.ask(1, &AlterPartition{TopicID: tp.ID, Leader: leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		ISR: []int32{leader}}).(*AlterPartitionResult); ar.Err != nil {
		t.Fatalf("ISR shrink: %+v", ar)
	}
	q.sys.Root.Send(q.pids[leader], &ShutDown{})
	watcher := out
	q.waitFor(watcher, "the partition offline", func(im *image.Image) bool { return im.Topic("u") != nil && im.Topic("u").Partitions[0].Leader == -1 })
	byConfig := &ElectLeaders{Unclean: true, ByConfig: true, Partitions: []TopicPartitions{{Topic: "u", Partitions: []int32{0}}}}
	if er := q.ask(watcher, byConfig).(*ElectLeadersResult); er.Partitions[0].Err != kerr.EligibleLeadersNotAvailable {
		t.Fatalf("unclean election the topic does not allow: %+v", er)
	}
	yes := "true"
	if ar := q.ask(watcher, &AlterConfigs{Incremental: true, Resources: []ConfigResource{{Type: image.ResourceTopic, Name: "u",
		Ops: []ConfigOp{{Name: "unclean.leader.election.enable", Op: OpSet, Value: &yes}}}}}).(*AlterConfigsResult); ar.Resources[0].Err != nil {
		t.Fatalf("alter configs: %+v", ar)
	}
	if er := q.ask(watcher, byConfig).(*ElectLeadersResult); er.Partitions[0].Err != nil {
		t.Fatalf("unclean election the topic allows: %+v", er)
	}
	q.waitFor(watcher, "the out-of-sync replica leading", func(im *image.Image) bool {
		p := im.Topic("u").Partitions[0]
		return p.Leader == out && len(p.ISR) == 1 && p.ISR[0] == out
	})
}

// With auto.leader.rebalance.enable, the active controller gives a
// partition back to its preferred replica by itself, once that one is live
// and in sync, at the next leader.imbalance.check.interval.seconds.
func TestAutoLeaderRebalance(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3)
	q.edit = func(c *Config) {
		c.HeartbeatInterval, c.SessionTimeout = 10*time.Millisecond, 300*time.Millisecond
		c.Node.LeaderImbalanceCheckIntervalSeconds = 1
	}
	q.run()
	q.waitRegistered()
	res := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: "a", NumPartitions: 1, ReplicationFactor: 3}}}).(*CreateTopicsResult)
	if res.Topics[0].Err != nil {
		t.Fatal(res.Topics[0].Err)
	}
	p := q.latest[1].Load().Topic("a").Partitions[0]
	pref := p.Replicas[0]
	other := pref%3 + 1
	// The preferred replica's node stops: fenced, it loses the leadership;
	// started again, it registers a new incarnation, and its leader puts it
	// back in the ISR once it has caught up.
	q.stop(pref)
	q.waitFor(other, "the preferred replica fenced", func(im *image.Image) bool { return im.Brokers[pref].Fenced })
	q.start(pref)
	q.waitFor(other, "the preferred replica back", func(im *image.Image) bool {
		b := im.Brokers[pref]
		return b.Incarnation == q.incs[pref] && !b.Fenced
	})
	tp := q.latest[other].Load().Topic("a")
	p2 := tp.Partitions[0]
	if ar := q.ask(other, &AlterPartition{TopicID: tp.ID, Leader: p2.Leader, LeaderEpoch: p2.LeaderEpoch, PartitionEpoch: p2.PartitionEpoch,
		ISR: append(p2.ISR, pref)}).(*AlterPartitionResult); ar.Err != nil {
		t.Fatalf("ISR expansion: %+v", ar)
	}
	q.waitFor(other, "the preferred replica leading again, unasked", func(im *image.Image) bool { return im.Topic("a").Partitions[0].Leader == pref })
}
