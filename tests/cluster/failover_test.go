package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	failoverRounds = 5
	// progressPerRound is how many creates the workload must have
	// acknowledged after a round's restart before the next kill, so that
	// every round also tests a quorum that has just taken a member back.
	progressPerRound = 3
	// workloadParts is the partition count of every topic the workload
	// creates.
	workloadParts = 3
	// maxLive is how many of its topics the workload keeps: past it, it
	// deletes the oldest before creating another.
	maxLive = 10
	// opTimeout bounds one create or delete, retries included; past it the
	// outcome is unknown. It is well above a failover (an election, the
	// client finding the new controller), so that unknown outcomes stay
	// rare without being excluded.
	opTimeout = 30 * time.Second
)

// TestActiveControllerKilledFiveTimes: while one client creates and
// deletes topics through the cluster, one request at a time, the active
// controller is killed with SIGKILL five times, a new one taking over and
// the killed node restarting each time. Then every node must describe the
// same topics, and they must be what the requests and their answers allow:
// every acknowledged create applied once (the topic id it answered is the
// topic's), no topic nobody created, no topic back after an acknowledged
// delete.
func TestActiveControllerKilledFiveTimes(t *testing.T) {
	c := newCluster(t)
	begin := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs: %s", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	all := []int{1, 2, 3}

	w := startWorkload(c)
	defer w.stop() // on a failure; stopping twice is harmless
	w.waitAcked(t, progressPerRound)

	for round := 1; round <= failoverRounds; round++ {
		active := c.agreedController(ctx, all, func(id int32) bool { return id > 0 })
		victim := int(active)
		var survivors []int
		for _, i := range all {
			if i != victim {
				survivors = append(survivors, i)
			}
		}
		logf("round %d: killing node %d, the active controller (%d creates acknowledged so far)", round, victim, w.acked())
		c.kill(victim)
		next := c.agreedController(ctx, survivors, func(id int32) bool { return slices.Contains(survivors, int(id)) })
		logf("round %d: node %d is the active controller; restarting node %d", round, next, victim)
		c.start(victim)
		c.waitReady(victim)
		logf("round %d: node %d is ready", round, victim)
		w.waitAcked(t, w.acked()+progressPerRound)
	}
	history := w.stop()
	logf("workload stopped after %d requests", len(history))

	// Every node still serves, and names the same active controller.
	for _, i := range all {
		if code, body, err := c.readyz(i); err != nil || code != 200 {
			t.Errorf("node %d: /readyz answers %d %q (%v), want 200", i, code, body, err)
		}
	}
	c.agreedController(ctx, all, func(id int32) bool { return id > 0 })

	// The nodes apply the quorum's log each at its pace, and a restarted
	// node's broker is registered anew (and its partitions led again) only
	// once its earlier incarnation's session has expired: wait until all
	// three describe the same brokers and topics, each partition led by one
	// of the brokers, then check the topics against the history.
	var final map[string]topicView
	waitFor(t, readyTimeout, "every node describing the same brokers and topics, every partition led", func() string {
		views := make([]view, 0, len(all))
		for _, i := range all {
			v, err := c.view(ctx, i)
			if err != nil {
				return err.Error()
			}
			if len(v.brokers) != numNodes {
				return fmt.Sprintf("node %d lists brokers %v", i, v.brokers)
			}
			for name, tv := range v.topics {
				for p, l := range tv.leaders {
					if _, ok := v.brokers[l]; !ok {
						return fmt.Sprintf("node %d: %s partition %d has leader %d", i, name, p, l)
					}
				}
			}
			views = append(views, v)
		}
		for k, v := range views[1:] {
			if d := diffTopics(views[0].topics, v.topics); d != "" {
				return fmt.Sprintf("node 1 and node %d differ: %s", k+2, d)
			}
		}
		final = views[0].topics
		return ""
	})
	logf("every node describes the same %d topics", len(final))

	for name, tv := range final {
		if tv.internal {
			continue
		}
		if tv.err != 0 {
			t.Errorf("topic %s: error code %d in the metadata", name, tv.err)
		}
		if len(tv.leaders) != workloadParts {
			t.Errorf("topic %s has %d partitions, every create asked for %d", name, len(tv.leaders), workloadParts)
		}
	}
	logHistory(t, history)
	for _, v := range checkHistory(history, final) {
		t.Error(v)
	}
}

// diffTopics describes the first difference between two nodes' topics
// (names, ids, leaders), "" if none.
func diffTopics(a, b map[string]topicView) string {
	for name, ta := range a {
		tb, ok := b[name]
		switch {
		case !ok:
			return fmt.Sprintf("only the first has %s", name)
		case ta.id != tb.id:
			return fmt.Sprintf("%s has ids %x and %x", name, ta.id, tb.id)
		case !slices.Equal(ta.leaders, tb.leaders):
			return fmt.Sprintf("%s has leaders %v and %v", name, ta.leaders, tb.leaders)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			return fmt.Sprintf("only the second has %s", name)
		}
	}
	return ""
}

type opKind int

const (
	opCreate opKind = iota
	opDelete
)

func (k opKind) String() string { return [...]string{"create", "delete"}[k] }

// outcome is what a request's answer tells of its effect.
type outcome int

const (
	// outcomeOK: acknowledged, so applied, once, between the request and
	// the answer.
	outcomeOK outcome = iota
	// outcomeApplied: ambiguous, but applied: TOPIC_ALREADY_EXISTS for a
	// create, UNKNOWN_TOPIC_OR_PARTITION for a delete, answering a request
	// the client sent again after losing the first try's answer. The retry
	// finds the first try's work done (or another request's): either way
	// the topic existed (create) or did not (delete) at some moment between
	// the request and the answer. Answering a first try, these codes are
	// definite errors (classify).
	outcomeApplied
	// outcomeFailed: a definite error; not applied.
	outcomeFailed
	// outcomeUnknown: no answer (a timeout, the connection lost) or
	// REQUEST_TIMED_OUT. It may have been applied, even after the answer:
	// a command the controller took may still be committed later.
	outcomeUnknown
)

func (o outcome) String() string { return [...]string{"ok", "applied", "failed", "unknown"}[o] }

// op is one request of the workload and what came of it. The workload
// sends one at a time, so seq orders them in time (but see outcomeUnknown).
type op struct {
	seq     int
	kind    opKind
	topic   string
	outcome outcome
	id      [16]byte // the topic id an acknowledged create answered
	err     error    // the error behind any outcome but ok
	// retries are the client's own retries of the request, each with why.
	retries []string
	took    time.Duration
}

func (o op) String() string {
	s := fmt.Sprintf("#%d %s %s: %s in %v", o.seq, o.kind, o.topic, o.outcome, o.took.Round(time.Millisecond))
	if o.outcome == outcomeOK && o.kind == opCreate {
		s += fmt.Sprintf(" (id %x)", o.id)
	}
	if o.err != nil {
		s += fmt.Sprintf(" (%v)", o.err)
	}
	if len(o.retries) > 0 {
		s += fmt.Sprintf(" after retries: %s", strings.Join(o.retries, "; "))
	}
	return s
}

// classify turns a create's or delete's answer into an outcome. applied is
// the error code that means the work is done already, when the client sent
// the request more than once (retried): answering the first try, it is a
// definite error (the topic existed, or did not, before the request).
func classify(reqErr, topicErr error, applied *kerr.Error, retried bool) (outcome, error) {
	if reqErr != nil {
		return outcomeUnknown, reqErr
	}
	if topicErr == nil {
		return outcomeOK, nil
	}
	var ke *kerr.Error
	switch {
	case errors.Is(topicErr, applied) && retried:
		return outcomeApplied, topicErr
	case !errors.As(topicErr, &ke), ke.Retriable, ke == kerr.UnknownServerError, ke == kerr.RequestTimedOut:
		// kadm's own errors, and Kafka's retriable ones (REQUEST_TIMED_OUT,
		// NOT_CONTROLLER, ...) the client gave up retrying, say nothing of
		// whether the controller decided the request.
		return outcomeUnknown, topicErr
	}
	return outcomeFailed, topicErr
}

// workload creates topics w-<n> and deletes some, one request at a time,
// through a client seeded with every node, and records each request's
// outcome.
type workload struct {
	adm  *kadm.Client
	quit chan struct{}
	done chan struct{}

	retries *retryLog

	mu       sync.Mutex
	history  []op
	nacked   int           // creates acknowledged
	progress chan struct{} // signalled (without blocking) on each
}

func startWorkload(c *cluster) *workload {
	retries := &retryLog{}
	cl := c.client([]int{1, 2, 3},
		kgo.WithLogger(retries),
		// A failover makes the client's controller stale: look it up
		// again soon after a failure, rather than after kgo's 5 s.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(tries int) time.Duration { return min(time.Duration(tries)*100*time.Millisecond, time.Second) }),
		kgo.RetryTimeout(opTimeout),
	)
	w := &workload{adm: kadm.NewClient(cl), retries: retries, quit: make(chan struct{}), done: make(chan struct{}), progress: make(chan struct{}, 1)}
	go w.run()
	return w
}

func (w *workload) run() {
	defer close(w.done)
	var (
		nextName int
		// live are the topics created (acknowledged or applied) and not
		// yet asked to be deleted, oldest first: the deletes' targets.
		live []string
		// again are the names whose one create and one delete were both
		// acknowledged, to be created anew.
		again []string
		ops   = map[string][]outcome{}
	)
	for seq := 0; ; seq++ {
		select {
		case <-w.quit:
			return
		default:
		}
		var o op
		switch {
		case len(live) >= maxLive:
			// Deletes keep the cluster small, its partitions few, however
			// many requests a run makes.
			o = w.delete(seq, live[0])
			live = live[1:]
			if o.outcome == outcomeOK && slices.Equal(ops[o.topic], []outcome{outcomeOK}) {
				again = append(again, o.topic)
			}
		case seq%5 == 4 && len(again) > 0:
			o = w.create(seq, again[0])
			again = again[1:]
		default:
			o = w.create(seq, fmt.Sprintf("w-%d", nextName))
			nextName++
		}
		ops[o.topic] = append(ops[o.topic], o.outcome)
		if o.kind == opCreate && (o.outcome == outcomeOK || o.outcome == outcomeApplied) {
			live = append(live, o.topic)
		}
		w.record(o)
	}
}

func (w *workload) create(seq int, topic string) op {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := op{seq: seq, kind: opCreate, topic: topic}
	start := time.Now()
	resps, err := w.adm.CreateTopics(ctx, workloadParts, 1, nil, topic)
	r, ok := resps[topic]
	if err == nil && !ok {
		err = fmt.Errorf("no answer for %s in %v", topic, resps)
	}
	o.retries = w.retries.take()
	o.outcome, o.err = classify(err, r.Err, kerr.TopicAlreadyExists, retried(o.retries, kmsg.CreateTopics))
	if o.outcome == outcomeOK {
		o.id = r.ID
	}
	o.took = time.Since(start)
	return o
}

func (w *workload) delete(seq int, topic string) op {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := op{seq: seq, kind: opDelete, topic: topic}
	start := time.Now()
	resps, err := w.adm.DeleteTopics(ctx, topic)
	r, ok := resps[topic]
	if err == nil && !ok {
		err = fmt.Errorf("no answer for %s in %v", topic, resps)
	}
	o.retries = w.retries.take()
	o.outcome, o.err = classify(err, r.Err, kerr.UnknownTopicOrPartition, retried(o.retries, kmsg.DeleteTopics))
	o.took = time.Since(start)
	return o
}

func (w *workload) record(o op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.history = append(w.history, o)
	if o.kind == opCreate && o.outcome == outcomeOK {
		w.nacked++
		select {
		case w.progress <- struct{}{}:
		default:
		}
	}
}

func (w *workload) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nacked
}

// waitAcked waits until n creates have been acknowledged in all.
func (w *workload) waitAcked(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(2 * opTimeout)
	for w.acked() < n {
		select {
		case <-w.progress:
		case <-w.done:
			t.Fatalf("the workload stopped after %d acknowledged creates, before %d", w.acked(), n)
		case <-timeout:
			w.mu.Lock()
			recent := w.history[max(0, len(w.history)-5):]
			w.mu.Unlock()
			t.Fatalf("the workload did not get to %d acknowledged creates within %v (%d so far); its last requests: %v", n, 2*opTimeout, w.acked(), recent)
		}
	}
}

// stop stops the workload after its request in flight and returns the
// history.
func (w *workload) stop() []op {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.history)
}

// retryLog is the workload client's logger: it keeps the client's
// retries of requests, which say why an answer is TOPIC_ALREADY_EXISTS or
// UNKNOWN_TOPIC_OR_PARTITION, and drops everything else. The workload
// sends one request at a time, so the retries taken after a request are
// that request's.
type retryLog struct {
	mu      sync.Mutex
	retries []string
}

func (*retryLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *retryLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if msg != "retrying request" {
		return
	}
	var b strings.Builder
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch keyvals[i] {
		case "request", "tries", "request_error", "response_error":
			if keyvals[i+1] != nil {
				fmt.Fprintf(&b, " %v=%v", keyvals[i], keyvals[i+1])
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retries = append(l.retries, strings.TrimSpace(b.String()))
}

// retried reports whether retries (as retryLog took them) resent a request
// of the given key.
func retried(retries []string, key kmsg.Key) bool {
	return slices.ContainsFunc(retries, func(r string) bool {
		return strings.HasPrefix(r, "request="+kmsg.NameForKey(key.Int16())+" ")
	})
}

// take returns the retries logged since the last take.
func (l *retryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.retries
	l.retries = nil
	return r
}

// logHistory logs how many requests had each outcome, and every request
// whose outcome was not ok or that was slow.
func logHistory(t *testing.T, history []op) {
	t.Helper()
	counts := map[string]int{}
	created := map[string]bool{}
	var odd []string
	for _, o := range history {
		counts[fmt.Sprintf("%s %s", o.kind, o.outcome)]++
		if o.kind == opCreate && created[o.topic] {
			counts["creates of a deleted topic's name"]++
		}
		created[o.topic] = created[o.topic] || o.kind == opCreate
		// Slow requests are logged too: a failover should hold a request
		// up for an election and a retry, not for longer.
		if o.outcome != outcomeOK || o.took > 2*time.Second {
			odd = append(odd, o.String())
		}
	}
	var took []time.Duration
	for _, o := range history {
		took = append(took, o.took)
	}
	slices.Sort(took)
	if len(took) > 0 {
		t.Logf("%d requests: %v; each took %v (median), %v (90th percentile), %v at most", len(history), counts,
			took[len(took)/2].Round(time.Millisecond), took[len(took)*9/10].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	if len(odd) > 0 {
		t.Logf("requests not acknowledged ok, or slow:\n%s", strings.Join(odd, "\n"))
	}
}

// checkHistory returns how the final topics contradict the history of
// requests; nil if they do not.
//
// The workload sends one request at a time, but a request of unknown
// outcome may take effect at any time after it was sent, even after later
// requests, so the checks are made only where no such request leaves
// room. A definite error for requests the workload makes (a valid new
// topic, the deletion of an existing one) is itself a violation.
func checkHistory(history []op, final map[string]topicView) []string {
	var violations []string
	byTopic := map[string][]op{}
	for _, o := range history {
		byTopic[o.topic] = append(byTopic[o.topic], o)
		if o.outcome == outcomeFailed {
			violations = append(violations, fmt.Sprintf("%v: a definite error for a request that cannot fail", o))
		}
	}
	for name, tv := range final {
		if tv.internal {
			continue // the broker's own, never the workload's
		}
		if !slices.ContainsFunc(byTopic[name], func(o op) bool { return o.kind == opCreate && o.outcome != outcomeFailed }) {
			violations = append(violations, fmt.Sprintf("topic %s (id %x) exists, but no create of it may have been applied (requests: %v)", name, tv.id, byTopic[name]))
		}
	}
	for name, ops := range byTopic {
		tv, exists := final[name]
		// mayCreateAfter reports whether a create of name may take effect
		// after request seq: one sent later that may have been applied, or
		// any of unknown outcome.
		mayCreateAfter := func(seq int) bool {
			return slices.ContainsFunc(ops, func(o op) bool {
				return o.kind == opCreate && (o.outcome == outcomeUnknown || o.seq > seq && o.outcome != outcomeFailed)
			})
		}
		mayDeleteAfter := func(seq int) bool {
			return slices.ContainsFunc(ops, func(o op) bool {
				return o.kind == opDelete && (o.outcome == outcomeUnknown || o.seq > seq && o.outcome != outcomeFailed)
			})
		}

		// The last create known applied: unless a delete may have come
		// after it, the topic is there, with the id the create answered
		// (another id: the topic was created twice).
		if i := lastIndex(ops, opCreate); i >= 0 && !mayDeleteAfter(ops[i].seq) {
			c := ops[i]
			switch {
			case !exists:
				violations = append(violations, fmt.Sprintf("topic %s is missing after %v, and no delete may have followed (requests: %v)", name, c, ops))
			case c.outcome == outcomeOK && tv.id != c.id:
				violations = append(violations, fmt.Sprintf("topic %s has id %x, but %v: created twice? (requests: %v)", name, tv.id, c, ops))
			}
		}
		// The last delete known applied: unless a create may have come
		// after it, the topic is gone.
		if i := lastIndex(ops, opDelete); i >= 0 && exists && !mayCreateAfter(ops[i].seq) {
			violations = append(violations, fmt.Sprintf("topic %s (id %x) exists after %v, and no create may have followed (requests: %v)", name, tv.id, ops[i], ops))
		}
		// An existing topic's id is one a create answered, unless a create
		// whose answer carried no id may have made it.
		if exists && !slices.ContainsFunc(ops, func(o op) bool {
			return o.kind == opCreate && (o.outcome == outcomeApplied || o.outcome == outcomeUnknown || o.outcome == outcomeOK && o.id == tv.id)
		}) {
			violations = append(violations, fmt.Sprintf("topic %s has id %x, which no create answered (requests: %v)", name, tv.id, ops))
		}
	}
	slices.Sort(violations)
	return violations
}

// lastIndex returns the index of the last request of kind in ops known
// applied (ok or applied), -1 if none.
func lastIndex(ops []op, kind opKind) int {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].kind == kind && (ops[i].outcome == outcomeOK || ops[i].outcome == outcomeApplied) {
			return i
		}
	}
	return -1
}
