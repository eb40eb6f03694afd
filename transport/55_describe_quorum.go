package transport

// DescribeQuorum: v0-2
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - Answered by any node: it asks the active controller (over remoting
//     when that is another node) for the quorum of __cluster_metadata-0,
//     Skein's controller.quorum.voters. The leader epoch is the raft term,
//     offsets are raft indexes (the high watermark is the commit index, a
//     voter's log end offset the last index the leader knows it holds),
//     timestamps the leader's clock. Observers are the broker-only nodes
//     that fetch the log from the active controller (their log end offset
//     is the last entry they had when they last fetched).
//   - Any other topic or partition is UNKNOWN_TOPIC_OR_PARTITION. No
//     known or reachable active controller is NOT_LEADER_OR_FOLLOWER
//     (retriable), as a Kafka controller answers when it does not lead;
//     from v2 its ErrorMessage says since when this node has known no
//     active controller (its metadata is as of then) and what to check,
//     and CurrentVoters lists the voters' ids (nothing else of theirs is
//     known), so that a client asking this node directly can tell a
//     cluster without quorum from one whose controller is elsewhere.
//   - v2 lists each voter's remoting address as its CONTROLLER listener.
//
// Version notes: v1 (KIP-836) adds the fetch and caught-up timestamps; v2
// (KIP-853) the directory ids (zero: Skein has one directory) and nodes.

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(55, handler{min: 0, max: 2, handle: a.handleDescribeQuorum})
	})
}

// metadataTopic is the name Kafka gives the controller quorum's log.
const metadataTopic = "__cluster_metadata"

func (a *API) handleDescribeQuorum(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if z := c.authz(); !z.may(describe, clusterResource, clusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	var d *controller.QuorumDescription
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			if rt.Topic != metadataTopic || rp.Partition != 0 {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
				continue
			}
			if d == nil {
				d = a.describeQuorum()
			}
			if d.Err != nil {
				p.ErrorCode, p.LeaderID = d.Err.Code, -1
				if req.Version >= 2 {
					p.ErrorMessage = kmsg.StringPtr(a.noQuorum())
				}
				p.CurrentVoters = a.voterIDs()
				t.Partitions = append(t.Partitions, p)
				continue
			}
			p.LeaderID, p.LeaderEpoch, p.HighWatermark = d.Leader, int32(d.Term), int64(d.HighWatermark)
			p.CurrentVoters, p.Observers = replicaStates(d.Voters), replicaStates(d.Observers)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if d != nil && d.Err == nil && req.Version >= 2 {
		resp.Nodes = a.voterNodes(d)
	}
	return respond(resp)
}

func replicaStates(vs []controller.VoterState) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	for _, v := range vs {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = v.ID, int64(v.LogEnd)
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = v.LastFetchMs, v.LastCaughtUpMs
		out = append(out, rs)
	}
	return out
}

// noQuorum says why the quorum could not be described: no active
// controller known since when, or the known one not answering.
func (a *API) noQuorum() string {
	s := controller.Status{Leader: a.activeController()}
	if a.Quorum != nil {
		s = a.Quorum()
	}
	if s.Leader < 0 && !s.NoLeaderSince.IsZero() {
		return fmt.Sprintf("node %d has known no active controller for %v (since %s), and its metadata is as of then: %s",
			a.Node.NodeID, time.Since(s.NoLeaderSince).Round(time.Millisecond), s.NoLeaderSince.UTC().Format(time.RFC3339), controller.NoLeaderHint)
	}
	return fmt.Sprintf("node %d could not describe the quorum from the active controller, node %d", a.Node.NodeID, s.Leader)
}

// voterIDs lists the voters of controller.quorum.voters, with nothing
// known of them but their ids.
func (a *API) voterIDs() []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	voters, _ := a.Node.Voters()
	out := []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	for _, v := range voters {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = v.ID, -1, -1, -1
		out = append(out, rs)
	}
	return out
}

// describeQuorum asks the active controller for the quorum's state.
func (a *API) describeQuorum() *controller.QuorumDescription {
	leader := a.activeController()
	pid := a.Controller
	if a.ControllerOf != nil {
		pid = a.ControllerOf(leader)
	}
	if leader < 0 || pid == nil {
		return &controller.QuorumDescription{Err: kerr.NotLeaderForPartition}
	}
	res, err := actors.Ask(a.System, pid, &controller.DescribeQuorum{}, a.RequestTimeout)
	d, ok := res.(*controller.QuorumDescription)
	if err != nil || !ok {
		return &controller.QuorumDescription{Err: kerr.NotLeaderForPartition}
	}
	return d
}

// voterNodes lists the voters' remoting addresses as their controller
// listeners (DescribeQuorum v2).
func (a *API) voterNodes(d *controller.QuorumDescription) []kmsg.DescribeQuorumResponseNode {
	im := a.Image()
	var out []kmsg.DescribeQuorumResponseNode
	for _, v := range d.Voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		if b, ok := im.Brokers[v.ID]; ok && b.ClusterAddr != "" {
			host, port, err := net.SplitHostPort(b.ClusterAddr)
			if p, perr := strconv.Atoi(port); err == nil && perr == nil {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(p)
				n.Listeners = append(n.Listeners, l)
			}
		}
		out = append(out, n)
	}
	return out
}
