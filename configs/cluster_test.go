package configs

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestClusterSettings(t *testing.T) {
	const voters = "1@127.0.0.11:9093,2@127.0.0.12:9093,3@127.0.0.13:9093"
	for _, tc := range []struct {
		name    string
		flags   []string
		key     string // the key the error names; "" for none
		message string
	}{
		{name: "one node by default"},
		{name: "a voter", flags: []string{"--node-id", "2", "--controller-quorum", voters, "--cluster-listen", "127.0.0.12:9093"}},
		{name: "a broker only", flags: []string{"--node-id", "7", "--roles", "broker", "--controller-quorum", voters}},
		{name: "a controller outside the voters", flags: []string{"--node-id", "4", "--controller-quorum", voters, "--cluster-listen", "127.0.0.14:9093"},
			key: "node.id", message: "a controller must be one of controller.quorum.voters"},
		{name: "a voter at another address", flags: []string{"--node-id", "1", "--controller-quorum", voters, "--cluster-listen", "127.0.0.12:9093"},
			key: "cluster.advertise", message: "names 127.0.0.11:9093 for node 1"},
		{name: "a broker without voters", flags: []string{"--roles", "broker"},
			key: "process.roles", message: "needs both roles"},
		{name: "an unknown role", flags: []string{"--roles", "broker,leader"},
			key: "process.roles", message: "must name broker, controller or both"},
		{name: "a voter twice", flags: []string{"--roles", "broker", "--controller-quorum", "1@a:1,1@b:1"},
			key: "controller.quorum.voters", message: "node 1 is named twice"},
		{name: "a voter without an id", flags: []string{"--roles", "broker", "--controller-quorum", "a:1"},
			key: "controller.quorum.voters", message: "is not id@host:port"},
		{name: "a session shorter than the heartbeat", flags: []string{"--set", "broker.session.timeout.ms=1000"},
			key: "broker.session.timeout.ms", message: "at least 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := load(t, "", nil, tc.flags...)
			if tc.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v (node %+v), want an error on %s saying %q", err, n.NodeID, tc.key, tc.message)
			}
		})
	}
}

func TestVotersAndRoles(t *testing.T) {
	n, err := load(t, "", nil, "--node-id", "2", "--controller-quorum", " 1@127.0.0.11:9093, 2@127.0.0.12:9093 ", "--cluster-listen", "127.0.0.12:9093", "--roles", "controller,broker,controller")
	if err != nil {
		t.Fatal(err)
	}
	voters, _ := n.Voters()
	if want := []Voter{{1, "127.0.0.11:9093"}, {2, "127.0.0.12:9093"}}; !slices.Equal(voters, want) {
		t.Fatalf("voters %v", voters)
	}
	if !n.Clustered() || !n.HasRole(RoleBroker) || !slices.Equal(n.Roles(), []string{"controller", "broker"}) {
		t.Fatalf("roles %v clustered %v", n.Roles(), n.Clustered())
	}
	if n.ClusterAdvertise != "127.0.0.12:9093" {
		t.Fatalf("cluster.advertise %q, want cluster.listen's value", n.ClusterAdvertise)
	}
}
