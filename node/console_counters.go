package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/console"
)

func init() {
	actors.Register[DescribeTopicCounters](300)
	actors.Register[TopicCountersDescription](301)
}

// DescribeTopicCounters asks a node for its per-topic produce and
// consume counters (skein_topic_bytes_in_total, _bytes_out_total,
// _records_in_total, _records_out_total from its metrics). Sent by a
// node's console (clusterTopicCounters) to every node's root actor,
// node/<id>, over remoting; answered with a TopicCountersDescription.
// Remoting between nodes is the channel, rather than HTTP to the other
// nodes' admin listeners, because it is authenticated between brokers
// already (mutual TLS with security on), where the admin listeners
// would ask the console for a user's password to pass on.
type DescribeTopicCounters struct {
	actors.Origin
}

func (m *DescribeTopicCounters) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// TopicCountersDescription is a node's answer to DescribeTopicCounters:
// each topic's counters as [bytes in, bytes out, records in, records
// out], cumulative since the node started.
type TopicCountersDescription struct {
	actors.Origin
	Topics map[string][4]float64 `msgpack:"topics"`
}

func (m *TopicCountersDescription) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// topicCounterNames are the metrics a TopicCountersDescription carries,
// in its order.
var topicCounterNames = map[string]int{
	"skein_topic_bytes_in_total":    0,
	"skein_topic_bytes_out_total":   1,
	"skein_topic_records_in_total":  2,
	"skein_topic_records_out_total": 3,
}

// topicCountersAge is how long a node reuses the counters it read: its
// registry is gathered whole, and every open console polls.
const topicCountersAge = time.Second

// topicCountersCache is the node's last reading of its counters.
type topicCountersCache struct {
	mu   sync.Mutex
	at   time.Time
	last map[string][4]float64
}

// localTopicCounters returns this node's per-topic counters, read from
// its metrics registry at most once per topicCountersAge.
func (n *Node) localTopicCounters() map[string][4]float64 {
	c := &n.topicCounters
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.at) < topicCountersAge {
		return c.last
	}
	out := map[string][4]float64{}
	mfs, err := n.metrics.Gather()
	if err != nil && len(mfs) == 0 {
		return out
	}
	for _, mf := range mfs {
		i, ok := topicCounterNames[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" {
					v := out[l.GetValue()]
					v[i] += m.GetCounter().GetValue()
					out[l.GetValue()] = v
				}
			}
		}
	}
	c.at, c.last = time.Now(), out
	return out
}

// answerTopicCounters answers a DescribeTopicCounters the root actor
// received, off its goroutine: reading the registry takes a while.
func (n *Node) answerTopicCounters(c actor.Context) {
	sender := c.Sender()
	if sender == nil {
		return
	}
	go func() {
		n.sys.Root.Send(sender, &TopicCountersDescription{Origin: n.origin(), Topics: n.localTopicCounters()})
	}()
}

// topicCountersTimeout bounds the wait for another node's counters.
const topicCountersTimeout = time.Second

// clusterTopicCounters sums the per-topic counters of every registered
// node that answers within topicCountersTimeout (or before ctx ends),
// asked at once: this node's from its registry, the others' over
// remoting.
func (n *Node) clusterTopicCounters(ctx context.Context) console.Counters {
	out := console.Counters{Topics: map[string]console.TopicCounters{}}
	im := n.image.Load()
	ids := []int32{n.cfg.NodeID}
	if im != nil {
		ids = im.BrokerIDs()
	}
	type answer struct {
		id     int32
		topics map[string][4]float64
	}
	answers := make(chan answer, len(ids))
	for _, id := range ids {
		go func() {
			if id == n.cfg.NodeID {
				answers <- answer{id, n.localTopicCounters()}
				return
			}
			b, ok := im.Brokers[id]
			if !ok || b.ClusterAddr == "" || n.remote == nil {
				answers <- answer{id: id}
				return
			}
			timeout := topicCountersTimeout
			if d, ok := ctx.Deadline(); ok {
				timeout = min(timeout, time.Until(d))
			}
			res, err := actors.Ask(n.sys, actor.NewPID(b.ClusterAddr, Name(id)), &DescribeTopicCounters{Origin: n.origin()}, timeout)
			d, ok := res.(*TopicCountersDescription)
			if err != nil || !ok {
				answers <- answer{id: id}
				return
			}
			answers <- answer{id, d.Topics}
		}()
	}
	for range ids {
		a := <-answers
		if a.topics == nil {
			out.Missing = append(out.Missing, a.id)
			continue
		}
		out.Nodes = append(out.Nodes, a.id)
		for topic, v := range a.topics {
			t := out.Topics[topic]
			t.BytesIn += v[0]
			t.BytesOut += v[1]
			t.RecordsIn += v[2]
			t.RecordsOut += v[3]
			out.Topics[topic] = t
		}
	}
	slices.Sort(out.Nodes)
	slices.Sort(out.Missing)
	return out
}
