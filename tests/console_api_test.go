package tests

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
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
