package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminURL returns the URL of path on the broker's admin listener.
func (b *broker) adminURL(path string) string {
	return "http://" + b.node.AdminAddr().String() + path
}

// adminDo sends a request to the admin API and returns the status and
// body.
func (b *broker) adminDo(method, path, body string) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.adminURL(path), rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.adminUser != "" {
		req.SetBasicAuth(b.adminUser, b.adminPassword)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// injectFault posts a fault (JSON) and fails the test unless it is set.
func (b *broker) injectFault(fault string) {
	b.t.Helper()
	if code, body := b.adminDo("POST", "/v1/faults", fault); code != http.StatusCreated {
		b.t.Fatalf("POST /v1/faults %s: %d %s", fault, code, body)
	}
}

// actorJSON is an actor in /v1/actors.
type actorJSON struct {
	Name          string       `json:"name"`
	Kind          string       `json:"kind"`
	MailboxLength int64        `json:"mailbox_length"`
	Restarts      int64        `json:"restarts"`
	Children      []*actorJSON `json:"children"`
}

// actors returns the broker's live actor tree, by name.
func (b *broker) actors() map[string]*actorJSON {
	b.t.Helper()
	code, body := b.adminDo("GET", "/v1/actors", "")
	if code != http.StatusOK {
		b.t.Fatalf("GET /v1/actors: %d %s", code, body)
	}
	var tree struct {
		Actors []*actorJSON `json:"actors"`
	}
	if err := json.Unmarshal(body, &tree); err != nil {
		b.t.Fatalf("GET /v1/actors: %v\n%s", err, body)
	}
	byName := map[string]*actorJSON{}
	var walk func(as []*actorJSON)
	walk = func(as []*actorJSON) {
		for _, a := range as {
			byName[a.Name] = a
			walk(a.Children)
		}
	}
	walk(tree.Actors)
	return byName
}

// metrics scrapes /metrics and returns the metric families by name.
func (b *broker) metrics() map[string]*dto.MetricFamily {
	b.t.Helper()
	code, body := b.adminDo("GET", "/metrics", "")
	if code != http.StatusOK {
		b.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		b.t.Fatalf("GET /metrics: %v", err)
	}
	return mfs
}

// metricValue returns the value of the sample of family name whose labels
// include labels, and whether there is one.
func metricValue(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestAdminMetrics: after clients have produced, /metrics has the request
// counters, each partition's log size and segment count, the actors'
// mailbox gauges by kind, the sync rounds and the Go runtime's metrics.
func TestAdminMetrics(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, "metered"); err != nil {
		t.Fatal(err)
	}
	p := b.client(kgo.DefaultProduceTopic("metered"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 100; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("value-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	mfs := b.metrics()
	if v, ok := metricValue(mfs, "skein_requests_total", map[string]string{"api": "Produce"}); !ok || v < 1 {
		t.Errorf("skein_requests_total{api=Produce} = %v, %v; want at least 1", v, ok)
	}
	if v, ok := metricValue(mfs, "skein_requests_total", map[string]string{"api": "CreateTopics"}); !ok || v != 1 {
		t.Errorf("skein_requests_total{api=CreateTopics} = %v, %v; want 1", v, ok)
	}
	for _, part := range []string{"0", "1"} {
		labels := map[string]string{"topic": "metered", "partition": part}
		// 50 records of at least 7 bytes each, in batches with 61-byte headers.
		if v, ok := metricValue(mfs, "skein_partition_log_size_bytes", labels); !ok || v < 50*7 {
			t.Errorf("skein_partition_log_size_bytes%v = %v, %v; want at least 350", labels, v, ok)
		}
		if v, ok := metricValue(mfs, "skein_partition_log_segments", labels); !ok || v != 1 {
			t.Errorf("skein_partition_log_segments%v = %v, %v; want 1", labels, v, ok)
		}
	}
	// Actors are counted by kind: this node's two partitions of metered
	// and its __consumer_offsets partitions, none named.
	if v, ok := metricValue(mfs, "skein_actors", map[string]string{"kind": "*partition.partition"}); !ok || v < 2 {
		t.Errorf("skein_actors{kind=*partition.partition} = %v, %v; want at least 2", v, ok)
	}
	for _, name := range []string{"skein_actor_mailbox_length", "skein_actor_mailbox_length_max"} {
		if _, ok := metricValue(mfs, name, map[string]string{"kind": "*partition.partition"}); !ok {
			t.Errorf("no %s{kind=*partition.partition}", name)
		}
	}
	// Under durability fsync every acknowledged produce waited for a sync
	// round, which made at least one log durable.
	rounds, ok := metricValue(mfs, "skein_sync_rounds_total", nil)
	if !ok || rounds < 1 {
		t.Errorf("skein_sync_rounds_total = %v, %v; want at least 1", rounds, ok)
	}
	if logs, ok := metricValue(mfs, "skein_sync_logs_total", nil); !ok || logs < rounds {
		t.Errorf("skein_sync_logs_total = %v, %v; want at least the %v rounds", logs, ok, rounds)
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("no go_goroutines")
	}
}

// TestAdminHealthAndReady: /healthz and /readyz answer 200 on a started
// broker; unknown paths and methods are refused.
func TestAdminHealthAndReady(t *testing.T) {
	b := startBroker(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := b.adminDo("GET", path, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, _ := b.adminDo("GET", "/nothing", ""); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	if code, _ := b.adminDo("POST", "/metrics", "x"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", code)
	}
}

// TestAdminActors: /v1/actors shows the node's tree with one actor per
// hosted partition, named node/1/partitions/<topic>-<n>, and their kinds.
func TestAdminActors(t *testing.T) {
	b := startBroker(t)
	if _, err := b.admin().CreateTopic(ctxFor(t), 3, 1, nil, "listed"); err != nil {
		t.Fatal(err)
	}
	var as map[string]*actorJSON
	eventually(t, "three partition actors listed and started (their kind is known)", func() bool {
		as = b.actors()
		for i := 0; i < 3; i++ {
			if a := as[fmt.Sprint("node/1/partitions/listed-", i)]; a == nil || a.Kind == "" {
				return false
			}
		}
		return true
	})
	root := as["node/1"]
	if root == nil || root.Kind != "*node.rootActor" {
		t.Fatalf("root actor: %+v", root)
	}
	var children []string
	for _, c := range root.Children {
		children = append(children, c.Name)
	}
	if got := strings.Join(children, " "); got != "node/1/appends node/1/controller node/1/extensions node/1/fetchers node/1/groups node/1/metadata node/1/partitions node/1/shares node/1/sharestate node/1/txns" {
		t.Errorf("node/1's children: %s", got)
	}
	if k := as["node/1/controller"].Kind; k != "*controller.Controller" {
		t.Errorf("controller kind %q", k)
	}
	parts := as["node/1/partitions"]
	if len(parts.Children) != 3 {
		t.Errorf("partitions has %d children, want 3", len(parts.Children))
	}
	for _, c := range parts.Children {
		if c.Kind != "*partition.partition" || c.Restarts != 0 || c.MailboxLength < 0 {
			t.Errorf("partition actor %+v", c)
		}
	}
}

// TestAdminFaultsAPI: faults are added, listed and removed; bad ones get
// 400 with a reason.
func TestAdminFaultsAPI(t *testing.T) {
	b := startBroker(t)
	for _, bad := range []string{
		`not json`,
		`{"actor": "node/1/controller", "kind": "explode"}`,
		`{"actor": "", "kind": "panic"}`,
		`{"actor": "node/1/controller", "kind": "delay"}`,
		`{"actor": "node/1/controller", "kind": "delay", "delay": "soon"}`,
		`{"actor": "node/1/controller", "kind": "panic", "count": -2}`,
		`{"actor": "node/1/controller", "kind": "panic", "colour": "red"}`,
		`{"actor": "node/1/controller", "kind": "panic"} {}`,
	} {
		code, body := b.adminDo("POST", "/v1/faults", bad)
		var e struct{ Error string }
		if code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error == "" {
			t.Errorf("POST %s: %d %s; want 400 with an error", bad, code, body)
		}
	}
	code, body := b.adminDo("POST", "/v1/faults", `{"actor": "node/1/partitions/*", "kind": "delay", "delay": "1ms", "count": 5}`)
	var added struct {
		ID    uint64
		Delay string
		Count int
	}
	if code != http.StatusCreated || json.Unmarshal(body, &added) != nil || added.ID == 0 || added.Delay != "1ms" || added.Count != 5 {
		t.Fatalf("POST a delay: %d %s", code, body)
	}
	b.injectFault(`{"actor": "node/1/controller", "kind": "drop", "message": "DeleteTopics"}`)
	code, body = b.adminDo("GET", "/v1/faults", "")
	var list struct {
		Faults []struct{ ID uint64 }
	}
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Faults) != 2 {
		t.Fatalf("GET /v1/faults: %d %s", code, body)
	}
	if code, body := b.adminDo("DELETE", fmt.Sprintf("/v1/faults/%d", added.ID), ""); code != http.StatusOK {
		t.Fatalf("DELETE the delay: %d %s", code, body)
	}
	if code, _ := b.adminDo("DELETE", fmt.Sprintf("/v1/faults/%d", added.ID), ""); code != http.StatusNotFound {
		t.Fatalf("DELETE it again: %d, want 404", code)
	}
	if code, _ := b.adminDo("DELETE", "/v1/faults/x", ""); code != http.StatusBadRequest {
		t.Fatalf("DELETE /v1/faults/x: %d, want 400", code)
	}
	code, body = b.adminDo("DELETE", "/v1/faults", "")
	if code != http.StatusOK || !strings.Contains(string(body), `"removed": 1`) {
		t.Fatalf("DELETE /v1/faults: %d %s", code, body)
	}
}

// TestAdminRefusesBrowsersOfOtherSites: the admin API refuses what a web
// page of another site could make a browser on the node's machine send: a
// state-changing request from another origin (CSRF), and any request
// naming a host that is not the node's (DNS rebinding). The same
// requests from a tool (curl, the CLI) go through.
func TestAdminRefusesBrowsersOfOtherSites(t *testing.T) {
	b := startBroker(t)
	do := func(method, path, body string, headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(method, b.adminURL(path), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fault := `{"actor": "node/1/controller", "kind": "delay", "delay": "1ms", "message": "NoSuchMessage"}`
	for _, tc := range []struct {
		name         string
		method, path string
		headers      map[string]string
		want         int
	}{
		{"a cross-site POST (Sec-Fetch-Site)", "POST", "/v1/faults", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a POST from another origin", "POST", "/v1/faults", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a GET naming another host", "GET", "/v1/cluster", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"a POST naming another host", "POST", "/v1/faults", map[string]string{"Host": "evil.example:9644"}, http.StatusForbidden},
		{"a GET naming localhost", "GET", "/v1/cluster", map[string]string{"Host": "localhost"}, http.StatusOK},
		{"a GET by address", "GET", "/v1/cluster", nil, http.StatusOK},
	} {
		if got := do(tc.method, tc.path, fault, tc.headers); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if code, body := b.adminDo("GET", "/v1/faults", ""); code != http.StatusOK || strings.Contains(string(body), "delay") {
		t.Errorf("a refused request set a fault: %d %s", code, body)
	}
	b.injectFault(fault) // a tool's request goes through
}
