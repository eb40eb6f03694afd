// Package diff holds the differential tests: Apache Kafka's broker (the
// release tests/kafkaref pins) and Skein run side by side, receive the
// same requests, and their answers are compared field by field. Any
// difference fails, unless differences.go lists it with its reason.
//
// The tests are behind the kafkadiff build tag, so that `go test ./...`
// neither compiles them nor needs Java; run them with
//
//	tests/diff/run.sh
//
// which resolves Kafka's jars with Maven (tests/kafkaref/pom.xml) and runs
//
//	go test -tags kafkadiff -count=1 -timeout 15m ./tests/diff/ -kafkaref.classpath "$(cat tests/kafkaref/target/classpath.txt)"
//
// Without -kafkaref.classpath (or $KAFKAREF_CLASSPATH) TestMain runs Maven
// itself.
//
// How a case reads:
//  1. TestMain starts one Kafka (kafkaref.Start, one combined KRaft node)
//     and one Skein (node.Start, in this process) for the whole package,
//     with the same settings where both have them (shared, in
//     main_test.go).
//  2. A case builds a kmsg request and calls compare (or exchange, when it
//     needs the answers to build the next request): the request goes to
//     both brokers on a connection of its own, at the same version (the
//     highest both brokers and kmsg speak, unless the case pins one), and
//     the two answers are turned into trees (tree.go): keyed lists become
//     maps by their key (topic, partition, config name, API key), strings
//     the case names (member ids the brokers chose) are replaced by the
//     case's names, and what differs between any two brokers by nature
//     (hosts, ports, cluster and topic ids, throttle) is blanked.
//  3. The trees are diffed into paths, e.g.
//     Topics[t].Partitions[1].ErrorCode: kafka 3 (UNKNOWN_TOPIC_OR_PARTITION), skein 0;
//     a path that differences.go lists for the case is logged as intended,
//     any other fails the case.
//
// Topic and group names are unique per case: both brokers live for the
// whole package, and the cases share them. Where Kafka answers before its
// broker has applied what its controller committed (a topic just created,
// a config just altered, a group coordinator still loading), the case
// polls for the state both must reach (waitFor) before it compares; no
// case sleeps.
//
// The cases, a file per area:
//   - apiversions_test.go: ApiVersions v0-v4 and a version too new;
//   - topics_test.go: CreateTopics (names, partition counts, replication
//     factors, assignments, configs, validate-only) and DeleteTopics;
//   - produce_test.go: Produce at v12 and v13, good batches and batches
//     wrong in one way each (records_test.go builds them byte by byte);
//   - fetch_test.go: Fetch, ListOffsets by timestamp, OffsetForLeaderEpoch;
//   - configs_test.go: DescribeConfigs and IncrementalAlterConfigs;
//   - groups_test.go: a classic group's states and errors, a rebalance,
//     and a KIP-848 consumer group;
//   - sharegroups_test.go: share groups (KIP-932): ShareGroupHeartbeat,
//     ShareGroupDescribe, the other group APIs on share groups and the
//     share APIs on other groups, Describe/Alter/DeleteShareGroupOffsets;
//   - sharefetch_test.go: ShareFetch and ShareAcknowledge of one share
//     group member: acquisitions, acknowledgements and their errors,
//     redelivery counts, the last attempt alone, archival, sessions;
//   - streamsgroups_test.go: streams groups (KIP-1071):
//     StreamsGroupHeartbeat joins with a small topology (internal topics
//     created, the initial rebalance delay), missing source topics,
//     invalid and mis-partitioned topologies, malformed requests,
//     StreamsGroupDescribe, ListGroups by type, DeleteGroups with and
//     without members, the other types' APIs on a streams group, and a
//     classic join turning an empty streams group into a classic one;
//   - groupconfigs_test.go: group configs (KIP-848) and
//     ListConfigResources;
//   - metadata_test.go, admin_test.go: Metadata and auto-creation,
//     CreatePartitions, DeleteRecords, DescribeCluster, ListGroups.
package diff
