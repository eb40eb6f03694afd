package transport

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// A Produce or Fetch answered NOT_LEADER_OR_FOLLOWER names the current
// leader and its endpoint (KIP-951), unless the leader is fenced or gone.
func TestLeaderHints(t *testing.T) {
	im := image.Empty()
	for _, r := range []image.Record{
		&image.RegisterBroker{ID: 2, Host: "h2", Port: 9092, Rack: "r2", Incarnation: 1},
		&image.RegisterBroker{ID: 3, Host: "h3", Port: 9092, Incarnation: 1},
		&image.FenceBroker{ID: 3, Incarnation: 1, Fenced: true},
		&image.CreateTopic{Name: "t", ID: image.TopicID{1}, Partitions: []image.Partition{
			{Index: 0, Leader: 2, LeaderEpoch: 4, Replicas: []int32{2}, ISR: []int32{2}},
			{Index: 1, Leader: 3, LeaderEpoch: 1, Replicas: []int32{3}, ISR: []int32{3}},
			{Index: 2, Leader: 2, LeaderEpoch: 4, Replicas: []int32{2}, ISR: []int32{2}},
		}},
	} {
		var err error
		if im, err = im.Apply(0, r); err != nil {
			t.Fatal(err)
		}
	}
	notLeader := kerr.NotLeaderForPartition.Code

	pr := kmsg.NewPtrProduceResponse()
	pr.Version = 11
	pt := kmsg.NewProduceResponseTopic()
	pt.Topic = "t"
	for i, code := range []int16{notLeader, notLeader, 0} {
		p := kmsg.NewProduceResponseTopicPartition()
		p.Partition, p.ErrorCode = int32(i), code
		pt.Partitions = append(pt.Partitions, p)
	}
	pr.Topics = append(pr.Topics, pt)
	produceLeaderHints(im, "PLAINTEXT", pr)
	got := pr.Topics[0].Partitions
	if l := got[0].CurrentLeader; l.LeaderID != 2 || l.LeaderEpoch != 4 {
		t.Errorf("partition 0: current leader %+v, want 2 at epoch 4", l)
	}
	if l := got[1].CurrentLeader; l.LeaderID != -1 {
		t.Errorf("partition 1 (fenced leader): current leader %+v, want none", l)
	}
	if l := got[2].CurrentLeader; l.LeaderID != -1 {
		t.Errorf("partition 2 (no error): current leader %+v, want none", l)
	}
	if len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != 2 || pr.Brokers[0].Host != "h2" || pr.Brokers[0].Rack == nil || *pr.Brokers[0].Rack != "r2" {
		t.Errorf("endpoints %+v, want broker 2 alone", pr.Brokers)
	}

	for _, v := range []int16{12, 16} {
		fr := kmsg.NewPtrFetchResponse()
		fr.Version = v
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchResponseTopicPartition()
		fp.Partition, fp.ErrorCode = 0, notLeader
		ft.Partitions = append(ft.Partitions, fp)
		fr.Topics = append(fr.Topics, ft)
		fetchLeaderHints(im, "PLAINTEXT", fr)
		if l := fr.Topics[0].Partitions[0].CurrentLeader; l.LeaderID != 2 || l.LeaderEpoch != 4 {
			t.Errorf("fetch v%d: current leader %+v", v, l)
		}
		if want := map[int16]int{12: 0, 16: 1}[v]; len(fr.Brokers) != want {
			t.Errorf("fetch v%d: %d endpoints, want %d (NodeEndpoints are v16+)", v, len(fr.Brokers), want)
		}
	}
}
