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
func produceLeaderHints(im *image.Image, listener string, resp *kmsg.ProduceResponse) {
	var h hints
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := h.topic(im, resp.Version, rt.Topic, rt.TopicID)
		for j := range rt.Partitions {
			p := &rt.Partitions[j]
			h.hint(im, name, p.Partition, p.ErrorCode, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}
	for _, b := range endpoints(im, h.leaders) {
		rb := kmsg.NewProduceResponseBroker()
		var ok bool
		if rb.Host, rb.Port, ok = b.Endpoint(listener); ok {
			rb.NodeID, rb.Rack = b.ID, rack(b)
			resp.Brokers = append(resp.Brokers, rb)
		}
	}
}

// fetchLeaderHints fills the KIP-951 fields of a Fetch answer: the
// current leader from v12, the endpoints from v16.
func fetchLeaderHints(im *image.Image, listener string, resp *kmsg.FetchResponse) {
	var h hints
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := h.topic(im, resp.Version, rt.Topic, rt.TopicID)
		for j := range rt.Partitions {
			p := &rt.Partitions[j]
			h.hint(im, name, p.Partition, p.ErrorCode, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}
	if resp.Version < 16 {
		return
	}
	for _, b := range endpoints(im, h.leaders) {
		rb := kmsg.NewFetchResponseBroker()
		var ok bool
		if rb.Host, rb.Port, ok = b.Endpoint(listener); ok {
			rb.NodeID, rb.Rack = b.ID, rack(b)
			resp.Brokers = append(resp.Brokers, rb)
		}
	}
}

// hints collects the leaders named in one answer.
type hints struct{ leaders []int32 }

// topic returns an answer's topic name: v13+ name topics by id.
func (hints) topic(im *image.Image, version int16, name string, id [16]byte) string {
	if version >= 13 {
		if t := im.TopicsByID[image.TopicID(id)]; t != nil {
			return t.Name
		}
	}
	return name
}

// hint sets a NOT_LEADER_OR_FOLLOWER partition's current leader and epoch.
func (h *hints) hint(im *image.Image, topic string, partition int32, code int16, leader, epoch *int32) {
	if code != kerr.NotLeaderForPartition.Code {
		return
	}
	if id, e, ok := currentLeader(im, topic, partition); ok {
		*leader, *epoch = id, e
		h.leaders = append(h.leaders, id)
	}
}

func rack(b image.Broker) *string {
	if b.Rack == "" {
		return nil
	}
	return kmsg.StringPtr(b.Rack)
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
