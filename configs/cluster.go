package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The roles of process.roles.
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// Roles returns process.roles as a list, without duplicates. Validate has
// checked that it names only known roles.
func (n Node) Roles() []string {
	var roles []string
	for _, r := range strings.Split(n.ProcessRoles, ",") {
		if r = strings.TrimSpace(r); r != "" && !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	return roles
}

// HasRole reports whether process.roles names role.
func (n Node) HasRole(role string) bool { return slices.Contains(n.Roles(), role) }

// Voter is one member of controller.quorum.voters.
type Voter struct {
	ID   int32
	Addr string // host:port of its remoting
}

// Voters parses controller.quorum.voters; empty means a one-node cluster.
func (n Node) Voters() ([]Voter, error) {
	if strings.TrimSpace(n.ControllerQuorumVoters) == "" {
		return nil, nil
	}
	var voters []Voter
	for _, part := range strings.Split(n.ControllerQuorumVoters, ",") {
		part = strings.TrimSpace(part)
		idStr, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not id@host:port", part)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q: the id must be a node id (a number from 0)", part)
		}
		var v validator
		v.hostPort("", addr, true)
		if len(v.errs) > 0 {
			return nil, fmt.Errorf("%q: %s", part, v.errs[0].(*Error).Reason)
		}
		for _, o := range voters {
			if o.ID == int32(id) {
				return nil, fmt.Errorf("node %d is named twice", id)
			}
			if o.Addr == addr {
				return nil, fmt.Errorf("nodes %d and %d have one address, %s", o.ID, id, addr)
			}
		}
		voters = append(voters, Voter{ID: int32(id), Addr: addr})
	}
	return voters, nil
}

// Clustered reports whether the node is part of a cluster of several
// nodes (controller.quorum.voters is set).
func (n Node) Clustered() bool { return strings.TrimSpace(n.ControllerQuorumVoters) != "" }

func (n Node) validateCluster(v *validator) {
	roles := n.Roles()
	if len(roles) == 0 {
		v.fail("process.roles", n.ProcessRoles, "must name broker, controller or both")
	}
	for _, r := range roles {
		if r != RoleBroker && r != RoleController {
			v.fail("process.roles", n.ProcessRoles, "must name broker, controller or both (comma-separated)")
			break
		}
	}
	v.hostPort("cluster.listen", n.ClusterListen, false)
	v.hostPort("cluster.advertise", n.ClusterAdvertise, true)
	v.atLeast("broker.heartbeat.interval.ms", int64(n.BrokerHeartbeatIntervalMs), 1)
	v.atLeast("broker.session.timeout.ms", int64(n.BrokerSessionTimeoutMs), int64(n.BrokerHeartbeatIntervalMs))
	v.atLeast("metadata.log.max.record.bytes.between.snapshots", n.MetadataSnapshotBytes, 1)
	v.atLeast("replica.lag.time.max.ms", int64(n.ReplicaLagTimeMaxMs), 1)
	v.atLeast("replica.fetch.wait.max.ms", int64(n.ReplicaFetchWaitMaxMs), 0)
	if n.ReplicaFetchWaitMaxMs >= n.ReplicaLagTimeMaxMs {
		v.fail("replica.fetch.wait.max.ms", strconv.Itoa(int(n.ReplicaFetchWaitMaxMs)), "must be below replica.lag.time.max.ms, or caught-up followers would leave the ISR")
	}
	v.atLeast("replica.fetch.max.bytes", int64(n.ReplicaFetchMaxBytes), 1)
	v.atLeast("leader.imbalance.check.interval.seconds", int64(n.LeaderImbalanceCheckIntervalSeconds), 1)
	v.atLeast("replica.fetch.response.max.bytes", int64(n.ReplicaFetchResponseMaxBytes), 1)
	voters, err := n.Voters()
	if err != nil {
		v.fail("controller.quorum.voters", n.ControllerQuorumVoters, err.Error())
		return
	}
	if len(voters) == 0 {
		if !slices.Contains(roles, RoleBroker) || !slices.Contains(roles, RoleController) {
			v.fail("process.roles", n.ProcessRoles, "a node without controller.quorum.voters is a cluster of its own and needs both roles; set controller.quorum.voters to join a cluster")
		}
		return
	}
	if !slices.Contains(roles, RoleController) {
		return
	}
	i := slices.IndexFunc(voters, func(x Voter) bool { return x.ID == n.NodeID })
	switch {
	case i < 0:
		v.fail("node.id", fmtInt(int64(n.NodeID)), fmt.Sprintf("a controller must be one of controller.quorum.voters (%s); give it a voter's id, or drop controller from process.roles", n.ControllerQuorumVoters))
	case voters[i].Addr != n.ClusterAdvertise:
		v.fail("cluster.advertise", n.ClusterAdvertise, fmt.Sprintf("controller.quorum.voters names %s for node %d; the two must agree", voters[i].Addr, n.NodeID))
	}
}
