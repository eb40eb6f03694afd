package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cluster's fixed layout: node i (1, 2, 3) listens on 127.0.0.1i, so
// that every node has the same ports and a restarted node comes back at
// the address its peers and clients know.
const (
	numNodes    = 3
	kafkaPort   = 9092
	clusterPort = 9093
	adminPort   = 9644
)

// readyTimeout bounds a node's start, generously: under -race on two busy
// cores a node replaying its metadata log can take many seconds.
const readyTimeout = 60 * time.Second

// skeinBin is the skein binary TestMain built.
var skeinBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests builds cmd/skein once, runs the tests and removes the binary.
// The binary is race-instrumented when the tests are, so that `go test
// -race` also checks the nodes: a race they report fails the test (see
// newCluster's cleanup). SKEIN_BIN names a binary to use instead, to
// compare builds with the benchmarks.
func runTests(m *testing.M) int {
	if skeinBin = os.Getenv("SKEIN_BIN"); skeinBin != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "skein-cluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	skeinBin = filepath.Join(dir, "skein")
	args := []string{"build", "-o", skeinBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/skeinlog/skein/cmd/skein")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	return m.Run()
}

// cluster is numNodes `skein node` processes forming one controller
// quorum. Its methods are called from the test's goroutine only, except
// addr and host, which any goroutine may call.
type cluster struct {
	t      testing.TB
	layout layout
	nodes  [numNodes + 1]*node // by node id; [0] unused
	// seeds[i] is a client seeded with node i only, whose seed connection
	// asks node i itself (view).
	seeds [numNodes + 1]*kgo.Client
}

// node is one member of the cluster, across its runs.
type node struct {
	id      int
	dataDir string
	logPath string // stdout and stderr of every run, appended
	runs    int

	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	// ended is set when the harness killed or stopped the node: any other
	// exit is the node's own doing, and fails the test.
	ended bool
}

func (n *node) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func host(i int) string { return "127.0.0.1" + strconv.Itoa(i) }

// voters is controller.quorum.voters: every node's cluster listener.
func voters() string {
	var vs []string
	for i := 1; i <= numNodes; i++ {
		vs = append(vs, fmt.Sprintf("%d@%s:%d", i, host(i), clusterPort))
	}
	return strings.Join(vs, ",")
}

// layout says where a cluster's nodes run and what they are told. The
// zero layout is newCluster's: node i on 127.0.0.1i, in the test's own
// network namespace, with the harness's flags only.
type layout struct {
	// host returns node i's address, where all its listeners are (its
	// voter address too); nil means host(i).
	host func(i int) string
	// wrap returns the command line node i's `skein node` runs under,
	// the skein binary and its arguments following it (e.g. ip netns exec
	// NS); nil, or an empty answer, runs skein directly. The wrapper must
	// exec skein in its own process, as ip netns exec does, so that the
	// harness's kill and stop signal the node itself.
	wrap func(i int) []string
	// flags are added to every node's command line (e.g. --set k=v).
	flags []string
	// nodeFlags, if set, returns more flags for node i's command line,
	// after flags.
	nodeFlags func(i int) []string
	// voters are the nodes of controller.quorum.voters; nil means all.
	// The others must be told process.roles=broker (nodeFlags).
	voters []int
}

// newCluster prepares the nodes (started by start or startAll) and their
// cleanup: every node still running is killed, a node that exited on its
// own or reported a data race fails the test, and on failure the tail of
// every node's log is printed.
func newCluster(t testing.TB) *cluster {
	t.Helper()
	return newClusterIn(t, layout{})
}

// newClusterIn is newCluster with the nodes placed and started as l says.
func newClusterIn(t testing.TB, l layout) *cluster {
	t.Helper()
	c := &cluster{t: t, layout: l}
	dir := t.TempDir()
	for i := 1; i <= numNodes; i++ {
		c.nodes[i] = &node{
			id:      i,
			dataDir: filepath.Join(dir, fmt.Sprintf("node%d", i), "data"),
			logPath: filepath.Join(dir, fmt.Sprintf("node%d.log", i)),
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(i)), kgo.DialTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c.seeds[i] = cl
	}
	// NB: registered after t.TempDir, so it runs before the directory is
	// removed, with no node still writing to it.
	t.Cleanup(func() {
		for i := 1; i <= numNodes; i++ {
			c.seeds[i].Close()
			n := c.nodes[i]
			if n.cmd != nil && !n.ended && !n.running() {
				t.Errorf("node %d exited on its own (%v); the harness neither killed nor stopped it", i, n.cmd.ProcessState)
			}
			if n.running() {
				n.ended = true
				n.cmd.Process.Kill()
				<-n.exited
			}
			if race := raceReport(n.logPath); race != "" {
				t.Errorf("node %d: the race detector reported:\n%s", i, race)
			}
		}
		if t.Failed() {
			for i := 1; i <= numNodes; i++ {
				t.Logf("node %d, the end of %s:\n%s", i, c.nodes[i].logPath, logTail(c.nodes[i].logPath, 40))
			}
		}
	})
	return c
}

// host is node i's address in this cluster's layout.
func (c *cluster) host(i int) string {
	if c.layout.host != nil {
		return c.layout.host(i)
	}
	return host(i)
}

// voters is controller.quorum.voters in this cluster's layout.
func (c *cluster) voters() string {
	if c.layout.host == nil && c.layout.voters == nil {
		return voters()
	}
	var vs []string
	for i := 1; i <= numNodes; i++ {
		if c.layout.voters == nil || slices.Contains(c.layout.voters, i) {
			vs = append(vs, fmt.Sprintf("%d@%s:%d", i, c.host(i), clusterPort))
		}
	}
	return strings.Join(vs, ",")
}

// addr is node i's Kafka listener.
func (c *cluster) addr(i int) string { return fmt.Sprintf("%s:%d", c.host(i), kafkaPort) }

func (c *cluster) adminURL(i int) string { return fmt.Sprintf("http://%s:%d", c.host(i), adminPort) }

// startAll starts every node at once, then waits for each to be ready: a
// node serves only once a majority of the quorum runs, so nodes started
// one by one, each waited for, would never be ready.
func (c *cluster) startAll() {
	c.t.Helper()
	for i := 1; i <= numNodes; i++ {
		c.start(i)
	}
	for i := 1; i <= numNodes; i++ {
		c.waitReady(i)
	}
}

// start runs node i, with the data of its earlier runs, without waiting
// for it to serve (waitReady does).
func (c *cluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if n.running() {
		c.t.Fatalf("node %d is already running", i)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close() // the child has its own descriptor
	n.runs++
	fmt.Fprintf(logf, "=== harness: run %d of node %d ===\n", n.runs, i)
	args := []string{skeinBin, "node",
		"--node-id", strconv.Itoa(i),
		"--data-dir", n.dataDir,
		"--listen", c.addr(i),
		"--admin-listen", fmt.Sprintf("%s:%d", c.host(i), adminPort),
		"--controller-quorum", c.voters(),
		"--cluster-listen", fmt.Sprintf("%s:%d", c.host(i), clusterPort),
		"--log-format", "json",
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "chaos.enable=true",
	}
	args = append(args, c.layout.flags...)
	if c.layout.nodeFlags != nil {
		args = append(args, c.layout.nodeFlags(i)...)
	}
	if c.layout.wrap != nil {
		args = slices.Concat(c.layout.wrap(i), args)
	}
	cmd := exec.Command(args[0], args[1:]...)
	// The developer's SKEIN_* settings must not reach the nodes under test.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	n.cmd, n.exited, n.ended = cmd, make(chan struct{}), false
	exited := n.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

// kill kills node i with SIGKILL, a crash, and waits for it to be gone.
func (c *cluster) kill(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if !n.running() {
		c.t.Fatalf("kill: node %d is not running", i)
	}
	n.ended = true
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill node %d: %v", i, err)
	}
	<-n.exited
}

// pause stops node i with SIGSTOP: it hangs, its sockets open, as a node
// in a long GC pause or on a frozen VM.
func (c *cluster) pause(i int) {
	c.t.Helper()
	if err := c.nodes[i].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("pause node %d: %v", i, err)
	}
}

// resume continues node i after pause.
func (c *cluster) resume(i int) {
	c.t.Helper()
	if err := c.nodes[i].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatalf("resume node %d: %v", i, err)
	}
}

// stop stops node i with SIGTERM and waits for it to exit, which it must
// do cleanly: the node bounds its graceful stop by 10 s, so a node still
// running after 30 s is hung, and is killed.
func (c *cluster) stop(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if !n.running() {
		c.t.Fatalf("stop: node %d is not running", i)
	}
	n.ended = true
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("stop node %d: %v", i, err)
	}
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
		c.t.Fatalf("node %d did not exit within 30 s of SIGTERM; killed", i)
	}
	if !n.cmd.ProcessState.Success() {
		c.t.Errorf("node %d stopped by SIGTERM exited with %v", i, n.cmd.ProcessState)
	}
}

// waitReady polls node i's /readyz until it answers 200.
func (c *cluster) waitReady(i int) {
	c.t.Helper()
	n := c.nodes[i]
	deadline := time.Now().Add(readyTimeout)
	for {
		code, body, err := c.readyz(i)
		if err == nil && code == http.StatusOK {
			return
		}
		last := fmt.Sprintf("%d %q", code, body)
		if err != nil {
			last = err.Error()
		}
		select {
		case <-n.exited:
			c.t.Fatalf("node %d exited while starting (%v); its log ends:\n%s", i, n.cmd.ProcessState, logTail(n.logPath, 40))
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d not ready within %v (last /readyz: %s); its log ends:\n%s", i, readyTimeout, last, logTail(n.logPath, 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// readyz returns the status and body of node i's /readyz.
func (c *cluster) readyz(i int) (int, string, error) {
	resp, err := httpClient.Get(c.adminURL(i) + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// client returns a franz-go client seeded with the given nodes only,
// closed at the end of the test.
func (c *cluster) client(nodes []int, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for _, i := range nodes {
		seeds = append(seeds, c.addr(i))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// view is what one node's Metadata answer says of the cluster.
type view struct {
	controller int32
	brokers    map[int32]string // node id: host:port
	topics     map[string]topicView
}

type topicView struct {
	id       [16]byte
	internal bool
	err      int16
	leaders  []int32   // by partition
	isrs     [][]int32 // by partition
}

// view asks node i itself (not whichever broker a client would pick) for
// the metadata of every topic, once.
func (c *cluster) view(ctx context.Context, i int) (view, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kresp, err := c.seeds[i].SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return view{}, fmt.Errorf("node %d: metadata: %w", i, err)
	}
	resp := kresp.(*kmsg.MetadataResponse)
	v := view{controller: resp.ControllerID, brokers: map[int32]string{}, topics: map[string]topicView{}}
	for _, b := range resp.Brokers {
		v.brokers[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			return view{}, fmt.Errorf("node %d: metadata names a topic without a name (id %x)", i, t.TopicID)
		}
		tv := topicView{id: t.TopicID, internal: t.IsInternal, err: t.ErrorCode, leaders: make([]int32, len(t.Partitions)), isrs: make([][]int32, len(t.Partitions))}
		for _, p := range t.Partitions {
			if p.Partition < 0 || int(p.Partition) >= len(t.Partitions) {
				return view{}, fmt.Errorf("node %d: topic %s: partition %d of %d", i, *t.Topic, p.Partition, len(t.Partitions))
			}
			tv.leaders[p.Partition] = p.Leader
			tv.isrs[p.Partition] = p.ISR
		}
		v.topics[*t.Topic] = tv
	}
	return v, nil
}

// waitFor polls cond until it returns "" (done), failing the test with
// its last answer after timeout. cond says what it still waits for.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		last := cond()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// agreedController polls the given nodes until each reports the same
// ControllerID and ok accepts it, and returns it.
func (c *cluster) agreedController(ctx context.Context, nodes []int, ok func(int32) bool) int32 {
	c.t.Helper()
	var id int32
	waitFor(c.t, readyTimeout, fmt.Sprintf("nodes %v agreeing on an active controller", nodes), func() string {
		var seen []string
		ids := map[int32]bool{}
		for _, i := range nodes {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			seen = append(seen, fmt.Sprintf("node %d says %d", i, v.controller))
			ids[v.controller] = true
			id = v.controller
		}
		if len(ids) != 1 || !ok(id) {
			return strings.Join(seen, ", ")
		}
		return ""
	})
	return id
}

// logTail returns the last n lines of the file at path, each cut to a
// readable length, after the last n of its lines logged at warn or error,
// if it has any.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	// A node's last lines are often routine (ISR changes by the hundred):
	// its last warnings and errors come first, then its last lines.
	var warns, lines []string
	keep := func(to []string, line string) []string {
		if to = append(to, line); len(to) > n {
			to = slices.Delete(to, 0, 1)
		}
		return to
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 600 {
			line = line[:600] + " …"
		}
		if strings.HasPrefix(line, `{"level":"warn"`) || strings.HasPrefix(line, `{"level":"error"`) {
			warns = keep(warns, line)
		}
		lines = keep(lines, line)
	}
	if err := sc.Err(); err != nil {
		lines = append(lines, "(reading the log: "+err.Error()+")")
	}
	if len(warns) == 0 {
		return strings.Join(lines, "\n")
	}
	return "its last warnings and errors:\n" + strings.Join(warns, "\n") + "\nits last lines:\n" + strings.Join(lines, "\n")
}

// raceReport returns the race detector's first report in the log at path,
// "" if there is none.
func raceReport(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	i := strings.Index(string(b), "WARNING: DATA RACE")
	if i < 0 {
		return ""
	}
	report := string(b[i:])
	if end := strings.Index(report, "=================="); end >= 0 {
		report = report[:end]
	}
	if len(report) > 8000 {
		report = report[:8000] + "\n…"
	}
	return report
}

// metrics reads node i's admin /metrics: each sample by its name and
// labels as written, e.g. `skein_cluster_brokers{state="live"}`.
func (c *cluster) metrics(i int) (map[string]float64, error) {
	resp, err := httpClient.Get(fmt.Sprintf("http://%s:%d/metrics", c.host(i), adminPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %d: /metrics answers %s", i, resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		k := strings.LastIndexByte(line, ' ')
		if k < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[k+1:], 64); err == nil {
			m[line[:k]] = v
		}
	}
	return m, sc.Err()
}
