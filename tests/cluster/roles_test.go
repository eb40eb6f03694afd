package cluster

import (
	"context"
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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/history"
)

// splitCluster is six `skein node` processes on 127.0.20.1-6: nodes 1-3
// with --roles controller (the voters), 4-6 with --roles broker. The
// three-node harness (cluster) has a fixed size; this one is small and
// does only what TestControllerAndBrokerProcesses needs.
type splitCluster struct {
	t     *testing.T
	dir   string
	procs [7]*exec.Cmd
	exits [7]chan struct{}
}

func splitHost(i int) string { return "127.0.20." + strconv.Itoa(i) }

func (s *splitCluster) addr(i int) string { return splitHost(i) + ":9092" }

func (s *splitCluster) logPath(i int) string {
	return filepath.Join(s.dir, fmt.Sprintf("node%d.log", i))
}

func newSplitCluster(t *testing.T) *splitCluster {
	s := &splitCluster{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		for i := 1; i <= 6; i++ {
			if s.procs[i] != nil {
				s.procs[i].Process.Kill()
				<-s.exits[i]
			}
			if race := raceReport(s.logPath(i)); race != "" {
				t.Errorf("node %d: the race detector reported:\n%s", i, race)
			}
			if t.Failed() {
				t.Logf("node %d, the end of its log:\n%s", i, logTail(s.logPath(i), 30))
			}
		}
	})
	return s
}

// start runs node i with the data of its earlier runs.
func (s *splitCluster) start(i int) {
	s.t.Helper()
	role := "controller"
	if i > 3 {
		role = "broker"
	}
	var voters []string
	for v := 1; v <= 3; v++ {
		voters = append(voters, fmt.Sprintf("%d@%s:9093", v, splitHost(v)))
	}
	logf, err := os.OpenFile(s.logPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(skeinBin, "node", "--node-id", strconv.Itoa(i), "--roles", role,
		"--data-dir", filepath.Join(s.dir, fmt.Sprintf("data%d", i)),
		"--listen", s.addr(i), "--admin-listen", splitHost(i)+":9644",
		"--controller-quorum", strings.Join(voters, ","), "--cluster-listen", splitHost(i)+":9093",
		"--log-format", "json",
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "broker.heartbeat.interval.ms=200", "--set", "broker.session.timeout.ms=2000")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.procs[i], s.exits[i] = cmd, exited
}

// stop stops node i gracefully (SIGTERM) and waits for it to exit.
func (s *splitCluster) stop(i int) {
	s.t.Helper()
	s.procs[i].Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exits[i]:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("node %d did not stop", i)
	}
	s.procs[i] = nil
}

// readyz returns node i's /readyz status and body.
func (s *splitCluster) readyz(i int) (int, string) {
	res, err := http.Get("http://" + splitHost(i) + ":9644/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (s *splitCluster) waitReady(i int) {
	s.t.Helper()
	waitFor(s.t, readyTimeout, fmt.Sprintf("node %d ready", i), func() string {
		if code, body := s.readyz(i); code != http.StatusOK {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
}

// metadataOf asks node i itself (not whichever broker a client picks) for
// the cluster's metadata.
func (s *splitCluster) metadataOf(ctx context.Context, i int) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr(i)))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	r, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.MetadataResponse), nil
}

func brokersOf(m *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// Three controller-only and three broker-only processes: clients see the
// brokers only; a topic of replication factor 3 takes acks=all produces
// and a group consumes it with commits while a broker and a controller
// are stopped and after they come back; a broker restarted while every
// controller is down serves Metadata from the image it kept on disk; and
// the history of what was produced, consumed and committed holds.
func TestControllerAndBrokerProcesses(t *testing.T) {
	s := newSplitCluster(t)
	for i := 1; i <= 6; i++ {
		s.start(i)
	}
	for i := 1; i <= 6; i++ {
		s.waitReady(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for i := 4; i <= 6; i++ {
		m, err := s.metadataOf(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if got := brokersOf(m); !slices.Equal(got, []int32{4, 5, 6}) {
			t.Fatalf("broker %d lists brokers %v, want [4 5 6]", i, got)
		}
	}
	seeds := []string{s.addr(4), s.addr(5), s.addr(6)}
	admc, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admc.Close()
	adm := kadm.NewClient(admc)
	const topic = "split"
	if r, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, r.Err)
	}

	h := history.New()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	consume := func(n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for got := 0; got < n; {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the group consumed %d of %d records: %v", got, n, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				h.Consumed(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
				got++
			})
			offsets := cl.UncommittedOffsets()
			if err := cl.CommitUncommittedOffsets(ctx); err == nil {
				for tp, ps := range offsets {
					for p, o := range ps {
						h.Committed(history.TP{Topic: tp, Partition: p}, o.Offset)
					}
				}
			}
		}
	}

	produceN(t, prod, h, 0, 300)
	consume(300)

	// A broker and a controller stop; the others go on.
	s.stop(4)
	s.stop(1)
	produceN(t, prod, h, 1, 300)
	consume(300)
	s.start(1)
	s.start(4)
	s.waitReady(1)
	s.waitReady(4)
	produceN(t, prod, h, 2, 300)
	consume(300)

	// Every controller down, then broker 4 restarted: it serves Metadata
	// from its image on disk, and its /readyz says there is no quorum.
	s.stop(4)
	for i := 1; i <= 3; i++ {
		s.stop(i)
	}
	s.start(4)
	waitFor(t, readyTimeout, "broker 4's Metadata with every controller down", func() string {
		m, err := s.metadataOf(ctx, 4)
		if err != nil {
			return err.Error()
		}
		if len(m.Topics) == 0 {
			return "no topics"
		}
		for _, tp := range m.Topics {
			if *tp.Topic == topic && len(tp.Partitions) == 3 && !slices.ContainsFunc(brokersOf(m), func(id int32) bool { return id <= 3 }) {
				return ""
			}
		}
		return fmt.Sprintf("brokers %v, %d topics", brokersOf(m), len(m.Topics))
	})
	if code, body := s.readyz(4); code != http.StatusServiceUnavailable || !strings.Contains(body, "no quorum") {
		t.Fatalf("broker 4's /readyz with every controller down: %d %s", code, body)
	}
	for i := 1; i <= 3; i++ {
		s.start(i)
	}
	for i := 1; i <= 4; i++ {
		s.waitReady(i)
	}
	produceN(t, prod, h, 3, 300)
	consume(300)

	// Read every partition back and check the history.
	readers, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer readers.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	for left := true; left; {
		left = false
		ends.Each(func(o kadm.ListedOffset) {
			if next[o.Partition] < o.Offset {
				left = true
			}
		})
		if !left {
			break
		}
		fs := readers.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			h.Read(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
			next[r.Partition] = r.Offset + 1
		})
	}
	if v := h.Check(); !v.OK() {
		t.Fatalf("history: %v", v)
	}
}
