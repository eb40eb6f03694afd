package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/history"
)

// Config is a run: a scenario's faults against a cluster under a checked
// workload.
type Config struct {
	Scenario string
	// Duration is how long faults are applied (the workload runs a little
	// longer: it starts before and is checked after the heal).
	Duration time.Duration
	// Seed makes the faults' choices (which node, when) repeatable.
	Seed uint64
	// Nodes is the size of the local cluster the run starts (default: the
	// scenario's, 3 for most), Hosts their addresses (node i on Hosts[i-1],
	// extra ones unused; default 127.0.0.1i), Binary the skein binary they run (default this
	// executable), Dir where they keep data and logs (default a temporary
	// directory, removed after a run that holds), Settings more --set k=v
	// for every node.
	Nodes    int
	Hosts    []string
	Binary   string
	Dir      string
	Settings []string
	// Brokers and Admin name an existing cluster instead (Kafka and admin
	// addresses, one admin address per node); scenarios that kill, pause
	// or restart nodes need a local cluster.
	Brokers, Admin []string
	// Access reaches Admin's APIs (HTTPS, credentials).
	Access Access
	// Partitions of each workload topic (default 6); Producers plain
	// producers (default 2); Rate records a second, all producers together
	// (default 1000).
	Partitions int32
	Producers  int
	Rate       int
	// Out gets the run's progress, one line per event.
	Out io.Writer
}

// Result is what a run found.
type Result struct {
	Verdict history.Verdict
	// Leaderless are the partitions that had no leader after the heal;
	// Crashed the nodes that exited without the run ending them.
	Leaderless []string
	Crashed    []int32
	// Healed is how long the cluster took, from the heal, to lead every
	// partition and acknowledge an acks=all produce to each; Recoveries
	// the same from each fault a scenario measured.
	Healed     time.Duration
	Recoveries []time.Duration
	Faults     int
	// Dir holds the nodes' data and logs (kept when the run failed).
	Dir string
}

// OK reports whether the run lost nothing and healed.
func (r Result) OK() bool {
	return r.Verdict.OK() && len(r.Leaderless) == 0 && len(r.Crashed) == 0
}

func (r Result) String() string {
	var b strings.Builder
	verdict := "ok"
	if !r.OK() {
		verdict = "FAILED"
	}
	v := r.Verdict
	fmt.Fprintf(&b, "verdict: %s: %d acknowledged, %d lost, %d duplicated, %d reordered, %d unseen, %d invented; "+
		"%d committed offsets back; transactions %d committed, %d aborted, %d unknown, %d aborted reads, %d partial; %d faults",
		verdict, v.Acknowledged, len(v.Lost), len(v.Duplicated), len(v.Reordered), len(v.Unseen), len(v.Invented),
		len(v.OffsetsBack), v.TxnCommitted, v.TxnAborted, v.TxnUnknown, len(v.AbortedRead), len(v.Partial), r.Faults)
	if len(r.Leaderless) > 0 {
		fmt.Fprintf(&b, "\nno leader after the heal: %s", strings.Join(r.Leaderless, ", "))
	}
	if len(r.Crashed) > 0 {
		fmt.Fprintf(&b, "\nnodes exited on their own: %v", r.Crashed)
	}
	if !v.OK() {
		fmt.Fprintf(&b, "\n%s", v)
	}
	return b.String()
}

// run is one run in progress: what scenarios act through.
type run struct {
	cfg   Config
	rng   *rand.Rand
	start time.Time
	out   io.Writer
	outMu sync.Mutex

	local *localCluster // nil for an existing cluster
	nodes []int32
	admin map[int32]*Admin
	seeds []string
	cl    *kgo.Client // for metadata and probes
	h     *history.History

	faults     int
	recoveries []time.Duration
	probes     int // probes sent, their seq
}

// Run runs cfg's scenario and checks the history. The error is for a run
// that could not be carried out; what it found is in the Result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	sc, ok := scenarios[cfg.Scenario]
	if !ok {
		return Result{}, fmt.Errorf("no scenario %q; there are: %s", cfg.Scenario, strings.Join(ScenarioNames(), ", "))
	}
	if cfg.Duration <= 0 {
		cfg.Duration = time.Minute
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 6
	}
	if cfg.Producers <= 0 {
		cfg.Producers = 2
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 1000
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	r := &run{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5ce1)), out: cfg.Out, admin: map[int32]*Admin{}, h: history.New()}
	var res Result
	if len(cfg.Brokers) > 0 {
		if sc.local {
			return res, errNotLocal
		}
		r.seeds = cfg.Brokers
		ns, err := Dial(ctx, cfg.Admin, cfg.Access)
		if err != nil {
			return res, err
		}
		for _, id := range ns.IDs() {
			r.nodes = append(r.nodes, id)
			r.admin[id], _ = ns.Admin(id)
		}
	} else {
		l, err := startLocal(ctx, cfg, sc)
		if l != nil {
			defer l.close()
			res.Dir = l.dir
		}
		if err != nil {
			return res, err
		}
		r.local = l
		r.nodes = l.ids()
		for _, id := range r.nodes {
			r.admin[id] = &Admin{Addr: l.adminAddr(id)}
			r.seeds = append(r.seeds, l.kafkaAddr(id))
		}
	}
	if len(r.nodes) < sc.minNodes {
		return res, fmt.Errorf("scenario %s needs at least %d nodes", sc.name, sc.minNodes)
	}
	var err error
	// The probes' client refreshes its metadata as often as it is told
	// to (kgo's default waits 5 s between refreshes) and gives up on a
	// request after 2 s (a paused node takes requests and never answers),
	// so that a recovery is timed by when the cluster has one, not by a
	// client's cache or timeouts.
	if r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.seeds...), kgo.DialTimeout(2*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.RequestTimeoutOverhead(time.Second), kgo.ProduceRequestTimeout(time.Second)); err != nil {
		return res, err
	}
	defer r.cl.Close()
	r.start = time.Now()
	r.logf("scenario %s on nodes %v (%s), %v, seed %d", sc.name, r.nodes, strings.Join(r.seeds, ","), cfg.Duration, cfg.Seed)

	w := &workload{seeds: r.seeds, h: r.h, rate: cfg.Rate, log: r.logf}
	if err := w.createTopics(ctx, cfg.Partitions, len(r.nodes)); err != nil {
		return res, err
	}
	if err := w.start(cfg.Producers, 2); err != nil {
		return res, err
	}
	// Faults start once the workload runs: the first acknowledgement.
	if err := r.until(ctx, 30*time.Second, "the first acknowledged record", func() bool { return r.h.Acknowledged() > 0 }); err != nil {
		w.finish()
		w.closeGroup()
		return res, err
	}

	faultCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	sc.run(faultCtx, r, w)
	cancel()
	if ctx.Err() != nil {
		w.finish()
		w.closeGroup()
		return res, ctx.Err()
	}

	healed, leaderless := r.heal(ctx)
	res.Healed, res.Leaderless = healed, leaderless
	r.logf("stopping the producers")
	w.finish()
	r.logf("waiting for the group to read everything acknowledged")
	if err := r.until(ctx, time.Minute, "the group to consume every acknowledged record", func() bool {
		return len(r.h.Check().Unseen) == 0
	}); err != nil {
		r.logf("%v; checking what it consumed", err)
	}
	w.closeGroup()
	r.logf("reading the topics back")
	if err := r.readBack(ctx, plainTopic, false); err != nil {
		return res, err
	}
	if err := r.readBack(ctx, txnTopic, true); err != nil {
		return res, err
	}
	res.Verdict = r.h.Check()
	res.Faults, res.Recoveries = r.faults, r.recoveries
	if r.local != nil {
		res.Crashed = r.local.crashed()
	}
	if res.OK() && cfg.Dir == "" && r.local != nil {
		defer os.RemoveAll(r.local.dir)
	}
	return res, nil
}

// startLocal starts the local cluster and waits until every node is ready.
func startLocal(ctx context.Context, cfg Config, sc *scenario) (*localCluster, error) {
	n := cfg.Nodes
	if n <= 0 {
		n = max(sc.minNodes, 3)
	}
	hosts := cfg.Hosts
	if len(hosts) == 0 {
		for i := 1; i <= n; i++ {
			hosts = append(hosts, fmt.Sprintf("127.0.0.1%d", i))
		}
	}
	if len(hosts) < n {
		return nil, fmt.Errorf("%d hosts for %d nodes", len(hosts), n)
	}
	hosts = hosts[:n]
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	dir := cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "skein-chaos-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &localCluster{bin: bin, dir: dir, hosts: hosts, settings: append(slices.Clone(sc.settings), cfg.Settings...)}
	for _, id := range l.ids() {
		if err := l.start(id); err != nil {
			return l, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, id := range l.ids() {
		if err := l.waitReady(ctx, id); err != nil {
			return l, err
		}
	}
	return l, nil
}

// logf prints a progress line, stamped with the time since the start.
func (r *run) logf(format string, args ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	d := time.Since(r.start).Truncate(100 * time.Millisecond)
	fmt.Fprintf(r.out, "%7s  %s\n", d, fmt.Sprintf(format, args...))
}

// until polls cond until it holds, within timeout.
func (r *run) until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is
// still going.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// between is a random duration in [lo, hi).
func (r *run) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// pick is a random node of ids.
func (r *run) pick(ids []int32) int32 { return ids[r.rng.IntN(len(ids))] }

// leaders returns the leader of each partition of the workload's topics
// (-1 for none), as the cluster's metadata says.
func (r *run) leaders(ctx context.Context) (map[history.TP]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := kadm.NewClient(r.cl).Metadata(ctx, plainTopic, txnTopic)
	if err != nil {
		return nil, err
	}
	out := map[history.TP]int32{}
	for _, t := range m.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			leader := p.Leader
			if p.Err != nil {
				leader = -1
			}
			out[history.TP{Topic: t.Topic, Partition: p.Partition}] = leader
		}
	}
	return out, nil
}

// leader returns the leader of a random partition of the plain topic, or
// a random node when none is known.
func (r *run) leader(ctx context.Context) int32 {
	ls, err := r.leaders(ctx)
	p := history.TP{Topic: plainTopic, Partition: r.rng.Int32N(r.cfg.Partitions)}
	if err != nil || ls[p] < 0 {
		return r.pick(r.nodes)
	}
	return ls[p]
}

// controller returns the active controller as a live node's admin API
// says, or a random node when none answers.
func (r *run) controller(ctx context.Context) int32 {
	for _, id := range r.nodes {
		if r.local != nil && (!r.local.running(id) || r.local.paused(id)) {
			continue
		}
		var c struct {
			Quorum struct {
				Leader int32 `json:"leader"`
			} `json:"quorum"`
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := r.admin[id].do(cctx, "GET", "/v1/cluster", nil, 200, &c)
		cancel()
		if err == nil && c.Quorum.Leader > 0 {
			return c.Quorum.Leader
		}
	}
	return r.pick(r.nodes)
}

// others returns the nodes other than id.
func (r *run) others(id int32) []int32 {
	var out []int32
	for _, n := range r.nodes {
		if n != id {
			out = append(out, n)
		}
	}
	return out
}

// fault counts and logs a fault as it is applied.
func (r *run) fault(format string, args ...any) {
	r.faults++
	r.logf(format, args...)
}

// healthy reports whether every partition of the workload has a leader
// and takes an acks=all produce; the probes are part of the history.
func (r *run) healthy(ctx context.Context) (bool, []string) {
	ls, err := r.leaders(ctx)
	if err != nil {
		return false, []string{err.Error()}
	}
	var leaderless []string
	for tp, l := range ls {
		if l < 0 {
			leaderless = append(leaderless, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
		}
	}
	if len(ls) == 0 || len(leaderless) > 0 {
		sort.Strings(leaderless)
		return false, leaderless
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	for p := range r.cfg.Partitions {
		v := r.h.Send(probeWorker, r.probes)
		r.probes++
		wg.Add(1)
		r.cl.Produce(ctx, &kgo.Record{Topic: plainTopic, Partition: p, Value: []byte(v)}, func(rec *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				r.h.Failed(v, err)
				mu.Lock()
				ok = false
				mu.Unlock()
				return
			}
			r.h.Acked(v, history.TP{Topic: rec.Topic, Partition: rec.Partition}, rec.Offset)
		})
	}
	wg.Wait()
	return ok, nil
}

// probeWorker is the history's worker number of the probes healthy sends.
const probeWorker = 999

// recovered waits until the cluster is healthy again and records how
// long that took since the fault.
func (r *run) recovered(ctx context.Context, since time.Time) {
	for ctx.Err() == nil {
		if ok, _ := r.healthy(ctx); ok {
			d := time.Since(since)
			r.recoveries = append(r.recoveries, d)
			r.logf("recovered %v after the fault", d.Truncate(time.Millisecond))
			return
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// heal ends every fault (resumes paused nodes, starts stopped ones, heals
// every node's injected faults) and waits until the cluster is healthy.
func (r *run) heal(ctx context.Context) (time.Duration, []string) {
	r.logf("healing")
	start := time.Now()
	r.endFaults(ctx)
	var leaderless []string
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		ok, missing := r.healthy(hctx)
		if ok {
			d := time.Since(start)
			r.logf("healed: every partition led and taking acks=all produce %v after the heal", d.Truncate(time.Millisecond))
			return d, nil
		}
		leaderless = missing
		if !sleep(hctx, 200*time.Millisecond) {
			r.logf("not healed within 2m of the heal: %v", leaderless)
			if len(leaderless) == 0 {
				leaderless = []string{"(every partition led, but acks=all produce failing)"}
			}
			return time.Since(start), leaderless
		}
	}
}

// readBack reads every partition of topic from its start to its end (the
// high watermark; the last stable offset for committed) into the history.
// ends returns where the read-back of topic ends: each partition's high
// watermark, or, for read_committed, its last stable offset once it has
// reached the high watermark. A transaction whose commit was acknowledged
// may still have its markers to write (the coordinator writes them after
// it answers): read_committed stops below it until then, and would miss a
// committed transaction's records.
func (r *run) ends(ctx context.Context, topic string, committed bool) (map[int32]int64, error) {
	adm := kadm.NewClient(r.cl)
	list := func(f func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		ends, err := f(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		out := map[int32]int64{}
		var lerr error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				lerr = errors.Join(lerr, fmt.Errorf("end offset of %s-%d: %w", topic, o.Partition, o.Err))
			}
			out[o.Partition] = o.Offset
		})
		return out, lerr
	}
	for {
		hw, err := list(adm.ListEndOffsets)
		if err != nil || !committed {
			return hw, err
		}
		lso, err := list(adm.ListCommittedOffsets)
		if err != nil || maps.Equal(lso, hw) {
			return lso, err
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return nil, fmt.Errorf("a transaction stays open on %s: last stable offsets %v, high watermarks %v", topic, lso, hw)
		}
	}
}

func (r *run) readBack(ctx context.Context, topic string, committed bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	want, err := r.ends(ctx, topic, committed)
	if err != nil {
		return err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(r.seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		// Control records move the position past each transaction's
		// end, aborted ones included, so the read knows when it is done.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading %s back: %w (at %v of %v)", topic, ctx.Err(), next, want)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			next[rec.Partition] = rec.Offset + 1
			if rec.Attrs.IsControl() {
				return
			}
			tp := history.TP{Topic: rec.Topic, Partition: rec.Partition}
			if committed {
				r.h.ReadCommitted(tp, rec.Offset, string(rec.Value))
			} else {
				r.h.Read(tp, rec.Offset, string(rec.Value))
			}
		})
	}
	return nil
}
