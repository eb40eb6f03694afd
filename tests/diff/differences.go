//go:build kafkadiff

package diff

import "slices"

// Intended is a difference from Kafka that Skein means to have. Case and
// Path are patterns where ** stands for any run of characters and * for
// any run without a bracket (Configs[*] is one config): Case is
// matched against the test's name (TestCreateTopics/reserved), Path against
// the difference's path in the answer (Topics[t].ErrorCode). Kafka and
// Skein, when set, are patterns for the values the report shows (<absent>
// where one answer has nothing at that path). A difference that no entry
// matches fails its case; an entry that no case matched fails the run
// (TestMain), so that the list cannot outlive what it excuses.
type Intended struct {
	Case, Path   string
	Kafka, Skein string
	Reason       string
}

// differences is every intended difference, each with its reason. Keep it
// short: a difference that is a Skein bug is fixed in Skein, not listed.
var differences = slices.Concat([]Intended{
	// --- wording -----------------------------------------------------
	{Case: "*", Path: "**ErrorMessage",
		Reason: "an error message is for people and Skein words its own; the error code is the contract and is compared everywhere"},

	// --- produce -----------------------------------------------------
	{Case: "TestProduce/*/unknown_codec", Path: "Topics[*].Partitions[0].ErrorCode", Kafka: "-1 (UNKNOWN_SERVER_ERROR)", Skein: "2 (CORRUPT_MESSAGE)",
		Reason: "Kafka fails on a compression codec id it does not know (7) with an IllegalArgumentException, answered UNKNOWN_SERVER_ERROR; Skein names the precise error, the batch is corrupt: Skein never answers UNKNOWN_SERVER_ERROR where a precise code exists"},
	{Case: "TestProduce/*/unknown_codec", Path: "Topics[*].Partitions[0].LogStartOffset", Kafka: "0", Skein: "-1",
		Reason: "Kafka's answer to its UNKNOWN_SERVER_ERROR above carries the log start offset, as for any error its log raises; Skein refuses the batch as corrupt before the log, as Kafka does other corrupt batches (-1)"},
	{Case: "TestProduce/*/timestamp_two_hours_ahead", Path: "Topics[*].Partitions[0].**",
		Reason: "not implemented: Skein does not bound record timestamps against its clock (message.timestamp.after.max.ms, KIP-937), so it takes a record Kafka refuses with INVALID_TIMESTAMP"},

	// --- ACLs --------------------------------------------------------
	{Case: "TestACLs/create_odd/*", Path: "Results[0].ErrorCode", Kafka: "-1 (UNKNOWN_SERVER_ERROR)", Skein: "42 (INVALID_REQUEST)",
		Reason: "Kafka throws an IllegalArgumentException building a binding with an ANY or MATCH code, which fails the whole request with UNKNOWN_SERVER_ERROR; Skein refuses that one ACL with INVALID_REQUEST and says why: it never answers UNKNOWN_SERVER_ERROR where a precise code exists"},
	{Case: "TestACLs/create_odd/unknown_permission", Path: "<outcome>", Kafka: "connection closed without a response", Skein: "answered",
		Reason: "Kafka closes the connection on an UNKNOWN permission type (it cannot build the binding); Skein answers INVALID_REQUEST for that ACL"},

	// --- share groups (KIP-932) ---------------------------------------
	{Case: "TestShare*", Path: "Assignment.TopicPartitions[*]", Kafka: absent,
		Reason: shareInit},
	{Case: "TestShare*", Path: "MemberEpoch", Reason: shareInit},
	{Case: "TestShare*", Path: "Groups[*].GroupEpoch", Reason: shareInit},
	{Case: "TestShare*", Path: "Groups[*].AssignmentEpoch", Reason: shareInit},
	{Case: "TestShare*", Path: "Groups[*].Members[*].MemberEpoch", Reason: shareInit},
	{Case: "TestShareGroup", Path: "Groups[diff-share].Members[*].SubscribedTopicNames[*]",
		Reason: "Kafka lists a share member's subscribed topics in its hash set's order; Skein sorts them. The same names in both"},
	{Case: "TestShareFetch", Path: "Groups[*].Topics[*].Partitions[0].StartOffset", Kafka: "-1", Skein: "0",
		Reason: shareFirstUse},
	{Case: "TestShareFetch", Path: "Groups[*].Topics[*].Partitions[0].Lag", Kafka: "-1", Skein: "6",
		Reason: shareFirstUse},
	{Case: "TestShareFetch/acknowledge_*", Path: "Groups[*].Topics[*].Partitions[0].StartOffset", Kafka: "0", Skein: "1",
		Reason: shareStartWritten},
	{Case: "TestShareFetch/release_at_the_limit_archives", Path: "Groups[*].Topics[*].Partitions[0].StartOffset", Kafka: "1", Skein: "6",
		Reason: shareStartWritten},
	{Case: "TestShareFetch/acknowledge_an_offset_acknowledged_before", Path: "Topics[0].Partitions[0].ErrorCode", Kafka: "0", Skein: "121 (INVALID_RECORD_STATE)",
		Reason: "an acknowledgement of offsets wholly below the share-partition start offset: Kafka skips the batch and answers no error (SharePartition.acknowledge, \"already archived\"), so a member whose lock expired, and whose record another member then settled, is told it settled it; Skein answers INVALID_RECORD_STATE, as for any offset the member does not hold (share/window.go acknowledge). A consumer can tell: Kafka confirms an acknowledgement that changed nothing"},
	{Case: "TestShareFetch/fetch_releasing,_others_available", Path: "Topics[0].Partitions[0].AcquiredRecords[0].*Offset", Kafka: "*", Skein: "6",
		Reason: shareReleaseInFetch},
	{Case: "TestShareFetch/fetch_releasing,_others_available", Path: "Topics[0].Partitions[0].AcquiredRecords[1]", Kafka: absent, Skein: "{FirstOffset=8 LastOffset=9 DeliveryCount=3}",
		Reason: shareReleaseInFetch},
	{Case: "TestShareFetch/fetch_releasing,_others_available", Path: "Topics[0].Partitions[0].Records",
		Reason: shareReleaseInFetch},

	// --- configs -----------------------------------------------------
	{Case: "TestGroupConfigs/describe*", Path: "Resources[*].Configs[share.delivery.count.limit]", Kafka: absent,
		Reason: "share.delivery.count.limit is a group config from Kafka 4.3 (KIP-1240); Skein takes it already (configs/group.go)"},
	{Case: "TestGroupConfigs/list_groups_after", Path: "ConfigResources[diff-gc]", Skein: absent,
		Reason: "Kafka keeps listing a group whose last config was deleted (its metadata keeps the group's empty config entry); Skein lists the groups that have configs, as it does before any was set"},
	{Case: "*", Path: "**Configs[min.insync.replicas]**Source", Kafka: "3",
		Reason: minISRSource},
	{Case: "*", Path: "**Configs[min.insync.replicas]**Source", Kafka: "DYNAMIC_DEFAULT_BROKER_CONFIG",
		Reason: minISRSource},
	{Case: "*", Path: "**Configs[min.insync.replicas].ConfigSynonyms[*]", Skein: absent,
		Reason: minISRSource},
	{Case: "TestDescribeConfigs/cluster_defaults", Path: "Resources[].Configs[min.insync.replicas]", Skein: absent,
		Reason: minISRSource},
	{Case: "*", Path: "**Configs[*].Documentation", Kafka: `"**`, Skein: `"**`,
		Reason: "Skein documents each config in its own words (configs.Doc), describing what Skein does; Kafka's text is not copied. Both must have one"},
	{Case: "TestDescribeConfigs/broker*", Path: "Resources[1].Configs[*]", Skein: absent,
		Reason: "Skein implements a subset of Kafka's broker configs (configs.Keys lists them); those it has are compared in full"},
	{Case: "TestDescribeConfigs/broker*", Path: "Resources[1].Configs[*]", Kafka: absent,
		Reason: "Skein's own settings (data.dir, listen, durability, chaos.enable, extension and log settings...), which Kafka does not have (README, configs/node.go)"},
	{Case: "TestDescribeConfigs/broker*", Path: "Resources[1].Configs[metadata.log.dir]**",
		Reason: "the reference Kafka broker is given a metadata.log.dir of its own (tests/kafkaref); the Skein node keeps its default, the first log dir"},
	{Case: "*", Path: "**Configs[log.retention.ms]**", Kafka: "null",
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[log.roll.ms]**", Kafka: "null",
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[log.flush.interval.ms]**", Kafka: "null",
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[*].ConfigSynonyms[*]", Kafka: absent, Skein: `{Name="log.retention.hours" Value="168" Source=DEFAULT_CONFIG}`,
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[*].ConfigSynonyms[*]", Kafka: absent, Skein: `{Name="log.roll.hours" Value="168" Source=DEFAULT_CONFIG}`,
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[*].ConfigSynonyms[*]", Kafka: absent, Skein: `{Name="log.flush.interval.ms" Value="9223372036854775807" Source=DEFAULT_CONFIG}`,
		Reason: nullDefault},
	{Case: "*", Path: "**Configs[broker.rack]**", Kafka: "null", Skein: `""`,
		Reason: "broker.rack has no default in Kafka (null); Skein's is the empty string, no rack"},
	{Case: "*", Path: "**Configs[broker.rack].ConfigSynonyms[0]", Kafka: absent,
		Reason: "broker.rack has no default in Kafka (null); Skein's is the empty string, no rack"},
	{Case: "*", Path: "**Configs[replica.selector.class]**", Kafka: "null", Skein: `""`,
		Reason: "replica.selector.class has no default in Kafka (null: leaders serve consumers themselves); Skein's is the empty string, the same"},
	{Case: "*", Path: "**Configs[replica.selector.class].ConfigSynonyms[0]", Kafka: absent,
		Reason: "replica.selector.class has no default in Kafka (null: leaders serve consumers themselves); Skein's is the empty string, the same"},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[controller.quorum.voters]**",
		Reason: "Kafka's combined node needs its quorum in controller.quorum.voters; a single Skein node runs with it empty (a cluster of its own, configs/node.go)"},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[node.id].ConfigSynonyms[1]", Kafka: absent,
		Reason: "Kafka requires node.id (no default); Skein's is 1, so that a single node runs with no settings"},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[process.roles].ConfigSynonyms[1]", Kafka: absent,
		Reason: "Kafka requires process.roles (no default); Skein's is broker,controller, so that a single node runs with no settings"},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[*].ReadOnly", Kafka: "false", Skein: "true",
		Reason: listenerSettings},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[listeners]**", Reason: harnessListeners},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[advertised.listeners]**", Reason: harnessListeners},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[listener.security.protocol.map]**", Reason: harnessListeners},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[inter.broker.listener.name]**", Reason: harnessListeners},
	{Case: "TestDescribeConfigs/broker", Path: "Resources[1].Configs[controller.listener.names]**", Reason: harnessListeners},
	{Case: "*", Path: "**Configs[ssl.*store.type]**Value", Kafka: `"JKS"`, Skein: `"PEM"`,
		Reason: "Skein reads PEM keystores and truststores only (Go's crypto/tls); JKS and PKCS12 are refused at start"},
	{Case: "*", Path: "**Configs[ssl.*store.location]**", Kafka: "null", Skein: `""`,
		Reason: "no default in Kafka (null); Skein's is the empty string, no file"},
	{Case: "*", Path: "**Configs[ssl.*store.location].ConfigSynonyms[0]", Kafka: absent,
		Reason: "no default in Kafka (null); Skein's is the empty string, no file"},
	{Case: "*", Path: "**Configs[sasl.oauthbearer.*]**", Kafka: "null", Skein: `""`,
		Reason: "no default in Kafka (null); Skein's is the empty string, none"},
	{Case: "*", Path: "**Configs[sasl.oauthbearer.*].ConfigSynonyms[0]", Kafka: absent,
		Reason: "no default in Kafka (null); Skein's is the empty string, none"},
	{Case: "TestIncrementalAlterConfigs/*/broker,_unknown_config", Path: "Resources[1].ErrorCode", Kafka: "0", Skein: "40 (INVALID_CONFIG)",
		Reason: "Kafka keeps any unknown broker config (for plugins); Skein has no plugins and refuses a key it does not know"},
	{Case: "TestIncrementalAlterConfigs/*/unknown_op", Path: "Resources[diff-alter].ErrorCode", Kafka: "-1 (UNKNOWN_SERVER_ERROR)", Skein: "42 (INVALID_REQUEST)",
		Reason: "Kafka fails on an operation id it does not know with UNKNOWN_SERVER_ERROR; Skein names the precise error"},
	{Case: "TestCreateTopics/*/segment_below_1_MiB", Path: "Topics[diff-ct-small-segment]**",
		Reason: "Skein keeps Kafka 3's minimum segment.bytes (14) where Kafka 4 (KIP-1030) asks for 1 MiB: Skein's tests roll segments of a few batches (configs.MinSegmentBytes)"},
},
	kafkaOnlyConfigs("Skein recompresses (compression.type) at each codec's default level; the level configs of KIP-390 are not implemented",
		"compression.gzip.level", "compression.lz4.level", "compression.zstd.level"),
	kafkaOnlyConfigs("Skein has no tiered storage (KIP-405)",
		"remote.storage.enable", "remote.log.copy.disable", "remote.log.delete.on.disable", "local.retention.ms", "local.retention.bytes"),
	kafkaOnlyConfigs("fixed at Kafka's default in Skein, not a topic config: retired segment files are removed 60 s after they are retired and a log is compacted once half of it is dirty",
		"file.delete.delay.ms", "min.cleanable.dirty.ratio"),
	kafkaOnlyConfigs("Skein does not preallocate segment files: a segment that never takes a record costs no write (partition/store/segment.go)",
		"preallocate"),
	kafkaOnlyConfigs("not implemented: Skein rolls a segment at segment.ms exactly, with no jitter, and compacts by dirty ratio only, with no maximum lag",
		"segment.jitter.ms", "max.compaction.lag.ms"),
	kafkaOnlyConfigs("not implemented: Skein does not bound record timestamps against its clock (KIP-937)",
		"message.timestamp.before.max.ms", "message.timestamp.after.max.ms"),
	[]Intended{
		// --- APIs and features Skein does not serve (ApiVersions) ---------
		{Case: "TestApiVersions/*", Path: "ApiKeys[*DelegationToken]", Skein: absent,
			Reason: "not implemented: Skein has no delegation tokens (KIP-48)"},
		{Case: "TestApiVersions/*", Path: "ApiKeys[AlterReplicaLogDirs]", Skein: absent,
			Reason: "a Skein node has one data directory (data.dir), so there is no other log dir to move a replica to"},
		{Case: "TestApiVersions/*", Path: "ApiKeys[*RaftVoter]", Skein: absent,
			Reason: "Skein's controller quorum is static (controller.quorum.voters), not KIP-853's dynamic quorum"},
		{Case: "TestUpdateFeatures/*/kraft.version", Path: "ErrorCode",
			Reason: "kraft.version versions Kafka's KRaft quorum (KIP-853); Skein's quorum is static and its own, so a Skein node supports only level 0 of it and refuses any other as a feature it does not support"},
		{Case: "TestUpdateFeatures/v1/kraft.version", Path: "Results[0]", Skein: absent,
			Reason: "the same refusal: an UpdateFeatures v0-1 refused lists no per-feature results"},
		{Case: "TestApiVersions/*", Path: "SupportedFeatures[kraft.version]", Skein: absent,
			Reason: "kraft.version versions Kafka's KRaft quorum (KIP-853); Skein's quorum is static and its own"},
		{Case: "TestApiVersions/*", Path: "*Features[eligible.leader.replicas.version]", Skein: absent,
			Reason: "eligible leader replicas (KIP-966) are not implemented: Skein elects only from the ISR"},
	})

// shareInit is why a share group's epochs are one behind Kafka's.
const shareInit = "Kafka assigns a share-partition only once its share coordinator initialized the partition's state (InitializeShareGroupState, started by a heartbeat), and bumps the group epoch when it has: its member joins with no partitions and gets them a few heartbeats later at the next epoch. Skein assigns them in the join's answer and initializes a share-partition's state at its first fetch, so its epochs stay one behind Kafka's"

// shareFirstUse is why a share-partition's start offset and lag differ
// after its first fetch.
const shareFirstUse = "Kafka's group coordinator initializes a share-partition's state with start offset -1 (InitializeShareGroupState at the first heartbeat), and the share-partition computes its start offset from share.auto.offset.reset in memory only, writing it with its first acknowledgement: until then DescribeShareGroupOffsets shows -1 and no lag. Skein's share-partition writes the start offset it computed at its first fetch (share/partition.go initialize), so the start offset is fixed once and the lag known at once; what is delivered, with which delivery counts, is the same"

// shareStartWritten is why the start offset described lags in Kafka.
const shareStartWritten = "Kafka writes a share-partition's state with the start offset as it was before the acknowledgement written (SharePartition.writeShareGroupState sends startOffset(); maybeUpdateCachedStateAndOffsets moves it once the write is done), so DescribeShareGroupOffsets shows the start offset of one write before until the next write; its delivery-complete count includes the finished records past that offset, so the lag is the same. Skein writes the start offset the acknowledgement moved to (share/window.go changes). Only when the moved start offset becomes durable differs: the records in flight, their delivery counts and what is archived are the same"

// shareReleaseInFetch is why a ShareFetch that releases records while
// others are available acquires more in Skein.
const shareReleaseInFetch = "Kafka applies a ShareFetch's acknowledgements concurrently with its fetch (KafkaApis.handleShareFetchRequest starts handleAcknowledgements and handleFetchFromShareFetchRequest together); a record whose release is still being written is in a state transition that SharePartition.acquire skips, so Kafka delivers it at a later fetch (or in this one once the write is done, if the fetch waits for records). Skein applies the acknowledgements and waits until they are durable before it acquires, so the same fetch delivers the released record again. Which fetch delivers it differs; its delivery count on each delivery (here 3) and the archival rule are the same, and no record is delivered twice at once or lost. Kafka also re-acquires only within the log range one fetch reads from its next fetch offset, where Skein takes every available record of the window first: again which fetch, not what"

// minISRSource is why min.insync.replicas' source differs.
const minISRSource = "Kafka 4 with eligible leader replicas (KIP-966) writes min.insync.replicas into the cluster-wide dynamic configs when the cluster is formatted, so it shows as DYNAMIC_DEFAULT_BROKER_CONFIG there; Skein has no ELR and shows where it was really set"

// listenerSettings is why the listeners' settings are read-only in Skein.
const listenerSettings = "Kafka lets a broker's listeners, their TLS and SASL settings, producer.id.expiration.ms and a few others change at runtime (per-broker dynamic configs); Skein reads them when a node starts (and rereads the TLS files when they change), so they are read-only there"

// harnessListeners is why the listener settings' values differ.
const harnessListeners = "the harness runs Kafka with PLAINTEXT and CONTROLLER listeners in listeners, and Skein with its short form, --listen, which leaves these at their defaults"

// nullDefault is why the broker configs whose Kafka default is another
// config's differ.
const nullDefault = "Kafka leaves log.retention.ms, log.roll.ms and log.flush.interval.ms null when unset (their value comes from log.retention.hours, log.roll.hours, Long.MAX) and lists no default synonym for them or their topic configs; Skein shows the value in force and the default it comes from"

// kafkaOnlyConfigs lists topic configs that Kafka has and Skein does not,
// for one reason: absent from Skein's answers wherever configs are listed.
func kafkaOnlyConfigs(reason string, names ...string) []Intended {
	var out []Intended
	for _, n := range names {
		out = append(out, Intended{Case: "*", Path: "**Configs[" + n + "]", Skein: absent, Reason: reason})
	}
	return out
}
