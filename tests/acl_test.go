package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/skeinlog/skein/configs"
)

// aclBroker starts a broker with Kafka's StandardAuthorizer: its PLAINTEXT
// listener's clients (User:ANONYMOUS) are super users, the admin of the
// tests; alice and bob log in with SASL/PLAIN.
func aclBroker(t *testing.T, edit ...func(*configs.Node)) *broker {
	t.Helper()
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`
	return startBroker(t, append([]func(*configs.Node){func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {"plain.sasl.jaas.config": users}}
		c.AuthorizerClassName = configs.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS"
	}}, edit...)...)
}

// userClient returns a client that logs in as user on the SASL listener.
func (b *broker) userClient(user string, opts ...kgo.Opt) *kgo.Client {
	return b.client(append([]kgo.Opt{kgo.SeedBrokers(b.node.ListenerAddr("SASL_PLAINTEXT").String()),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()), kgo.RequestRetries(2)}, opts...)...)
}

func mustCreateACLs(t *testing.T, ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateACLs %+v: %v", r, r.Err)
		}
	}
}

// TestACLs: an unmodified franz-go client logged in as alice can do
// exactly what the ACLs the admin creates allow: nothing at first; then
// producing and consuming on the topics of a PREFIXED pattern in a group
// of her own; a DENY beside the ALLOW takes writing away and deleting it
// gives it back. Topics she may not see are answered as missing ones
// are, and the denial says what would allow it.
func TestACLs(t *testing.T) {
	b := aclBroker(t)
	b.adminUser, b.adminPassword = "bob", "bob-secret"
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "orders", 1, nil)
	mustCreate(t, ctx, adm, "secret", 1, nil)

	alice := b.userClient("alice", kgo.DefaultProduceTopic("orders"))
	produce := func() error {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return alice.ProduceSync(pctx, kgo.StringRecord("r")).FirstErr()
	}
	aliceAdm := kadm.NewClient(alice)

	// No ACLs: she sees no topic and may write none.
	topics, err := aliceAdm.ListTopics(ctx)
	if err != nil || len(topics) != 0 {
		t.Fatalf("alice lists %v (%v), want no topic", topics.Names(), err)
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	mustCreateACLs(t, ctx, adm, kadm.NewACLs().Allow("User:alice").Topics("ord").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite, kadm.OpRead))
	mustCreateACLs(t, ctx, adm, kadm.NewACLs().Allow("User:alice").Groups("g1").Operations(kadm.OpRead))
	if err := produce(); err != nil {
		t.Fatalf("produce with WRITE on PREFIXED ord: %v", err)
	}
	consumer := b.userClient("alice", kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	fs := consumer.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume in g1: %d records, %v", fs.NumRecords(), err)
	}
	if topics, err = aliceAdm.ListTopics(ctx); err != nil || strings.Join(topics.Names(), ",") != "orders" {
		t.Errorf("alice lists %v (%v), want orders alone", topics.Names(), err)
	}

	// A topic she may not describe is answered as one that does not
	// exist and that she may not create: the same bytes but the name.
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"secret", "nosuch"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	secret, nosuch := resp.Topics[0], resp.Topics[1]
	nosuch.Topic = secret.Topic
	if secret.ErrorCode != kerr.TopicAuthorizationFailed.Code || !equalTopics(secret, nosuch) {
		t.Errorf("Metadata: secret %+v, nosuch %+v: want both TOPIC_AUTHORIZATION_FAILED and alike", secret, resp.Topics[1])
	}

	// Another group is not hers.
	other := b.userClient("alice", kgo.ConsumerGroup("g2"), kgo.ConsumeTopics("orders"))
	if fs := other.PollFetches(ctx); !errors.Is(fs.Err(), kerr.GroupAuthorizationFailed) {
		t.Errorf("consume in g2: %v, want GROUP_AUTHORIZATION_FAILED", fs.Err())
	}

	// A DENY beside the ALLOW wins; the answer names what would allow it.
	mustCreateACLs(t, ctx, adm, kadm.NewACLs().Deny("User:alice").Topics("orders").Operations(kadm.OpWrite))
	err = produce()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce under a DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	details, err := adm.ListTopics(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "orders", details["orders"].ID
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0}}
	pr.Topics = append(pr.Topics, pt)
	presp, err := pr.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	code, msg := presp.Topics[0].Partitions[0].ErrorCode, presp.Topics[0].Partitions[0].ErrorMessage
	if code != kerr.TopicAuthorizationFailed.Code || msg == nil || !strings.Contains(*msg, "User:alice") || !strings.Contains(*msg, "--operation Write --topic orders") {
		t.Errorf("denial %v %v: want TOPIC_AUTHORIZATION_FAILED, the principal and the kafka-acls line that would allow it", code, msg)
	}

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:alice").Deny("User:alice").AllowHosts().DenyHosts().
		Topics("orders").ResourcePatternType(kadm.ACLPatternMatch).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, r := range described {
		for _, d := range r.Described {
			found = append(found, d.Permission.String()+" "+d.Operation.String()+" "+d.Pattern.String()+" "+d.Name)
		}
	}
	if strings.Join(found, ",") != "ALLOW READ PREFIXED ord,ALLOW WRITE PREFIXED ord,DENY WRITE LITERAL orders" {
		t.Errorf("DescribeACLs MATCH orders: %v", found)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("orders").Operations(kadm.OpAny))
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 || deleted[0].Err != nil {
		t.Fatalf("DeleteACLs of the DENY: %+v %v", deleted, err)
	}
	if err := produce(); err != nil {
		t.Errorf("produce once the DENY is gone: %v", err)
	}

	// She may not change the ACLs herself.
	res, err := aliceAdm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("secret").Operations(kadm.OpAll))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice's CreateACLs: %+v %v, want CLUSTER_AUTHORIZATION_FAILED", res, err)
	}

	if v, _ := metricValue(b.metrics(), "skein_authorization_denials_total", map[string]string{"resource_type": "TOPIC", "operation": "WRITE"}); v < 2 {
		t.Errorf("skein_authorization_denials_total{TOPIC,WRITE} = %v, want at least 2", v)
	}
}

// equalTopics compares two Metadata topics field by field, as encoded.
func equalTopics(a, b kmsg.MetadataResponseTopic) bool {
	enc := func(t kmsg.MetadataResponseTopic) string {
		r := kmsg.NewPtrMetadataResponse()
		r.Version = 12
		r.Topics = []kmsg.MetadataResponseTopic{t}
		return string(r.AppendTo(nil))
	}
	return enc(a) == enc(b)
}

// TestACLsNeedAnAuthorizer: without authorizer.class.name, ACL requests
// are SECURITY_DISABLED, as Kafka answers them, and nothing is denied.
func TestACLsNeedAnAuthorizer(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	described, err := b.admin().DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	if err != nil || len(described) == 0 || !errors.Is(described[0].Err, kerr.SecurityDisabled) {
		t.Errorf("DescribeACLs: %+v %v, want SECURITY_DISABLED", described, err)
	}
	res, err := b.admin().CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Errorf("CreateACLs: %+v %v, want SECURITY_DISABLED", res, err)
	}
}
