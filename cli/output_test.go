package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/skeinlog/skein/configs"
)

// jsonOf runs `skein args... -o json` against addr, which must
// succeed, and decodes what it printed into a value of type T.
func jsonOf[T any](t *testing.T, addr string, args ...string) T {
	t.Helper()
	var v T
	out := ok(t, addr, "", append(args, "-o", "json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("skein %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// yamlOf is jsonOf with -o yaml, through the same json tags.
func yamlOf[T any](t *testing.T, addr string, args ...string) T {
	t.Helper()
	out := ok(t, addr, "", append(args, "-o", "yaml")...)
	var generic any
	if err := yaml.Unmarshal([]byte(out), &generic); err != nil {
		t.Fatalf("skein %s -o yaml: %v\n%s", strings.Join(args, " "), err, out)
	}
	data, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("skein %s -o yaml: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// groupsOf runs `skein group describe args... -o json`, which must
// succeed, and decodes its groups, all of one type, into T.
func groupsOf[T any](t *testing.T, addr string, args ...string) []T {
	t.Helper()
	return jsonOf[describedGroups[T]](t, addr, append([]string{"group", "describe"}, args...)...).Groups
}

// describedGroups is group describe's json of groups of one type.
type describedGroups[T any] struct {
	Groups []T `json:"groups"`
}

// ptr is a pointer to v, for comparing nullable fields.
func ptr[T any](v T) *T { return &v }

// jsonText is v as json, for failure messages of values with pointers.
func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestOutputSecurity: acl list, user list and quota describe print, with
// -o json and yaml, what their tables show.
func TestOutputSecurity(t *testing.T) {
	addr := startLoopback11(t, func(c *configs.Node) {
		c.AuthorizerClassName = configs.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS"
	}).Addr().String()

	ok(t, addr, "", "acl", "create", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--resource-pattern-type", "prefixed")
	acls := jsonOf[[]aclView](t, addr, "acl", "list")
	want := aclView{ResourceType: "TOPIC", ResourceName: "orders", PatternType: "PREFIXED", Principal: "User:alice", Host: "*", Operation: "READ", Permission: "ALLOW"}
	if len(acls) != 1 || acls[0] != want {
		t.Errorf("acl list -o json: %+v; want [%+v]", acls, want)
	}
	if acls := yamlOf[[]aclView](t, addr, "acl", "list", "--principal", "User:alice"); len(acls) != 1 || acls[0] != want {
		t.Errorf("acl list -o yaml: %+v; want [%+v]", acls, want)
	}
	if acls := jsonOf[[]aclView](t, addr, "acl", "list", "--principal", "User:bob"); acls == nil || len(acls) != 0 {
		t.Errorf("acl list -o json of none: %#v; want []", acls)
	}

	r := skeinWith(t, []string{envBrokers + "=" + addr, "SKEIN_NEW_PASSWORD=alice-secret"}, "user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
	if r.code != 0 {
		t.Fatalf("user create: %v", r)
	}
	users := jsonOf[[]userView](t, addr, "user", "list")
	if len(users) != 1 || users[0].User != "alice" || len(users[0].Credentials) != 1 ||
		users[0].Credentials[0] != (userCredential{"SCRAM-SHA-512", 8192}) {
		t.Errorf("user list -o json: %+v", users)
	}

	ok(t, addr, "", "quota", "alter", "user=alice,client-id=app", "--set", "producer_byte_rate=1048576", "--set", "request_percentage=12.5")
	ok(t, addr, "", "quota", "alter", "client-id=<default>", "--set", "consumer_byte_rate=2048")
	quotas := jsonOf[[]quotaView](t, addr, "quota", "describe")
	if len(quotas) != 2 {
		t.Fatalf("quota describe -o json: %+v", quotas)
	}
	byEntity := map[string]quotaView{}
	for _, q := range quotas {
		byEntity[q.Entity] = q
	}
	if q := byEntity["user=alice,client-id=app"]; q.Quotas["producer_byte_rate"] != 1048576 || q.Quotas["request_percentage"] != 12.5 || len(q.Components) != 2 ||
		q.Components[0] != (quotaComponent{Type: "user", Name: "alice"}) {
		t.Errorf("quota describe -o json, alice's app: %+v", q)
	}
	if q := byEntity["client-id=<default>"]; q.Quotas["consumer_byte_rate"] != 2048 || len(q.Components) != 1 || q.Components[0] != (quotaComponent{Type: "client-id", Default: true}) {
		t.Errorf("quota describe -o json, the default client id: %+v", q)
	}
}

// TestOutputClusterInfo: cluster info -o json has the node, its roles,
// the controller and the quorum, and -o yaml the same.
func TestOutputClusterInfo(t *testing.T) {
	n := startLoopback11(t)
	addr := n.Addr().String()
	ok(t, addr, "", "topic", "create", "counted")
	for _, v := range []clusterView{
		jsonOf[clusterView](t, addr, "cluster", "info", "--admin", n.AdminAddr().String()),
		yamlOf[clusterView](t, addr, "cluster", "info"),
	} {
		if v.ClusterID == "" || v.ControllerID < 0 || v.Topics < 1 || len(v.Nodes) != 1 || v.Quorum == nil || len(v.Quorum.Voters) != 1 {
			t.Fatalf("cluster info: %+v", v)
		}
		node := v.Nodes[0]
		if node.ID != v.ControllerID || !node.Controller || strings.Join(node.Roles, ",") != "broker,controller" || node.State != "live" ||
			node.Host != "127.0.11.1" || v.Quorum.LeaderID != node.ID || v.Quorum.Voters[0].ID != node.ID {
			t.Errorf("cluster info's node: %+v in %+v", node, v)
		}
	}
	if v := jsonOf[clusterView](t, addr, "cluster", "info", "--admin", n.AdminAddr().String()); v.Nodes[0].Incarnation == nil {
		t.Errorf("cluster info --admin -o json without the incarnation: %+v", v.Nodes[0])
	}
}

// TestOutputTopics: topic list, describe and reassignments with -o json
// show the topic created, its partitions, offsets and configs.
func TestOutputTopics(t *testing.T) {
	addr := startLoopback11(t).Addr().String()
	ok(t, addr, "", "topic", "create", "orders", "-p", "3", "-c", "retention.ms=3600000")
	ok(t, addr, "a\nb\n", "produce", "orders", "-p", "1")

	listed := jsonOf[[]topicListed](t, addr, "topic", "list")
	if len(listed) != 1 || listed[0] != (topicListed{Name: "orders", Partitions: 3, ReplicationFactor: 1}) {
		t.Errorf("topic list -o json: %+v", listed)
	}
	if listed := yamlOf[[]topicListed](t, addr, "topic", "list"); len(listed) != 1 || listed[0].Partitions != 3 {
		t.Errorf("topic list -o yaml: %+v", listed)
	}
	topics := jsonOf[[]topicView](t, addr, "topic", "describe", "orders")
	if len(topics) != 1 || topics[0].Name != "orders" || topics[0].ID == "" || len(topics[0].Partitions) != 3 {
		t.Fatalf("topic describe -o json: %+v", topics)
	}
	p := topics[0].Partitions[1]
	if p.Partition != 1 || len(p.Replicas) != 1 || p.Leader != p.Replicas[0] || p.LogStartOffset == nil || *p.LogStartOffset != 0 ||
		p.HighWatermark == nil || *p.HighWatermark != 2 || p.Error != "" {
		t.Errorf("topic describe -o json, partition 1: %+v", p)
	}
	var retention *topicConfig
	for i, c := range topics[0].Configs {
		if c.Name == "retention.ms" {
			retention = &topics[0].Configs[i]
		}
	}
	if retention == nil || retention.Value == nil || *retention.Value != "3600000" || retention.Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("topic describe -o json: retention.ms is %+v", retention)
	}
	if r := jsonOf[[]reassignmentView](t, addr, "topic", "reassignments", "orders"); r == nil || len(r) != 0 {
		t.Errorf("topic reassignments -o json of none: %#v; want []", r)
	}
	// A topic that is not there: the others are printed, and exit 1.
	r := skeinCmd(t, addr, "", "topic", "describe", "orders", "nope", "-o", "json")
	var some []topicView
	if err := json.Unmarshal([]byte(r.stdout), &some); err != nil || r.code != 1 || len(some) != 1 || !strings.Contains(r.stderr, "describe topic nope") {
		t.Errorf("topic describe orders nope -o json: %v (%v)", r, err)
	}
}

// TestOutputTransactions: a transaction left open shows in txn list,
// txn describe and producer describe with -o json: its state, producer
// id, partitions and the offset it started at.
func TestOutputTransactions(t *testing.T) {
	addr := startLoopback11(t).Addr().String()
	ok(t, addr, "", "topic", "create", "payments", "-p", "2")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("billing-1"), kgo.DefaultProduceTopic("payments"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	listed := jsonOf[[]txnListed](t, addr, "txn", "list")
	if len(listed) != 1 || listed[0].TransactionalID != "billing-1" || listed[0].State != "Ongoing" || listed[0].ProducerID < 0 {
		t.Fatalf("txn list -o json: %+v", listed)
	}
	pid := listed[0].ProducerID
	txns := jsonOf[[]txnView](t, addr, "txn", "describe", "billing-1")
	if len(txns) != 1 || txns[0].ProducerID != pid || txns[0].State != "Ongoing" || txns[0].StartTimestamp == nil ||
		len(txns[0].Partitions) != 1 || txns[0].Partitions[0].Topic != "payments" || !slices.Equal(txns[0].Partitions[0].Partitions, []int32{1}) {
		t.Errorf("txn describe -o json: %+v", txns)
	}
	parts := jsonOf[[]producersView](t, addr, "producer", "describe", "payments")
	if len(parts) != 2 || parts[1].Partition != 1 || len(parts[1].Producers) != 1 || len(parts[0].Producers) != 0 {
		t.Fatalf("producer describe -o json: %+v", parts)
	}
	if s := parts[1].Producers[0]; s.ProducerID != pid || s.CurrentTxnStartOffset != 0 || s.LastSequence != 0 {
		t.Errorf("producer describe -o json, partition 1's producer: %+v", s)
	}
}

// TestOutputExtensions: extension list, describe and kinds with -o json
// show the instance created, its settings with their sources, and the
// kinds the node has.
func TestOutputExtensions(t *testing.T) {
	n := startLoopback11(t)
	addr, admin := n.Addr().String(), "--admin="+n.AdminAddr().String()
	kinds := jsonOf[[]extensionKind](t, addr, "extension", "kinds", admin)
	if !slices.ContainsFunc(kinds, func(k extensionKind) bool { return k.Name == cliKind && len(k.Settings) > 0 }) {
		t.Errorf("extension kinds -o json lacks %s: %+v", cliKind, kinds)
	}
	ok(t, addr, "", "extension", "create", "mirror", "--kind", cliKind, "--set", "source.topics=orders", "--set", "target=t", admin)
	listed := jsonOf[[]extensionListed](t, addr, "extension", "list", admin)
	if len(listed) != 1 || listed[0].Name != "mirror" || listed[0].Kind != cliKind || listed[0].Settings["target"] != "t" {
		t.Errorf("extension list -o json: %+v", listed)
	}
	v := jsonOf[extensionView](t, addr, "extension", "describe", "mirror", admin)
	if v.Name != "mirror" || v.Kind != cliKind || v.Partitions == nil ||
		!slices.Contains(v.Settings, extensionSetting{"target", "t", "set"}) || !slices.Contains(v.Settings, extensionSetting{"source.start", "earliest", "default"}) {
		t.Errorf("extension describe -o json: %+v", v)
	}
}

// TestOutputGroupList: group list -o json shows a group with committed
// offsets and no members.
func TestOutputGroupList(t *testing.T) {
	addr := startLoopback11(t).Addr().String()
	ok(t, addr, "", "topic", "create", "orders")
	ok(t, addr, "", "group", "seek", "billing", "--to", "start", "--topics", "orders", "--execute")
	groups := jsonOf[[]groupListed](t, addr, "group", "list")
	if len(groups) != 1 || groups[0].Group != "billing" || groups[0].State != "Empty" || groups[0].Members == nil || *groups[0].Members != 0 {
		t.Errorf("group list -o json: %+v", groups)
	}
}
