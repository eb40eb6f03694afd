package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinlog/skein/actors"
)

// clusterCollector reports the controller quorum as this node knows it,
// the brokers of its image, and the frames remoting carried, at scrape
// time.
type clusterCollector struct{ n *Node }

var (
	quorumLeaderDesc = prometheus.NewDesc("skein_quorum_leader",
		"Node id of the active controller as this node knows it, -1 when none is known.", nil, nil)
	quorumTermDesc = prometheus.NewDesc("skein_quorum_term",
		"Raft term (leader epoch) of the controller quorum as this node knows it.", nil, nil)
	quorumCommitDesc = prometheus.NewDesc("skein_quorum_commit_index",
		"Index of the newest metadata entry this node knows committed.", nil, nil)
	quorumAppliedDesc = prometheus.NewDesc("skein_quorum_applied_index",
		"Index of the newest metadata entry applied to this node's image.", nil, nil)
	heartbeatsSentDesc = prometheus.NewDesc("skein_broker_heartbeats_sent_total",
		"Heartbeats this node's broker sent the active controller.", nil, nil)
	heartbeatsReceivedDesc = prometheus.NewDesc("skein_controller_heartbeats_received_total",
		"Broker heartbeats this node's controller received while active.", nil, nil)
	brokersDesc = prometheus.NewDesc("skein_cluster_brokers",
		"Registered brokers in this node's image, by state (live or fenced).", []string{"state"}, nil)
	offlineDesc = prometheus.NewDesc("skein_cluster_offline_partitions",
		"Partitions without a leader in this node's image (Kafka's OfflinePartitionsCount).", nil, nil)
	underReplicatedDesc = prometheus.NewDesc("skein_under_replicated_partitions",
		"Partitions this node leads whose ISR is smaller than their replica set (Kafka's UnderReplicatedPartitions).", nil, nil)
	framesSentDesc = prometheus.NewDesc("skein_remote_frames_sent_total",
		"Messages this process sent to other nodes over remoting, by type.", []string{"type"}, nil)
	framesReceivedDesc = prometheus.NewDesc("skein_remote_frames_received_total",
		"Messages this process received from other nodes over remoting, by type (unknown: frames it could not decode).", []string{"type"}, nil)
	remoteDroppedDesc = prometheus.NewDesc("skein_remote_dropped_total",
		"Messages to other nodes not sent, by reason: oversize (a frame over the 2 MiB limit), queue_full (the peer's queue held its bound), fault (an injected link fault).", []string{"reason"}, nil)
	remoteQueuedDesc = prometheus.NewDesc("skein_remote_queued_bytes",
		"Bytes of messages queued for a peer node, by its remoting address.", []string{"peer"}, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{quorumLeaderDesc, quorumTermDesc, quorumCommitDesc, quorumAppliedDesc,
		heartbeatsSentDesc, heartbeatsReceivedDesc, brokersDesc, offlineDesc, underReplicatedDesc, framesSentDesc, framesReceivedDesc, remoteDroppedDesc, remoteQueuedDesc} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.quorumStatus()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(quorumLeaderDesc, float64(s.Leader))
	gauge(quorumTermDesc, float64(s.Term))
	gauge(quorumCommitDesc, float64(s.Commit))
	gauge(quorumAppliedDesc, float64(s.Applied))
	counter(heartbeatsSentDesc, s.HeartbeatsSent)
	counter(heartbeatsReceivedDesc, s.HeartbeatsReceived)
	im := c.n.image.Load()
	offline, under := 0, 0
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			switch {
			case p.Leader < 0:
				offline++
			case p.Leader == c.n.cfg.NodeID && len(p.ISR) < len(p.Replicas):
				under++
			}
		}
	}
	gauge(offlineDesc, float64(offline))
	gauge(underReplicatedDesc, float64(under))
	live, fenced := 0, 0
	for _, b := range im.Brokers {
		if b.Fenced {
			fenced++
		} else {
			live++
		}
	}
	gauge(brokersDesc, float64(live), "live")
	gauge(brokersDesc, float64(fenced), "fenced")
	for _, f := range actors.RemoteFrames() {
		counter(framesSentDesc, f.Sent, f.Type)
		counter(framesReceivedDesc, f.Received, f.Type)
	}
	counter(remoteDroppedDesc, actors.Drops.Oversize.Load(), "oversize")
	counter(remoteDroppedDesc, actors.Drops.QueueFull.Load(), "queue_full")
	counter(remoteDroppedDesc, actors.Drops.Fault.Load(), "fault")
	if c.n.remote != nil {
		for peer, b := range c.n.remote.QueuedBytes() {
			gauge(remoteQueuedDesc, float64(b), peer)
		}
	}
}
