package tests

// Broker restarts with clients attached: a graceful restart of an
// in-process node between produce rounds, and a `skein node` child process
// killed with SIGKILL at random moments, or stopped with SIGTERM, while a
// franz-go producer (acks=all, idempotent) keeps producing and retrying
// through each outage. Every test ends with the same verification
// (checkLog): every acknowledged record is in the log at its acknowledged
// offset, each partition holds the producer's records in the order sent,
// and none is there twice.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// skeinBin is the skein binary the child-process tests run, built on first
// use and removed by TestMain.
var skeinBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if skeinBin.dir != "" {
		os.RemoveAll(skeinBin.dir)
	}
	os.Exit(code)
}

// skeinBinary builds cmd/skein once per test run and returns its path.
// NB: it is built without -race even under `go test -race`: the node's
// packages run under the race detector in the in-process tests, and a
// race-instrumented node would make the child's restarts several times
// slower on two cores.
func skeinBinary(t *testing.T) string {
	t.Helper()
	skeinBin.once.Do(func() {
		skeinBin.dir, skeinBin.err = os.MkdirTemp("", "skein-tests-bin-")
		if skeinBin.err != nil {
			return
		}
		skeinBin.path = filepath.Join(skeinBin.dir, "skein")
		out, err := exec.Command("go", "build", "-o", skeinBin.path, "github.com/skeinlog/skein/cmd/skein").CombinedOutput()
		if err != nil {
			skeinBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if skeinBin.err != nil {
		t.Fatal(skeinBin.err)
	}
	return skeinBin.path
}

// freeAddr returns a loopback address with a port free at the time of the
// call, for a child node that must come back on the same port after each
// restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// childNode is `skein node` run as a child process, restarted on the same
// port and data directory.
type childNode struct {
	t       *testing.T
	addr    string
	admin   string // the admin listener's address
	dataDir string
	logPath string // the child's stderr, across its runs
	// env is the SKEIN_* settings the test gives the node.
	env []string
	// wrap, if set, is a command the node runs under (prlimit ... --).
	wrap []string
	// config, if set, is the node's settings file, given alone (with the
	// log format): it names the data dir and the listeners, addr among
	// them.
	config string

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

func newChildNode(t *testing.T) *childNode {
	dir := t.TempDir()
	n := &childNode{t: t, addr: freeAddr(t), admin: freeAddr(t), dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "node.log")}
	t.Cleanup(func() {
		if n.running() {
			n.cmd.Process.Kill()
			<-n.exited
		}
		if t.Failed() {
			n.dumpLog()
		}
	})
	return n
}

func (n *childNode) running() bool {
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

// start runs the node and waits until it answers a Metadata request.
func (n *childNode) start() {
	n.t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	defer logf.Close() // the child has its own descriptor
	args := append(append([]string(nil), n.wrap...), skeinBinary(n.t), "node", "--data-dir", n.dataDir, "--listen", n.addr,
		"--admin-listen", n.admin, "--log-format", "json")
	if n.config != "" {
		args = append(append([]string(nil), n.wrap...), skeinBinary(n.t), "node", "--config", n.config, "--log-format", "json")
	}
	cmd := exec.Command(args[0], args[1:]...)
	// The developer's SKEIN_* settings must not reach the node under test.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		close(n.exited)
	}()
	n.waitReady()
}

// waitReady polls (bounded) until the node answers a Metadata request:
// nothing it emits tells a client when its listener is up.
func (n *childNode) waitReady() {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !n.answersMetadata() {
		select {
		case <-n.exited:
			n.t.Fatalf("skein node exited while starting: %v", n.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("skein node on %s did not answer within 30 s", n.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *childNode) answersMetadata() bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		n.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err == nil && len(resp.(*kmsg.MetadataResponse).Brokers) > 0
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *childNode) kill() {
	n.t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		n.t.Fatal(err)
	}
	<-n.exited
}

// terminate sends SIGTERM and returns how long the node took to exit; it
// fails the test unless the node exits with status 0 within limit.
func (n *childNode) terminate(limit time.Duration) time.Duration {
	n.t.Helper()
	start := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		n.t.Fatal(err)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-n.exited:
	case <-timer.C:
		n.t.Fatalf("skein node still running %v after SIGTERM", limit)
	}
	took := time.Since(start)
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		n.t.Fatalf("skein node exited with %v after SIGTERM", n.cmd.ProcessState)
	}
	return took
}

func (n *childNode) dumpLog() {
	b, err := os.ReadFile(n.logPath)
	if err != nil || len(b) == 0 {
		return // never started
	}
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	n.t.Logf("node log (tail):\n%s", b)
}

// ackedRecord is a record the broker acknowledged: its sequence number (its
// value) and where the broker put it.
type ackedRecord struct {
	seq       int
	partition int32
	offset    int64
}

// streamProducer produces records 0, 1, 2, … (values are the decimal
// sequence numbers, partition seq % partitions) without pause from its own
// goroutine until stopped, recording every acknowledgement and failure.
type streamProducer struct {
	cl     *kgo.Client
	notify chan struct{} // a value after each acknowledgement, dropped if one is pending
	sent   atomic.Int64  // records handed to the client

	mu     sync.Mutex
	acks   []ackedRecord
	failed []error

	stopOnce sync.Once
	stop     chan struct{}
	done     chan int // the number of records produced, once stopped
}

func newStreamProducer(t *testing.T, ctx context.Context, addr, topic string, partitions int32) *streamProducer {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// acks=all and idempotence are kgo's defaults; spelled out
		// because the test's no-duplicate check depends on them.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		// Few records in flight, so that an outage does not leave tens
		// of thousands to retry.
		kgo.MaxBufferedRecords(2000),
		// Reconnect soon after the node is back: a client's retry
		// policy, not a wait in the test.
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ProduceRequestTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p := &streamProducer{cl: cl, notify: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan int, 1)}
	// A test that fails before finish must still stop the goroutine
	// (before cl.Close, registered earlier, unblocks its last Produce).
	t.Cleanup(func() { p.stopOnce.Do(func() { close(p.stop) }) })
	go func() {
		seq := 0
		defer func() { p.done <- seq }()
		for ; ; seq++ {
			select {
			case <-p.stop:
				return
			default:
			}
			r := &kgo.Record{Partition: int32(seq % int(partitions)), Value: []byte(strconv.Itoa(seq))}
			s := seq
			p.sent.Add(1)
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				p.mu.Lock()
				if err != nil {
					p.failed = append(p.failed, fmt.Errorf("record %d: %w", s, err))
				} else {
					p.acks = append(p.acks, ackedRecord{s, r.Partition, r.Offset})
				}
				p.mu.Unlock()
				select {
				case p.notify <- struct{}{}:
				default:
				}
			})
		}
	}()
	return p
}

func (p *streamProducer) acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// waitAcked waits until at least n records are acknowledged, woken by each
// acknowledgement.
func (p *streamProducer) waitAcked(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	for p.acked() < n {
		select {
		case <-p.notify:
		case <-timer.C:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("%d records acknowledged within a minute, want %d; failures: %v", len(p.acks), n, p.failed)
		}
	}
}

// finish stops producing, waits until every record produced is answered
// and returns how many were produced.
func (p *streamProducer) finish(t *testing.T, ctx context.Context) int {
	t.Helper()
	p.stopOnce.Do(func() { close(p.stop) })
	n := <-p.done
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	return n
}

// checkLog reads every partition of topic from the start to its end
// offset through a new franz-go client and checks the acknowledged
// records against it: each at its acknowledged offset, no record twice,
// each partition in the order produced. With failed empty, every record
// produced (0 to produced-1) must have been acknowledged and be there.
func checkLog(t *testing.T, ctx context.Context, addr, topic string, partitions int32, produced int, acks []ackedRecord, failed []error) {
	t.Helper()
	for _, err := range failed {
		// An idempotent producer retrying without a limit fails a record
		// only on a fatal error, and no outage here should cause one.
		t.Errorf("produce failed: %v", err)
	}
	logs := readSequences(t, ctx, addr, topic, partitions)

	seen := map[int]bool{}
	total := 0
	for p, log := range logs {
		total += len(log)
		last := -1
		for off, seq := range log {
			if seen[seq] {
				t.Errorf("record %d is in the log twice (partition %d, offset %d)", seq, p, off)
			}
			seen[seq] = true
			if seq <= last {
				t.Errorf("partition %d: record %d at offset %d after record %d", p, seq, off, last)
			}
			if int32(seq%int(partitions)) != p {
				t.Errorf("record %d in partition %d", seq, p)
			}
			last = seq
		}
	}
	lost := 0
	for _, a := range acks {
		log := logs[a.partition]
		if a.offset < 0 || a.offset >= int64(len(log)) || log[a.offset] != a.seq {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged record %d (partition %d, offset %d) is not in the log there", a.seq, a.partition, a.offset)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records lost", lost, len(acks))
	}
	if len(failed) == 0 && (len(acks) != produced || total != produced) {
		t.Errorf("%d records produced, %d acknowledged, %d in the log", produced, len(acks), total)
	}
	t.Logf("%d records produced, %d acknowledged, %d in the log", produced, len(acks), total)
}

// TestGracefulRestartBetweenRounds: rounds of produce with franz-go (one
// idempotent client for the whole test) and sarama (a new idempotent
// producer each round), keys, headers and timestamps, with a graceful
// restart of the in-process node after each round. A franz-go consumer
// attached from the start follows across the restarts without a gap or a
// repeat, and at the end both clients read every acknowledged record back
// from the start, unchanged and in order.
func TestGracefulRestartBetweenRounds(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	const partitions = 2
	mustCreate(t, ctx, b.admin(), "restarts", partitions, nil)
	franz := b.client(kgo.DefaultProduceTopic("restarts"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	follower := b.client(kgo.ConsumeTopics("restarts"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	sarama := saramaClient{b}

	var produced []wireRecord
	followed := map[int32][]wireRecord{}
	follow := func() {
		t.Helper()
		n := 0
		for n < len(produced) {
			n = 0
			fs := follower.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("following consumer: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) { followed[r.Partition] = append(followed[r.Partition], fromFranz(r)) })
			for _, rs := range followed {
				n += len(rs)
			}
		}
	}
	const rounds = 3
	for round := range rounds {
		var fromFranzRound []wireRecord
		for i := range 60 {
			r := &kgo.Record{
				Partition: int32(i % partitions),
				Key:       []byte(fmt.Sprintf("k%d", i%5)),
				Value:     []byte(fmt.Sprintf("franz-go round %d record %d", round, i)),
				Headers:   []kgo.RecordHeader{{Key: "round", Value: []byte(strconv.Itoa(round))}},
				Timestamp: msTime(1_700_000_000_000 + int64(round*1000+i)),
			}
			res := franz.ProduceSync(ctx, r)
			if err := res.FirstErr(); err != nil {
				t.Fatalf("round %d: franz-go record %d: %v", round, i, err)
			}
			fromFranzRound = append(fromFranzRound, fromFranz(res[0].Record))
		}
		var recs []wireRecord
		for i := range 20 {
			recs = append(recs, wireRecord{
				Partition: int32(i % partitions),
				Key:       []byte(fmt.Sprintf("s%d", i)),
				Value:     []byte(fmt.Sprintf("sarama round %d record %d", round, i)),
				Headers:   []wireHeader{{"round", []byte(strconv.Itoa(round))}},
				Timestamp: msTime(1_700_000_100_000 + int64(round*1000+i)),
			})
		}
		acked, errs := sarama.produce(t, ctx, "restarts", recs, allAcks)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: sarama record %d: %v", round, i, err)
			}
			recs[i].Offset = acked[i].Offset
		}
		produced = append(append(produced, fromFranzRound...), recs...)
		follow()
		b.restart()
	}

	byPartition := map[int32][]wireRecord{}
	for _, r := range produced {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	for p, want := range byPartition {
		// Acknowledged offsets are the partition's offsets 0, 1, 2, … in
		// the order acknowledged: the sequence has no gap and no repeat.
		for i, r := range want {
			if r.Offset != int64(i) {
				// Records were produced one at a time per client, and the
				// clients one after the other, so the acknowledged offsets
				// of a partition are consecutive.
				t.Fatalf("partition %d: record %d acknowledged at offset %d", p, i, r.Offset)
			}
		}
		for i, got := range followed[p] {
			if d := sameRecord(got, want[i]); d != "" {
				t.Errorf("following consumer, partition %d offset %d: %s", p, i, d)
			}
		}
	}
	checkReadBack(t, ctx, b, "restarts", produced)
	if end := endOffset(t, ctx, b, "restarts"); end != int64(len(byPartition[0])) {
		t.Errorf("end offset of partition 0 after the restarts: %d, want %d", end, len(byPartition[0]))
	}
}

// TestSIGKILLWhileProducing: a `skein node` child process is killed with
// SIGKILL at random moments (after a random number of further
// acknowledgements) while a franz-go producer, acks=all and idempotent,
// produces to three partitions without pause; each time it comes back on
// the same port and data directory, and the producer retries through the
// outage. An acknowledged record was fsynced, so none may be lost; records
// written but not yet acknowledged when the node died are retried, and the
// producer state recovered from disk must answer those retries as
// duplicates, so none may be in the log twice.
func TestSIGKILLWhileProducing(t *testing.T) {
	node := newChildNode(t)
	node.start()
	ctx := ctxFor(t)
	const partitions = 3
	adm := kadm.NewClient(newClientFor(t, node.addr))
	mustCreate(t, ctx, adm, "killed", partitions, nil)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	p := newStreamProducer(t, ctx, node.addr, "killed", partitions)
	const kills = 3
	for i := range kills {
		target := p.acked() + 100 + rng.IntN(900)
		p.waitAcked(t, target)
		node.kill()
		acked := p.acked()
		t.Logf("SIGKILL %d: %d records acknowledged, %d not yet", i+1, acked, p.sent.Load()-int64(acked))
		node.start()
	}
	// Records flow again after the last restart.
	p.waitAcked(t, p.acked()+500)
	produced := p.finish(t, ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	checkLog(t, ctx, node.addr, "killed", partitions, produced, p.acks, p.failed)
}

// TestSIGTERMWhileProducing: SIGTERM stops a `skein node` child process
// gracefully while a franz-go producer is active: the node exits with
// status 0 within 10 s (issue 3) and logs its stop; started again, it has
// every acknowledged record, and the producer's retries of what was in
// flight are not duplicated.
func TestSIGTERMWhileProducing(t *testing.T) {
	node := newChildNode(t)
	node.start()
	ctx := ctxFor(t)
	const partitions = 2
	mustCreate(t, ctx, kadm.NewClient(newClientFor(t, node.addr)), "termed", partitions, nil)

	p := newStreamProducer(t, ctx, node.addr, "termed", partitions)
	p.waitAcked(t, 500)
	took := node.terminate(10 * time.Second)
	t.Logf("exited %v after SIGTERM, %d records acknowledged", took, p.acked())
	log, err := os.ReadFile(node.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"node stopped"`) {
		t.Errorf("no \"node stopped\" line in the node's log")
	}
	node.start()
	p.waitAcked(t, p.acked()+500)
	produced := p.finish(t, ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	checkLog(t, ctx, node.addr, "termed", partitions, produced, p.acks, p.failed)
}

// newClientFor returns a franz-go client of the node at addr, closed at
// the end of the test.
func newClientFor(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
