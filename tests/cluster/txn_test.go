package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/skeinlog/skein/history"
)

// Transactions (issue 10) under process faults: nodes killed with SIGKILL
// under an exactly-once copy whose copiers are killed too, and the node
// coordinating a transaction killed while it is open or just committed.
//
// Addresses: TestTransactionalCopyUnderFaults runs on 127.0.0.131-133,
// TestTransactionCoordinatorKilled on 127.0.0.121-123.

// txnFlags are replicationFlags with fewer partitions of the internal
// topics than Kafka's 50 each: a kill moves every leadership of the node,
// and the two-core CI machine runs the nodes under -race.
var txnFlags = append(slices.Clone(replicationFlags),
	"--set", "offsets.topic.num.partitions=10", "--set", "transaction.state.log.num.partitions=10")

const (
	// copyChunk is how many records each round adds to the input.
	copyChunk = 1000
	// copyRounds is how many rounds of faults the copy goes through.
	copyRounds = 4
	// numCopiers is how many copier processes share the copy.
	numCopiers = 3
	// copyWork is each copier's time per record, its transaction open:
	// it keeps transactions open long enough for the faults to find
	// them.
	copyWork = 4 * time.Millisecond
)

// TestTransactionalCopyUnderFaults: three copier processes (franz-go's
// GroupTransactSession: consume from the input in one group with
// read_committed and stable offsets required, produce to the output and
// commit the group's offsets in one transaction of up to 750 records;
// copier 0 in transaction version 1, the others in version 2) copy an
// input topic to an output topic, both of replication factor 3 with
// min.insync.replicas 2, while a read_committed reader reads the output.
// Each round adds a thousand records to the input and, with the copy under
// way, kills with SIGKILL the node holding one role of the copy (a
// copier's transaction coordinator, the group's coordinator, a partition
// leader), kills a copier with SIGKILL and starts it again with its
// transactional id (fencing what it left open), and restarts the node.
//
// Then every input record is in the output exactly once as read_committed
// reads it, and the history holds per record and per transaction: no
// value read twice or missing or never in the input, no record of a
// transaction its copier saw aborted, every transaction read whole or not
// at all, every one its copier saw committed read whole; the group's
// committed offsets reach the input's end, and no transaction is left
// open.
func TestTransactionalCopyUnderFaults(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.13%d", i) }, flags: txnFlags})
	begin := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs: %s", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all := []int{1, 2, 3}
	const in, out, group, partitions = "copy-in", "copy-out", "copiers", 6
	createReplicated(t, ctx, c, in, partitions)
	createReplicated(t, ctx, c, out, partitions)
	adm := kadm.NewClient(c.client(all, kgo.DialTimeout(2*time.Second)))

	// The input: copyChunk records now, as many again each round, by an
	// idempotent acks=all producer whose history is checked too.
	seeded := history.New()
	seeder := c.client(all, kgo.DefaultProduceTopic(in), kgo.DialTimeout(2*time.Second))
	produceN(t, seeder, seeded, 0, copyChunk)
	reader := startCommittedReader(t, c, out)
	defer reader.stop()
	cs := newCopiers(t, c, in, out, group)
	for i := range numCopiers {
		cs.start(i)
	}
	logf("the copiers are started")

	roles := []struct {
		name string
		find func() int
	}{
		{"copier 1's transaction coordinator", func() int { return c.coordinatorOf(t, ctx, adm, true, cs.procs[1].txnID) }},
		{"the group's coordinator", func() int { return c.coordinatorOf(t, ctx, adm, false, group) }},
		{"the leader of " + out + "-0", func() int { return c.leaderOf(t, ctx, out, 0) }},
		{"copier 0's transaction coordinator", func() int { return c.coordinatorOf(t, ctx, adm, true, cs.procs[0].txnID) }},
	}
	for round := 1; round <= copyRounds; round++ {
		produceN(t, seeder, seeded, round, copyChunk)
		from := reader.distinct()
		waitFor(t, time.Minute, fmt.Sprintf("round %d: the copy under way", round), func() string {
			if n := reader.distinct(); n < from+100 {
				return fmt.Sprintf("%d values read, %d at the round's start", n, from)
			}
			return ""
		})
		role := roles[(round-1)%len(roles)]
		victim := role.find()
		logf("round %d: killing node %d, %s (%d values read)", round, victim, role.name, reader.distinct())
		c.kill(victim)
		waitFor(t, time.Minute, fmt.Sprintf("round %d: %s on another node", round, role.name), func() string {
			if now := role.find(); now == victim {
				return fmt.Sprintf("node %d", now)
			}
			return ""
		})
		k := (round - 1) % numCopiers
		logf("round %d: %s moved; killing and restarting copier %d", round, role.name, k)
		cs.kill(k)
		cs.start(k)
		c.start(victim)
		c.waitReady(victim)
		logf("round %d: node %d is back (%d values read)", round, victim, reader.distinct())
	}

	// The input holds what its producer sent, once each.
	input := map[string]bool{}
	for _, v := range readBack(t, ctx, c, all, in, seeded) {
		input[v] = true
	}
	if v := seeded.Check(); !v.OK() {
		t.Fatalf("the input's history: %v", v)
	}
	logf("waiting for the copy of the %d input records to complete", len(input))
	complete := poll(2*time.Minute, func() string {
		if n := reader.countOf(input); n < len(input) {
			return fmt.Sprintf("%d of %d input values read from the output", n, len(input))
		}
		return ""
	})
	if complete != "" {
		t.Errorf("the copy did not complete: %s", complete)
	} else {
		ends, err := adm.ListEndOffsets(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if last := poll(time.Minute, func() string { return committedBehind(ctx, adm, group, in, ends) }); last != "" {
			t.Errorf("the group's committed offsets did not reach the input's end: %s", last)
		}
	}
	cs.killAll()
	logf("the copiers are killed; waiting for no transaction open on %s", out)
	if last := poll(time.Minute, func() string { return unstable(ctx, adm, out) }); last != "" {
		t.Errorf("a transaction stays open on %s: %s", out, last)
	}
	outEnds, err := adm.ListEndOffsets(ctx, out)
	if err != nil || outEnds.Error() != nil {
		t.Fatalf("end offsets of %s: %v %v", out, err, outEnds.Error())
	}
	if last := poll(time.Minute, func() string { return reader.behind(outEnds) }); last != "" {
		t.Errorf("the reader did not reach the end of %s: %s", out, last)
	}
	reader.stop()

	txns, err := cs.transactions()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range cs.sessionErrors() {
		logf("%s", line)
	}
	v := checkCopy(input, reader.all(), txns)
	logf("history: %v", v)
	if !v.ok() {
		t.Fatalf("history: %v", v)
	}
}

// TestTransactionCoordinatorKilled: the node coordinating transactions is
// killed with SIGKILL.
//
// First with transactions open (records produced to every partition of a
// topic, not ended), in both transaction versions: the producers that go
// on commit through the new coordinator, which loaded their transactions
// from __transaction_state; those abandoned are aborted by it at their
// 10 s timeout, and their producers can no longer commit them. Every
// partition's last stable offset reaches its high watermark (no
// transaction hangs), read_committed reads exactly the committed records,
// and DescribeTransactions says CompleteCommit and CompleteAbort.
//
// Then right after EndTxn(commit) has answered, the markers maybe not yet
// written: the new coordinator finishes the commit, and read_committed
// reads the records.
func TestTransactionCoordinatorKilled(t *testing.T) {
	c := newClusterIn(t, layout{host: func(i int) string { return fmt.Sprintf("127.0.0.12%d", i) },
		flags: append(slices.Clone(txnFlags), "--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000")})
	begin := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs: %s", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	all := []int{1, 2, 3}
	const topic, partitions, perPartition = "txn-killed", 3, 20
	createReplicated(t, ctx, c, topic, partitions)
	adm := kadm.NewClient(c.client(all, kgo.DialTimeout(2*time.Second)))

	// producer starts a transaction of id (under transaction version 1
	// if tv1) writing perPartition records to each partition, values
	// <name>-<partition>-<i>, and returns its producer and the values.
	producer := func(name, id string, tv1 bool, timeout time.Duration) (*kgo.Client, []string) {
		t.Helper()
		opts := []kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(timeout), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DialTimeout(2 * time.Second)}
		if tv1 {
			opts = append(opts, tv1Versions())
		}
		cl := c.client(all, opts...)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var values []string
		var rs []*kgo.Record
		for p := range int32(partitions) {
			for i := range perPartition {
				v := fmt.Sprintf("%s-%d-%d", name, p, i)
				values = append(values, v)
				rs = append(rs, &kgo.Record{Partition: p, Value: []byte(v)})
			}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
		return cl, values
	}
	// sameCoordinator returns a transactional id coordinated by node,
	// name or name-<n>.
	sameCoordinator := func(name string, node int) string {
		t.Helper()
		for n := 0; n < 100; n++ {
			id := name
			if n > 0 {
				id = fmt.Sprintf("%s-%d", name, n)
			}
			if c.coordinatorOf(t, ctx, adm, true, id) == node {
				return id
			}
		}
		t.Fatalf("no transactional id %s-<n> is coordinated by node %d", name, node)
		return ""
	}
	// states waits for the transactions to reach the given states: a
	// coordinator that took over a transaction in PrepareCommit or
	// PrepareAbort completes it once its markers are written, which may be
	// after the partitions' last stable offsets have moved.
	states := func(want map[string]string) {
		t.Helper()
		var ids []string
		for id := range want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if last := poll(time.Minute, func() string {
			got, err := adm.DescribeTransactions(ctx, ids...)
			if err != nil {
				return err.Error()
			}
			for _, id := range ids {
				if d, ok := got[id]; !ok || d.Err != nil {
					return fmt.Sprintf("%s: %+v", id, d)
				} else if d.State != want[id] {
					return fmt.Sprintf("transaction %s: state %s, want %s", id, d.State, want[id])
				}
			}
			return ""
		}); last != "" {
			t.Fatalf("not within a minute: %s", last)
		}
	}

	// 1. Transactions open when their coordinator is killed.
	victim := c.coordinatorOf(t, ctx, adm, true, "open-tv2")
	ids := map[string]string{"open-tv2": "open-tv2"}
	for _, name := range []string{"open-tv1", "abandoned-tv2", "abandoned-tv1"} {
		ids[name] = sameCoordinator(name, victim)
	}
	openTV2, committedTV2 := producer("open-tv2", ids["open-tv2"], false, time.Minute)
	openTV1, committedTV1 := producer("open-tv1", ids["open-tv1"], true, time.Minute)
	abandonedTV2, abandoned2 := producer("abandoned-tv2", ids["abandoned-tv2"], false, 10*time.Second)
	abandonedTV1, abandoned1 := producer("abandoned-tv1", ids["abandoned-tv1"], true, 10*time.Second)
	committed := slices.Concat(committedTV2, committedTV1)
	logf("four transactions open on every partition; killing node %d, their coordinator", victim)
	c.kill(victim)
	now := c.coordinatorOf(t, ctx, adm, true, ids["open-tv2"])
	// NB: the producers end their transactions once the killed node is
	// back: until the others fence it, the metadata names it, and
	// franz-go fails an EndTxn whose FindCoordinator it sent there twice
	// in a row (a dial error, which it does not retry).
	logf("node %d coordinates the open transactions; restarting node %d", now, victim)
	c.start(victim)
	c.waitReady(victim)
	for name, cl := range map[string]*kgo.Client{"open-tv2": openTV2, "open-tv1": openTV1} {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("%s: committing after the coordinator's failover: %v", name, err)
		}
	}
	logf("the open transactions committed")
	if last := poll(time.Minute, func() string { return unstable(ctx, adm, topic) }); last != "" {
		t.Fatalf("a transaction hangs on %s after the coordinator's failover: %s", topic, last)
	}
	logf("no transaction open on %s", topic)
	for name, cl := range map[string]*kgo.Client{"abandoned-tv2": abandonedTV2, "abandoned-tv1": abandonedTV1} {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Errorf("%s: a transaction aborted for its timeout committed", name)
		} else {
			logf("%s: committing a transaction aborted for its timeout: %v", name, err)
		}
	}
	checkCommitted(t, ctx, c, topic, committed, slices.Concat(abandoned2, abandoned1))
	states(map[string]string{ids["open-tv2"]: "CompleteCommit", ids["open-tv1"]: "CompleteCommit",
		ids["abandoned-tv2"]: "CompleteAbort", ids["abandoned-tv1"]: "CompleteAbort"})

	// 2. The coordinator killed right after EndTxn(commit) answered.
	victim = c.coordinatorOf(t, ctx, adm, true, "commit-tv2")
	ids = map[string]string{"commit-tv2": "commit-tv2", "commit-tv1": sameCoordinator("commit-tv1", victim)}
	commitTV2, values2 := producer("commit-tv2", ids["commit-tv2"], false, time.Minute)
	commitTV1, values1 := producer("commit-tv1", ids["commit-tv1"], true, time.Minute)
	var wg sync.WaitGroup
	for name, cl := range map[string]*kgo.Client{"commit-tv2": commitTV2, "commit-tv1": commitTV1} {
		wg.Go(func() {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Errorf("%s: commit: %v", name, err)
			}
		})
	}
	wg.Wait()
	c.kill(victim)
	logf("two transactions committed; killed node %d, their coordinator", victim)
	if t.Failed() {
		t.FailNow()
	}
	c.start(victim)
	if last := poll(time.Minute, func() string { return unstable(ctx, adm, topic) }); last != "" {
		t.Fatalf("a committed transaction hangs on %s after the coordinator's failover: %s", topic, last)
	}
	c.waitReady(victim)
	committed = slices.Concat(committed, values2, values1)
	checkCommitted(t, ctx, c, topic, committed, slices.Concat(abandoned2, abandoned1))
	states(map[string]string{ids["commit-tv2"]: "CompleteCommit", ids["commit-tv1"]: "CompleteCommit"})
}

// tv1Versions caps a franz-go client below KIP-890's transaction version 2
// (Produce v12, EndTxn v5, TxnOffsetCommit v5), so that it adds partitions
// and offsets to its transactions itself, as older clients do.
func tv1Versions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11) // Produce
	v.SetMaxKeyVersion(26, 4) // EndTxn
	v.SetMaxKeyVersion(28, 4) // TxnOffsetCommit
	v.SetMaxKeyVersion(24, 3) // AddPartitionsToTxn
	return kgo.MaxVersions(v)
}

// poll is waitFor without the failure: it returns "" once cond does, or
// cond's last answer after timeout.
func poll(timeout time.Duration, cond func() string) string {
	deadline := time.Now().Add(timeout)
	for {
		last := cond()
		if last == "" || time.Now().After(deadline) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// coordinatorOf returns the running node that coordinates a transactional
// id (txn) or a group, as FindCoordinator answers.
func (c *cluster) coordinatorOf(t testing.TB, ctx context.Context, adm *kadm.Client, txn bool, key string) int {
	t.Helper()
	var id int
	waitFor(t, readyTimeout, fmt.Sprintf("a running coordinator of %q", key), func() string {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var r kadm.FindCoordinatorResponse
		if txn {
			r = adm.FindTxnCoordinators(fctx, key)[key]
		} else {
			r = adm.FindGroupCoordinators(fctx, key)[key]
		}
		switch {
		case r.Err != nil:
			return r.Err.Error()
		case r.NodeID < 1 || r.NodeID > numNodes || !c.nodes[r.NodeID].running():
			return fmt.Sprintf("node %d, which is not running", r.NodeID)
		}
		id = int(r.NodeID)
		return ""
	})
	return id
}

// unstable says which partitions of topic have a transaction open (their
// last stable offset below their high watermark), "" if none.
func unstable(ctx context.Context, adm *kadm.Client, topic string) string {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stable, err := adm.ListCommittedOffsets(lctx, topic)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return err.Error()
	}
	ends, err := adm.ListEndOffsets(lctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return err.Error()
	}
	var open []string
	ends.Each(func(e kadm.ListedOffset) {
		if s, _ := stable.Lookup(topic, e.Partition); s.Offset != e.Offset {
			open = append(open, fmt.Sprintf("%d: last stable offset %d, high watermark %d", e.Partition, s.Offset, e.Offset))
		}
	})
	sort.Strings(open)
	return strings.Join(open, ", ")
}

// committedBehind says which partitions of topic the group's committed
// offsets are short of ends for, "" if none.
func committedBehind(ctx context.Context, adm *kadm.Client, group, topic string, ends kadm.ListedOffsets) string {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(fctx, group)
	if err != nil {
		return err.Error()
	}
	var behind []string
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := offs.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
			behind = append(behind, fmt.Sprintf("%d: committed %d, end %d", e.Partition, o.At, e.Offset))
		}
	})
	sort.Strings(behind)
	return strings.Join(behind, ", ")
}

// checkCommitted reads topic with read_committed from its start to its
// last stable offsets and checks that it holds each of committed once and
// nothing else (none of aborted among them).
func checkCommitted(t *testing.T, ctx context.Context, c *cluster, topic string, committed, aborted []string) {
	t.Helper()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	stable.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	// Markers take offsets, often a partition's last: the consumer keeps
	// them to see where each partition ends.
	cl := c.client([]int{1, 2, 3}, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	read := map[string]int{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (still to read: %v)", topic, ctx.Err(), want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("reading %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				read[string(r.Value)]++
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	isAborted := map[string]bool{}
	for _, v := range aborted {
		isAborted[v] = true
	}
	var bad []string
	for _, v := range committed {
		if n := read[v]; n != 1 {
			bad = append(bad, fmt.Sprintf("%s committed, read %d times", v, n))
		}
	}
	for v, n := range read {
		if isAborted[v] {
			bad = append(bad, fmt.Sprintf("%s of an aborted transaction read %d times", v, n))
		} else if !slices.Contains(committed, v) {
			bad = append(bad, fmt.Sprintf("%s read, never committed", v))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("and %d more", len(bad)-20))
		}
		t.Fatalf("read_committed of %s:\n%s", topic, strings.Join(bad, "\n"))
	}
}

// The copiers: processes of tests/cluster/copier, built once.

var copierBuild struct {
	once sync.Once
	path string
	err  error
}

// copierBin builds the copier (without -race: it is the test's client, not
// the code under test) next to the skein binary TestMain built.
func copierBin(t *testing.T) string {
	t.Helper()
	copierBuild.once.Do(func() {
		path := filepath.Join(filepath.Dir(skeinBin), "copier")
		out, err := exec.Command("go", "build", "-o", path, "github.com/skeinlog/skein/tests/cluster/copier").CombinedOutput()
		if err != nil {
			copierBuild.err = fmt.Errorf("go build copier: %v\n%s", err, out)
			return
		}
		copierBuild.path = path
	})
	if copierBuild.err != nil {
		t.Fatal(copierBuild.err)
	}
	return copierBuild.path
}

// copiers are the copier processes of one test, each across its runs.
// Their methods are called from the test's goroutine only.
type copiers struct {
	t     *testing.T
	group string
	out   string
	bin   string
	args  []string
	procs []*copier
}

// copier is one copier, across its runs: each run has the same
// transactional id.
type copier struct {
	idx     int
	txnID   string
	tv1     bool
	events  string // stdout of every run, appended: its TXN and END lines
	logPath string // stderr of every run, appended: franz-go's log
	runs    int
	cmd     *exec.Cmd
	exited  chan struct{}
	ended   bool // killed by the test: any other exit fails it
}

func (p *copier) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// newCopiers prepares numCopiers copiers from in to out in group, copier 0
// in transaction version 1, and their cleanup: every copier still running
// is killed, one that exited on its own fails the test, and on failure the
// end of each one's logs is printed.
func newCopiers(t *testing.T, c *cluster, in, out, group string) *copiers {
	t.Helper()
	var seeds []string
	for i := 1; i <= numNodes; i++ {
		seeds = append(seeds, c.addr(i))
	}
	cs := &copiers{t: t, group: group, out: out, bin: copierBin(t), args: []string{"-brokers", strings.Join(seeds, ","), "-group", group,
		"-in", in, "-out", out, "-max-records", "750", "-work", copyWork.String()}}
	dir := t.TempDir()
	for i := range numCopiers {
		cs.procs = append(cs.procs, &copier{idx: i, txnID: fmt.Sprintf("copier-%d", i), tv1: i == 0,
			events: filepath.Join(dir, fmt.Sprintf("copier%d.out", i)), logPath: filepath.Join(dir, fmt.Sprintf("copier%d.log", i))})
	}
	t.Cleanup(func() {
		for _, p := range cs.procs {
			if p.cmd != nil && !p.ended && !p.running() {
				t.Errorf("copier %d exited on its own (%v)", p.idx, p.cmd.ProcessState)
			}
			if p.running() {
				p.ended = true
				p.cmd.Process.Kill()
				<-p.exited
			}
			if t.Failed() {
				t.Logf("copier %d, the end of %s:\n%s\nand of %s:\n%s", p.idx, p.events, logTail(p.events, 10), p.logPath, logTail(p.logPath, 30))
			}
		}
		if t.Failed() {
			// A history gone wrong needs the whole story: the copiers'
			// logs and the nodes', kept past the test.
			keep, err := os.MkdirTemp("", "skein-txn-copy-")
			if err != nil {
				t.Log(err)
				return
			}
			var files []string
			for _, p := range cs.procs {
				files = append(files, p.events, p.logPath)
			}
			for i := 1; i <= numNodes; i++ {
				files = append(files, c.nodes[i].logPath)
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err == nil {
					err = os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
				}
				if err != nil {
					t.Log(err)
				}
			}
			for name, text := range map[string]string{
				"consumer_offsets.txt":  dumpLog(c, "__consumer_offsets", offsetCommitLine(cs.group)),
				"transaction_state.txt": dumpLog(c, "__transaction_state", txnStateLine),
				"output.txt":            dumpLog(c, cs.out, outputLine),
			} {
				if err := os.WriteFile(filepath.Join(keep, name), []byte(text), 0o644); err != nil {
					t.Log(err)
				}
			}
			t.Logf("the copiers' and the nodes' logs, and the records of __consumer_offsets, __transaction_state and %s, are kept in %s", cs.out, keep)
		}
	})
	return cs
}

// start runs copier i again, its transactions tagged c<i>.<run>.
func (cs *copiers) start(i int) {
	cs.t.Helper()
	p := cs.procs[i]
	if p.running() {
		cs.t.Fatalf("copier %d is already running", i)
	}
	p.runs++
	args := append(slices.Clone(cs.args), "-txn-id", p.txnID, "-name", fmt.Sprintf("c%d.%d", i, p.runs))
	if p.tv1 {
		args = append(args, "-tv1")
	}
	cmd := exec.Command(cs.bin, args...)
	open := func(path string) *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			cs.t.Fatal(err)
		}
		return f
	}
	stdout, stderr := open(p.events), open(p.logPath)
	defer stdout.Close() // the child has its own descriptors
	defer stderr.Close()
	fmt.Fprintf(stderr, "=== test: run %d of copier %d ===\n", p.runs, i)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		cs.t.Fatalf("copier %d: %v", i, err)
	}
	p.cmd, p.exited, p.ended = cmd, make(chan struct{}), false
	exited := p.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

// kill kills copier i with SIGKILL and waits for it to be gone.
func (cs *copiers) kill(i int) {
	cs.t.Helper()
	p := cs.procs[i]
	if !p.running() {
		cs.t.Fatalf("kill: copier %d is not running (%v)", i, p.cmd.ProcessState)
	}
	p.ended = true
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		cs.t.Fatalf("kill copier %d: %v", i, err)
	}
	<-p.exited
}

// killAll kills every copier still running.
func (cs *copiers) killAll() {
	cs.t.Helper()
	for i, p := range cs.procs {
		if p.running() {
			cs.kill(i)
		} else if !p.ended {
			cs.t.Errorf("copier %d exited on its own (%v)", i, p.cmd.ProcessState)
		}
	}
}

// sessionErrors returns the errors that ended the copiers' sessions,
// each with how often.
func (cs *copiers) sessionErrors() []string {
	var out []string
	for _, p := range cs.procs {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		n := map[string]int{}
		for _, line := range strings.Split(string(b), "\n") {
			if _, e, ok := strings.Cut(line, " ended: "); ok && strings.HasPrefix(line, "copier: session ") {
				n[e]++
			}
		}
		for e, k := range n {
			out = append(out, fmt.Sprintf("copier %d: %d sessions ended by %s", p.idx, k, e))
		}
	}
	sort.Strings(out)
	return out
}

// txnOutcome is what a copier wrote of one of its transactions.
type txnOutcome struct {
	records int
	// outcome is committed, aborted or unknown as End answered, or ""
	// when the copier was killed before it answered.
	outcome string
	detail  string
}

// transactions reads every copier's TXN and END lines: each transaction
// by its tag.
func (cs *copiers) transactions() (map[string]*txnOutcome, error) {
	txns := map[string]*txnOutcome{}
	for _, p := range cs.procs {
		f, err := os.Open(p.events)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.SplitN(sc.Text(), " ", 4)
			switch {
			case len(fields) >= 3 && fields[0] == "TXN":
				n, err := strconv.Atoi(fields[2])
				if err != nil || txns[fields[1]] != nil {
					f.Close()
					return nil, fmt.Errorf("%s: bad line %q", p.events, sc.Text())
				}
				txns[fields[1]] = &txnOutcome{records: n}
			case len(fields) >= 3 && fields[0] == "END":
				o := txns[fields[1]]
				if o == nil || o.outcome != "" {
					f.Close()
					return nil, fmt.Errorf("%s: END of no open transaction: %q", p.events, sc.Text())
				}
				o.outcome = fields[2]
				if len(fields) == 4 {
					o.detail = fields[3]
				}
			}
			// NB: a line cut short by the copier's kill matches neither.
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return txns, nil
}

// The output's read_committed reader.

// outRecord is one record read from the output: its value, the tag of the
// transaction that wrote it, and where.
type outRecord struct {
	value, txn string
	partition  int32
	offset     int64
}

// committedReader reads a topic with read_committed from its start, in
// its own goroutine, until stopped; it is safe for concurrent use.
type committedReader struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	records []outRecord
	values  map[string]int
	next    map[int32]int64 // the offset after the last record read, control records included
	errs    []string        // read errors that mean records read are gone
}

func startCommittedReader(t *testing.T, c *cluster, topic string) *committedReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &committedReader{cancel: cancel, done: make(chan struct{}), values: map[string]int{}, next: map[int32]int64{}}
	// Markers take offsets, often a partition's last: the reader keeps
	// them to see where each partition ends.
	cl := c.client([]int{1, 2, 3}, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords(), kgo.DialTimeout(2*time.Second))
	go func() {
		defer close(r.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			fs.EachError(func(_ string, p int32, err error) {
				var loss *kgo.ErrDataLoss
				if errors.As(err, &loss) {
					r.errs = append(r.errs, fmt.Sprintf("partition %d: %v", p, err))
				}
			})
			fs.EachRecord(func(rec *kgo.Record) {
				r.next[rec.Partition] = rec.Offset + 1
				if rec.Attrs.IsControl() {
					return
				}
				o := outRecord{value: string(rec.Value), partition: rec.Partition, offset: rec.Offset}
				for _, h := range rec.Headers {
					if h.Key == "txn" {
						o.txn = string(h.Value)
					}
				}
				r.records = append(r.records, o)
				r.values[o.value]++
			})
			r.mu.Unlock()
		}
	}()
	return r
}

// stop stops the reader and waits for it; stopping twice is harmless.
func (r *committedReader) stop() {
	r.cancel()
	<-r.done
}

// distinct is how many distinct values the reader read.
func (r *committedReader) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.values)
}

// countOf is how many of values the reader read.
func (r *committedReader) countOf(values map[string]bool) (n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for v := range values {
		if r.values[v] > 0 {
			n++
		}
	}
	return n
}

// behind says which partitions the reader has not read up to ends, "" if
// none.
func (r *committedReader) behind(ends kadm.ListedOffsets) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var behind []string
	ends.Each(func(e kadm.ListedOffset) {
		if r.next[e.Partition] < e.Offset {
			behind = append(behind, fmt.Sprintf("%d: at %d of %d", e.Partition, r.next[e.Partition], e.Offset))
		}
	})
	sort.Strings(behind)
	return strings.Join(behind, ", ")
}

// readResult is what the reader read, in order, and the errors it met.
type readResult struct {
	records []outRecord
	errs    []string
}

func (r *committedReader) all() readResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return readResult{records: slices.Clone(r.records), errs: slices.Clone(r.errs)}
}

// copyVerdict is what checkCopy found; every list empty means the copy
// was exactly once.
type copyVerdict struct {
	input, read, txns int
	outcomes          map[string]int // the transactions by outcome ("" for a copier killed first), with records read or not
	missing           []string       // input values never read
	duplicated        []string       // values read more than once
	invented          []string       // values read, never in the input
	untraced          []string       // records of no transaction a copier wrote of
	aborted           []string       // transactions their copier saw aborted, read
	torn              []string       // transactions read in part
	unread            []string       // transactions their copier saw committed, not read whole
	errs              []string       // the reader's data-loss errors
}

func (v copyVerdict) ok() bool {
	return len(v.missing)+len(v.duplicated)+len(v.invented)+len(v.untraced)+len(v.aborted)+len(v.torn)+len(v.unread)+len(v.errs) == 0
}

func (v copyVerdict) String() string {
	short := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], "; ") + fmt.Sprintf(" and %d more", len(s)-5)
		}
		return strings.Join(s, "; ")
	}
	return fmt.Sprintf("%d input values, %d records read, %d transactions %v; missing %d [%s], duplicated %d [%s], invented %d [%s], "+
		"untraced %d [%s], aborted read %d [%s], torn %d [%s], committed unread %d [%s], reader errors %d [%s]",
		v.input, v.read, v.txns, v.outcomes, len(v.missing), short(v.missing), len(v.duplicated), short(v.duplicated),
		len(v.invented), short(v.invented), len(v.untraced), short(v.untraced), len(v.aborted), short(v.aborted),
		len(v.torn), short(v.torn), len(v.unread), short(v.unread), len(v.errs), short(v.errs))
}

// checkCopy checks what the reader read against the input and the
// copiers' transactions.
func checkCopy(input map[string]bool, got readResult, txns map[string]*txnOutcome) copyVerdict {
	v := copyVerdict{input: len(input), read: len(got.records), txns: len(txns), outcomes: map[string]int{}, errs: got.errs}
	at := map[string][]string{} // value: where it was read
	perTxn := map[string]int{}  // tag: records read
	for _, r := range got.records {
		at[r.value] = append(at[r.value], fmt.Sprintf("%d@%d by %s", r.partition, r.offset, r.txn))
		if !input[r.value] {
			v.invented = append(v.invented, fmt.Sprintf("%s at %d@%d", r.value, r.partition, r.offset))
		}
		if txns[r.txn] == nil {
			v.untraced = append(v.untraced, fmt.Sprintf("%s at %d@%d, transaction %q", r.value, r.partition, r.offset, r.txn))
			continue
		}
		perTxn[r.txn]++
	}
	for val := range input {
		if len(at[val]) == 0 {
			v.missing = append(v.missing, val)
		}
	}
	for val, where := range at {
		if len(where) > 1 {
			v.duplicated = append(v.duplicated, fmt.Sprintf("%s at %v", val, where))
		}
	}
	for tag, o := range txns {
		n := perTxn[tag]
		v.outcomes[o.outcome]++
		switch {
		case o.outcome == "aborted" && n > 0:
			v.aborted = append(v.aborted, fmt.Sprintf("%s: %d of its %d records read", tag, n, o.records))
		case o.outcome == "committed" && n != o.records:
			v.unread = append(v.unread, fmt.Sprintf("%s: %d of its %d records read", tag, n, o.records))
		case n != 0 && n != o.records:
			v.torn = append(v.torn, fmt.Sprintf("%s (%s %s): %d of its %d records read", tag, o.outcome, o.detail, n, o.records))
		}
	}
	for _, l := range [][]string{v.missing, v.duplicated, v.invented, v.untraced, v.aborted, v.torn, v.unread} {
		sort.Strings(l)
	}
	return v
}

// dumpLog returns a line for each record of topic that line describes
// (line returns "" for the others), by partition, in offset order, and the
// transaction markers among them: the story of a failed history.
func dumpLog(c *cluster, topic string, line func(r *kgo.Record) string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err.Error()
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl := c.client([]int{1, 2, 3}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	lines := map[int32][]string{}
	described := map[int32]bool{}
	for len(want) > 0 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
			at := fmt.Sprintf("%d@%d pid %d epoch %d", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch)
			if r.Attrs.IsControl() {
				var k kmsg.ControlRecordKey
				if k.ReadFrom(r.Key) == nil {
					lines[r.Partition] = append(lines[r.Partition], fmt.Sprintf("%s %v marker", at, k.Type))
				}
				return
			}
			if l := line(r); l != "" {
				described[r.Partition] = true
				lines[r.Partition] = append(lines[r.Partition], fmt.Sprintf("%s transactional %v: %s", at, r.Attrs.IsTransactional(), l))
			}
		})
	}
	var b strings.Builder
	if ctx.Err() != nil {
		fmt.Fprintf(&b, "(not read to the end: %v; still to read %v)\n", ctx.Err(), want)
	}
	for _, p := range slices.Sorted(maps.Keys(lines)) {
		if described[p] {
			for _, l := range lines[p] {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// offsetCommitLine describes group's offset commits.
func offsetCommitLine(group string) func(r *kgo.Record) string {
	return func(r *kgo.Record) string {
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil || k.Version > 1 || k.Group != group {
			return ""
		}
		o := "tombstone"
		var v kmsg.OffsetCommitValue
		if r.Value != nil && v.ReadFrom(r.Value) == nil {
			o = strconv.FormatInt(v.Offset, 10)
		}
		return fmt.Sprintf("%s-%d at %s (%s)", k.Topic, k.Partition, o, r.Timestamp.Format("15:04:05.000"))
	}
}

// txnStateLine describes a transactional id's state.
func txnStateLine(r *kgo.Record) string {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return ""
	}
	if r.Value == nil {
		return k.TransactionalID + ": tombstone"
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return fmt.Sprintf("%s: %v", k.TransactionalID, err)
	}
	var parts []string
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	return fmt.Sprintf("%s: producer %d epoch %d %v %v (%s)", k.TransactionalID, v.ProducerID, v.ProducerEpoch, v.State, parts, r.Timestamp.Format("15:04:05.000"))
}

// outputLine describes an output record by the transaction that wrote it.
func outputLine(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "txn" {
			return fmt.Sprintf("%s by %s", r.Value, h.Value)
		}
	}
	return string(r.Value)
}
