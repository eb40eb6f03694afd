// Package nodetest runs clusters of Skein nodes inside a test process:
// each node with its own actor system, data directory, Kafka and admin
// listeners on loopback ports the system picks, and remoting on a port of
// its own, all of them voters of one controller quorum. Faults between
// two nodes (cut, drop, delay) go through each node's actors.Links, in
// the remoting path itself.
//
// A node cannot be restarted in the process, and the clusters cannot run
// under the race detector: protoactor's remote start writes gRPC's global
// logger, which the remotes already running read (node.StartAll). Tests
// that kill and restart nodes, and the race-built runs, use `skein node`
// processes (tests/cluster).
package nodetest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
)

// Cluster is n nodes started by Start, stopped at the end of the test.
type Cluster struct {
	t     testing.TB
	Nodes []*node.Node // Nodes[i] has node id i+1
	// cluster are the nodes' remoting addresses, by index.
	cluster []string
	// dataDirs are the nodes' data directories, by index.
	dataDirs []string
}

// Start starts n voters on 127.0.0.1 and waits until every one serves.
// edit, if given, changes each node's configuration first.
func Start(t testing.TB, n int, edit ...func(*configs.Node)) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for range n {
		c.cluster = append(c.cluster, freeAddr(t))
	}
	var voters []string
	for i, addr := range c.cluster {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addr))
	}
	dir := t.TempDir()
	var cfgs []configs.Node
	for i := range n {
		cfg := configs.Default()
		cfg.NodeID = int32(i + 1)
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		c.dataDirs = append(c.dataDirs, cfg.DataDir)
		cfg.Listen, cfg.Advertise, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		cfg.ControllerQuorumVoters = strings.Join(voters, ",")
		cfg.ClusterListen, cfg.ClusterAdvertise = c.cluster[i], c.cluster[i]
		cfg.GroupInitialRebalanceDelayMs = 0
		for _, e := range edit {
			e(&cfg)
		}
		cfgs = append(cfgs, cfg)
	}
	nodes, err := node.StartAll(cfgs, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	c.Nodes = nodes
	t.Cleanup(c.stop)
	for i := range nodes {
		c.waitReady(i)
	}
	return c
}

// Addr returns the Kafka listener of the node at index i.
func (c *Cluster) Addr(i int) string { return c.Nodes[i].Addr().String() }

// Cut cuts the link between the nodes at indexes a and b, both ways.
func (c *Cluster) Cut(a, b int) { c.Fault(a, b, actors.LinkFault{Cut: true}) }

// Fault sets f on the link between the nodes at indexes a and b, both
// ways: drops at a rate, a delay, or a cut.
func (c *Cluster) Fault(a, b int, f actors.LinkFault) {
	c.Nodes[a].Links().Set(c.cluster[b], f)
	c.Nodes[b].Links().Set(c.cluster[a], f)
}

// FaultOneWay sets f on what node a sends node b only.
func (c *Cluster) FaultOneWay(a, b int, f actors.LinkFault) {
	c.Nodes[a].Links().Set(c.cluster[b], f)
}

// Isolate cuts node a off from every other node.
func (c *Cluster) Isolate(a int) {
	for b := range c.Nodes {
		if b != a {
			c.Cut(a, b)
		}
	}
}

// Heal removes every fault.
func (c *Cluster) Heal() {
	for _, n := range c.Nodes {
		n.Links().Heal()
	}
}

// waitReady waits until node i serves clients (its broker is registered).
func (c *Cluster) waitReady(i int) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !c.Nodes[i].Ready() {
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d did not become ready", i+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) stop() {
	for _, n := range c.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := n.Stop(ctx); err != nil {
			c.t.Errorf("stop: %v", err)
		}
		cancel()
	}
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
