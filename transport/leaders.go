package transport

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// KIP-951: a Produce or Fetch that reached a node not leading the
// partition is answered NOT_LEADER_OR_FOLLOWER with the current leader,
// its epoch, and its endpoint, so that the client goes there without a
// Metadata round trip first.

// currentLeader returns the live leader of a partition and its epoch; ok
// is false when the image names none.
func currentLeader(im *image.Image, topic string, partition int32) (leader, epoch int32, ok bool) {
	t := im.Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1, false
	}
	p := t.Partitions[partition]
	if b, live := im.Brokers[p.Leader]; !live || b.Fenced {
		return -1, -1, false
	}
	return p.Leader, p.LeaderEpoch, true
}

// produceLeaderHints fills the KIP-951 fields of a Produce v10+ answer.
func produceLeaderHints(im *image.Image, resp *kmsg.ProduceResponse) {
	var leaders []int32
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if resp.Version >= 13 {
			if t := im.TopicsByID[image.TopicID(rt.TopicID)]; t != nil {
				name = t.Name
			}
		}
		for j := range rt.Partitions {
			p := &rt.Partitions[j]
			if p.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if id, epoch, ok := currentLeader(im, name, p.Partition); ok {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = id, epoch
				leaders = append(leaders, id)
			}
		}
	}
	for _, b := range endpoints(im, leaders) {
		rb := kmsg.NewProduceResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
}

// fetchLeaderHints fills the KIP-951 fields of a Fetch answer: the
// current leader from v12, the endpoints from v16.
func fetchLeaderHints(im *image.Image, resp *kmsg.FetchResponse) {
	var leaders []int32
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if resp.Version >= 13 {
			if t := im.TopicsByID[image.TopicID(rt.TopicID)]; t != nil {
				name = t.Name
			}
		}
		for j := range rt.Partitions {
			p := &rt.Partitions[j]
			if p.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			if id, epoch, ok := currentLeader(im, name, p.Partition); ok {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = id, epoch
				leaders = append(leaders, id)
			}
		}
	}
	if resp.Version < 16 {
		return
	}
	for _, b := range endpoints(im, leaders) {
		rb := kmsg.NewFetchResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
}

// endpoints returns the brokers of ids, once each, in id order.
func endpoints(im *image.Image, ids []int32) []image.Broker {
	slices.Sort(ids)
	var out []image.Broker
	for _, id := range slices.Compact(ids) {
		out = append(out, im.Brokers[id])
	}
	return out
}
