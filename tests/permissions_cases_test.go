package tests

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/transport"
)

// permCases are the requests, one or more for each key of the table,
// each with what its stages expect as its handler's header comment says
// under "With an authorizer:". Where a key's answer once authorized
// (stage e) carries an error, it is that of a request allowed and then
// refused for what it meets: a member or producer id the group or
// transaction does not have (so that nothing of perm-g's or perm-x's
// changes), an election not needed, a topic that exists already.
func permCases(t *testing.T, s *permSuite) []permCase {
	const scramIterations = 4096
	scramSalt := []byte("perm-51-salt")
	saltedPassword, err := pbkdf2.Key(sha256.New, "perm-51-password", scramSalt, scramIterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	var (
		topicDenied   = []*kerr.Error{kerr.TopicAuthorizationFailed}
		groupDenied   = []*kerr.Error{kerr.GroupAuthorizationFailed}
		clusterDenied = []*kerr.Error{kerr.ClusterAuthorizationFailed}
		txnDenied     = []*kerr.Error{kerr.TransactionalIDAuthorizationFailed}
		configsDenied = []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed}
		badProducer   = []*kerr.Error{kerr.InvalidProducerIDMapping}
	)
	// ShareFetch and ShareAcknowledge name topics by id.
	topics, err := s.adm.ListTopics(s.ctx, permTopic)
	if err != nil || topics[permTopic].Err != nil {
		t.Fatalf("topic id of %s: %v %v", permTopic, err, topics[permTopic].Err)
	}
	permTopicID := topics[permTopic].ID
	return []permCase{
		{key: 0, topic: permTopic, version: 12, // v13 names topics by id
			// Records produced: one more on perm-t.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrProduceRequest()
				r.Acks, r.TimeoutMillis = -1, 5000
				r.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{
					{Partition: 0, Records: rawBatch(kmsg.Record{Value: []byte("perm")})}}}}
				return r
			},
			denied: topicDenied},
		{key: 0, name: "transactional", topic: permTopic, txn: permTxn, version: 12,
			// WRITE on the transactional id is checked first: without it
			// every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrProduceRequest()
				r.TransactionID, r.Acks, r.TimeoutMillis = kmsg.StringPtr(permTxn), -1, 5000
				r.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{
					{Partition: 0, Records: txnBatch(permProducerID, 0, 0, "perm")}}}}
				return r
			},
			denied: txnDenied, allowed: badProducer},
		{key: 1, topic: permTopic, version: 12, // v13 names topics by id
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrFetchRequest()
				r.ReplicaID, r.MaxBytes, r.SessionEpoch = -1, 1<<20, -1
				p := kmsg.NewFetchRequestTopicPartition()
				p.PartitionMaxBytes = 1 << 20
				r.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{p}}}
				return r
			},
			denied: topicDenied},
		{key: 2, topic: permTopic, describe: true,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrListOffsetsRequest()
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Timestamp = -1
				r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{p}}}
				return r
			},
			denied: topicDenied},
		{key: 3, topic: permTopic, describe: true,
			// Auto-creation allowed: a missing topic needs CREATE too.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.AllowAutoTopicCreation = true
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
				return r
			},
			denied: topicDenied},
		{key: 3, name: "all", topic: permTopic, describe: true,
			// Of all topics, those alice may DESCRIBE.
			build: func(string) kmsg.Request { return kmsg.NewPtrMetadataRequest() },
			shows: func(resp kmsg.Response) int {
				return count(resp.(*kmsg.MetadataResponse).Topics, func(t kmsg.MetadataResponseTopic) bool { return t.Topic != nil && *t.Topic == permTopic })
			}},
		{key: 75, topic: permTopic, describe: true,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				r.ResponsePartitionLimit = 10
				r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
				return r
			},
			denied: topicDenied},
		{key: 75, name: "all", topic: permTopic, describe: true,
			// Of all topics, those alice may DESCRIBE.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeTopicPartitionsRequest()
				r.ResponsePartitionLimit = 2000
				return r
			},
			shows: func(resp kmsg.Response) int {
				return count(resp.(*kmsg.DescribeTopicPartitionsResponse).Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
					return t.Topic != nil && *t.Topic == permTopic
				})
			}},
		{key: 8, topic: permTopic, group: permGroup, version: 9, // v10 names topics by id
			// A simple commit (no member, generation -1) of offset 2.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrOffsetCommitRequest()
				r.Group, r.Generation = permGroup, -1
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Offset = 2
				r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
				return r
			},
			denied: groupDenied},
		{key: 9, topic: permTopic, group: permGroup, describe: true, version: 9, // v10 names topics by id
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrOffsetFetchRequest()
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = permGroup
				g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
				r.Groups = []kmsg.OffsetFetchRequestGroup{g}
				return r
			},
			denied: groupDenied},
		{key: 10, group: permGroup, describe: true,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorKeys = []string{permGroup}
				return r
			},
			denied: groupDenied},
		{key: 10, name: "txn", txn: permTxn, describe: true,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorType, r.CoordinatorKeys = 1, []string{permTxn}
				return r
			},
			denied: txnDenied},
		{key: 10, name: "share",
			// A share coordinator (KIP-932): brokers only. Its first
			// find creates __share_group_state, which the share-group
			// state cases (83-87) then reach.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrFindCoordinatorRequest()
				r.CoordinatorType, r.CoordinatorKeys = 2, []string{permShareKey}
				return r
			},
			denied: clusterDenied},
		{key: 11, group: permGroup,
			// A first join (KIP-394) is told its member id and joins
			// nothing yet.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrJoinGroupRequest()
				r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = permGroup, 10000, 10000, "consumer"
				meta := kmsg.ConsumerMemberMetadata{Topics: []string{permTopic}}
				r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.MemberIDRequired}},
		{key: 12, group: permGroup,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrHeartbeatRequest()
				r.Group, r.Generation, r.MemberID = permGroup, 1, "perm-member"
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.UnknownMemberID}},
		{key: 13, group: permGroup,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrLeaveGroupRequest()
				r.Group, r.Members = permGroup, []kmsg.LeaveGroupRequestMember{{MemberID: "perm-member"}}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.UnknownMemberID}},
		{key: 14, group: permGroup,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrSyncGroupRequest()
				r.Group, r.Generation, r.MemberID = permGroup, 1, "perm-member"
				r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.UnknownMemberID}},
		{key: 15, group: permGroup, describe: true,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Groups = []string{permGroup}
				return r
			},
			denied: groupDenied},
		{key: 16, group: permGroup, describe: true,
			// Every group for DESCRIBE on the cluster, else those alice
			// may DESCRIBE.
			build: func(string) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			shows: func(resp kmsg.Response) int {
				return count(resp.(*kmsg.ListGroupsResponse).Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == permGroup })
			}},
		{key: 19, topic: "perm-19-created",
			// A topic created.
			build:  func(topic string) kmsg.Request { return createTopics(topic) },
			denied: topicDenied},
		{key: 19, name: "existing", topic: permTopic,
			// Refused as a missing topic is, until allowed.
			build:  func(topic string) kmsg.Request { return createTopics(topic) },
			denied: topicDenied, allowed: []*kerr.Error{kerr.TopicAlreadyExists}},
		{key: 20, topic: "perm-20-deleted",
			// A topic deleted, named by its name (v6 takes a name or an
			// id).
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.TimeoutMillis = 10000
				r.TopicNames = []string{topic}
				r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(topic)}}
				return r
			},
			denied: topicDenied},
		{key: 21, topic: "perm-21-records",
			// The first of its two records deleted.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDeleteRecordsRequest()
				r.TimeoutMillis = 10000
				r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}}}
				return r
			},
			denied: topicDenied},
		{key: 22, txn: "perm-22-init",
			// A transactional id of its own: perm-x's open transaction
			// would be fenced and aborted.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("perm-22-init"), 60000
				return r
			},
			denied: txnDenied},
		{key: 22, name: "idempotent", topic: permTopic,
			// IDEMPOTENT_WRITE on the cluster or WRITE on any topic: the
			// table's are granted on the cluster and perm-t.
			build:  func(string) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() },
			denied: clusterDenied},
		{key: 23, topic: permTopic, describe: true,
			// A client's (replica id -1): DESCRIBE on the topic.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrOffsetForLeaderEpochRequest()
				r.ReplicaID = -1
				p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{p}}}
				return r
			},
			denied: topicDenied},
		{key: 24, topic: permTopic, txn: permTxn, version: 3, // a producer's; v4+ are a broker's
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				r.TransactionalID, r.ProducerID = permTxn, permProducerID
				r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				return r
			},
			denied: txnDenied, allowed: badProducer},
		{key: 24, name: "broker", topic: permTopic, txn: permTxn,
			// A broker's verification (KIP-890): CLUSTER_ACTION, answered
			// for the whole request.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = permTxn, permProducerID, true
				tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}
				r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
				return r
			},
			denied: clusterDenied, allowed: badProducer},
		{key: 25, group: permGroup, txn: permTxn,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrAddOffsetsToTxnRequest()
				r.TransactionalID, r.ProducerID, r.Group = permTxn, permProducerID, permGroup
				return r
			},
			denied: txnDenied, allowed: badProducer},
		{key: 26, txn: permTxn,
			// Not perm-x's producer: its transaction stays open.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.Commit = permTxn, permProducerID, true
				return r
			},
			denied: txnDenied, allowed: badProducer},
		{key: 27, topic: "perm-27-markers",
			// An abort marker written, as Kafka's admin tools write one.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID = permProducerID
				m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
				r.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
				return r
			},
			denied: clusterDenied},
		{key: 28, topic: permTopic, group: permGroup, txn: permTxn,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrTxnOffsetCommitRequest()
				r.TransactionalID, r.Group, r.ProducerID = permTxn, permGroup, permProducerID
				p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				p.Offset = 2
				r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
				return r
			},
			denied: txnDenied, allowed: badProducer},
		{key: 29, describe: true,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeACLsRequest()
				r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				return r
			},
			denied: clusterDenied},
		{key: 30,
			// An ACL created, for carol.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "perm-30-carol", kmsg.ACLResourcePatternTypeLiteral
				c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
				r.Creations = []kmsg.CreateACLsRequestCreation{c}
				return r
			},
			denied: clusterDenied},
		{key: 31,
			// Dave's ACL deleted.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
				f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr("User:dave"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				r.Filters = []kmsg.DeleteACLsRequestFilter{f}
				return r
			},
			denied: clusterDenied},
		{key: 32, topic: permTopic, group: permGroup,
			// A topic, a group and this broker: each its own denial.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDescribeConfigsRequest()
				for _, rr := range []struct {
					typ  kmsg.ConfigResourceType
					name string
				}{{kmsg.ConfigResourceTypeTopic, topic}, {kmsg.ConfigResourceTypeGroupConfig, permGroup}, {kmsg.ConfigResourceTypeBroker, s.node}} {
					c := kmsg.NewDescribeConfigsRequestResource()
					c.ResourceType, c.ResourceName = rr.typ, rr.name
					r.Resources = append(r.Resources, c)
				}
				return r
			},
			denied: configsDenied},
		{key: 33, topic: "perm-33-alter", group: "perm-33-alter",
			// Configs replaced on a topic and a group of its own, and
			// on every broker.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrAlterConfigsRequest()
				for _, rr := range []struct {
					typ        kmsg.ConfigResourceType
					name, k, v string
				}{
					{kmsg.ConfigResourceTypeTopic, topic, "retention.ms", "3600000"},
					{kmsg.ConfigResourceTypeGroupConfig, "perm-33-alter", "consumer.session.timeout.ms", "50000"},
					{kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "604800001"},
				} {
					c := kmsg.NewAlterConfigsRequestResource()
					c.ResourceType, c.ResourceName = rr.typ, rr.name
					c.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: rr.k, Value: kmsg.StringPtr(rr.v)}}
					r.Resources = append(r.Resources, c)
				}
				return r
			},
			denied: configsDenied},
		{key: 35, topic: permTopic, describe: true,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDescribeLogDirsRequest()
				r.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				return r
			},
			denied: clusterDenied},
		{key: 37, topic: "perm-37-grow",
			// A second partition.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrCreatePartitionsRequest()
				r.TimeoutMillis = 10000
				r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: 2}}
				return r
			},
			denied: topicDenied},
		{key: 42, group: "perm-42-deleted",
			// A group deleted, with its offsets.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Groups = []string{"perm-42-deleted"}
				return r
			},
			denied: groupDenied},
		{key: 43, topic: permTopic,
			// One replica: its preferred leader leads already.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrElectLeadersRequest()
				r.TimeoutMillis = 10000
				r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.ElectionNotNeeded}},
		{key: 44, topic: "perm-44-alter", group: "perm-44-alter",
			// Configs set on a topic and a group of its own, and on this
			// broker.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrIncrementalAlterConfigsRequest()
				for _, rr := range []struct {
					typ        kmsg.ConfigResourceType
					name, k, v string
				}{
					{kmsg.ConfigResourceTypeTopic, topic, "retention.ms", "7200000"},
					{kmsg.ConfigResourceTypeGroupConfig, "perm-44-alter", "consumer.heartbeat.interval.ms", "6000"},
					{kmsg.ConfigResourceTypeBroker, s.node, "log.retention.ms", "604800002"},
				} {
					c := kmsg.NewIncrementalAlterConfigsRequestResource()
					c.ResourceType, c.ResourceName = rr.typ, rr.name
					c.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: rr.k, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(rr.v)}}
					r.Resources = append(r.Resources, c)
				}
				return r
			},
			denied: configsDenied},
		{key: 45, topic: permTopic,
			// Cancels a reassignment, of which there is none.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				r.TimeoutMillis = 10000
				r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: topic,
					Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.NoReassignmentInProgress}},
		{key: 46, topic: permTopic, describe: true,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrListPartitionReassignmentsRequest()
				r.TimeoutMillis = 10000
				r.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				return r
			},
			denied: clusterDenied},
		{key: 47, topic: permTopic, group: "perm-47-offsets",
			// The group's offset on perm-t deleted.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrOffsetDeleteRequest()
				r.Group = "perm-47-offsets"
				r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: groupDenied},
		{key: 48,
			build:  func(string) kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() },
			denied: clusterDenied},
		{key: 49,
			// A user's quota set.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrAlterClientQuotasRequest()
				r.Entries = []kmsg.AlterClientQuotasRequestEntry{{
					Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("perm-49-quota")}},
					Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1048576}},
				}}
				return r
			},
			denied: clusterDenied},
		{key: 50, describe: true,
			build:  func(string) kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			denied: clusterDenied},
		{key: 51,
			// A user's SCRAM credential created.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{
					Name: "perm-51-scram", Mechanism: 1, // SCRAM-SHA-256
					Iterations: scramIterations, Salt: scramSalt, SaltedPassword: saltedPassword}}
				return r
			},
			denied: clusterDenied},
		{key: 55, describe: true,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeQuorumRequest()
				r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata",
					Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: clusterDenied},
		{key: 57,
			// Validate-only, at the level share.version has: nothing changes.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrUpdateFeaturesRequest()
				u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
				u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", 1, 1
				r.FeatureUpdates, r.ValidateOnly = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, true
				return r
			},
			denied: clusterDenied},
		{key: 60, describe: true,
			// Answered to anyone, as Kafka answers it: what DESCRIBE on
			// the cluster decides is whether the cluster's authorized
			// operations are told (0 otherwise).
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeClusterRequest()
				r.IncludeClusterAuthorizedOperations = true
				return r
			},
			shows: func(resp kmsg.Response) int {
				if resp.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations > 0 {
					return 1
				}
				return 0
			}},
		{key: 61, topic: permTopic,
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				return r
			},
			denied: topicDenied},
		{key: 64,
			// A broker id never registered.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrUnregisterBrokerRequest()
				r.BrokerID = 4242
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.BrokerIDNotRegistered}},
		{key: 65, topic: permTopic, txn: permTxn, describe: true,
			// perm-x's transaction, on perm-t: the partitions are shown
			// only to who may DESCRIBE perm-t too.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{permTxn}
				return r
			},
			shows: func(resp kmsg.Response) int {
				var n int
				for _, st := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
					n += count(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool { return t.Topic == permTopic })
				}
				return n
			},
			partial: []transport.Access{{Operation: kmsg.ACLOperationDescribe, ResourceType: kmsg.ACLResourceTypeTransactionalId}},
			denied:  txnDenied},
		{key: 66, txn: permTxn, describe: true,
			// The transactional ids alice may DESCRIBE.
			build: func(string) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
			shows: func(resp kmsg.Response) int {
				return count(resp.(*kmsg.ListTransactionsResponse).TransactionStates,
					func(st kmsg.ListTransactionsResponseTransactionState) bool { return st.TransactionalID == permTxn })
			}},
		{key: 68, topic: permTopic, group: permConsumerGroup,
			// A member the group does not have, at an epoch past
			// joining: nothing joins.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Group, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = permConsumerGroup, "perm-member", 5, []string{topic}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.UnknownMemberID}},
		{key: 69, topic: permTopic, group: permConsumerGroup, describe: true,
			// Its member is on perm-t, which needs DESCRIBE too.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupDescribeRequest()
				r.Groups = []string{permConsumerGroup}
				return r
			},
			denied: groupDenied},
		{key: 74,
			build:  func(string) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() },
			denied: clusterDenied},
		{key: 76, topic: permTopic, group: "perm-76-share",
			// A member of no group, past joining: nothing joins.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrShareGroupHeartbeatRequest()
				r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = "perm-76-share", "perm-member", 5, []string{topic}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
		{key: 77, group: "perm-77-share", describe: true,
			// No such share group.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrShareGroupDescribeRequest()
				r.GroupIDs = []string{"perm-77-share"}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
		{key: 78, topic: permTopic, group: "perm-78-share",
			// Opens a share session on perm-t: nothing there to acquire
			// from the latest offset, and no wait.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrShareFetchRequest()
				r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr("perm-78-share"), kmsg.StringPtr("perm-member"), 0
				r.MaxWaitMillis, r.MaxRecords, r.BatchSize = 0, 1, 1
				r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: permTopicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: groupDenied},
		{key: 79, topic: permTopic, group: "perm-79-share",
			// Closes a share session it never opened: nothing acknowledged.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrShareAcknowledgeRequest()
				r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr("perm-79-share"), kmsg.StringPtr("perm-member"), -1
				r.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: permTopicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
					AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.ShareSessionNotFound}},
		{key: 88, group: "perm-88-streams",
			// A member of no group, past joining: nothing joins, no topic
			// is made.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
				r.Group, r.MemberID, r.MemberEpoch = "perm-88-streams", "perm-member", 5
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
		{key: 89, group: "perm-89-streams", describe: true,
			// No such streams group.
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrStreamsGroupDescribeRequest()
				r.Groups = []string{"perm-89-streams"}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
		// The share-group state APIs name a topic by an id no topic has:
		// authorized, the share coordinator refuses them (a write of a
		// share-partition without state first of all), so they change
		// nothing.
		{key: 83,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrInitializeShareGroupStateRequest()
				r.GroupID = permGroup
				r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: permShareTopicID,
					Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{key: 84,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrReadShareGroupStateRequest()
				r.GroupID = permGroup
				r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: permShareTopicID,
					Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{key: 85,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrWriteShareGroupStateRequest()
				r.GroupID = permGroup
				p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
				p.StartOffset = -1
				r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: permShareTopicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.InvalidRequest}},
		{key: 86,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupStateRequest()
				r.GroupID = permGroup
				r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: permShareTopicID,
					Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
				return r
			},
			denied: clusterDenied, allowed: []*kerr.Error{kerr.UnknownTopicOrPartition}},
		{key: 87,
			build: func(string) kmsg.Request {
				r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
				r.GroupID = permGroup
				r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: permShareTopicID,
					Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
				return r
			},
			denied: clusterDenied},
		{key: 90, topic: permTopic, group: "perm-90-share", describe: true,
			// No such share group: as in Kafka, answered as having no
			// state (start offset -1), without an error.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "perm-90-share",
					Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
				return r
			},
			denied: groupDenied},
		{key: 91, topic: permTopic, group: permConsumerGroup,
			// A consumer group's id: not a share group, nothing altered.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				r.GroupID = permConsumerGroup
				r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
					Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
		{key: 92, topic: permTopic, group: "perm-92-share",
			// No such share group.
			build: func(topic string) kmsg.Request {
				r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				r.GroupID = "perm-92-share"
				r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
				return r
			},
			denied: groupDenied, allowed: []*kerr.Error{kerr.GroupIDNotFound}},
	}
}

// permShareTopicID is a topic id no topic has, and permShareKey a share
// coordinator key of permGroup on it.
var (
	permShareTopicID = [16]byte{0xfe, 15: 0x01}
	permShareKey     = permGroup + ":" + base64.RawURLEncoding.EncodeToString(permShareTopicID[:]) + ":0"
)

func createTopics(topic string) kmsg.Request {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, 1
	r.Topics = []kmsg.CreateTopicsRequestTopic{t}
	return r
}

func count[E any](s []E, f func(E) bool) int {
	var n int
	for _, e := range s {
		if f(e) {
			n++
		}
	}
	return n
}
