package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
)

// consoleGet gets one of the console's JSON endpoints into out and
// returns the status.
func (b *broker) consoleGet(path string, out any) int {
	b.t.Helper()
	status, body := b.adminDo(http.MethodGet, path, "")
	if status == http.StatusOK && out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			b.t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	if status != http.StatusOK {
		b.t.Logf("GET %s: %d %s", path, status, body)
	}
	return status
}

type consoleTopics struct {
	Topics []struct {
		Name       string  `json:"name"`
		Internal   bool    `json:"internal"`
		SizeBytes  int64   `json:"size_bytes"`
		Records    int64   `json:"records"`
		BytesIn    float64 `json:"bytes_in_total"`
		RecordsIn  float64 `json:"records_in_total"`
		Partitions []struct {
			Partition       int32   `json:"partition"`
			Leader          int32   `json:"leader"`
			Replicas        []int32 `json:"replicas"`
			ISR             []int32 `json:"isr"`
			Offline         bool    `json:"offline"`
			UnderReplicated bool    `json:"under_replicated"`
			StartOffset     int64   `json:"start_offset"`
			EndOffset       int64   `json:"end_offset"`
			SizeBytes       int64   `json:"size_bytes"`
		} `json:"partitions"`
		Configs []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"configs"`
	} `json:"topics"`
	Brokers struct {
		Nodes        []int32 `json:"nodes"`
		MissingNodes []int32 `json:"missing_nodes"`
	} `json:"brokers"`
	SizesError string `json:"sizes_error"`
}

// TestConsoleTopics: the console lists topics with their partitions,
// offsets and sizes once records are produced, and one topic with its
// configs.
func TestConsoleTopics(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "orders", 3, nil)
	cl := b.client(kgo.DefaultProduceTopic("orders"))
	for i := range 30 {
		produce(t, ctx, cl, &kgo.Record{Key: []byte{byte(i)}, Value: noise(100)})
	}
	var out consoleTopics
	if s := b.consoleGet("/ui/api/topics", &out); s != http.StatusOK {
		t.Fatalf("status %d", s)
	}
	found := false
	for _, tp := range out.Topics {
		if tp.Name != "orders" {
			continue
		}
		found = true
		if len(tp.Partitions) != 3 || tp.Records != 30 || tp.SizeBytes <= 0 {
			t.Fatalf("orders: %d partitions, %d records, %d bytes", len(tp.Partitions), tp.Records, tp.SizeBytes)
		}
		for _, p := range tp.Partitions {
			if p.Leader != b.cfg.NodeID || p.Offline || p.UnderReplicated || p.StartOffset != 0 || len(p.ISR) != 1 {
				t.Fatalf("orders-%d: %+v", p.Partition, p)
			}
		}
	}
	if !found || out.SizesError != "" {
		t.Fatalf("orders not listed (sizes error %q): %+v", out.SizesError, out)
	}
	if len(out.Brokers.Nodes) != 1 || len(out.Brokers.MissingNodes) != 0 {
		t.Fatalf("counters from %v, missing %v", out.Brokers.Nodes, out.Brokers.MissingNodes)
	}

	var one struct {
		Name    string `json:"name"`
		Records int64  `json:"records"`
		Configs []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"configs"`
	}
	if s := b.consoleGet("/ui/api/topics/orders", &one); s != http.StatusOK || one.Records != 30 || len(one.Configs) == 0 {
		t.Fatalf("topic: %d %+v", s, one)
	}
	if s := b.consoleGet("/ui/api/topics/nosuch", nil); s != http.StatusNotFound {
		t.Fatalf("unknown topic: %d", s)
	}
}

// TestConsoleSettings: without authentication nobody is a super user,
// so the fault buttons are off even with chaos.enable.
func TestConsoleSettings(t *testing.T) {
	b := startBroker(t)
	var s struct {
		ChaosEnabled bool   `json:"chaos_enabled"`
		AuthEnabled  bool   `json:"auth_enabled"`
		User         string `json:"user"`
		SuperUser    bool   `json:"super_user"`
		NodeID       int32  `json:"node_id"`
		CanInject    bool   `json:"can_inject"`
	}
	b.consoleGet("/ui/api/settings", &s)
	if !s.ChaosEnabled || s.AuthEnabled || s.SuperUser || s.CanInject || s.User != "User:ANONYMOUS" || s.NodeID != b.cfg.NodeID {
		t.Fatalf("settings: %+v", s)
	}
}

type consoleMessages struct {
	Partition   int32 `json:"partition"`
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	Scanned     int   `json:"scanned"`
	Complete    bool  `json:"complete"`
	Records     []struct {
		Partition     int32   `json:"partition"`
		Offset        int64   `json:"offset"`
		Timestamp     int64   `json:"timestamp"`
		Key           *string `json:"key"`
		KeyEncoding   string  `json:"key_encoding"`
		Value         *string `json:"value"`
		ValueEncoding string  `json:"value_encoding"`
		Truncated     bool    `json:"truncated"`
		Headers       []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"headers"`
	} `json:"records"`
}

// TestConsoleMessages: the message browser reads a partition by offset,
// the last N, by time, and by key, reading only the partition Kafka's
// partitioner puts the key on (as kgo's producer did).
func TestConsoleMessages(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "events", 4, nil)
	// kgo's default partitioner hashes keys as Java's does (murmur2).
	cl := b.client(kgo.DefaultProduceTopic("events"))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var wanted *kgo.Record
	for i := range 40 {
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Timestamp: base.Add(time.Duration(i) * time.Second), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
		res := produce(t, ctx, cl, rec)
		if i == 17 {
			wanted = res[0].Record
		}
	}
	binary := produce(t, ctx, cl, &kgo.Record{Key: []byte("bin"), Value: []byte{0xff, 0x00, 0xfe}})[0].Record

	var m consoleMessages
	path := fmt.Sprintf("/ui/api/messages?topic=events&partition=%d&offset=0&limit=100", wanted.Partition)
	if s := b.consoleGet(path, &m); s != http.StatusOK || !m.Complete || len(m.Records) == 0 || m.Records[0].Offset != 0 {
		t.Fatalf("by offset: %d %+v", s, m)
	}
	n := len(m.Records)
	if int64(n) != m.EndOffset-m.StartOffset || m.Records[0].Headers[0].Key != "h" || m.Records[0].ValueEncoding != "text" {
		t.Fatalf("by offset: %d records of %d-%d: %+v", n, m.StartOffset, m.EndOffset, m.Records[0])
	}
	m = consoleMessages{}
	b.consoleGet(fmt.Sprintf("/ui/api/messages?topic=events&partition=%d&offset=-2&decode=json", wanted.Partition), &m)
	if len(m.Records) != min(2, n) || m.Records[len(m.Records)-1].Offset != m.EndOffset-1 {
		t.Fatalf("last 2: %+v", m)
	}
	m = consoleMessages{}
	b.consoleGet(fmt.Sprintf("/ui/api/messages?topic=events&partition=%d&timestamp=%d&limit=1", wanted.Partition, wanted.Timestamp.UnixMilli()), &m)
	if len(m.Records) != 1 || m.Records[0].Offset != wanted.Offset || m.Records[0].Timestamp != wanted.Timestamp.UnixMilli() {
		t.Fatalf("by time: want offset %d: %+v", wanted.Offset, m)
	}
	m = consoleMessages{}
	b.consoleGet("/ui/api/messages?topic=events&key=key-17&decode=json", &m)
	if m.Partition != wanted.Partition || len(m.Records) != 1 || m.Records[0].Offset != wanted.Offset ||
		*m.Records[0].Key != "key-17" || m.Records[0].ValueEncoding != "json" || !m.Complete {
		t.Fatalf("by key: want partition %d offset %d: %+v", wanted.Partition, wanted.Offset, m)
	}
	if m.Scanned != int(m.EndOffset-m.StartOffset) {
		t.Fatalf("by key: scanned %d of a partition of %d records", m.Scanned, m.EndOffset-m.StartOffset)
	}
	m = consoleMessages{}
	b.consoleGet(fmt.Sprintf("/ui/api/messages?topic=events&partition=%d&offset=%d&limit=1", binary.Partition, binary.Offset), &m)
	if len(m.Records) != 1 || m.Records[0].ValueEncoding != "hex" || *m.Records[0].Value != "ff00fe" {
		t.Fatalf("binary value: %+v", m)
	}
	for _, bad := range []string{"?partition=0", "?topic=events", "?topic=events&partition=0&offset=x", "?topic=events&key=a&offset=1"} {
		if s := b.consoleGet("/ui/api/messages"+bad, nil); s != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, s)
		}
	}
	if s := b.consoleGet("/ui/api/messages?topic=nosuch&partition=0", nil); s != http.StatusNotFound {
		t.Errorf("unknown topic: %d", s)
	}
}

// TestConsoleGroupsAndTransactions: a group's lag after it committed
// part of a topic, and an open transaction with its partitions and the
// producer state of its partition.
func TestConsoleGroupsAndTransactions(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "work", 2, nil)
	cl := b.client(kgo.DefaultProduceTopic("work"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, ctx, cl, &kgo.Record{Partition: int32(i % 2), Value: []byte("x")})
	}
	// Committed: 2 of partition 0's 5; partition 1 none.
	if err := adm.CommitAllOffsets(ctx, "readers", kadm.Offsets{"work": {0: {Topic: "work", Partition: 0, At: 2, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	var groups struct {
		Groups []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			State string `json:"state"`
			Lag   int64  `json:"lag"`
		} `json:"groups"`
	}
	b.consoleGet("/ui/api/groups", &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Name != "readers" || groups.Groups[0].Lag != 3 || groups.Groups[0].Type != "classic" {
		t.Fatalf("groups: %+v", groups)
	}
	var g struct {
		State   string `json:"state"`
		Lag     int64  `json:"lag"`
		Offsets []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Committed int64  `json:"committed"`
			EndOffset int64  `json:"end_offset"`
			Lag       int64  `json:"lag"`
		} `json:"offsets"`
	}
	if s := b.consoleGet("/ui/api/groups/readers", &g); s != http.StatusOK || g.Lag != 3 || len(g.Offsets) != 1 ||
		g.Offsets[0].Committed != 2 || g.Offsets[0].EndOffset != 5 || g.State != "Empty" {
		t.Fatalf("group: %d %+v", s, g)
	}
	if s := b.consoleGet("/ui/api/groups/nosuch", nil); s != http.StatusNotFound {
		t.Fatalf("unknown group: %d", s)
	}

	txn := b.client(kgo.TransactionalID("console-txn"), kgo.DefaultProduceTopic("work"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, txn, &kgo.Record{Partition: 1, Value: []byte("in a transaction")})
	var txns struct {
		Transactions []struct {
			TransactionalID string `json:"transactional_id"`
			State           string `json:"state"`
			ProducerID      int64  `json:"producer_id"`
			StartMs         int64  `json:"start_ms"`
			Partitions      []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			} `json:"partitions"`
		} `json:"transactions"`
	}
	b.consoleGet("/ui/api/transactions", &txns)
	if len(txns.Transactions) != 1 || txns.Transactions[0].State != "Ongoing" || len(txns.Transactions[0].Partitions) != 1 ||
		txns.Transactions[0].Partitions[0].Partition != 1 || txns.Transactions[0].StartMs <= 0 {
		t.Fatalf("transactions: %+v", txns)
	}
	var prods struct {
		Partitions []struct {
			Partition int32 `json:"partition"`
			Producers []struct {
				ProducerID            int64 `json:"producer_id"`
				CurrentTxnStartOffset int64 `json:"current_txn_start_offset"`
			} `json:"producers"`
		} `json:"partitions"`
	}
	b.consoleGet("/ui/api/producers?topic=work", &prods)
	found := false
	for _, p := range prods.Partitions {
		for _, x := range p.Producers {
			if p.Partition == 1 && x.ProducerID == txns.Transactions[0].ProducerID && x.CurrentTxnStartOffset == 5 {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("producers: no open transaction from offset 5 on work-1: %+v", prods)
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

// TestAdminPause: POST /v1/pause stops the node's process (SIGSTOP, from
// a child of its own binary) for the time asked and continues it. The
// node runs in this test's process, so the pause shows as a gap in a
// goroutine that notes the time every few milliseconds; the node answers
// again after.
func TestAdminPause(t *testing.T) {
	b := startBroker(t)
	var (
		mu      sync.Mutex
		gap     time.Duration
		stopped = make(chan struct{})
	)
	go func() {
		last := time.Now()
		for {
			select {
			case <-stopped:
				return
			case <-time.After(5 * time.Millisecond):
			}
			now := time.Now()
			mu.Lock()
			gap = max(gap, now.Sub(last))
			mu.Unlock()
			last = now
		}
	}()
	defer close(stopped)
	// A pause of an earlier test's node in this process may still be
	// ending (its child exiting): 409 until then.
	eventually(t, "the pause accepted", func() bool {
		s, body := b.adminDo(http.MethodPost, "/v1/pause", `{"for": "1s"}`)
		if s != http.StatusAccepted && s != http.StatusConflict {
			t.Fatalf("pause: %d %s", s, body)
		}
		return s == http.StatusAccepted
	})
	eventually(t, "a gap of a second", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return gap >= 900*time.Millisecond
	})
	if s, _ := b.adminDo(http.MethodGet, "/healthz", ""); s != http.StatusOK {
		t.Fatalf("after the pause: %d", s)
	}
	if s, body := b.adminDo(http.MethodPost, "/v1/pause", `{"for": "11m"}`); s != http.StatusBadRequest {
		t.Fatalf("an 11m pause: %d %s", s, body)
	}
	off := startBroker(t, func(c *configs.Node) { c.ChaosEnable = false })
	if s, _ := off.adminDo(http.MethodPost, "/v1/pause", `{"for": "1s"}`); s != http.StatusForbidden {
		t.Fatalf("pause without chaos.enable: %d", s)
	}
}

// consoleSettings is GET /ui/api/settings.
type consoleSettings struct {
	ChaosEnabled bool   `json:"chaos_enabled"`
	AuthEnabled  bool   `json:"auth_enabled"`
	User         string `json:"user"`
	SuperUser    bool   `json:"super_user"`
	CanInject    bool   `json:"can_inject"`
}

// TestConsoleAsUser: with SASL listeners and an authorizer, the console
// knows who logged in (HTTP Basic with a SASL user's password), shows
// the fault buttons only to a super user, and reads the cluster as that
// user: alice, allowed to describe and read one topic, sees only that
// one, and reading the other is refused as Kafka refuses her.
func TestConsoleAsUser(t *testing.T) {
	b := aclBroker(t, func(c *configs.Node) { c.SuperUsers = "User:ANONYMOUS;User:bob" })
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "orders", 1, nil)
	mustCreate(t, ctx, adm, "secret", 1, nil)
	mustCreateACLs(t, ctx, adm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpDescribe, kadm.OpRead))
	produce(t, ctx, b.client(), &kgo.Record{Topic: "orders", Value: []byte("for alice")}, &kgo.Record{Topic: "secret", Value: []byte("not for alice")})

	if s, _ := b.adminDo(http.MethodGet, "/ui/api/settings", ""); s != http.StatusUnauthorized {
		t.Fatalf("settings without credentials: %d, want 401", s)
	}
	names := func() map[string]bool {
		var out consoleTopics
		if s := b.consoleGet("/ui/api/topics", &out); s != http.StatusOK {
			t.Fatalf("topics as %s: %d", b.adminUser, s)
		}
		m := map[string]bool{}
		for _, tp := range out.Topics {
			m[tp.Name] = true
		}
		return m
	}

	b.adminUser, b.adminPassword = "alice", "alice-secret"
	var s consoleSettings
	b.consoleGet("/ui/api/settings", &s)
	if !s.AuthEnabled || s.User != "User:alice" || s.SuperUser || s.CanInject || !s.ChaosEnabled {
		t.Fatalf("alice's settings: %+v", s)
	}
	eventually(t, "alice sees orders only", func() bool {
		got := names()
		return got["orders"] && !got["secret"] && len(got) == 1
	})
	var m consoleMessages
	if st := b.consoleGet("/ui/api/messages?topic=orders&partition=0", &m); st != http.StatusOK || len(m.Records) != 1 || *m.Records[0].Value != "for alice" {
		t.Fatalf("alice reads orders: %d %+v", st, m)
	}
	if st := b.consoleGet("/ui/api/messages?topic=secret&partition=0", nil); st != http.StatusForbidden {
		t.Fatalf("alice reads secret: %d, want 403", st)
	}

	b.adminUser, b.adminPassword = "bob", "bob-secret"
	s = consoleSettings{}
	b.consoleGet("/ui/api/settings", &s)
	if s.User != "User:bob" || !s.SuperUser || !s.CanInject {
		t.Fatalf("bob's settings: %+v", s)
	}
	if got := names(); !got["orders"] || !got["secret"] {
		t.Fatalf("bob, a super user, sees %v", got)
	}
}
