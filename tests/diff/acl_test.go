//go:build kafkadiff

package diff

// ACLs and the answers of an authorizing broker, compared with Kafka's.

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
	"github.com/skeinlog/skein/tests/kafkaref"
)

// users is the JAAS line of both brokers' SASL_PLAINTEXT listener: alice
// and bob, each password the user's name and "-secret" (sendAs).
const users = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`

// securedPair starts a second pair of brokers for the test alone: Kafka's
// StandardAuthorizer on, User:ANONYMOUS (PLAINTEXT) a super user, and a
// SASL_PLAINTEXT listener with PLAIN users. It returns the PLAINTEXT and
// SASL addresses of Kafka and of Skein.
func securedPair(t *testing.T) (kafkaPlain, skeinPlain, kafkaSASL, skeinSASL string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "skein-diff-acl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("work directory kept: %s (kafka/kafka.log, skein.log)", dir)
			return
		}
		os.RemoveAll(dir)
	})
	props := map[string]string{
		"authorizer.class.name":   configs.StandardAuthorizer,
		"super.users":             "User:ANONYMOUS",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": users,
	}
	for k, v := range shared {
		props[k] = v
	}
	kafka, err := kafkaref.StartListeners(filepath.Join(dir, "kafka"), kafkaClasspath(t), map[string]string{"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kafka.Stop(); err != nil {
			t.Errorf("stop kafka: %v", err)
		}
	})
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(dir, "skein")
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
	cfg.AdminListen, cfg.ClusterListen, cfg.ClusterAdvertise = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.EnabledMechanisms = "PLAIN"
	cfg.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {"plain.sasl.jaas.config": users}}
	cfg.AuthorizerClassName, cfg.SuperUsers = configs.StandardAuthorizer, "User:ANONYMOUS"
	cfg.NumPartitions, cfg.GroupInitialRebalanceDelayMs = 1, 0
	cfg.OffsetsTopicReplicationFactor, cfg.TransactionStateLogReplicationFactor, cfg.TransactionStateLogMinISR = 1, 1, 1
	log, err := os.Create(filepath.Join(dir, "skein.log"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(cfg, zerolog.New(log).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stop skein: %v", err)
		}
	})
	return kafka.Addr(), n.ListenerAddr("PLAINTEXT").String(), kafka.Listener("SASL_PLAINTEXT"), n.ListenerAddr("SASL_PLAINTEXT").String()
}

func acl(rt kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pattern
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

func metadataOf(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	return req
}

// TestACLs: the same ACLs created, described and deleted on both
// authorizing brokers, and alice's requests, with what the ACLs let her
// do and see, answered alike: the same error codes, the same filtering of
// topics and groups, the same answer for a topic she may not see whether
// it exists or not.
func TestACLs(t *testing.T) {
	kPlain, sPlain, kSASL, sSASL := securedPair(t)
	admin := newCase(t)
	admin.kafkaAddr, admin.skeinAddr = kPlain, sPlain
	alice := newCase(t)
	alice.kafkaAddr, alice.skeinAddr, alice.user = kSASL, sSASL, "alice"

	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"acl-orders", "acl-secret"} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
		create.Topics = append(create.Topics, ct)
	}
	create.TimeoutMillis = 30000
	admin.compare(create)

	const (
		topic   = kmsg.ACLResourceTypeTopic
		group   = kmsg.ACLResourceTypeGroup
		literal = kmsg.ACLResourcePatternTypeLiteral
		prefix  = kmsg.ACLResourcePatternTypePrefixed
		allow   = kmsg.ACLPermissionTypeAllow
		deny    = kmsg.ACLPermissionTypeDeny
	)
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = []kmsg.CreateACLsRequestCreation{
		acl(topic, "acl-ord", prefix, "User:alice", kmsg.ACLOperationWrite, allow),
		acl(topic, "acl-ord", prefix, "User:alice", kmsg.ACLOperationRead, allow),
		acl(group, "acl-g", literal, "User:alice", kmsg.ACLOperationRead, allow),
		acl(topic, "acl-orders", literal, "User:alice", kmsg.ACLOperationWrite, deny),
	}
	t.Run("create", func(t *testing.T) { admin.t = t; admin.compare(acls) })
	// Odd ones, each alone (Kafka fails a whole request on some of
	// them, differences.go): refused for a reason of their own, or taken
	// though they mean nothing (WRITE on a group, PREFIXED on "*").
	for name, bad := range map[string]kmsg.CreateACLsRequestCreation{
		"prefixed_wildcard":  acl(topic, "*", prefix, "User:alice", kmsg.ACLOperationRead, allow),
		"any_resource_type":  acl(kmsg.ACLResourceTypeAny, "x", literal, "User:alice", kmsg.ACLOperationRead, allow),
		"principal_no_type":  acl(topic, "x", literal, "alice", kmsg.ACLOperationRead, allow),
		"any_operation":      acl(topic, "x", literal, "User:alice", kmsg.ACLOperationAny, allow),
		"write_on_a_group":   acl(group, "x", literal, "User:alice", kmsg.ACLOperationWrite, allow),
		"unknown_permission": acl(topic, "x", literal, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeUnknown),
		"cluster_named_else": acl(kmsg.ACLResourceTypeCluster, "other", literal, "User:alice", kmsg.ACLOperationAlter, allow),
		"empty_name":         acl(topic, "", literal, "User:alice", kmsg.ACLOperationRead, allow),
		"match_pattern":      acl(topic, "y", kmsg.ACLResourcePatternTypeMatch, "User:alice", kmsg.ACLOperationRead, allow),
	} {
		t.Run("create_odd/"+name, func(t *testing.T) {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = []kmsg.CreateACLsRequestCreation{bad}
			admin.t = t
			admin.compare(req)
		})
	}

	describe := func(name string, f func(*kmsg.DescribeACLsRequest)) {
		t.Run("describe/"+name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			f(req)
			admin.t = t
			ko, so := admin.exchange(req, -1)
			sortACLs(ko, so)
			admin.check("DescribeACLs", ko, so)
		})
	}
	describe("all", func(*kmsg.DescribeACLsRequest) {})
	describe("match_acl-orders", func(r *kmsg.DescribeACLsRequest) {
		r.ResourceType, r.ResourceName, r.ResourcePatternType = topic, kmsg.StringPtr("acl-orders"), kmsg.ACLResourcePatternTypeMatch
	})
	describe("deny", func(r *kmsg.DescribeACLsRequest) { r.PermissionType = deny })

	as := func(name string, req kmsg.Request) {
		t.Run("alice/"+name, func(t *testing.T) { alice.t = t; alice.compare(req) })
	}
	as("metadata_named", metadataOf("acl-orders", "acl-secret", "acl-missing"))
	all := kmsg.NewPtrMetadataRequest()
	all.Topics = nil
	as("metadata_all", all)
	as("produce_denied", produce("acl-orders", 0, batch(batchHeader{}, records(1, time.Now().UnixMilli())...)))
	as("produce_missing", produce("acl-missing", 0, batch(batchHeader{}, records(1, time.Now().UnixMilli())...)))
	as("produce_allowed_other", produce("acl-ordinary", 0, batch(batchHeader{}, records(1, time.Now().UnixMilli())...)))
	as("list_groups", kmsg.NewPtrListGroupsRequest())
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "acl-other"
	as("find_coordinator_denied", find)
	as("describe_cluster", kmsg.NewPtrDescribeClusterRequest())
	aliceACLs := kmsg.NewPtrCreateACLsRequest()
	aliceACLs.Creations = []kmsg.CreateACLsRequestCreation{acl(topic, "acl-secret", literal, "User:alice", kmsg.ACLOperationAll, allow)}
	as("create_acls", aliceACLs)

	t.Run("delete", func(t *testing.T) {
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr("User:alice"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		admin.t = t
		ko, so := admin.exchange(req, -1)
		sortACLs(ko, so)
		admin.check("DeleteACLs", ko, so)
	})
}

// sortACLs sorts the ACLs of DescribeAcls and DeleteAcls answers: their
// order is neither broker's contract (Kafka's follows random ACL ids).
func sortACLs(outcomes ...outcome) {
	for _, o := range outcomes {
		switch r := o.resp.(type) {
		case *kmsg.DescribeACLsResponse:
			for i := range r.Resources {
				slices.SortFunc(r.Resources[i].ACLs, func(a, b kmsg.DescribeACLsResponseResourceACL) int {
					return cmp.Or(cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
						cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.PermissionType, b.PermissionType))
				})
			}
		case *kmsg.DeleteACLsResponse:
			for i := range r.Results {
				slices.SortFunc(r.Results[i].MatchingACLs, func(a, b kmsg.DeleteACLsResponseResultMatchingACL) int {
					return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceName, b.ResourceName),
						cmp.Compare(a.ResourcePatternType, b.ResourcePatternType), cmp.Compare(a.Operation, b.Operation),
						cmp.Compare(a.PermissionType, b.PermissionType))
				})
			}
		}
	}
}
