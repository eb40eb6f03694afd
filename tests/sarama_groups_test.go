package tests

// sarama's ConsumerGroup against the classic group protocol: two members
// with each of sarama's client-side assignors, eager and cooperative.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaLedger records, from what sarama's members observed, every record
// consumed and which partitions each member owned in each generation.
type saramaLedger struct {
	topic string

	mu     sync.Mutex
	seen   map[int32]map[int64]bool            // partition → offsets consumed
	count  int                                 // distinct records consumed
	owned  map[int32]map[string]map[int32]bool // generation → member → partitions
	setups []string                            // what each Setup saw, in order
}

func newSaramaLedger(topic string) *saramaLedger {
	return &saramaLedger{topic: topic, seen: map[int32]map[int64]bool{}, owned: map[int32]map[string]map[int32]bool{}}
}

// owns records that member owns partitions in generation gen.
func (l *saramaLedger) owns(member string, gen int32, partitions ...int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owned[gen] == nil {
		l.owned[gen] = map[string]map[int32]bool{}
	}
	if l.owned[gen][member] == nil {
		l.owned[gen][member] = map[int32]bool{}
	}
	for _, p := range partitions {
		l.owned[gen][member][p] = true
	}
}

func (l *saramaLedger) setup(member string, s sarama.ConsumerGroupSession) {
	claims := slices.Sorted(slices.Values(s.Claims()[l.topic]))
	l.owns(member, s.GenerationID(), claims...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setups = append(l.setups, fmt.Sprintf("generation %d: %s's Setup saw partitions %v", s.GenerationID(), member, claims))
}

func (l *saramaLedger) consumed(m *sarama.ConsumerMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[m.Partition] == nil {
		l.seen[m.Partition] = map[int64]bool{}
	}
	if !l.seen[m.Partition][m.Offset] {
		l.seen[m.Partition][m.Offset] = true
		l.count++
	}
}

func (l *saramaLedger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// shared reports whether some generation had both members owning
// partitions.
func (l *saramaLedger) shared(a, b string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, members := range l.owned {
		if len(members[a]) > 0 && len(members[b]) > 0 {
			return true
		}
	}
	return false
}

// check fails the test if a partition was owned by two members in one
// generation, and logs what each member owned in each generation.
func (l *saramaLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.setups {
		t.Log(s)
	}
	for _, gen := range slices.Sorted(maps.Keys(l.owned)) {
		owner := map[int32]string{}
		var line []string
		for _, m := range slices.Sorted(maps.Keys(l.owned[gen])) {
			ps := slices.Sorted(maps.Keys(l.owned[gen][m]))
			line = append(line, fmt.Sprintf("%s %v", m, ps))
			for _, p := range ps {
				if o, ok := owner[p]; ok {
					t.Errorf("generation %d: partition %d owned by %s and %s", gen, p, o, m)
				}
				owner[p] = m
			}
		}
		t.Logf("generation %d: owned %s", gen, strings.Join(line, ", "))
	}
}

// saramaMember is one sarama ConsumerGroup calling Consume in a loop in its
// own goroutine, marking every message it handles; sarama commits what is
// marked every AutoCommit.Interval and when the session ends.
type saramaMember struct {
	name  string
	l     *saramaLedger
	group sarama.ConsumerGroup
	done  chan struct{}

	mu   sync.Mutex
	sess sarama.ConsumerGroupSession // the newest, from Setup
}

func startSaramaMember(t *testing.T, b *broker, l *saramaLedger, name, group string, strategy sarama.BalanceStrategy) *saramaMember {
	t.Helper()
	cfg := saramaConfig()
	cfg.ClientID = "skein-tests-" + name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Session.Timeout = 3 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	g, err := sarama.NewConsumerGroup([]string{b.addr()}, group, cfg)
	if err != nil {
		t.Fatalf("sarama: new consumer group: %v", err)
	}
	m := &saramaMember{name: name, l: l, group: g, done: make(chan struct{})}
	go func() {
		for err := range g.Errors() {
			t.Logf("%s: %v", name, err)
		}
	}()
	go func() {
		defer close(m.done)
		for {
			err := g.Consume(context.Background(), []string{l.topic}, m)
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				t.Logf("%s: consume: %v", name, err)
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close leaves the group, committing what was marked, and waits for the
// Consume loop to end.
func (m *saramaMember) close() {
	if m.group == nil {
		return
	}
	if err := m.group.Close(); err != nil {
		m.l.mu.Lock()
		m.l.setups = append(m.l.setups, fmt.Sprintf("%s: close: %v", m.name, err))
		m.l.mu.Unlock()
	}
	<-m.done
	m.group = nil
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.l.setup(m.name, s)
	m.mu.Lock()
	m.sess = s
	m.mu.Unlock()
	return nil
}

// observe records what the member's session owns now. With a cooperative
// strategy a member can keep partitions into a generation without its
// Setup or ConsumeClaim running, and consume nothing from them.
//
// NB: sarama stores a new generation before it revokes and before it
// stores the new claims, so claims read between two equal generation
// reads were owned in that generation (those being revoked until they
// are). A changed generation drops the reading.
func (m *saramaMember) observe() {
	m.mu.Lock()
	s := m.sess
	m.mu.Unlock()
	if s == nil {
		return
	}
	gen := s.GenerationID()
	claims := s.Claims()[m.l.topic]
	if s.GenerationID() == gen {
		m.l.owns(m.name, gen, claims...)
	}
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	// NB: with a cooperative strategy Setup runs once, on the first join,
	// and a claim kept across a rebalance is not started again: the
	// generation a claim starts in, and the one each message is handled
	// in, record the ownership Setup cannot see.
	m.l.owns(m.name, s.GenerationID(), c.Partition())
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			m.l.owns(m.name, s.GenerationID(), msg.Partition)
			m.l.consumed(msg)
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestSaramaConsumerGroup: two sarama ConsumerGroup members, with the
// range, sticky and cooperative-sticky (KIP-429) strategies, consume every
// record of a six-partition topic: records produced before the members
// join, while the first is alone, and once both own partitions. No
// partition is owned by both members in one generation, as they observed
// it, and after both leave the committed offsets equal the end offsets.
// Logs the versions sarama sent the group APIs at.
func TestSaramaConsumerGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy func() sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange},
		{"sticky", sarama.NewBalanceStrategySticky},
		{"cooperative-sticky", sarama.NewBalanceStrategyCooperativeSticky},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := groupBroker(t)
			adm := b.admin()
			ctx := ctxFor(t)
			topic, group := "sarama-orders", "sarama-"+tc.name
			mustCreate(t, ctx, adm, topic, 6, nil)
			prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			l := newSaramaLedger(topic)
			t.Cleanup(func() {
				if t.Failed() {
					l.check(t) // what the members saw, for the failure
				}
			})

			produceN(t, prod, topic, 0, 600)
			m1 := startSaramaMember(t, b, l, "m1", group, tc.strategy())
			eventually(t, "m1 consumes", func() bool { return l.distinct() > 0 })
			m2 := startSaramaMember(t, b, l, "m2", group, tc.strategy())
			produceN(t, prod, topic, 600, 1200)
			eventually(t, "a generation in which both members own partitions", func() bool {
				m1.observe()
				m2.observe()
				return l.shared("m1", "m2")
			})
			produceN(t, prod, topic, 1200, 1800)
			eventually(t, "1800 records", func() bool { return l.distinct() >= 1800 })

			m1.close()
			m2.close()
			if n := l.distinct(); n != 1800 {
				t.Errorf("consumed %d distinct records, want 1800", n)
			}
			l.check(t)
			logGroupVersions(t, b)
			checkCommittedAtEnd(t, adm, group, topic)
		})
	}
}

// logGroupVersions logs the versions the broker saw for the group APIs
// (from skein_requests_total), and fails if none was sent for one of
// them.
func logGroupVersions(t *testing.T, b *broker) {
	t.Helper()
	sent := map[string][]int{}
	for _, m := range b.metrics()["skein_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		v, _ := strconv.Atoi(labels["version"])
		sent[labels["api"]] = append(sent[labels["api"]], v)
	}
	var line []string
	for _, api := range []string{"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch"} {
		vs := sent[api]
		if len(vs) == 0 {
			t.Errorf("no %s request was sent", api)
			continue
		}
		sort.Ints(vs)
		line = append(line, fmt.Sprintf("%s %v", api, vs))
	}
	t.Logf("group API versions sent: %s", strings.Join(line, ", "))
}

// TestSaramaInConsumerGroup: a sarama ConsumerGroup member (classic
// protocol, range) joins a KIP-848 consumer group of a franz-go member
// (kgo.ServerSideBalancer), as Kafka 4 lets a classic consumer do: the
// broker assigns it through JoinGroup/SyncGroup, the group lists it as a
// classic member, the two consume every record between them, and their
// commits reach the end offsets.
func TestSaramaInConsumerGroup(t *testing.T) {
	b := consumerGroupBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	topic, group := "sarama848", "g-sarama848"
	mustCreate(t, ctx, adm, topic, 4, nil)
	prod := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produceN(t, prod, topic, 0, 400)
	kl := newGroupLedger()
	o := &ownership{owner: map[int32]string{}}
	n1 := start848Member(t, b, kl, o, "n1", group, topic)
	eventually(t, "n1 owns every partition", func() bool { return o.owns("n1") == 4 })
	sl := newSaramaLedger(topic)
	s1 := startSaramaMember(t, b, sl, "s1", group, sarama.NewBalanceStrategyRange())
	eventually(t, "the sarama member, a classic member, owns two partitions", func() bool {
		described, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range described[group].Members {
			if m.MemberType == 0 && m.ClientID == "skein-tests-s1" && len(m.Assignment[topic]) == 2 {
				return o.owns("n1") == 2
			}
		}
		return false
	})
	produceN(t, prod, topic, 400, 800)
	union := func() (all, bySarama int) {
		kl.mu.Lock()
		defer kl.mu.Unlock()
		sl.mu.Lock()
		defer sl.mu.Unlock()
		for p := range int32(4) {
			for off := range kl.seen[p] {
				if !sl.seen[p][off] {
					all++
				}
			}
			all += len(sl.seen[p])
		}
		return all, sl.count
	}
	eventually(t, "every record, between the two, the sarama member's share included", func() bool {
		all, bySarama := union()
		return all == 800 && bySarama >= 200
	})
	s1.close()
	n1.close()
	o.check(t, "")
	checkCommittedAtEnd(t, adm, group, topic)
}
