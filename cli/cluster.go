package cli

// skein cluster info: what Metadata, DescribeCluster and DescribeQuorum
// tell of the cluster.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/chaos"
)

func newClusterCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("cluster", "Show the cluster, its broker configs, log dirs and feature levels", environ, stdout, newClusterInfoCommand, newClusterConfigCommand,
		newClusterLogDirsCommand, newClusterFeaturesCommand, newClusterUnregisterBrokerCommand)
}

func newClusterInfoCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		admin string
		out   *output
	)
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the cluster id, the nodes (roles, addresses, fenced or live) and the controller quorum",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := flags.requestContext(cmd.Context())
			defer cancel()
			// One Metadata request for every topic counts them.
			m, err := kadm.NewClient(cl).Metadata(ctx)
			if err != nil {
				return flags.gaveUp(err)
			}
			internal := 0
			for _, t := range m.Topics {
				if t.IsInternal {
					internal++
				}
			}
			dreq := kmsg.NewPtrDescribeClusterRequest()
			dreq.IncludeFencedBrokers = true
			dc, err := dreq.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(dc.ErrorCode)
			}
			if err != nil {
				return fmt.Errorf("DescribeCluster: %w", flags.gaveUp(err))
			}
			// NB: kgo sends DescribeQuorum to the active controller, and
			// fails at once when the brokers know none: then a seed broker
			// is asked itself, and says since when it has known none.
			noQuorum := dc.ControllerID < 0
			var q *kmsg.DescribeQuorumResponseTopicPartition
			var qerr error
			if !noQuorum {
				q, qerr = describeQuorum(ctx, cl)
			} else {
				for _, b := range cl.SeedBrokers() {
					if q, qerr = describeQuorum(ctx, b); q != nil {
						break
					}
				}
			}
			// Kafka's answers carry no incarnation or remoting address: a
			// node's admin API has them.
			var extra map[int32]adminBroker
			if admin != "" {
				access, err := flags.security.access()
				if err != nil {
					return usageError(err.Error())
				}
				if extra, err = adminBrokers(ctx, admin, access); err != nil {
					return err
				}
			}
			v := clusterView{ClusterID: dc.ClusterID, ControllerID: dc.ControllerID, Topics: len(m.Topics), InternalTopics: internal, Nodes: []clusterNode{}}
			voters := map[int32]bool{}
			if q != nil {
				for _, r := range q.CurrentVoters {
					voters[r.ReplicaID] = true
				}
			}
			for _, b := range dc.Brokers {
				n := clusterNode{ID: b.NodeID, Roles: []string{"broker"}, Host: b.Host, Port: b.Port, State: "live", Controller: b.NodeID == dc.ControllerID}
				if voters[b.NodeID] {
					n.Roles = append(n.Roles, "controller")
				}
				if b.Rack != nil {
					n.Rack = *b.Rack
				}
				if b.IsFenced {
					n.State = "fenced"
				}
				if a, ok := extra[b.NodeID]; ok {
					n.ClusterAddr, n.Incarnation = a.ClusterAddr, &a.Incarnation
				}
				v.Nodes = append(v.Nodes, n)
			}
			var quorumErr error
			switch {
			case noQuorum:
				v.QuorumError = "no broker of --brokers answered"
				switch {
				case q != nil && q.ErrorMessage != nil:
					v.QuorumError = *q.ErrorMessage // since when it has known no active controller
				case qerr != nil:
					v.QuorumError = qerr.Error()
				}
				quorumErr = errors.New("the cluster has no quorum: no active controller, so nothing can change and the nodes' states are as the brokers last knew them")
			case qerr != nil:
				v.QuorumError = qerr.Error()
			default:
				v.Quorum = &clusterQuorum{LeaderID: q.LeaderID, LeaderEpoch: q.LeaderEpoch, HighWatermark: q.HighWatermark, Voters: []quorumVoter{}}
				for _, r := range q.CurrentVoters {
					v.Quorum.Voters = append(v.Quorum.Voters, quorumVoter{ID: r.ReplicaID, LogEndOffset: r.LogEndOffset,
						Lag: max(q.HighWatermark-r.LogEndOffset, 0), LastFetchTimestamp: r.LastFetchTimestamp})
				}
			}
			if err := out.write(stdout, v, func() error { return v.text(stdout, admin != "") }); err != nil {
				return err
			}
			return quorumErr
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "", "a node's admin listener, host:port, to show incarnations and remoting addresses too")
	out = addOutputFlag(cmd)
	return cmd
}

// clusterView is what cluster info shows, as -o json and yaml print it.
type clusterView struct {
	ClusterID string `json:"cluster_id"`
	// ControllerID is the active controller, -1 for none (no quorum).
	ControllerID   int32         `json:"controller_id"`
	Topics         int           `json:"topics"`
	InternalTopics int           `json:"internal_topics"`
	Nodes          []clusterNode `json:"nodes"`
	// Quorum is the controller quorum, nil when there is none or
	// DescribeQuorum failed, QuorumError says why.
	Quorum      *clusterQuorum `json:"quorum,omitempty"`
	QuorumError string         `json:"quorum_error,omitempty"`
}

// clusterNode is a broker. Without a quorum, State is as the broker
// last knew it from an active controller. ClusterAddr and Incarnation
// come from --admin.
type clusterNode struct {
	ID          int32    `json:"id"`
	Roles       []string `json:"roles"`
	Host        string   `json:"host"`
	Port        int32    `json:"port"`
	Rack        string   `json:"rack,omitempty"`
	State       string   `json:"state"` // live or fenced
	Controller  bool     `json:"active_controller,omitempty"`
	ClusterAddr string   `json:"cluster_addr,omitempty"`
	Incarnation *uint64  `json:"incarnation,omitempty"`
}

type clusterQuorum struct {
	LeaderID      int32         `json:"leader_id"`
	LeaderEpoch   int32         `json:"leader_epoch"`
	HighWatermark int64         `json:"high_watermark"`
	Voters        []quorumVoter `json:"voters"`
}

type quorumVoter struct {
	ID           int32 `json:"id"`
	LogEndOffset int64 `json:"log_end_offset"`
	Lag          int64 `json:"lag"`
	// LastFetchTimestamp is in Unix milliseconds, -1 for never.
	LastFetchTimestamp int64 `json:"last_fetch_timestamp"`
}

// text prints v as cluster info's tables; withAdmin adds the columns of
// --admin.
func (v clusterView) text(w io.Writer, withAdmin bool) error {
	noQuorum := v.ControllerID < 0
	controller := strconv.Itoa(int(v.ControllerID))
	if noQuorum {
		controller = "none: no quorum"
	}
	fmt.Fprintf(w, "CLUSTER     %s\nCONTROLLER  %s\nTOPICS      %d (%d internal)\n\n",
		v.ClusterID, controller, v.Topics, v.InternalTopics)
	rows := [][]string{{"NODE", "ROLES", "HOST", "PORT", "RACK", "STATE"}}
	if noQuorum {
		// Fenced or live as the broker last knew it from an active
		// controller: QUORUM says how long ago.
		rows[0][5] = "LAST-KNOWN-STATE"
	}
	if withAdmin {
		rows[0] = append(rows[0], "CLUSTER ADDR", "INCARNATION")
	}
	for _, n := range v.Nodes {
		id := strconv.Itoa(int(n.ID))
		if n.Controller {
			id += "*"
		}
		row := []string{id, strings.Join(n.Roles, ","), n.Host, strconv.Itoa(int(n.Port)), n.Rack, n.State}
		if withAdmin {
			switch {
			case n.Incarnation == nil:
				row = append(row, "?", "?")
			case n.ClusterAddr == "":
				row = append(row, "-", strconv.FormatUint(*n.Incarnation, 10)) // a one-node cluster has no remoting
			default:
				row = append(row, n.ClusterAddr, strconv.FormatUint(*n.Incarnation, 10))
			}
		}
		rows = append(rows, row)
	}
	if err := printTable(w, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch {
	case noQuorum:
		fmt.Fprintf(w, "QUORUM      none: %s\n", v.QuorumError)
		return nil
	case v.Quorum == nil:
		fmt.Fprintf(w, "QUORUM      unknown: %v\n", v.QuorumError)
		return nil
	}
	q := v.Quorum
	fmt.Fprintf(w, "QUORUM      leader %d, epoch %d, high watermark %d\n\n", q.LeaderID, q.LeaderEpoch, q.HighWatermark)
	rows = [][]string{{"VOTER", "LOG END", "LAG", "LAST FETCH"}}
	now := time.Now().UnixMilli()
	for _, r := range q.Voters {
		fetch := "never"
		if r.LastFetchTimestamp >= 0 {
			fetch = (time.Duration(max(now-r.LastFetchTimestamp, 0)) * time.Millisecond).Round(time.Millisecond).String() + " ago"
		}
		rows = append(rows, []string{strconv.Itoa(int(r.ID)), strconv.FormatInt(r.LogEndOffset, 10), strconv.FormatInt(r.Lag, 10), fetch})
	}
	return printTable(w, rows)
}

// adminBroker is what a node's admin API adds about a broker.
type adminBroker struct {
	ClusterAddr string `json:"cluster_addr"` // "" in a one-node cluster, which has no remoting
	Incarnation uint64 `json:"incarnation"`
}

// adminBrokers reads the brokers' remoting address and incarnation from a
// node's /v1/cluster.
func adminBrokers(ctx context.Context, admin string, access chaos.Access) (map[int32]adminBroker, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, access.URL(admin, "/v1/cluster"), nil)
	if err != nil {
		return nil, usageError(fmt.Sprintf("--admin %s: %v", admin, err))
	}
	access.Authorize(req)
	resp, err := access.Client(0).Do(req)
	if err != nil {
		return nil, fmt.Errorf("--admin %s: %w", admin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--admin %s: GET /v1/cluster: %s", admin, resp.Status)
	}
	var c struct {
		Brokers []struct {
			ID int32 `json:"id"`
			adminBroker
		} `json:"brokers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return nil, fmt.Errorf("--admin %s: /v1/cluster: %w", admin, err)
	}
	out := map[int32]adminBroker{}
	for _, b := range c.Brokers {
		out[b.ID] = b.adminBroker
	}
	return out, nil
}

// describeQuorum asks for the controller quorum's state. With an error in
// the quorum's partition, it returns the partition too (a node without an
// active controller lists the voters' ids) and the error with the node's
// message.
func describeQuorum(ctx context.Context, cl kmsg.Requestor) (*kmsg.DescribeQuorumResponseTopicPartition, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum: an answer without the quorum's partition")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		var msg string
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		return &p, kafkaError(err, msg)
	}
	return &p, nil
}
