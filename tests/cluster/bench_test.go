package cluster

// Benchmarks of metadata commands through the controller quorum: how long a
// CreateTopics takes (one raft entry, fsync'd on a majority of the three
// nodes, applied on the node asked) and how long the cluster takes to
// acknowledge one again after its active controller is killed with SIGKILL.
// They run only with -bench, and mean something only without -race (under
// -race TestMain builds race-instrumented nodes, so they skip):
//
//	go test -run '^$' -bench CreateTopics -benchtime 200x ./tests/cluster/
//	go test -run '^$' -bench ControllerFailover -benchtime 5x ./tests/cluster/
//
// The benchmarks use the harness's cluster, its nodes on 127.0.0.21, .22
// and .23 or, when one of those is taken, the first free set of .31 to .33,
// ..., .91 to .93; never on the addresses of the tests that run beside the
// package's other tests (.11 to .13, and .101 to .193, set by set). So a
// benchmark runs beside most tests of this package (the fencing and groups
// tests take .31 and .41 when the benchmarks are not there first), and
// beside another run of itself, without two clusters taking each other's
// addresses or talking to each other (the figures then show the busy
// machine).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchTopicSeq numbers the topics the benchmarks create, so that every
// name is new however often the benchmark functions are called.
var benchTopicSeq atomic.Int64

func benchTopic(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, benchTopicSeq.Add(1))
}

// benchSetFirst to benchSetLast are the address sets a benchCluster may
// take: set k puts node i on 127.0.0.<k><i>.
const benchSetFirst, benchSetLast = 2, 9

// newBenchCluster is the harness's cluster, its nodes given flags, on the
// first address set whose every address is free now (node i on
// 127.0.0.<set><i>), and that set.
// Another run may take the set before the nodes do: a node then fails to
// listen, exits, and waitReady says so.
func newBenchCluster(tb testing.TB, flags ...string) (*cluster, int) {
	tb.Helper()
	if raceEnabled {
		tb.Skip("the nodes are race-instrumented under -race: run the benchmarks without it")
	}
	set := 0
	host := func(set, i int) string { return fmt.Sprintf("127.0.0.%d%d", set, i) }
	for s := benchSetFirst; s <= benchSetLast && set == 0; s++ {
		set = s
		for i := 1; i <= numNodes && set != 0; i++ {
			for _, port := range []int{kafkaPort, clusterPort, adminPort} {
				ln, err := net.Listen("tcp", net.JoinHostPort(host(s, i), strconv.Itoa(port)))
				if err != nil {
					set = 0
					break
				}
				ln.Close()
			}
		}
	}
	if set == 0 {
		tb.Fatalf("every address set 127.0.0.%d1 to 127.0.0.%d3 is taken: are other runs of the benchmarks going on?", benchSetFirst, benchSetLast)
	}
	c := newClusterIn(tb, layout{host: func(i int) string { return host(set, i) }, flags: flags,
		nodeFlags: func(i int) []string {
			if d := os.Getenv("PROFDIR"); d != "" {
				return []string{"--cpuprofile", fmt.Sprintf("%s/node%d.prof", d, i)}
			}
			return nil
		}})
	// Runs before the harness's cleanup (last in, first out), with every
	// node's log still there.
	tb.Cleanup(func() {
		for i := 1; i <= numNodes; i++ {
			if d := benchLogDigest(c.nodes[i].logPath); d != "" {
				tb.Logf("node %d logged (%d runs):\n%s", i, c.nodes[i].runs, d)
			}
		}
	})
	return c, set
}

// pinnedTo is node i itself, for requests kgo would otherwise route (an
// admin request goes to the active controller).
func (c *cluster) pinnedTo(i int) *kgo.Broker { return c.seeds[i].SeedBrokers()[0] }

// metadata asks node i itself for its active controller and brokers.
func (c *cluster) metadata(i int) (controller int32, brokers int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none: brokers and controller only
	kresp, err := c.pinnedTo(i).Request(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	resp := kresp.(*kmsg.MetadataResponse)
	return resp.ControllerID, len(resp.Brokers), nil
}

// steady waits until every running node names the same active controller
// (Metadata's ControllerID), one of the running nodes, lists numNodes live
// brokers in its image and has its own broker registered (it heartbeats);
// it returns the controller and its raft term.
func (c *cluster) steady() (controller int, term float64) {
	c.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		var last []string
		ids := map[int32]bool{}
		ok := true
		var id int32
		for i := 1; i <= numNodes; i++ {
			if !c.nodes[i].running() {
				continue
			}
			ctl, _, err := c.metadata(i)
			var m map[string]float64
			if err == nil {
				m, err = c.metrics(i)
			}
			if err != nil {
				last = append(last, fmt.Sprintf("node %d: %v", i, err))
				ok = false
				continue
			}
			live, beats := m[`skein_cluster_brokers{state="live"}`], m["skein_broker_heartbeats_sent_total"]
			last = append(last, fmt.Sprintf("node %d: controller %d, %v live brokers, %v heartbeats sent", i, ctl, live, beats))
			ok = ok && live == numNodes && beats > 0
			ids[ctl], id = true, ctl
			term = max(term, m["skein_quorum_term"])
		}
		if ok && len(ids) == 1 && id > 0 && int(id) <= numNodes && c.nodes[id].running() {
			return int(id), term
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no steady quorum within %v: %s", readyTimeout, strings.Join(last, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchCreateTopic sends one CreateTopics of one topic (one partition, one
// replica) to br, and returns the topic's error, if any, as a kerr error.
func benchCreateTopic(ctx context.Context, br *kgo.Broker, name string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
	req.Topics = append(req.Topics, t)
	kresp, err := br.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != name {
		return fmt.Errorf("CreateTopics %s: answered for %d topics", name, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		return fmt.Errorf("CreateTopics %s: %w (%s)", name, err, msg)
	}
	return nil
}

// benchCreateOffClock is benchCreateTopic for the work off the clock: a
// connection broken by an earlier run of the node (kgo does not resend a
// broker's request) is retried, for up to a minute.
func benchCreateOffClock(tb testing.TB, br *kgo.Broker, name string) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := benchCreateTopic(ctx, br, name)
		cancel()
		var ke *kerr.Error
		switch {
		case err == nil:
			return
		case errors.As(err, &ke), time.Now().After(deadline):
			tb.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchDeleteTopics deletes the named topics, 100 to a request, through kadm
// (so at the active controller).
func benchDeleteTopics(tb testing.TB, adm *kadm.Client, names []string) {
	tb.Helper()
	for len(names) > 0 {
		n := min(len(names), 100)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resps, err := adm.DeleteTopics(ctx, names[:n]...)
		cancel()
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			tb.Fatalf("deleting %d benchmark topics: %v", n, err)
		}
		names = names[n:]
	}
}

// benchPercentile is the q-th quantile (0 < q ≤ 1) of sorted, nearest rank.
func benchPercentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func benchMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkCreateTopics: CreateTopics of one topic (one partition, one
// replica) at a time, each a command the active controller decides and
// commits as one raft entry (fsync'd on a majority) and the node asked
// applies before it answers.
//
//   - forwarded: sent to a node that is not the active controller, which
//     forwards it over remoting and answers once it has applied the entry.
//   - controller: sent to the active controller's node.
//   - kadm: kadm's CreateTopic through a client seeded with a node that is
//     not the active controller. kgo sends admin requests to the controller
//     its metadata names, so this is the controller case through kadm, not
//     a forwarded one.
//   - forwarded-8clients, controller-8clients: 8 clients at once, each with
//     a connection of its own and one request in flight; the forwarded
//     ones alternate between the two other nodes.
//
// Metrics: p50-ms, p99-ms and max-ms of one command's latency, cmds/s
// acknowledged. Each sub-benchmark deletes its topics after its timed loop.
func BenchmarkCreateTopics(b *testing.B) {
	c, set := newBenchCluster(b)
	c.startAll()
	active, _ := c.steady()
	var others []int
	for i := 1; i <= numNodes; i++ {
		if i != active {
			others = append(others, i)
		}
	}
	b.Logf("nodes on 127.0.0.%d1-%d3; active controller: node %d; forwarded through nodes %v", set, set, active, others)

	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(others[0])))
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	for _, bc := range []struct {
		name    string
		nodes   []int // the clients' nodes, round robin; nil: kadm
		clients int
	}{
		{"forwarded", others, 1},
		{"controller", []int{active}, 1},
		{"kadm", nil, 1},
		{"forwarded-8clients", others, 8},
		{"controller-8clients", []int{active}, 8},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if got, _ := c.steady(); got != active {
				b.Fatalf("the active controller moved from node %d to %d", active, got)
			}
			senders := make([]func(context.Context, string) error, bc.clients)
			for k := range senders {
				if bc.nodes == nil {
					senders[k] = func(ctx context.Context, name string) error {
						r, err := adm.CreateTopic(ctx, 1, 1, nil, name)
						if err == nil {
							err = r.Err
						}
						return err
					}
					continue
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(bc.nodes[k%len(bc.nodes)])))
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				br := cl.SeedBrokers()[0]
				senders[k] = func(ctx context.Context, name string) error { return benchCreateTopic(ctx, br, name) }
			}
			// Each connection's first request (and ApiVersions) off the
			// clock.
			var names []string
			for _, send := range senders {
				name := benchTopic("bench-warm")
				if err := send(context.Background(), name); err != nil {
					b.Fatal(err)
				}
				names = append(names, name)
			}
			lat := make([]time.Duration, b.N)
			errs := make([]error, bc.clients)
			created := make([][]string, bc.clients)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for k, send := range senders {
				wg.Go(func() {
					for {
						op := int(next.Add(1)) - 1
						if op >= b.N {
							return
						}
						name := benchTopic("bench")
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						start := time.Now()
						err := send(ctx, name)
						lat[op] = time.Since(start)
						cancel()
						if err != nil {
							errs[k] = err
							return
						}
						created[k] = append(created[k], name)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(benchMs(benchPercentile(lat, 0.50)), "p50-ms")
			b.ReportMetric(benchMs(benchPercentile(lat, 0.99)), "p99-ms")
			b.ReportMetric(benchMs(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
			for _, cs := range created {
				names = append(names, cs...)
			}
			benchDeleteTopics(b, adm, names)
		})
	}
}

// BenchmarkControllerFailover: each iteration kills the active controller
// with SIGKILL and times, from the kill, until a CreateTopics sent to a
// surviving node (sent again after any error) is acknowledged: the
// survivors' election plus one command. Off the clock, the killed node is
// restarted and waited for (ready, its broker registered again, every node
// naming the same controller, one command through it) before the next
// iteration.
//
// Metrics: p50-ms, max-ms and min-ms of the failover time; retries/op, the
// CreateTopics answered with an error (or not at all) before the one
// acknowledged; terms/op, how far the raft term moved per failover (1 when
// the first election after the kill wins).
func BenchmarkControllerFailover(b *testing.B) {
	c, _ := newBenchCluster(b)
	c.startAll()
	c.steady()
	b.Run("kill9-active", func(b *testing.B) {
		took := make([]time.Duration, 0, b.N)
		var retries, terms float64
		var seen []string
		b.StopTimer()
		b.ResetTimer()
		for range b.N {
			active, term := c.steady()
			survivor := active%numNodes + 1
			// The connection to the survivor is up before the clock starts.
			benchCreateOffClock(b, c.pinnedTo(survivor), benchTopic("failover-warm"))
			name := benchTopic("failover")
			b.StartTimer()
			start := time.Now()
			c.kill(active)
			var errs []string
			for try := 0; ; try++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := benchCreateTopic(ctx, c.pinnedTo(survivor), name)
				cancel()
				if err == nil || (try > 0 && errors.Is(err, kerr.TopicAlreadyExists)) {
					break // acknowledged, or applied by an earlier try
				}
				retries++
				errs = append(errs, fmt.Sprintf("%.0fms: %v", benchMs(time.Since(start)), err))
				if time.Since(start) > 2*time.Minute {
					b.Fatalf("no CreateTopics acknowledged within 2 min of killing node %d: %s", active, strings.Join(errs, "; "))
				}
				time.Sleep(20 * time.Millisecond)
			}
			d := time.Since(start)
			b.StopTimer()
			took = append(took, d)

			c.start(active)
			c.waitReady(active)
			next, newTerm := c.steady()
			terms += newTerm - term
			seen = append(seen, fmt.Sprintf("%d→%d %.0fms (term +%.0f, %d errors%s)", active, next, benchMs(d), newTerm-term, len(errs), strings.Join(append([]string{""}, errs...), "; ")))
			benchCreateOffClock(b, c.pinnedTo(active), benchTopic("failover-back"))
		}
		slices.Sort(took)
		b.ReportMetric(benchMs(benchPercentile(took, 0.50)), "p50-ms")
		b.ReportMetric(benchMs(took[len(took)-1]), "max-ms")
		b.ReportMetric(benchMs(took[0]), "min-ms")
		b.ReportMetric(retries/float64(b.N), "retries/op")
		b.ReportMetric(terms/float64(b.N), "terms/op")
		b.Logf("N=%d failovers (killed→new controller): %s", b.N, strings.Join(seen, ", "))
	})
}

// benchLogDigest summarizes a node's log: its lines above info, counted
// by level, message and fields (but time and the actor system's id), most
// frequent first, and lines that are not JSON (beside the harness's own);
// "" when there are none.
func benchLogDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "=== harness:") || strings.TrimSpace(line) == "" {
			continue
		}
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			if len(line) > 200 {
				line = line[:200] + " …"
			}
			counts["(not JSON) "+line]++
			continue
		}
		level, _ := e["level"].(string)
		switch level {
		case "debug", "info", "trace":
			continue
		}
		key := fmt.Sprintf("%s: %v", level, e["message"])
		var fields []string
		for k, v := range e {
			switch k {
			case "level", "message", "time", "actor_system":
				continue
			}
			text := fmt.Sprint(v)
			if len(text) > 100 {
				text = text[:100] + " …"
			}
			fields = append(fields, k+"="+text)
		}
		slices.Sort(fields)
		if len(fields) > 0 {
			key += " (" + strings.Join(fields, " ") + ")"
		}
		counts[key]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var out strings.Builder
	for i, k := range keys {
		if i == 15 {
			fmt.Fprintf(&out, "  … and %d more kinds\n", len(keys)-i)
			break
		}
		fmt.Fprintf(&out, "  %5d × %s\n", counts[k], k)
	}
	return strings.TrimRight(out.String(), "\n")
}
