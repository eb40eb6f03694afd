package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/internal/needroot"
)

// netnsCutTopics is how many topics the majority creates while the
// active controller is cut off.
const netnsCutTopics = 3

// TestNetworkPartitionOfTheActiveController: network namespaces as hosts,
// node i in namespace i, joined by veth pairs on a bridge the test also
// reaches the nodes through. The active controller is cut off from the
// other two, both ways: the two elect a new active controller and go on
// creating topics, and fence the cut node when its heartbeats stop; the
// cut node commits nothing (a CreateTopics sent to it does not succeed,
// and nobody learns of its topic). Once the cut heals it catches up: the
// same topics, with the same ids, as the others, unfenced, and the same
// active controller as theirs.
func TestNetworkPartitionOfTheActiveController(t *testing.T) {
	hosts := newNetnsHosts(t) // before the cluster: its cleanup runs after the nodes are killed
	c := newClusterIn(t, hosts.layout(
		"--set", "broker.session.timeout.ms=4000",
		"--set", "broker.heartbeat.interval.ms=1000",
	))
	begin := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs: %s", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}
	c.startAll()
	for i := 1; i <= numNodes; i++ {
		hosts.checkInNamespace(c, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	all := []int{1, 2, 3}

	cut := int(c.agreedController(ctx, all, func(id int32) bool { return id > 0 }))
	var majority []int
	for _, i := range all {
		if i != cut {
			majority = append(majority, i)
		}
	}
	logf("the nodes are ready, at %s to %s; node %d is the active controller", c.host(1), c.host(numNodes), cut)

	// created are the topics whose create was acknowledged, with the id
	// the answer gave.
	created := map[string][16]byte{}
	created["before-cut"] = netnsMustCreate(t, ctx, c, majority[0], "before-cut")
	for _, i := range all {
		waitFor(t, readyTimeout, fmt.Sprintf("node %d knowing before-cut", i), func() string {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if _, ok := v.topics["before-cut"]; !ok {
				return fmt.Sprintf("node %d lists topics %v", i, netnsTopicNames(v))
			}
			return ""
		})
	}

	hosts.cut(cut, majority)
	logf("node %d cut off from nodes %v", cut, majority)
	next := c.agreedController(ctx, majority, func(id int32) bool { return slices.Contains(majority, int(id)) })
	logf("nodes %v elected node %d the active controller", majority, next)

	// A CreateTopics sent to the cut node, while the majority creates
	// its own: the cut node cannot commit it, so it must not succeed.
	const stranded = "sent-to-cut-node"
	strandedDone := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
		defer cancel()
		rt, err := netnsCreate(ctx, c, cut, stranded)
		switch {
		case err != nil:
			strandedDone <- fmt.Sprintf("no answer: %v", err)
		case rt.ErrorCode != 0:
			strandedDone <- fmt.Sprintf("%v (%s)", kerr.ErrorForCode(rt.ErrorCode), netnsString(rt.ErrorMessage))
		default:
			strandedDone <- "" // success
		}
	}()
	for k := range netnsCutTopics {
		name := fmt.Sprintf("during-cut-%d", k)
		through := majority[k%len(majority)]
		created[name] = netnsMustCreate(t, ctx, c, through, name)
		logf("created %s through node %d", name, through)
	}
	if got := <-strandedDone; got == "" {
		t.Errorf("CreateTopics %s sent to node %d while it is cut off from the quorum succeeded", stranded, cut)
	} else {
		logf("CreateTopics %s sent to node %d, cut off: %s", stranded, cut, got)
	}

	// The majority fences the cut node once its session expires: Metadata
	// no longer lists it, nor any partition led by it, DescribeCluster
	// lists it fenced. Meanwhile nobody has the cut node's topic.
	waitFor(t, readyTimeout, fmt.Sprintf("nodes %v fencing node %d", majority, cut), func() string {
		for _, i := range majority {
			fenced, err := netnsBrokers(ctx, c, i)
			if err != nil {
				return err.Error()
			}
			if f, ok := fenced[int32(cut)]; !ok || !f {
				return fmt.Sprintf("node %d: DescribeCluster brokers (id: fenced) %v", i, fenced)
			}
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if _, ok := v.topics[stranded]; ok {
				t.Fatalf("during the cut, node %d lists %s, which only node %d, cut off, was asked to create", i, stranded, cut)
			}
			if _, ok := v.brokers[int32(cut)]; ok {
				return fmt.Sprintf("node %d: Metadata lists brokers %v", i, v.brokers)
			}
			for name, tv := range v.topics {
				if slices.Contains(tv.leaders, int32(cut)) {
					return fmt.Sprintf("node %d: %s has leaders %v", i, name, tv.leaders)
				}
			}
		}
		return ""
	})
	logf("nodes %v fenced node %d", majority, cut)
	for _, i := range all {
		v, err := c.view(ctx, i)
		if err != nil {
			t.Fatalf("during the cut: %v", err)
		}
		if _, ok := v.topics[stranded]; ok {
			t.Errorf("during the cut, node %d lists %s, which only node %d, cut off, was asked to create", i, stranded, cut)
		}
		if i == cut {
			logf("during the cut node %d names controller %d, lists brokers %v and topics %v", cut, v.controller, v.brokers, netnsTopicNames(v))
			for name := range created {
				if _, ok := v.topics[name]; ok && name != "before-cut" {
					t.Errorf("during the cut, node %d, cut off, lists %s, created by the majority", cut, name)
				}
			}
		}
	}

	hosts.heal()
	healed := time.Now()
	logf("the cut is healed")

	// The cut node catches up: every topic the others created, with the
	// ids the creates answered; all three describe the same topics,
	// brokers (the cut node unfenced) and active controller, every
	// partition led.
	var final view
	waitFor(t, readyTimeout, fmt.Sprintf("node %d catching up after the heal", cut), func() string {
		views := map[int]view{}
		for _, i := range all {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if len(v.brokers) != numNodes {
				return fmt.Sprintf("node %d lists brokers %v", i, v.brokers)
			}
			for name, id := range created {
				tv, ok := v.topics[name]
				if !ok {
					return fmt.Sprintf("node %d lacks %s (lists %v)", i, name, netnsTopicNames(v))
				}
				if tv.id != id {
					return fmt.Sprintf("node %d: %s has id %x, its create answered %x", i, name, tv.id, id)
				}
			}
			for name, tv := range v.topics {
				for p, l := range tv.leaders {
					if _, ok := v.brokers[l]; !ok {
						return fmt.Sprintf("node %d: %s partition %d has leader %d", i, name, p, l)
					}
				}
			}
			views[i] = v
		}
		for _, i := range all {
			if views[i].controller <= 0 || views[i].controller != views[cut].controller {
				return fmt.Sprintf("node %d names controller %d, node %d names %d", i, views[i].controller, cut, views[cut].controller)
			}
			if d := diffTopics(views[cut].topics, views[i].topics); d != "" {
				return fmt.Sprintf("node %d and node %d differ: %s", cut, i, d)
			}
		}
		for _, i := range majority {
			fenced, err := netnsBrokers(ctx, c, i)
			if err != nil {
				return err.Error()
			}
			if f, ok := fenced[int32(cut)]; !ok || f {
				return fmt.Sprintf("node %d: DescribeCluster brokers (id: fenced) %v", i, fenced)
			}
		}
		final = views[cut]
		return ""
	})
	logf("%.1fs after the heal, every node names controller %d and lists brokers %v and topics %v",
		time.Since(healed).Seconds(), final.controller, final.brokers, netnsTopicNames(final))
	if _, ok := final.topics[stranded]; ok {
		logf("%s, asked of node %d during the cut, was committed after the heal (allowed)", stranded, cut)
	}
	for _, i := range all {
		if code, body, err := c.readyz(i); err != nil || code != 200 {
			t.Errorf("node %d: /readyz answers %d %q (%v), want 200", i, code, body, err)
		}
	}
}

// netnsTopicNames lists a view's topics, sorted.
func netnsTopicNames(v view) []string {
	return slices.Sorted(maps.Keys(v.topics))
}

// The hosts of TestNetworkPartitionOfTheActiveController: node i runs in
// network namespace i at 10.77.N.1i, joined to the others by a veth pair
// whose other end is on a bridge in the test's own namespace, which has
// 10.77.N.1 so that the test reaches every node. N is the first of
// 0..netnsNets-1 free: runs of the test at the same time (one engineer's
// go test ./... and another's) each have their own.
const netnsNets = 16

// What netnsHosts makes is named after the test process's pid, so that a
// run killed before its cleanups (go test's -timeout) can be told from a
// live one, and the next run removes what a dead one left: namespaces
// skeintest-PID-nI, veth pairs sktPIDvI (the end on the bridge) and
// sktPIDpI, and bridge skeinbrN, whose alias is skeintest-pid-PID.
// Creating the bridge claims 10.77.N.0/24: a name exists once.
var (
	netnsStaleNS     = regexp.MustCompile(`^skeintest-([0-9]+)-n[0-9]+$`)
	netnsStaleVeth   = regexp.MustCompile(`^[0-9]+: (skt([0-9]+)v[0-9]+)[@:]`)
	netnsStaleBridge = regexp.MustCompile(`^[0-9]+: (skeinbr[0-9]+)[@:].* alias skeintest-pid-([0-9]+)`)
)

// netnsHosts is numNodes network namespaces joined by a bridge, made by
// newNetnsHosts and removed at the end of the test. Its methods are
// called from the test's goroutine only.
type netnsHosts struct {
	t   *testing.T
	ip  string // iproute2's ip
	pid string // this process's
	net int    // N of 10.77.N.0/24
	ns  [numNodes + 1]string
	// made are what remove deletes: veth pairs, namespaces, the bridge.
	madeVeth []string // their ends on the bridge
	madeNS   []string
	bridge   string
	// cuts are the blackhole routes in place: cuts[k] = {in, to} is a
	// route in node in's namespace that drops what it sends to node to.
	cuts [][2]int
}

// newNetnsHosts makes the bridge, the namespaces and the veth pairs, and
// registers their removal, which runs whatever the test's outcome. Call
// it before newClusterIn, so that the nodes are killed (the cluster's
// cleanup) before their namespaces are removed.
func newNetnsHosts(t *testing.T) *netnsHosts {
	t.Helper()
	needroot.Require(t, "making network namespaces, a bridge and veth pairs")
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatalf("this test needs iproute2's ip to make network namespaces: %v", err)
	}
	h := &netnsHosts{t: t, ip: ip, pid: strconv.Itoa(os.Getpid())}
	if _, err := h.run("netns", "list"); err != nil {
		t.Fatalf("this test needs ip netns (and root, as CI has): %v", err)
	}
	h.removeStale()
	t.Cleanup(h.remove)
	h.claimNet()
	h.must("addr", "add", fmt.Sprintf("10.77.%d.1/24", h.net), "dev", h.bridge)
	h.must("link", "set", h.bridge, "up")
	for i := 1; i <= numNodes; i++ {
		ns := fmt.Sprintf("skeintest-%s-n%d", h.pid, i)
		outer, inner := fmt.Sprintf("skt%sv%d", h.pid, i), fmt.Sprintf("skt%sp%d", h.pid, i)
		if _, err := h.run("netns", "add", ns); err != nil {
			t.Fatalf("making a network namespace (the test needs root and ip netns, as CI has): %v", err)
		}
		h.ns[i] = ns
		h.madeNS = append(h.madeNS, ns)
		h.must("-n", ns, "link", "set", "lo", "up")
		h.must("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
		h.madeVeth = append(h.madeVeth, outer)
		h.must("link", "set", outer, "master", h.bridge, "up")
		h.must("-n", ns, "addr", "add", h.host(i)+"/24", "dev", inner)
		h.must("-n", ns, "link", "set", inner, "up")
	}
	return h
}

// claimNet picks the first 10.77.N.0/24 nobody here uses and creates its
// bridge, skeinbrN, failing the test if all are taken.
func (h *netnsHosts) claimNet() {
	h.t.Helper()
	for n := range netnsNets {
		subnet := fmt.Sprintf("10.77.%d.0/24", n)
		out, err := h.run("-4", "-o", "addr", "show", "to", subnet)
		if err != nil {
			h.t.Fatal(err)
		}
		if strings.TrimSpace(out) != "" {
			continue // in use, by a bridge of another run or otherwise
		}
		bridge := fmt.Sprintf("skeinbr%d", n)
		if out, err := h.run("link", "add", bridge, "type", "bridge"); err != nil {
			if strings.Contains(out, "File exists") {
				continue // another run's
			}
			h.t.Fatal(err)
		}
		h.net, h.bridge = n, bridge
		h.must("link", "set", "dev", bridge, "alias", "skeintest-pid-"+h.pid)
		return
	}
	out, _ := h.run("-4", "-o", "addr", "show", "to", "10.77.0.0/16")
	h.t.Fatalf("10.77.0.0/24 to 10.77.%d.0/24 are all in use here (by other runs of this test?):\n%s", netnsNets-1, out)
}

// host is node i's address.
func (h *netnsHosts) host(i int) string { return fmt.Sprintf("10.77.%d.1%d", h.net, i) }

// layout places node i in namespace i, at host(i), with flags.
func (h *netnsHosts) layout(flags ...string) layout {
	return layout{
		host: h.host,
		// ip netns exec switches namespaces and execs skein: the pid
		// the harness signals is skein's (checkInNamespace checks).
		wrap:  func(i int) []string { return []string{h.ip, "netns", "exec", h.ns[i]} },
		flags: flags,
	}
}

// run runs ip with args, returning its output.
func (h *netnsHosts) run(args ...string) (string, error) {
	out, err := exec.Command(h.ip, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (h *netnsHosts) must(args ...string) {
	h.t.Helper()
	if _, err := h.run(args...); err != nil {
		h.t.Fatal(err)
	}
}

// cut drops everything between node from and each of others, both ways,
// with blackhole routes in their namespaces; the bridge, and so the test,
// still reaches all of them. A cut the test leaves in place is healed at
// its end before the nodes are killed: the sockets of a node killed
// while cut off would go on retransmitting to its peers for a minute or
// more, and keep its namespace alive in the kernel that long.
func (h *netnsHosts) cut(from int, others []int) {
	h.t.Helper()
	h.t.Cleanup(func() {
		for _, r := range h.cuts {
			if _, err := h.run("-n", h.ns[r[0]], "route", "del", "blackhole", h.host(r[1])+"/32"); err != nil {
				h.t.Errorf("healing a cut at the end of the test: %v", err)
			}
		}
		h.cuts = nil
	})
	for _, o := range others {
		for _, r := range [][2]int{{from, o}, {o, from}} {
			h.must("-n", h.ns[r[0]], "route", "add", "blackhole", h.host(r[1])+"/32")
			h.cuts = append(h.cuts, r)
		}
	}
}

// heal removes every cut.
func (h *netnsHosts) heal() {
	h.t.Helper()
	for len(h.cuts) > 0 {
		r := h.cuts[0]
		h.must("-n", h.ns[r[0]], "route", "del", "blackhole", h.host(r[1])+"/32")
		h.cuts = h.cuts[1:]
	}
}

// remove deletes the veth pairs, the namespaces and the bridge. (A
// namespace lives on in the kernel while a socket of it does, one a
// killed node left closing, but with nothing in it but its loopback.)
func (h *netnsHosts) remove() {
	for _, veth := range h.madeVeth {
		if _, err := h.run("link", "del", veth); err != nil {
			h.t.Errorf("removing the test's veth pair: %v", err)
		}
	}
	for _, ns := range h.madeNS {
		if _, err := h.run("netns", "del", ns); err != nil {
			h.t.Errorf("removing the test's namespace: %v", err)
		}
	}
	if h.bridge != "" {
		if _, err := h.run("link", "del", h.bridge); err != nil {
			h.t.Errorf("removing the test's bridge: %v", err)
		}
	}
}

// removeStale removes the namespaces, veth pairs and bridges that runs
// of this test left when they died without their cleanups; those of live
// processes stay.
func (h *netnsHosts) removeStale() {
	dead := func(pid string) bool {
		if pid == h.pid {
			return false
		}
		_, err := os.Stat(filepath.Join("/proc", pid))
		return os.IsNotExist(err)
	}
	if out, err := h.run("netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if m := netnsStaleNS.FindStringSubmatch(f[0]); m != nil && dead(m[1]) {
				h.t.Logf("removing namespace %s, left by a dead run of the test", f[0])
				h.run("netns", "del", f[0])
			}
		}
	}
	if out, err := h.run("-o", "link", "show"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if m := netnsStaleVeth.FindStringSubmatch(line); m != nil && dead(m[2]) {
				h.t.Logf("removing veth pair %s, left by a dead run of the test", m[1])
				h.run("link", "del", m[1])
			}
			if m := netnsStaleBridge.FindStringSubmatch(line); m != nil && dead(m[2]) {
				h.t.Logf("removing bridge %s, left by a dead run of the test", m[1])
				h.run("link", "del", m[1])
			}
		}
	}
}

// checkInNamespace fails the test unless node i's process, the one the
// harness signals, is skein itself (ip netns exec exec'ed it) and runs in
// namespace i.
func (h *netnsHosts) checkInNamespace(c *cluster, i int) {
	h.t.Helper()
	pid := c.nodes[i].cmd.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		h.t.Fatalf("node %d: %v", i, err)
	}
	want, err := filepath.EvalSymlinks(skeinBin)
	if err != nil {
		h.t.Fatal(err)
	}
	if exe != want {
		h.t.Fatalf("node %d: process %d, which the harness kills, runs %s, not %s: a kill would miss the node", i, pid, exe, want)
	}
	out, err := h.run("netns", "identify", strconv.Itoa(pid))
	if err != nil {
		h.t.Fatalf("node %d: %v", i, err)
	}
	if got := strings.TrimSpace(out); got != h.ns[i] {
		h.t.Fatalf("node %d: process %d is in namespace %q, want %q", i, pid, got, h.ns[i])
	}
}

// netnsTopicParts is the partition count of the test's topics: with
// three brokers, each leads some (placement spreads them).
const netnsTopicParts = 3

// netnsCreate asks node i itself (not the controller a client would pick)
// to create a topic, once, and returns the answer's topic.
func netnsCreate(ctx context.Context, c *cluster, i int, name string) (kmsg.CreateTopicsResponseTopic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, netnsTopicParts, 1
	req.Topics = append(req.Topics, rt)
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMillis = int32(time.Until(d).Milliseconds())
	}
	kresp, err := c.seeds[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return kmsg.CreateTopicsResponseTopic{}, err
	}
	resp := kresp.(*kmsg.CreateTopicsResponse)
	if resp.GetVersion() < 7 {
		return kmsg.CreateTopicsResponseTopic{}, fmt.Errorf("CreateTopics v%d answers without topic ids; the test needs v7", resp.GetVersion())
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
		return kmsg.CreateTopicsResponseTopic{}, fmt.Errorf("CreateTopics for %s answered %d topics", name, len(resp.Topics))
	}
	return resp.Topics[0], nil
}

// netnsMustCreate is netnsCreate that must succeed; it returns the
// topic's id.
func netnsMustCreate(t *testing.T, ctx context.Context, c *cluster, i int, name string) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second) // above a node's 20 s command timeout
	defer cancel()
	rt, err := netnsCreate(ctx, c, i, name)
	if err != nil {
		t.Fatalf("create %s through node %d: %v", name, i, err)
	}
	if rt.ErrorCode != 0 {
		t.Fatalf("create %s through node %d: %v (%s)", name, i, kerr.ErrorForCode(rt.ErrorCode), netnsString(rt.ErrorMessage))
	}
	return rt.TopicID
}

// netnsBrokers asks node i itself for DescribeCluster v2 with the fenced
// brokers, and returns each broker's IsFenced.
func netnsBrokers(ctx context.Context, c *cluster, i int) (map[int32]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	kresp, err := c.seeds[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: DescribeCluster: %w", i, err)
	}
	resp := kresp.(*kmsg.DescribeClusterResponse)
	if resp.GetVersion() < 2 {
		return nil, fmt.Errorf("node %d: DescribeCluster v%d, the test needs v2 (IncludeFencedBrokers)", i, resp.GetVersion())
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("node %d: DescribeCluster: %v", i, kerr.ErrorForCode(resp.ErrorCode))
	}
	fenced := map[int32]bool{}
	for _, b := range resp.Brokers {
		fenced[b.NodeID] = b.IsFenced
	}
	return fenced, nil
}

func netnsString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
