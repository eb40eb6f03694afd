package transport

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/security"
)

// access is one operation on one type of resource.
type access struct {
	op security.Operation
	rt security.ResourceType
}

// Short names for the table below.
const (
	read            = kmsg.ACLOperationRead
	write           = kmsg.ACLOperationWrite
	create          = kmsg.ACLOperationCreate
	del             = kmsg.ACLOperationDelete
	alter           = kmsg.ACLOperationAlter
	describe        = kmsg.ACLOperationDescribe
	clusterAction   = kmsg.ACLOperationClusterAction
	describeConfigs = kmsg.ACLOperationDescribeConfigs
	alterConfigs    = kmsg.ACLOperationAlterConfigs
	idempotentWrite = kmsg.ACLOperationIdempotentWrite

	topicResource   = kmsg.ACLResourceTypeTopic
	groupResource   = kmsg.ACLResourceTypeGroup
	clusterResource = kmsg.ACLResourceTypeCluster
	txnResource     = kmsg.ACLResourceTypeTransactionalId

	// clusterName names the one cluster resource.
	clusterName = security.ClusterName
)

// permissions is what each API key may need, as Kafka's "Operations and
// Resources on Protocols" lists it: a handler asks (authz.may) only for
// what its key's line names, and the permission tests grant from it. A
// key with an empty line needs nothing (it works before authentication
// too). Where a key names several, its handler says which apply to which
// part of a request.
var permissions = map[int16][]access{
	0:  {{write, txnResource}, {write, topicResource}},                                                           // Produce
	1:  {{clusterAction, clusterResource}, {read, topicResource}},                                                // Fetch: followers, consumers
	2:  {{describe, topicResource}},                                                                              // ListOffsets
	3:  {{describe, topicResource}, {create, clusterResource}, {create, topicResource}},                          // Metadata, auto-creation
	8:  {{read, groupResource}, {read, topicResource}},                                                           // OffsetCommit
	9:  {{describe, groupResource}, {describe, topicResource}},                                                   // OffsetFetch
	10: {{describe, groupResource}, {describe, txnResource}, {clusterAction, clusterResource}},                   // FindCoordinator: SHARE keys need CLUSTER_ACTION
	11: {{read, groupResource}},                                                                                  // JoinGroup
	12: {{read, groupResource}},                                                                                  // Heartbeat
	13: {{read, groupResource}},                                                                                  // LeaveGroup
	14: {{read, groupResource}},                                                                                  // SyncGroup
	15: {{describe, groupResource}},                                                                              // DescribeGroups
	16: {{describe, clusterResource}, {describe, groupResource}},                                                 // ListGroups
	17: {},                                                                                                       // SaslHandshake
	18: {},                                                                                                       // ApiVersions
	19: {{create, clusterResource}, {create, topicResource}, {describeConfigs, topicResource}},                   // CreateTopics
	20: {{describe, topicResource}, {del, topicResource}},                                                        // DeleteTopics
	21: {{del, topicResource}},                                                                                   // DeleteRecords
	22: {{write, txnResource}, {idempotentWrite, clusterResource}, {write, topicResource}},                       // InitProducerId
	23: {{clusterAction, clusterResource}, {describe, topicResource}},                                            // OffsetForLeaderEpoch
	24: {{clusterAction, clusterResource}, {write, txnResource}, {write, topicResource}},                         // AddPartitionsToTxn
	25: {{write, txnResource}, {read, groupResource}},                                                            // AddOffsetsToTxn
	26: {{write, txnResource}},                                                                                   // EndTxn
	27: {{clusterAction, clusterResource}},                                                                       // WriteTxnMarkers
	28: {{write, txnResource}, {read, groupResource}, {read, topicResource}},                                     // TxnOffsetCommit
	29: {{describe, clusterResource}},                                                                            // DescribeAcls
	30: {{alter, clusterResource}},                                                                               // CreateAcls
	31: {{alter, clusterResource}},                                                                               // DeleteAcls
	32: {{describeConfigs, clusterResource}, {describeConfigs, topicResource}, {describeConfigs, groupResource}}, // DescribeConfigs
	33: {{alterConfigs, clusterResource}, {alterConfigs, topicResource}, {alterConfigs, groupResource}},          // AlterConfigs
	35: {{describe, clusterResource}},                                                                            // DescribeLogDirs
	36: {},                                                                                                       // SaslAuthenticate
	37: {{alter, topicResource}},                                                                                 // CreatePartitions
	42: {{del, groupResource}},                                                                                   // DeleteGroups
	43: {{alter, clusterResource}},                                                                               // ElectLeaders
	44: {{alterConfigs, clusterResource}, {alterConfigs, topicResource}, {alterConfigs, groupResource}},          // IncrementalAlterConfigs
	45: {{alter, clusterResource}},                                                                               // AlterPartitionReassignments
	46: {{describe, clusterResource}},                                                                            // ListPartitionReassignments
	47: {{del, groupResource}, {read, topicResource}},                                                            // OffsetDelete
	48: {{describeConfigs, clusterResource}},                                                                     // DescribeClientQuotas
	49: {{alterConfigs, clusterResource}},                                                                        // AlterClientQuotas
	50: {{describe, clusterResource}},                                                                            // DescribeUserScramCredentials
	51: {{alter, clusterResource}},                                                                               // AlterUserScramCredentials
	55: {{describe, clusterResource}},                                                                            // DescribeQuorum
	57: {{alter, clusterResource}},                                                                               // UpdateFeatures
	60: {{describe, clusterResource}},                                                                            // DescribeCluster
	61: {{read, topicResource}},                                                                                  // DescribeProducers
	64: {{alter, clusterResource}},                                                                               // UnregisterBroker
	65: {{describe, txnResource}, {describe, topicResource}},                                                     // DescribeTransactions
	66: {{describe, txnResource}},                                                                                // ListTransactions
	68: {{read, groupResource}, {describe, topicResource}},                                                       // ConsumerGroupHeartbeat
	69: {{describe, groupResource}, {describe, topicResource}},                                                   // ConsumerGroupDescribe
	76: {{read, groupResource}, {describe, topicResource}},                                                       // ShareGroupHeartbeat
	77: {{describe, groupResource}, {describe, topicResource}},                                                   // ShareGroupDescribe
	88: {{read, groupResource}, {describe, topicResource}, {create, clusterResource}, {create, topicResource}},   // StreamsGroupHeartbeat
	89: {{describe, groupResource}, {describe, topicResource}},                                                   // StreamsGroupDescribe
	90: {{describe, groupResource}, {describe, topicResource}},                                                   // DescribeShareGroupOffsets
	91: {{read, groupResource}, {read, topicResource}},                                                           // AlterShareGroupOffsets
	92: {{del, groupResource}, {read, topicResource}},                                                            // DeleteShareGroupOffsets
	78: {{read, groupResource}, {read, topicResource}},                                                           // ShareFetch
	79: {{read, groupResource}, {read, topicResource}},                                                           // ShareAcknowledge
	74: {{describeConfigs, clusterResource}},                                                                     // ListConfigResources
	75: {{describe, topicResource}},                                                                              // DescribeTopicPartitions
	83: {{clusterAction, clusterResource}},                                                                       // InitializeShareGroupState
	84: {{clusterAction, clusterResource}},                                                                       // ReadShareGroupState
	85: {{clusterAction, clusterResource}},                                                                       // WriteShareGroupState
	86: {{clusterAction, clusterResource}},                                                                       // DeleteShareGroupState
	87: {{clusterAction, clusterResource}},                                                                       // ReadShareGroupStateSummary
}

// Access is one line item of the permission table: an operation on a
// type of resource.
type Access struct {
	Operation    security.Operation
	ResourceType security.ResourceType
}

// Permissions returns a copy of the permission table, for the tests that
// grant from it over the wire (tests/permissions_test.go), which cannot
// see this package's unexported names. The table above stays the one
// source of truth: handlers read it, never this copy.
func Permissions() map[int16][]Access {
	out := make(map[int16][]Access, len(permissions))
	for key, line := range permissions {
		out[key] = make([]Access, len(line))
		for i, acc := range line {
			out[key][i] = Access{Operation: acc.op, ResourceType: acc.rt}
		}
	}
	return out
}
