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
	return clientCommand("cluster", "Show the cluster, its broker configs and log dirs", environ, stdout, newClusterInfoCommand, newClusterConfigCommand,
		newClusterLogDirsCommand)
}

func newClusterInfoCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var admin string
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
			extra := map[int32][]string{}
			if admin != "" {
				access, err := flags.security.access()
				if err != nil {
					return usageError(err.Error())
				}
				if extra, err = adminBrokers(ctx, admin, access); err != nil {
					return err
				}
			}
			controller := strconv.Itoa(int(dc.ControllerID))
			if noQuorum {
				controller = "none: no quorum"
			}
			fmt.Fprintf(stdout, "CLUSTER     %s\nCONTROLLER  %s\nTOPICS      %d (%d internal)\n\n",
				dc.ClusterID, controller, len(m.Topics), internal)
			voters := map[int32]kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
			if q != nil {
				for _, v := range q.CurrentVoters {
					voters[v.ReplicaID] = v
				}
			}
			rows := [][]string{{"NODE", "ROLES", "HOST", "PORT", "RACK", "STATE"}}
			if noQuorum {
				// Fenced or live as the broker last knew it from an active
				// controller: QUORUM says how long ago.
				rows[0][5] = "LAST-KNOWN-STATE"
			}
			if admin != "" {
				rows[0] = append(rows[0], "CLUSTER ADDR", "INCARNATION")
			}
			for _, b := range dc.Brokers {
				id := strconv.Itoa(int(b.NodeID))
				if b.NodeID == dc.ControllerID {
					id += "*"
				}
				roles := []string{"broker"}
				if _, ok := voters[b.NodeID]; ok {
					roles = append(roles, "controller")
				}
				rack, state := "", "live"
				if b.Rack != nil {
					rack = *b.Rack
				}
				if b.IsFenced {
					state = "fenced"
				}
				row := []string{id, strings.Join(roles, ","), b.Host, strconv.Itoa(int(b.Port)), rack, state}
				if admin != "" {
					row = append(row, append(extra[b.NodeID], "?", "?")[:2]...)
				}
				rows = append(rows, row)
			}
			if err := printTable(stdout, rows); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
			if noQuorum {
				why := "no broker of --brokers answered"
				switch {
				case q != nil && q.ErrorMessage != nil:
					why = *q.ErrorMessage // since when it has known no active controller
				case qerr != nil:
					why = qerr.Error()
				}
				fmt.Fprintf(stdout, "QUORUM      none: %s\n", why)
				return errors.New("the cluster has no quorum: no active controller, so nothing can change and the nodes' states are as the brokers last knew them")
			}
			if qerr != nil {
				fmt.Fprintf(stdout, "QUORUM      unknown: %v\n", qerr)
				return nil
			}
			fmt.Fprintf(stdout, "QUORUM      leader %d, epoch %d, high watermark %d\n\n", q.LeaderID, q.LeaderEpoch, q.HighWatermark)
			rows = [][]string{{"VOTER", "LOG END", "LAG", "LAST FETCH"}}
			now := time.Now().UnixMilli()
			for _, v := range q.CurrentVoters {
				fetch := "never"
				if v.LastFetchTimestamp >= 0 {
					fetch = (time.Duration(max(now-v.LastFetchTimestamp, 0)) * time.Millisecond).Round(time.Millisecond).String() + " ago"
				}
				rows = append(rows, []string{strconv.Itoa(int(v.ReplicaID)), strconv.FormatInt(v.LogEndOffset, 10),
					strconv.FormatInt(max(q.HighWatermark-v.LogEndOffset, 0), 10), fetch})
			}
			return printTable(stdout, rows)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "", "a node's admin listener, host:port, to show incarnations and remoting addresses too")
	return cmd
}

// adminBrokers reads the brokers' remoting address and incarnation from a
// node's /v1/cluster.
func adminBrokers(ctx context.Context, admin string, access chaos.Access) (map[int32][]string, error) {
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
			ID          int32  `json:"id"`
			ClusterAddr string `json:"cluster_addr"`
			Incarnation uint64 `json:"incarnation"`
		} `json:"brokers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return nil, fmt.Errorf("--admin %s: /v1/cluster: %w", admin, err)
	}
	out := map[int32][]string{}
	for _, b := range c.Brokers {
		addr := b.ClusterAddr
		if addr == "" {
			addr = "-" // a one-node cluster has no remoting
		}
		out[b.ID] = []string{addr, strconv.FormatUint(b.Incarnation, 10)}
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
