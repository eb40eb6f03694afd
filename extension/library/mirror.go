package library

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "mirror",
		Doc: "copies topics, of this cluster or another (source.bootstrap.servers), to prefixed topics, partition by partition, " +
			"keeping keys, headers and timestamps, and translates the source's consumer groups' offsets to the copies",
		Settings: []extension.Setting{
			{Name: "target.topic.prefix", Default: "mirror.", Doc: "the copy of topic T is <prefix>T, created with T's partition count"},
			{Name: "sync.group.offsets", Default: "true", Doc: "commit the source's consumer groups' offsets, translated, to the same groups here, for consumers that fail over (never moving an offset back, never for a group with members here)"},
			{Name: "sync.group.offsets.interval.ms", Default: "5000", Doc: "how often the groups' offsets are translated"},
		},
		State: true,
		// A mirror never reads its own copies (source.topics=.* would
		// copy them again, and again).
		Skip: func(settings map[string]string, topic string) bool {
			return strings.HasPrefix(topic, settings["target.topic.prefix"])
		},
		New: newMirror,
	})
}

// mirror copies one source partition to the same partition of its target
// topic. It keeps offset syncs, pairs of a source offset and the offset its
// copy got, learnt as the copies are written and saved in its state every
// hundred source offsets; from them it translates the offsets the source's
// consumer groups commit on the partition into offsets of the copy, and
// commits those to the same groups here.
type mirror struct {
	source, target string
	partition      int32
	bootstrap      []string // the source cluster's; nil: this one
	cluster        extension.Cluster
	syncGroups     bool
	interval       time.Duration

	mu sync.Mutex
	// syncs are the offset syncs, by source offset; saved is the hundred
	// of source offsets they were last saved in.
	syncs []offsetSync
	saved int64

	lastSync   time.Time
	src, local *kadm.Client
	clients    []*kgo.Client
}

// offsetSync says that the record at Source in the source partition was
// copied to Target.
type offsetSync struct {
	Source int64 `json:"s"`
	Target int64 `json:"t"`
}

// The mirror's state: its offset syncs.
const (
	syncsKey = "syncs"
	maxSyncs = 256
)

func newMirror(in extension.Instance) (extension.Extension, error) {
	prefix := in.Settings["target.topic.prefix"]
	if prefix == "" {
		return nil, fmt.Errorf("target.topic.prefix is empty: the copy would be the topic itself")
	}
	ms, err := strconv.ParseInt(in.Settings["sync.group.offsets.interval.ms"], 10, 64)
	if err != nil || ms <= 0 {
		return nil, fmt.Errorf("sync.group.offsets.interval.ms is %q; it takes a positive number of milliseconds", in.Settings["sync.group.offsets.interval.ms"])
	}
	m := &mirror{source: in.Topic, target: prefix + in.Topic, partition: in.Partition, cluster: in.Cluster,
		interval: time.Duration(ms) * time.Millisecond, saved: -1}
	switch in.Settings["sync.group.offsets"] {
	case "true":
		m.syncGroups = true
	case "false":
	default:
		return nil, fmt.Errorf("sync.group.offsets is %q; it takes true or false", in.Settings["sync.group.offsets"])
	}
	for _, b := range strings.Split(in.Settings[extension.SettingSourceBootstrap], ",") {
		if b = strings.TrimSpace(b); b != "" {
			m.bootstrap = append(m.bootstrap, b)
		}
	}
	if b, ok := in.State[syncsKey]; ok {
		var st struct {
			Saved int64        `json:"saved"`
			Syncs []offsetSync `json:"syncs"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("the offset syncs in the state: %v", err)
		}
		m.syncs, m.saved = st.Syncs, st.Saved
	}
	if in.Cluster.Partitions(m.target) == 0 {
		if err := in.Cluster.CreateTopic(m.target, in.SourcePartitions, nil); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *mirror) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		out.Emit(m.target, m.partition, r)
		// The syncs are saved when a record of a new hundred of source
		// offsets is copied: which records save them depends on the
		// records alone, as the runtime's exactly-once output needs; what
		// they hold is what was learnt by then.
		if k := r.Offset / 100; k != m.saved {
			m.saved = k
			b, err := m.encodeSyncs()
			if err != nil {
				return err
			}
			out.Put(syncsKey, b)
		}
	}
	return nil
}

func (m *mirror) encodeSyncs() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return json.Marshal(struct {
		Saved int64        `json:"saved"`
		Syncs []offsetSync `json:"syncs"`
	}{m.saved, m.syncs})
}

// Written learns offset syncs from the copies written: the first of each
// batch, and any that is a hundred source offsets past the last sync.
func (m *mirror) Written(topic string, partition int32, first int64, records []extension.Record) {
	if topic != m.target || first < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range records {
		n := len(m.syncs)
		if i > 0 && n > 0 && r.Offset-m.syncs[n-1].Source < 100 && i < len(records)-1 {
			continue
		}
		if n > 0 && r.Offset <= m.syncs[n-1].Source {
			continue
		}
		m.syncs = append(m.syncs, offsetSync{Source: r.Offset, Target: first + int64(i)})
	}
	if len(m.syncs) > maxSyncs {
		// Thin the older half: every other one goes.
		half := m.syncs[:len(m.syncs)/2]
		kept := half[:0]
		for i := range half {
			if i%2 == 0 {
				kept = append(kept, half[i])
			}
		}
		m.syncs = append(kept, m.syncs[len(m.syncs)/2:]...)
	}
}

// translate returns the offset of the copy to resume at for a consumer of
// the source that committed offset: after the copy of the last record
// before it, or at the copy of offset itself when a sync names it. A
// consumer may see again records it had seen, never miss one. ok is false
// below the first sync.
func (m *mirror) translate(offset int64) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, found := slices.BinarySearchFunc(m.syncs, offset, func(s offsetSync, o int64) int { return int(s.Source - o) })
	if found {
		return m.syncs[i].Target, true
	}
	if i == 0 {
		return 0, false
	}
	return m.syncs[i-1].Target + 1, true
}

// Tick translates the source's groups' offsets on the partition into the
// copy's, every interval, and commits them here: to a group with no
// members here, and never moving its offset back. It writes nothing of
// its own output.
func (m *mirror) Tick(now time.Time, _ extension.Output) error {
	if !m.syncGroups || now.Sub(m.lastSync) < m.interval {
		return nil
	}
	m.lastSync = now
	if m.src == nil {
		src := m.bootstrap
		if src == nil {
			src = m.cluster.Bootstrap()
		}
		for _, seeds := range [][]string{src, m.cluster.Bootstrap()} {
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("skein-mirror"))
			if err != nil {
				return nil // tried again at the next interval
			}
			m.clients = append(m.clients, cl)
		}
		m.src, m.local = kadm.NewClient(m.clients[0]), kadm.NewClient(m.clients[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.interval)
	defer cancel()
	m.syncGroupOffsets(ctx)
	return nil
}

// syncGroupOffsets does one round of Tick's work; failures wait for the
// next round.
func (m *mirror) syncGroupOffsets(ctx context.Context) {
	groups, err := m.src.ListGroups(ctx)
	if err != nil {
		return
	}
	for _, g := range groups.Groups() {
		if strings.HasPrefix(g, "skein-extension-") {
			continue // an extension's own position
		}
		offs, err := m.src.FetchOffsets(ctx, g)
		if err != nil {
			continue
		}
		o, ok := offs.Lookup(m.source, m.partition)
		if !ok || o.Err != nil || o.At < 0 {
			continue
		}
		to, ok := m.translate(o.At)
		if !ok {
			continue
		}
		described, err := m.local.DescribeGroups(ctx, g)
		if err != nil {
			continue
		}
		if d, ok := described[g]; ok && d.Err == nil && len(d.Members) > 0 {
			continue // its consumers here commit for themselves
		}
		if cur, err := m.local.FetchOffsets(ctx, g); err == nil {
			if c, ok := cur.Lookup(m.target, m.partition); ok && c.Err == nil && c.At >= to {
				continue
			}
		}
		var commit kadm.Offsets
		commit.Add(kadm.Offset{Topic: m.target, Partition: m.partition, At: to, LeaderEpoch: -1})
		m.local.CommitOffsets(ctx, g, commit)
	}
}

// Close lets go of the mirror's clients.
func (m *mirror) Close() error {
	for _, cl := range m.clients {
		cl.Close()
	}
	return nil
}
