package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
)

// The client commands run in-process through run, against a node started
// in-process on a free loopback port, as a user's shell would run them.

// startNode starts a node with its data in a temporary directory and
// returns its Kafka address. edit, if given, changes the configuration.
func startNode(t *testing.T, edit ...func(*configs.Node)) string {
	t.Helper()
	return startNodeProcess(t, edit...).Addr().String()
}

// startNodeProcess is startNode, returning the node.
func startNodeProcess(t *testing.T, edit ...func(*configs.Node)) *node.Node {
	t.Helper()
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	cfg.LogLevel = "warn"
	// No group.initial.rebalance.delay.ms: the group commands' consumer
	// need not wait 3 s for others that never come.
	cfg.GroupInitialRebalanceDelayMs = 0
	for _, e := range edit {
		e(&cfg)
	}
	n, err := node.Start(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return n
}

// result is what a command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// skeinCmd runs `skein args...` with stdin and the brokers at addr (through
// SKEIN_BROKERS, so --brokers stays free for the tests of it). A command
// that does not return within deadline fails the test rather than hang it;
// the buffers are read only after run returned, which the channel orders.
func skeinCmd(t *testing.T, addr, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(args, environ("SKEIN_BROKERS="+addr), strings.NewReader(stdin), &stdout, &stderr)
	}()
	select {
	case code := <-done:
		return result{stdout.String(), stderr.String(), code}
	case <-time.After(deadline):
		t.Fatalf("skein %s did not return within %v", strings.Join(args, " "), deadline)
		return result{}
	}
}

// ok runs a command that must succeed and returns its stdout.
func ok(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	r := skeinCmd(t, addr, stdin, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("skein %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// fails runs a command that must fail with code and print want on stderr.
func fails(t *testing.T, addr string, code int, want, stdin string, args ...string) {
	t.Helper()
	r := skeinCmd(t, addr, stdin, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("skein %s: %v\nwant exit %d and stderr containing %q", strings.Join(args, " "), r, code, want)
	}
}

// table splits printed lines into whitespace-separated fields.
func table(s string) [][]string {
	var rows [][]string
	for line := range strings.Lines(s) {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// row returns the first row of s whose first fields are prefix.
func row(s string, prefix ...string) []string {
	for _, r := range table(s) {
		if len(r) >= len(prefix) && slices.Equal(r[:len(prefix)], prefix) {
			return r
		}
	}
	return nil
}

func lines(s string) []string { return slices.Collect(strings.Lines(s)) }

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestTopicCommands: create, list, describe, alter-config and delete, and
// the Kafka error of each one's typical mistake.
func TestTopicCommands(t *testing.T) {
	addr := startNode(t)

	out := ok(t, addr, "", "topic", "create", "orders", "-p", "3", "-c", "retention.ms=60000", "-c", "cleanup.policy=compact")
	if out != "created orders (3 partitions, replication factor 1)\n" {
		t.Errorf("create printed %q", out)
	}
	ok(t, addr, "", "topic", "create", "events")
	fails(t, addr, 1, "create topic orders: TOPIC_ALREADY_EXISTS", "", "topic", "create", "orders")
	fails(t, addr, 1, "create topic bad: INVALID_CONFIG", "", "topic", "create", "bad", "-c", "retention.ms=soon")
	fails(t, addr, 2, `config "retention.ms": want key=value`, "", "topic", "create", "bad", "-c", "retention.ms")

	out = ok(t, addr, "", "topic", "list")
	if got := table(out); len(got) != 3 || !slices.Equal(got[0], []string{"NAME", "PARTITIONS", "REPLICAS"}) ||
		!slices.Equal(got[1][:2], []string{"events", "1"}) || !slices.Equal(got[2], []string{"orders", "3", "1"}) {
		t.Errorf("topic list:\n%s", out)
	}

	// Two keyed records in partition 1, so that its high watermark is 2.
	ok(t, addr, "k:a\nk:b\n", "produce", "orders", "-p", "1", "-k", ":")
	out = ok(t, addr, "", "topic", "describe", "orders")
	if r := row(out, "PARTITIONS"); !slices.Equal(r, []string{"PARTITIONS", "3"}) {
		t.Errorf("describe: partitions row %v\n%s", r, out)
	}
	// A topic id prints as Kafka's tools print it: 16 bytes in URL-safe
	// base64 without padding.
	if r := row(out, "ID"); len(r) != 2 || len(r[1]) != 22 || strings.ContainsAny(r[1], "+/=") {
		t.Errorf("describe: id row %v\n%s", r, out)
	}
	for p, hw := range []string{"0", "2", "0"} {
		want := []string{fmt.Sprint(p), "1", "0", "[1]", "[1]", "[]", "0", hw}
		if r := row(out, fmt.Sprint(p)); !slices.Equal(r, want) {
			t.Errorf("describe: partition %d row %v, want %v\n%s", p, r, want, out)
		}
	}
	// Every partition is led by its preferred (and only) replica already.
	out = ok(t, addr, "", "topic", "elect-leaders", "orders")
	if want := "orders-0: already led as asked\norders-1: already led as asked\norders-2: already led as asked\n"; out != want {
		t.Errorf("elect-leaders printed %q, want %q", out, want)
	}
	// A reassignment to where the partition already is completes at once.
	if out = ok(t, addr, "", "topic", "reassign", "orders", "-p", "0", "--replicas", "1"); out != "orders-0: reassigning to [1]\n" {
		t.Errorf("reassign printed %q", out)
	}
	if out = ok(t, addr, "", "topic", "reassignments", "orders"); out != "no reassignment in progress\n" {
		t.Errorf("reassignments printed %q", out)
	}
	out = ok(t, addr, "", "topic", "describe", "orders")
	for _, want := range [][]string{
		{"retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG"},
		{"cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"},
		{"segment.bytes", "1073741824", "DEFAULT_CONFIG"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe: config row %v, want %v\n%s", r, want, out)
		}
	}
	fails(t, addr, 1, "describe topic nope: UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "describe", "nope")

	out = ok(t, addr, "", "topic", "alter-config", "orders", "--set", "retention.ms=120000", "--delete", "cleanup.policy")
	if out != "altered orders\n" {
		t.Errorf("alter-config printed %q", out)
	}
	out = ok(t, addr, "", "topic", "describe", "orders")
	for _, want := range [][]string{
		{"retention.ms", "120000", "DYNAMIC_TOPIC_CONFIG"},
		{"cleanup.policy", "delete", "DEFAULT_CONFIG"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("describe after alter-config: config row %v, want %v\n%s", r, want, out)
		}
	}
	fails(t, addr, 1, "alter configs of orders: INVALID_CONFIG", "", "topic", "alter-config", "orders", "--set", "retention.ms=soon")
	fails(t, addr, 1, "alter configs of nope: UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "alter-config", "nope", "--set", "retention.ms=1000")
	fails(t, addr, 2, "nothing to alter", "", "topic", "alter-config", "orders")

	out = ok(t, addr, "", "topic", "delete", "orders", "events")
	if out != "deleted orders\ndeleted events\n" {
		t.Errorf("delete printed %q", out)
	}
	if out = ok(t, addr, "", "topic", "list"); len(table(out)) != 1 {
		t.Errorf("topic list after delete:\n%s", out)
	}
	// Each topic that fails gets its own line.
	r := skeinCmd(t, addr, "", "topic", "delete", "orders", "events")
	if want := "skein: delete topic orders: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.\n" +
		"skein: delete topic events: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.\n"; r.code != 1 || r.stderr != want {
		t.Errorf("deleting deleted topics: %v\nwant stderr\n%s", r, want)
	}
}

// TestProduceConsume: lines with keys and headers go in and come back out
// through -n and a format; -e stops at the end; -p picks a partition.
func TestProduceConsume(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "lines", "-p", "2")

	out := ok(t, addr, "k1:v1\nk2:v:2\nno key\n\nlast:no newline", "produce", "lines", "-k", ":", "-H", "a=1", "-H", "b=")
	if out != "" {
		t.Errorf("produce printed %q without -v", out)
	}
	want := []string{
		"[k1] [v1] a=1,b= 2 2\n",
		"[k2] [v:2] a=1,b= 3 2\n",
		"[] [no key] a=1,b= 6 2\n",
		"[] [] a=1,b= 0 2\n",
		"[last] [no newline] a=1,b= 10 2\n",
	}
	out = ok(t, addr, "", "consume", "lines", "-n", "5", "-f", `[%k] [%v] %h %V %H\n`)
	if got := lines(out); !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("consume -n 5 printed\n%s\nwant (in any order)\n%s", out, strings.Join(want, ""))
	}
	// Records of one partition come in offset order.
	out = ok(t, addr, "", "consume", "lines", "-e", "-f", `%p %o %k\n`)
	var offsets = map[string][]string{}
	for _, r := range table(out) {
		offsets[r[0]] = append(offsets[r[0]], r[1])
	}
	if n := len(offsets["0"]) + len(offsets["1"]); n != 5 {
		t.Errorf("consume -e printed %d records, want 5:\n%s", n, out)
	}
	for p, os := range offsets {
		for i, o := range os {
			if o != fmt.Sprint(i) {
				t.Errorf("partition %s: offsets %v, want 0, 1, ...", p, os)
				break
			}
		}
	}

	out = ok(t, addr, "x\ny\n", "produce", "lines", "-p", "1", "-v")
	start := len(offsets["1"])
	if want := fmt.Sprintf("lines partition 1 offset %d\nlines partition 1 offset %d\n", start, start+1); out != want {
		t.Errorf("produce -v printed %q, want %q", out, want)
	}
	out = ok(t, addr, "", "consume", "lines", "-p", "1", "--from", fmt.Sprint(start), "--no-follow")
	if out != "x\ny\n" {
		t.Errorf("consume -p 1 --from %d printed %q", start, out)
	}
	fails(t, addr, 1, "consume lines: no partition 7: the topic has 2", "", "consume", "lines", "-p", "7", "-e")
	fails(t, addr, 1, "consume nope: UNKNOWN_TOPIC_OR_PARTITION", "", "consume", "nope", "-e")
}

// TestConsumeFollows: without -n or -e, consume prints what there is, waits
// for more, prints it as it comes, and exits 0 on SIGINT.
func TestConsumeFollows(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "follow", "-p", "1")
	ok(t, addr, "a\nb\n", "produce", "follow")

	out := newWatchedBuffer()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"consume", "follow"}, environ("SKEIN_BROKERS="+addr), strings.NewReader(""), out, &stderr)
	}()
	out.waitFor(t, "a\nb\n")
	ok(t, addr, "c\n", "produce", "follow")
	out.waitFor(t, "a\nb\nc\n")
	// NB: the consumer caught SIGINT before it connected, so the signal
	// cannot kill the test binary now that it has printed.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || stderr.String() != "" {
			t.Errorf("consume after SIGINT: exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(deadline):
		t.Fatalf("consume did not exit within %v of SIGINT", deadline)
	}
}

// watchedBuffer is a stdout that a test reads while the command writes it.
type watchedBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{} // closed and replaced at each write
}

func newWatchedBuffer() *watchedBuffer { return &watchedBuffer{changed: make(chan struct{})} }

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.b.Write(p)
}

// waitFor waits until the buffer holds exactly want, failing on anything
// else that is not a prefix of it.
func (w *watchedBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		w.mu.Lock()
		got, changed := w.b.String(), w.changed
		w.mu.Unlock()
		if got == want {
			return
		}
		if !strings.HasPrefix(want, got) {
			t.Fatalf("consume printed %q, want %q", got, want)
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("consume printed %q within %v, want %q", got, deadline, want)
		}
	}
}

// TestProduceCodecsAndAcks: every --compression and --acks setting gives
// records that read back as produced.
func TestProduceCodecsAndAcks(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "codecs", "-p", "1")
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		for _, acks := range []string{"all", "1"} {
			v := codec + " acks=" + acks
			ok(t, addr, v+"\n"+v+" again\n", "produce", "codecs", "--compression", codec, "--acks", acks)
			want = append(want, v+"\n", v+" again\n")
		}
	}
	// acks=0 last: nothing orders it before a later command, so the
	// consumer below waits for it with -n rather than stopping with -e.
	ok(t, addr, "no acks\n", "produce", "codecs", "--acks", "0", "-z", "zstd")
	want = append(want, "no acks\n")
	out := ok(t, addr, "", "consume", "codecs", "-n", fmt.Sprint(len(want)))
	if !slices.Equal(lines(out), want) {
		t.Errorf("consume printed\n%s\nwant\n%s", out, strings.Join(want, ""))
	}
	fails(t, addr, 2, `--acks "2": want 0, 1 or all`, "", "produce", "codecs", "--acks", "2")
	fails(t, addr, 2, `--compression "brotli"`, "", "produce", "codecs", "--compression", "brotli")
	fails(t, addr, 2, `header "a": want key=value`, "", "produce", "codecs", "-H", "a")
}

// TestConsumeFrom: --from a time (unix ms or RFC 3339, through ListOffsets by
// timestamp), an offset, an offset before the end, and the end.
func TestConsumeFrom(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "timed", "-p", "1")
	// Records a minute apart, with timestamps set by the producer.
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("timed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 6 {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	mid := base.Add(150 * time.Second) // between r2 and r3
	for _, tc := range []struct {
		from string
		want string
	}{
		{"@" + fmt.Sprint(mid.UnixMilli()), "r3 r4 r5"},
		{mid.Format(time.RFC3339), "r3 r4 r5"},
		{"@" + mid.UTC().Format(time.RFC3339Nano), "r3 r4 r5"},
		{"@" + fmt.Sprint(base.Add(time.Minute).UnixMilli()), "r1 r2 r3 r4 r5"}, // at a record's own time
		{"@" + fmt.Sprint(base.Add(time.Hour).UnixMilli()), ""},                 // after every record: the end
		{"beginning", "r0 r1 r2 r3 r4 r5"},
		{"4", "r4 r5"},
		{"6", ""},
		{"-2", "r4 r5"},
		{"-10", "r0 r1 r2 r3 r4 r5"},
		{"end", ""},
	} {
		out := ok(t, addr, "", "consume", "timed", "--from", tc.from, "-e", "-f", `%v `)
		if got := strings.TrimSpace(out); got != tc.want {
			t.Errorf("--from %s: %q, want %q", tc.from, got, tc.want)
		}
	}
	out := ok(t, addr, "", "consume", "timed", "--from", "@"+fmt.Sprint(mid.UnixMilli()), "-n", "1", "-f", `%o %d %v\n`)
	if want := fmt.Sprintf("3 %d r3\n", base.Add(3*time.Minute).UnixMilli()); out != want {
		t.Errorf("-f %%o %%d %%v: %q, want %q", out, want)
	}
	fails(t, addr, 1, "offset 7 is out of range: the partition holds offsets 0 up to its end 6", "", "consume", "timed", "--from", "7", "-e")
	fails(t, addr, 2, `--from "yesterday"`, "", "consume", "timed", "--from", "yesterday")
	fails(t, addr, 2, "unknown verb %x", "", "consume", "timed", "-f", "%x")
}

// TestProduceMissingTopic: with auto.create.topics.enable off, producing to
// a missing topic fails with the broker's error; with it on (the default,
// in the other tests) the topic is created.
func TestProduceMissingTopic(t *testing.T) {
	addr := startNode(t, func(c *configs.Node) { c.AutoCreateTopicsEnable = false })
	fails(t, addr, 1, "1 of 1 records failed; the first: produce to missing: UNKNOWN_TOPIC_OR_PARTITION", "x\n", "produce", "missing")
	if out := ok(t, addr, "", "topic", "list"); len(table(out)) != 1 {
		t.Errorf("topic list after a refused produce:\n%s", out)
	}

	addr = startNode(t)
	ok(t, addr, "x\n", "produce", "created")
	if r := row(ok(t, addr, "", "topic", "list"), "created"); r == nil {
		t.Errorf("produce with auto.create.topics.enable did not create the topic")
	}
}

// TestNoBroker: with no broker at --brokers, a command fails at once with the
// dial error; with a listener that never answers, it fails after --timeout
// instead of hanging.
func TestNoBroker(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "list", "--brokers", "127.0.0.1:1"},
		{"cluster", "info", "--brokers", "127.0.0.1:1"},
		{"consume", "t", "--brokers", "127.0.0.1:1"},
		{"produce", "t", "--brokers", "127.0.0.1:1"},
	} {
		start := time.Now()
		fails(t, "", 1, "skein: no broker answered at 127.0.0.1:1: unable to dial: dial tcp 127.0.0.1:1: connect: connection refused", "x\n", args...)
		// NB: the contract is a failure within --timeout (default 10 s),
		// not a speed: a refused connection must not be retried.
		if elapsed := time.Since(start); elapsed > defaultTimeout {
			t.Errorf("skein %s took %v, more than --timeout", strings.Join(args, " "), elapsed)
		}
	}
	// SKEIN_BROKERS is the default of --brokers.
	fails(t, "127.0.0.1:1", 1, "no broker answered at 127.0.0.1:1:", "", "topic", "list")

	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	fails(t, "", 1, "no broker answered at "+ln.Addr().String()+" within --timeout 300ms: ", "",
		"topic", "list", "--brokers", ln.Addr().String(), "--timeout", "300ms")
	fails(t, "", 2, "--brokers is empty", "", "topic", "list", "--brokers", ",")
}

// TestClusterInfo: the cluster id, the controller, the nodes and the
// quorum.
func TestClusterInfo(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "a")
	ok(t, addr, "", "topic", "create", "b")
	out := ok(t, addr, "", "cluster", "info")
	_, port, _ := net.SplitHostPort(addr)
	if r := row(out, "CLUSTER"); len(r) != 2 || r[1] == "" {
		t.Errorf("no cluster id:\n%s", out)
	}
	for _, want := range [][]string{{"CONTROLLER", "1"}, {"TOPICS", "2", "(0", "internal)"}, {"1*", "broker,controller", "127.0.0.1", port, "live"}} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("row %v, want %v:\n%s", r, want, out)
		}
	}
	// The one voter leads, holds every committed entry (the cluster id,
	// its registration, two topics: at least 4) and lags by none.
	q := row(out, "QUORUM")
	hw, _ := strconv.Atoi(q[len(q)-1])
	if len(q) != 8 || q[2] != "1," || hw < 4 {
		t.Errorf("quorum row %v:\n%s", q, out)
	}
	if v := row(out, "1"); len(v) < 4 || v[1] != strconv.Itoa(hw) || v[2] != "0" {
		t.Errorf("voter row %v, want log end %d, lag 0:\n%s", v, hw, out)
	}
}
