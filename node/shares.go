package node

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/share"
)

// shareSettings returns a share group's settings in force: its group
// configs in the newest image over this node's group.share.* settings.
func (n *Node) shareSettings(group string) share.Settings {
	var overrides map[string]string
	if im := n.image.Load(); im != nil {
		overrides = im.GroupConfigs[group]
	}
	s := configs.ShareGroupSettings(n.cfg, overrides)
	strategy, _, _ := configs.ParseShareAutoOffsetReset(s.AutoOffsetReset)
	return share.Settings{
		AutoOffsetReset: strategy, ResetBefore: s.ResetDuration,
		LockDuration: s.LockDuration, DeliveryCountLimit: s.DeliveryCountLimit,
		ReadCommitted: s.ReadCommitted, MaxRecordLocks: s.MaxRecordLocks,
	}
}

// spawnShares spawns the shares supervisor: an actor per share group and
// partition this node leads, spawned at first use (share.SupervisorProps).
func (n *Node) spawnShares(c actor.Context) (*actor.PID, error) {
	return c.SpawnNamed(share.SupervisorProps(share.Config{
		Directory: n.shares, States: n.shareStates, Settings: n.shareSettings,
		Stats: &n.shareStats, Logger: n.log,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "shares")
}

// sharesOf returns the shares supervisor of a node, nil if the image
// does not say where it is.
func (n *Node) sharesOf(id int32) *actor.PID {
	if id == n.cfg.NodeID {
		if c := n.children.Load(); c != nil {
			return c.shares
		}
		return nil
	}
	im := n.image.Load()
	if im == nil {
		return nil
	}
	b, ok := im.Brokers[id]
	if !ok || b.ClusterAddr == "" {
		return nil
	}
	return actor.NewPID(b.ClusterAddr, "node/"+strconv.Itoa(int(id))+"/shares")
}

// shareMemberGone tells every broker's share-partitions that a member
// left its share group or was fenced, so that the records it holds are
// released at once rather than when their locks expire.
func (n *Node) shareMemberGone(group, member string) {
	im := n.image.Load()
	if im == nil {
		return
	}
	for id := range im.Brokers {
		if pid := n.sharesOf(id); pid != nil {
			n.sys.Root.Send(pid, &share.ReleaseMember{Origin: n.origin(), Group: group, Member: member})
		}
	}
}

// shareReload tells a partition's leader that a share group's durable
// state of it was replaced, so that its share-partition actor reads it
// again.
func (n *Node) shareReload(group, topic string, partition int32) {
	im := n.image.Load()
	if im == nil {
		return
	}
	t := im.Topic(topic)
	if t == nil || int(partition) >= len(t.Partitions) {
		return
	}
	if pid := n.sharesOf(t.Partitions[partition].Leader); pid != nil {
		n.sys.Root.Send(pid, &share.Reload{Origin: n.origin(), Group: group, Topic: topic, Partition: partition})
	}
}

// origin is this node's run, as messages to other nodes carry it.
func (n *Node) origin() actors.Origin {
	return actors.Origin{Node: n.cfg.NodeID, Incarnation: n.incarnation}
}

// shareCollector exports the share-partitions' counters on /metrics.
type shareCollector struct{ s *share.Stats }

var (
	shareRecordsDesc = prometheus.NewDesc("skein_share_records_total",
		"What this node's share-partitions did with records, by event: acquired (redelivered included), redelivered, accepted, released, rejected, renewed (a lock extended), archived (rejected, or at the delivery limit), lock_expired.", []string{"event"}, nil)
	shareWritesDesc = prometheus.NewDesc("skein_share_state_writes_total",
		"Writes of share-partition state to the share coordinators.", nil, nil)
	shareFailuresDesc = prometheus.NewDesc("skein_share_state_write_failures_total",
		"Share-partition state writes that failed, each making its actor read the state again.", nil, nil)
)

func (c shareCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shareRecordsDesc
	ch <- shareWritesDesc
	ch <- shareFailuresDesc
}

func (c shareCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	for event, v := range map[string]int64{
		"acquired": s.Acquired.Load(), "redelivered": s.Redelivered.Load(), "accepted": s.Accepted.Load(),
		"released": s.Released.Load(), "rejected": s.Rejected.Load(), "renewed": s.Renewed.Load(),
		"archived": s.Archived.Load(), "lock_expired": s.LockExpiries.Load(),
	} {
		ch <- prometheus.MustNewConstMetric(shareRecordsDesc, prometheus.CounterValue, float64(v), event)
	}
	ch <- prometheus.MustNewConstMetric(shareWritesDesc, prometheus.CounterValue, float64(s.StateWrites.Load()))
	ch <- prometheus.MustNewConstMetric(shareFailuresDesc, prometheus.CounterValue, float64(s.Failures.Load()))
}

// groupShareStates is how the group coordinators reach the share
// coordinators (coordinator.ShareStates): through the node's StateClient;
// a start offset set or a state deleted makes the partition's leader
// reload its share-partition.
type groupShareStates struct{ n *Node }

func (g groupShareStates) key(group string, topicID [16]byte, partition int32) share.Key {
	return share.Key{Group: group, TopicID: topicID, Partition: partition}
}

// reload tells the leader of a topic id's partition to reload.
func (g groupShareStates) reload(group string, topicID [16]byte, partition int32) {
	if im := g.n.image.Load(); im != nil {
		if t := im.TopicsByID[topicID]; t != nil {
			g.n.shareReload(group, t.Name, partition)
		}
	}
}

func (g groupShareStates) Initialize(group string, topicID [16]byte, partition int32, startOffset int64, reply func(code int16)) {
	k := g.key(group, topicID, partition)
	// A new state epoch fences the share-partition's writes of the
	// state it replaces.
	g.n.shareStates.Ask(k, &share.ReadSummary{Key: k}, func(sum *share.StateResult) {
		if sum.Code != 0 {
			reply(sum.Code)
			return
		}
		g.n.shareStates.Ask(k, &share.InitializeState{Key: k, StateEpoch: sum.StateEpoch + 1, StartOffset: startOffset}, func(res *share.StateResult) {
			if res.Code == 0 {
				g.reload(group, topicID, partition)
			}
			reply(res.Code)
		})
	})
}

func (g groupShareStates) Summary(group string, topicID [16]byte, partition int32, reply func(code int16, found bool, startOffset int64, leaderEpoch int32, deliveryCompleteCount int32)) {
	k := g.key(group, topicID, partition)
	g.n.shareStates.Ask(k, &share.ReadSummary{Key: k}, func(res *share.StateResult) {
		reply(res.Code, res.Found, res.StartOffset, res.LeaderEpoch, res.DeliveryCompleteCount)
	})
}

func (g groupShareStates) Delete(group string, topicID [16]byte, partition int32, reply func(code int16)) {
	k := g.key(group, topicID, partition)
	g.n.shareStates.Ask(k, &share.DeleteState{Key: k}, func(res *share.StateResult) {
		if res.Code == 0 {
			g.reload(group, topicID, partition)
		}
		reply(res.Code)
	})
}

// sharePartitionJSON is one share-partition of /v1/share-partitions: what
// the actor of a share group's partition led here holds in flight, which
// Kafka's APIs do not carry (DescribeShareGroupOffsets gives the start
// offset and lag only). The fields are share.Described's.
type sharePartitionJSON struct {
	Group        string `json:"group"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Loaded       bool   `json:"loaded"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	StartOffset  int64  `json:"start_offset"` // the SPSO, -1 while loading
	EndOffset    int64  `json:"end_offset"`   // the window's end, -1 while loading
	InFlight     int64  `json:"in_flight"`    // end_offset - start_offset (Kafka's InFlightMessageCount)
	Acquired     int    `json:"acquired"`
	Available    int    `json:"available"`
	Acknowledged int    `json:"acknowledged"`
	Archived     int    `json:"archived"`
}

// sharePartitionsTimeout bounds the wait for each share-partition actor's
// answer; one that does not answer in time (stopping, or busy) is left
// out.
const sharePartitionsTimeout = 5 * time.Second

// sharePartitions serves GET /v1/share-partitions[?group=G]: the
// share-partitions this node's actors serve, of group G or of every share
// group, sorted. A share-partition has an actor on its leader from its
// first ShareFetch or ShareAcknowledge until leadership moves or its
// state is altered; one without is absent. The actors are asked in
// parallel (share.Describe), each in its own mailbox turn, so the counts
// of different partitions are of slightly different moments.
func (a *adminServer) sharePartitions(w http.ResponseWriter, r *http.Request) {
	type asked struct {
		group, topic string
		partition    int32
		pid          *actor.PID
	}
	var all []asked
	a.n.shares.Each(r.URL.Query().Get("group"), func(group, topic string, partition int32, pid *actor.PID) {
		all = append(all, asked{group, topic, partition, pid})
	})
	out := make([]*sharePartitionJSON, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			res, err := actors.Ask(a.n.sys, s.pid, &share.Describe{}, sharePartitionsTimeout)
			d, ok := res.(*share.Described)
			if err != nil || !ok {
				return
			}
			out[i] = &sharePartitionJSON{Group: s.group, Topic: s.topic, Partition: s.partition,
				Loaded: d.Loaded, LeaderEpoch: d.LeaderEpoch, StartOffset: d.StartOffset, EndOffset: d.EndOffset,
				Acquired: d.Acquired, Available: d.Available, Acknowledged: d.Acknowledged, Archived: d.Archived}
			if d.Loaded {
				out[i].InFlight = d.EndOffset - d.StartOffset
			}
		})
	}
	wg.Wait()
	out = slices.DeleteFunc(out, func(p *sharePartitionJSON) bool { return p == nil })
	slices.SortFunc(out, func(x, y *sharePartitionJSON) int {
		return cmp.Or(strings.Compare(x.Group, y.Group), strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	writeJSON(w, http.StatusOK, struct {
		Node            int32                 `json:"node"`
		SharePartitions []*sharePartitionJSON `json:"share_partitions"`
	}{a.n.cfg.NodeID, out})
}
