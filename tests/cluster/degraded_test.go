package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

// skeinRun is what a `skein` client command printed and its exit code.
type skeinRun struct {
	stdout, stderr string
	code           int
}

func (r skeinRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// skein runs the skein binary with args and stdin. A command that has not
// ended within a minute is killed and fails the test: every client command
// must end within its timeouts, which the tests set to seconds.
func skein(t *testing.T, stdin string, args ...string) skeinRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("skein %s did not end within a minute; killed\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), &stdout, &stderr)
	}
	r := skeinRun{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("skein %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// A cluster losing its nodes one by one, as its users see it through the
// skein command line and /readyz:
//
//   - one of three brokers killed and not yet fenced: topic describe shows
//     every partition, the offsets of those it leads marked as not read,
//     and exits 1;
//   - fenced, below a topic's min.insync.replicas: an acks=all produce
//     gives up after --delivery-timeout with the leader's
//     NOT_ENOUGH_REPLICAS, the in-sync replicas and min.insync.replicas;
//   - two of three killed, no quorum: /readyz answers 503 saying so, an
//     acks=all produce gives up with the leader's REQUEST_TIMED_OUT (the
//     dead follower is still in the ISR: no controller shrinks it), cluster
//     info says there is no quorum and how old its view is, a command
//     that needs the controller says what to check, and InitProducerId
//     past the node's block of ids is answered COORDINATOR_LOAD_IN_PROGRESS.
func TestDegradedCluster(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.3.1%d", i) },
		// NB: long enough for the describe below to run before the
		// killed broker is fenced.
		flags: []string{"--set", "broker.session.timeout.ms=6000", "--set", "broker.heartbeat.interval.ms=500"}})
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// d has a partition led by each broker; m needs all three replicas in
	// sync; u one.
	create := func(name string, configs map[string]*string, assignments ...[]int32) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for p, replicas := range assignments {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(p), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		for k, v := range configs {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, v
			rt.Configs = append(rt.Configs, cfg)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c.seeds[1])
		if err == nil && resp.Topics[0].ErrorCode != 0 {
			err = fmt.Errorf("error code %d", resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	all := "3"
	create("d", nil, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2})
	create("m", map[string]*string{"min.insync.replicas": &all}, []int32{1, 2, 3})
	create("u", nil, []int32{1, 2, 3})
	// A record in each partition, acknowledged by all three replicas.
	pcl := c.client([]int{1, 2, 3}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"d", 0}, {"d", 1}, {"d", 2}, {"m", 0}, {"u", 0}} {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: tp.topic, Partition: tp.p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", tp.topic, tp.p, err)
		}
	}
	// Node 1 gets its block of producer ids now, while the controller can
	// give it one: the producers below ask it for an id without a quorum.
	// NB: to node 1 itself: kgo sends an InitProducerId to any broker.
	init := kmsg.NewPtrInitProducerIDRequest()
	if _, err := init.RequestWith(ctx, c.seeds[1].Broker(1)); err != nil {
		t.Fatal(err)
	}
	brokers := fmt.Sprintf("--brokers=%s,%s", c.addr(1), c.addr(2))

	// Node 3 down, not yet fenced: d-2 is led by it.
	c.kill(3)
	r := skein(t, "", "topic", "describe", "d", brokers, "--timeout=5s")
	rows := map[string][]string{}
	for line := range strings.Lines(r.stdout) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, "the offsets of 1 of 3 partitions could not be read: their leaders did not answer") ||
		len(rows["0"]) != 8 || rows["0"][7] != "1" || len(rows["1"]) != 8 || rows["1"][7] != "1" ||
		len(rows["2"]) < 9 || rows["2"][1] != "3" || rows["2"][6] != "-" || rows["2"][7] != "-" ||
		!strings.Contains(r.stdout, "broker 3 did not answer ListOffsets") || rows["CONFIG"] == nil {
		t.Errorf("topic describe d with node 3 down: %v\nwant every partition, d-2's offsets marked as not read, its configs, exit 1", r)
	}

	// Fenced: m-0's ISR shrinks to [1,2], below its min.insync.replicas.
	waitFor(t, readyTimeout, "m-0's ISR without node 3", func() string {
		if isr := c.isr(t, ctx, 1, "m"); !slices.Equal(isr, []int32{1, 2}) {
			return fmt.Sprintf("ISR %v", isr)
		}
		return ""
	})
	r = skein(t, "x\n", "produce", "m", "-p", "0", "--brokers="+c.addr(1), "--timeout=2s", "--delivery-timeout=3s")
	if r.code != 1 || !strings.Contains(r.stderr, "produce to m-0: gave up after 3s (--delivery-timeout): NOT_ENOUGH_REPLICAS from broker 1 (the leader of m-0 is 1, in-sync replicas [") ||
		!strings.Contains(r.stderr, "of [1,2,3], min.insync.replicas 3)") {
		t.Errorf("acks=all produce below min.insync.replicas: %v", r)
	}

	// Node 2 down too: no quorum.
	waitFor(t, readyTimeout, "u-0's ISR without node 3", func() string {
		if isr := c.isr(t, ctx, 1, "u"); !slices.Equal(isr, []int32{1, 2}) {
			return fmt.Sprintf("ISR %v", isr)
		}
		return ""
	})
	c.kill(2)
	waitFor(t, readyTimeout, "node 1's /readyz saying it has no quorum", func() string {
		code, body, err := c.readyz(1)
		if err != nil || code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "no quorum: this node has known no active controller for ") ||
			!strings.Contains(body, "is a majority of controller.quorum.voters running and reachable?") {
			return fmt.Sprintf("%d %q %v", code, body, err)
		}
		return ""
	})
	// NB: the producer's InitProducerId goes to any broker kgo knows, and
	// the metadata still lists the dead ones: it may give up on its id
	// (kgo fails the records when it cannot dial the broker it chose)
	// before it reaches node 1; either way the command says why.
	r = skein(t, "x\n", "produce", "u", "-p", "0", "--brokers="+c.addr(1), "--timeout=2s", "--delivery-timeout=3s")
	if r.code != 1 || !strings.Contains(r.stderr, "produce to u-0: gave up after 3s (--delivery-timeout): REQUEST_TIMED_OUT from broker 1 (the leader of u-0 is 1, in-sync replicas [") &&
		!strings.Contains(r.stderr, "produce to u-0: gave up waiting for a producer id (InitProducerId: ") {
		t.Errorf("acks=all produce with an in-sync follower down and no quorum: %v", r)
	}
	// Node 1's block of producer ids used up, the next InitProducerId is
	// answered at once, retriable, instead of waiting for a controller
	// that is not there (it held every InitProducerId of the node for 30 s).
	refused := false
	for i := 1; i <= controller.ProducerIDBlockSize+1 && !refused; i++ {
		ictx, icancel := context.WithTimeout(ctx, 10*time.Second)
		// NB: to node 1 itself: kgo sends an InitProducerId to any broker
		// it knows, dead ones too.
		resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ictx, c.seeds[1].Broker(1))
		icancel()
		if err != nil {
			t.Fatalf("InitProducerId %d without quorum: %v", i, err)
		}
		if resp.ErrorCode != 0 {
			if err := kerr.ErrorForCode(resp.ErrorCode); err != kerr.CoordinatorLoadInProgress {
				t.Fatalf("InitProducerId %d without quorum: %v, want COORDINATOR_LOAD_IN_PROGRESS once the block is used up", i, err)
			}
			refused = true
		}
	}
	if !refused {
		t.Errorf("without quorum node 1 gave more producer ids than a block holds (%d)", controller.ProducerIDBlockSize)
	}
	r = skein(t, "", "cluster", "info", "--brokers="+c.addr(1), "--timeout=5s")
	if r.code != 1 || !strings.Contains(r.stdout, "CONTROLLER  none: no quorum") || !strings.Contains(r.stdout, "LAST-KNOWN-STATE") ||
		!strings.Contains(r.stdout, "QUORUM      none: node 1 has known no active controller for ") ||
		!strings.Contains(r.stdout, "and its metadata is as of then") || !strings.Contains(r.stderr, "the cluster has no quorum") {
		t.Errorf("cluster info without quorum: %v", r)
	}
	if row := rowOf(r.stdout, "2"); len(row) < 2 || row[1] != "broker,controller" {
		t.Errorf("cluster info without quorum: node 2's row %v, want its roles as a voter: %v", row, r)
	}
	// NB: a --timeout long enough for kgo to find the live broker among
	// the dead ones the metadata still lists.
	r = skein(t, "", "topic", "elect-leaders", "d", "-p", "2", "--brokers="+c.addr(1), "--timeout=10s")
	if r.code != 1 || !strings.Contains(r.stderr, "controller broker is not available: the cluster has no active controller (no quorum): is a majority of controller.quorum.voters running and reachable?") {
		t.Errorf("elect-leaders without quorum: %v\nwant the hint", r)
	}
}

// rowOf returns the fields of the first line of s whose first field is
// first.
func rowOf(s, first string) []string {
	for line := range strings.Lines(s) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	return nil
}
