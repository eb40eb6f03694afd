package configs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/skeinlog/skein/internal/logging"
)

// Node is the configuration of one Skein node (one `skein node` process).
//
// Keys are Kafka's broker config names where Kafka has the setting, so a
// server.properties translates line by line; the struct tags carry them.
// Settings Kafka does not have are marked Skein-only.
//
// The zero Node is not valid: start from Default or Load.
type Node struct {
	// NodeID identifies this node in the cluster. Kafka: node.id (Kafka has
	// no default; Skein's is 1, so that a lone node needs no setting).
	NodeID int32 `mapstructure:"node.id" yaml:"node.id"`

	// DataDir is the node's log dirs, comma-separated: the directories
	// holding its partitions, each created if missing and locked while the
	// node runs. The node's own files (the metadata log, its checkpoints)
	// are in the first. A new partition goes to the log dir with the most
	// free space, ties to the one with the fewest partitions (Kafka 4
	// counts partitions only); one found on disk stays where it is.
	// Default "./data". Kafka: log.dirs (KIP-858's JBOD).
	DataDir string `mapstructure:"data.dir" yaml:"data.dir"`

	// MetadataLogDir is the directory of the cluster metadata log
	// (__cluster_metadata-0), created if missing and locked while the node
	// runs; it may be one of the log dirs. Default empty: the first log
	// dir. Kafka: metadata.log.dir.
	MetadataLogDir string `mapstructure:"metadata.log.dir" yaml:"metadata.log.dir"`

	// Listen is the host:port of the node's one PLAINTEXT Kafka listener
	// when listeners is not set, and the inter-broker listener's when it
	// is. Default "127.0.0.1:9092". Skein-only: the short form of
	// listeners=PLAINTEXT://host:port.
	Listen string `mapstructure:"listen" yaml:"listen"`

	// Advertise is the host:port given to clients in Metadata responses
	// for listen. Default: the value of listen. As in Kafka, an
	// unspecified host (0.0.0.0, ::, empty) cannot be advertised.
	// Skein-only: the short form of advertised.listeners.
	Advertise string `mapstructure:"advertise" yaml:"advertise"`

	// Listeners are the node's Kafka listeners, NAME://host:port,...
	// (PLAINTEXT://:9092,EXTERNAL://10.0.0.1:9094); each name's security
	// protocol is in listener.security.protocol.map. Default empty: the
	// one PLAINTEXT listener of listen. Set this or listen, not both.
	// Kafka: listeners. A listener named in controller.listener.names is
	// the node's remoting address (cluster.listen), not a Kafka listener.
	Listeners string `mapstructure:"listeners" yaml:"listeners"`

	// AdvertisedListeners are the addresses clients are given, by
	// listener name; a listener not named here advertises its own
	// address. A client is told the brokers' addresses on the listener it
	// connected to. Kafka: advertised.listeners.
	AdvertisedListeners string `mapstructure:"advertised.listeners" yaml:"advertised.listeners"`

	// ListenerSecurityProtocolMap maps listener names to security
	// protocols, NAME:PROTOCOL,... Default Kafka's, each protocol a name
	// of its own (SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,...). Kafka:
	// listener.security.protocol.map.
	ListenerSecurityProtocolMap string `mapstructure:"listener.security.protocol.map" yaml:"listener.security.protocol.map"`

	// InterBrokerListenerName is the listener followers fetch from,
	// PLAINTEXT or SSL (mutual TLS: followers present its keystore and
	// check leaders against its truststore). Default: the listener named
	// PLAINTEXT, or the only one. Kafka: inter.broker.listener.name.
	InterBrokerListenerName string `mapstructure:"inter.broker.listener.name" yaml:"inter.broker.listener.name"`

	// ControllerListenerNames names the listeners that carry the
	// controllers' traffic, comma-separated. In Skein all traffic between
	// nodes (the quorum among it) goes over remoting: the first of these
	// that listeners declares gives cluster.listen (and
	// advertised.listeners cluster.advertise), so that a Kafka
	// server.properties with a CONTROLLER listener runs as it is. Default
	// empty. Kafka: controller.listener.names.
	ControllerListenerNames string `mapstructure:"controller.listener.names" yaml:"controller.listener.names"`

	// The TLS of SSL and SASL_SSL listeners, under Kafka's ssl.* names.
	// Each may be set for one listener as listener.name.<name>.<key>
	// (listener.name.external.ssl.keystore.location), which wins over the
	// key itself, as in Kafka. Files are read at start and again when
	// they change, without a restart.
	TLS `mapstructure:",squash" yaml:",inline"`

	// The SASL of SASL_PLAINTEXT and SASL_SSL listeners, under Kafka's
	// names; sasl.enabled.mechanisms may be set per listener, and each
	// mechanism's users are given per listener as
	// listener.name.<name>.<mechanism>.sasl.jaas.config.
	SASL `mapstructure:",squash" yaml:",inline"`

	// AuthorizerClassName turns authorization on when it names Kafka's
	// StandardAuthorizer (org.apache.kafka.metadata.authorizer.StandardAuthorizer),
	// the one authorizer Skein has: ACLs kept in the cluster's metadata,
	// decided by every node from its own image. Default empty: every
	// request is allowed. Kafka: authorizer.class.name.
	AuthorizerClassName string `mapstructure:"authorizer.class.name" yaml:"authorizer.class.name"`

	// SuperUsers may do anything, whatever the ACLs say: principals
	// separated by semicolons, "User:admin;User:ops". Default empty.
	// Kafka: super.users.
	SuperUsers string `mapstructure:"super.users" yaml:"super.users"`

	// AllowEveryoneIfNoACLFound, with an authorizer, allows a request on a
	// resource that no ACL names at all. Default false. Kafka:
	// allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool `mapstructure:"allow.everyone.if.no.acl.found" yaml:"allow.everyone.if.no.acl.found"`

	// ScramBootstrapUsers are the SCRAM credentials a new cluster starts
	// with, so that someone can log in to create the others (Kafka gives
	// them to kafka-storage format --add-scram): entries in that tool's
	// syntax, SCRAM-SHA-256=[name=admin,password=admin-secret], separated
	// by spaces or semicolons (BootstrapScramUsers). The first active
	// controller of a new cluster writes them with the cluster's first
	// record; once the cluster exists they are ignored. Shown as [hidden].
	// Default empty. Skein-only.
	ScramBootstrapUsers string `mapstructure:"scram.bootstrap.users" yaml:"scram.bootstrap.users"`

	// AdminListen is the host:port of the admin HTTP API (health, metrics,
	// fault injection). Default "127.0.0.1:9644". Skein-only.
	AdminListen string `mapstructure:"admin.listen" yaml:"admin.listen"`

	// AdminKeystoreLocation, when set, makes the admin API HTTPS: the PEM
	// file of its private key and certificate chain, as
	// ssl.keystore.location is for a Kafka listener, reread when it
	// changes (TLS 1.2+, ssl.enabled.protocols and ssl.cipher.suites
	// apply). Default empty: HTTP. Skein-only.
	AdminKeystoreLocation string `mapstructure:"admin.ssl.keystore.location" yaml:"admin.ssl.keystore.location"`

	// AdminAllowedHosts are the host names, besides IP addresses,
	// localhost and the names this node's own addresses use, that a
	// request to the admin API may name in its Host header
	// (comma-separated; a load balancer's name, say). Any other name is
	// refused, so that a web page whose name resolves to this node (DNS
	// rebinding) cannot reach the API. Default empty. Skein-only.
	AdminAllowedHosts string `mapstructure:"admin.allowed.hosts" yaml:"admin.allowed.hosts"`

	// LogLevel is the level of the node's own log: trace, debug, info,
	// warn or error. Default "info". Skein-only (Kafka configures log4j).
	// protoactor's internal log is bridged in at warn, or at debug when
	// this is debug or trace.
	LogLevel string `mapstructure:"log.level" yaml:"log.level"`

	// LogFormat is the format of the node's log on stderr: auto (console
	// on a terminal, JSON otherwise), console or json. Default "auto".
	// Skein-only.
	LogFormat string `mapstructure:"log.format" yaml:"log.format"`

	// Durability decides when a write counts as done. Default "fsync": an
	// offset counts towards the high watermark only once it is fsynced on
	// each replica, so acknowledged acks=all records survive every node
	// losing power at once. "replicated" is Kafka's model: in memory on
	// every in-sync replica, flushed later by the OS or by
	// log.flush.interval.messages / log.flush.interval.ms. Skein-only; see
	// docs/architecture.md, "Produce".
	Durability Durability `mapstructure:"durability" yaml:"durability"`

	// AutoCreateTopicsEnable lets Metadata and Produce requests create a
	// missing topic with num.partitions and default.replication.factor.
	// Default true. Kafka: auto.create.topics.enable.
	AutoCreateTopicsEnable bool `mapstructure:"auto.create.topics.enable" yaml:"auto.create.topics.enable"`

	// NumPartitions is the partition count of auto-created topics and of
	// CreateTopics requests that leave it at -1. Default 1, at least 1.
	// Kafka: num.partitions.
	NumPartitions int32 `mapstructure:"num.partitions" yaml:"num.partitions"`

	// DefaultReplicationFactor is the replication factor of auto-created
	// topics and of CreateTopics requests that leave it at -1. Default 1,
	// at least 1. Kafka: default.replication.factor.
	DefaultReplicationFactor int16 `mapstructure:"default.replication.factor" yaml:"default.replication.factor"`

	// ProducerIDExpirationMs is how long a partition remembers an
	// idempotent producer that has stopped writing to it; after that, its
	// next batch is accepted at any sequence, so a retry older than this
	// could be duplicated. Default 86400000 (1 day), at least 1. Kafka:
	// producer.id.expiration.ms (dynamic in Kafka; read at start here).
	ProducerIDExpirationMs int64 `mapstructure:"producer.id.expiration.ms" yaml:"producer.id.expiration.ms"`

	// SocketRequestMaxBytes caps the size of one request; a client that
	// announces a bigger one is disconnected before anything is allocated
	// for it. Default 104857600 (100 MiB), at least 1024. Kafka:
	// socket.request.max.bytes.
	SocketRequestMaxBytes int32 `mapstructure:"socket.request.max.bytes" yaml:"socket.request.max.bytes"`

	// MaxConnections bounds the client connections of all the listeners
	// but the inter-broker one: at the bound a listener stops accepting
	// until one closes. Default 2147483647 (no bound). Kafka:
	// max.connections.
	MaxConnections int32 `mapstructure:"max.connections" yaml:"max.connections"`

	// MaxConnectionsPerIP bounds the connections from one address; one
	// more is closed as soon as it is accepted. Default 2147483647.
	// Kafka: max.connections.per.ip.
	MaxConnectionsPerIP int32 `mapstructure:"max.connections.per.ip" yaml:"max.connections.per.ip"`

	// MaxConnectionsPerIPOverrides overrides max.connections.per.ip for
	// some addresses or host names: "10.0.0.5:200,build.example.com:0"
	// (0 shuts an address out). Default empty. Kafka:
	// max.connections.per.ip.overrides.
	MaxConnectionsPerIPOverrides string `mapstructure:"max.connections.per.ip.overrides" yaml:"max.connections.per.ip.overrides"`

	// MaxConnectionCreationRate bounds the connections a second each
	// listener but the inter-broker one accepts: past it, the listener
	// waits before accepting the next (new clients wait in the kernel's
	// backlog), so that a flood of connections cannot starve the node.
	// Default 2147483647 (no bound). Kafka: max.connection.creation.rate.
	MaxConnectionCreationRate int32 `mapstructure:"max.connection.creation.rate" yaml:"max.connection.creation.rate"`

	// QuotaWindowNum and QuotaWindowSizeSeconds are the windows client
	// quotas measure rates over: a client's rate is what it did in the
	// last QuotaWindowNum windows of QuotaWindowSizeSeconds. Defaults 11
	// and 1. Kafka: quota.window.num, quota.window.size.seconds.
	QuotaWindowNum         int32 `mapstructure:"quota.window.num" yaml:"quota.window.num"`
	QuotaWindowSizeSeconds int32 `mapstructure:"quota.window.size.seconds" yaml:"quota.window.size.seconds"`

	// ConnectionsMaxIdleMs closes a client connection that sent nothing for
	// this long. Default 600000 (10 minutes), at least 1. Kafka:
	// connections.max.idle.ms.
	ConnectionsMaxIdleMs int64 `mapstructure:"connections.max.idle.ms" yaml:"connections.max.idle.ms"`

	// OffsetsTopicNumPartitions is the partition count of the internal
	// topic __consumer_offsets, created on the first FindCoordinator. It
	// decides which partition, and so which coordinator, holds a group:
	// changing it after the topic exists has no effect. Default 50, at
	// least 1. Kafka: offsets.topic.num.partitions.
	OffsetsTopicNumPartitions int32 `mapstructure:"offsets.topic.num.partitions" yaml:"offsets.topic.num.partitions"`

	// OffsetsTopicReplicationFactor is the replication factor of
	// __consumer_offsets, capped at the live brokers when the topic is
	// created (a log line says so). Default 3, at least 1. Kafka:
	// offsets.topic.replication.factor.
	OffsetsTopicReplicationFactor int16 `mapstructure:"offsets.topic.replication.factor" yaml:"offsets.topic.replication.factor"`

	// TransactionStateLogNumPartitions is the partition count of the
	// internal topic __transaction_state, created on the first
	// FindCoordinator for a transactional id; as offsets.topic.num.partitions
	// it decides which coordinator holds an id. Default 50, at least 1.
	// Kafka: transaction.state.log.num.partitions.
	TransactionStateLogNumPartitions int32 `mapstructure:"transaction.state.log.num.partitions" yaml:"transaction.state.log.num.partitions"`

	// TransactionStateLogReplicationFactor is the replication factor of
	// __transaction_state, capped at the live brokers when the topic is
	// created (a log line says so). Default 3, at least 1. Kafka:
	// transaction.state.log.replication.factor.
	TransactionStateLogReplicationFactor int16 `mapstructure:"transaction.state.log.replication.factor" yaml:"transaction.state.log.replication.factor"`

	// TransactionStateLogMinISR is __transaction_state's
	// min.insync.replicas, capped at its replication factor. Default 2, at
	// least 1. Kafka: transaction.state.log.min.isr.
	TransactionStateLogMinISR int16 `mapstructure:"transaction.state.log.min.isr" yaml:"transaction.state.log.min.isr"`

	// ShareCoordinatorStateTopicNumPartitions is the partition count of
	// the internal topic __share_group_state, created on first use (a
	// FindCoordinator of key type 2, or a share coordinator's first
	// request); as offsets.topic.num.partitions it decides which
	// coordinator holds a share-partition's state. Default 50, at least 1.
	// Kafka: share.coordinator.state.topic.num.partitions.
	ShareCoordinatorStateTopicNumPartitions int32 `mapstructure:"share.coordinator.state.topic.num.partitions" yaml:"share.coordinator.state.topic.num.partitions"`

	// ShareCoordinatorStateTopicReplicationFactor is the replication
	// factor of __share_group_state, capped at the live brokers when the
	// topic is created (a log line says so). Default 3, at least 1. Kafka:
	// share.coordinator.state.topic.replication.factor.
	ShareCoordinatorStateTopicReplicationFactor int16 `mapstructure:"share.coordinator.state.topic.replication.factor" yaml:"share.coordinator.state.topic.replication.factor"`

	// ShareCoordinatorStateTopicMinISR is __share_group_state's
	// min.insync.replicas, capped at its replication factor. Default 2, at
	// least 1. Kafka: share.coordinator.state.topic.min.isr.
	ShareCoordinatorStateTopicMinISR int16 `mapstructure:"share.coordinator.state.topic.min.isr" yaml:"share.coordinator.state.topic.min.isr"`

	// ShareCoordinatorStateTopicSegmentBytes is __share_group_state's
	// segment.bytes. Default 104857600 (100 MiB), at least 1. Kafka:
	// share.coordinator.state.topic.segment.bytes.
	ShareCoordinatorStateTopicSegmentBytes int32 `mapstructure:"share.coordinator.state.topic.segment.bytes" yaml:"share.coordinator.state.topic.segment.bytes"`

	// ShareCoordinatorSnapshotUpdateRecordsPerSnapshot is how many update
	// records a share coordinator writes for a share-partition between
	// two snapshots of its whole state. Default 500, 0 to 500. Kafka:
	// share.coordinator.snapshot.update.records.per.snapshot.
	ShareCoordinatorSnapshotUpdateRecordsPerSnapshot int32 `mapstructure:"share.coordinator.snapshot.update.records.per.snapshot" yaml:"share.coordinator.snapshot.update.records.per.snapshot"`

	// ShareCoordinatorWriteTimeoutMs is how long a share coordinator waits
	// for its records to be replicated before it answers
	// COORDINATOR_NOT_AVAILABLE. Default 5000, at least 1. Kafka:
	// share.coordinator.write.timeout.ms.
	ShareCoordinatorWriteTimeoutMs int32 `mapstructure:"share.coordinator.write.timeout.ms" yaml:"share.coordinator.write.timeout.ms"`

	// ShareCoordinatorStateTopicPruneIntervalMs is how often a share
	// coordinator deletes the __share_group_state records below every
	// share-partition's last snapshot. Default 300000, at least 1. Kafka
	// (internal): share.coordinator.state.topic.prune.interval.ms.
	ShareCoordinatorStateTopicPruneIntervalMs int32 `mapstructure:"share.coordinator.state.topic.prune.interval.ms" yaml:"share.coordinator.state.topic.prune.interval.ms"`

	// ShareCoordinatorColdPartitionSnapshotIntervalMs is how long a
	// share-partition's state goes unwritten before its coordinator
	// writes a snapshot of it, so that its old records can be pruned.
	// Default 300000, at least 1. Kafka (internal):
	// share.coordinator.cold.partition.snapshot.interval.ms.
	ShareCoordinatorColdPartitionSnapshotIntervalMs int32 `mapstructure:"share.coordinator.cold.partition.snapshot.interval.ms" yaml:"share.coordinator.cold.partition.snapshot.interval.ms"`

	// TransactionMaxTimeoutMs is the longest transaction timeout a
	// producer may ask for in InitProducerId (INVALID_TRANSACTION_TIMEOUT
	// above it). Default 900000 (15 minutes), at least 1. Kafka:
	// transaction.max.timeout.ms.
	TransactionMaxTimeoutMs int32 `mapstructure:"transaction.max.timeout.ms" yaml:"transaction.max.timeout.ms"`

	// TransactionalIDExpirationMs is how long a transactional id with no
	// transaction in progress is remembered without being used. Default
	// 604800000 (7 days), at least 1. Kafka: transactional.id.expiration.ms.
	TransactionalIDExpirationMs int64 `mapstructure:"transactional.id.expiration.ms" yaml:"transactional.id.expiration.ms"`

	// TransactionAbortTimedOutCleanupIntervalMs is how often a coordinator
	// looks for transactions older than their timeout, which it aborts.
	// Default 10000, at least 1. Kafka:
	// transaction.abort.timed.out.transaction.cleanup.interval.ms.
	TransactionAbortTimedOutCleanupIntervalMs int32 `mapstructure:"transaction.abort.timed.out.transaction.cleanup.interval.ms" yaml:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`

	// ExtensionCommitIntervalMs is how often an extension instance's actor
	// commits its position while it makes progress (it commits too when it
	// catches up). Default 1000, at least 1. Skein's own.
	ExtensionCommitIntervalMs int32 `mapstructure:"extension.commit.interval.ms" yaml:"extension.commit.interval.ms"`

	// GroupMinSessionTimeoutMs is the shortest session timeout a group
	// member may ask for in JoinGroup; a shorter one is refused with
	// INVALID_SESSION_TIMEOUT. Default 6000, at least 1. Kafka:
	// group.min.session.timeout.ms.
	GroupMinSessionTimeoutMs int32 `mapstructure:"group.min.session.timeout.ms" yaml:"group.min.session.timeout.ms"`

	// GroupMaxSessionTimeoutMs is the longest session timeout a group
	// member may ask for. Default 1800000 (30 minutes), at least
	// group.min.session.timeout.ms. Kafka: group.max.session.timeout.ms.
	GroupMaxSessionTimeoutMs int32 `mapstructure:"group.max.session.timeout.ms" yaml:"group.max.session.timeout.ms"`

	// GroupInitialRebalanceDelayMs is how long a classic group that was
	// Empty waits for more members after its first JoinGroup before it
	// completes the rebalance; each member joining meanwhile extends the
	// wait by as much again, within the rebalance timeout. Members started
	// together thus get one first generation instead of one rebalance
	// each. 0 completes at once. Default 3000, at least 0. Kafka:
	// group.initial.rebalance.delay.ms.
	GroupInitialRebalanceDelayMs int32 `mapstructure:"group.initial.rebalance.delay.ms" yaml:"group.initial.rebalance.delay.ms"`

	// GroupConsumerMigrationPolicy says whether a group with members may
	// change protocol: "upgrade" lets a consumer-protocol (KIP-848)
	// member join a classic group, which becomes a consumer group whose
	// classic members stay; "downgrade" turns a consumer group whose last
	// consumer-protocol member left back into a classic group;
	// "bidirectional" allows both, "disabled" neither. Empty groups
	// change protocol whatever this says. Default bidirectional. Kafka:
	// group.consumer.migration.policy.
	GroupConsumerMigrationPolicy string `mapstructure:"group.consumer.migration.policy" yaml:"group.consumer.migration.policy"`

	// GroupConsumerSessionTimeoutMs is how long a member of a
	// consumer-protocol group (KIP-848) may go without heartbeating before
	// it is removed and its partitions reassigned. Default 45000, at least
	// 1. Kafka: group.consumer.session.timeout.ms.
	GroupConsumerSessionTimeoutMs int32 `mapstructure:"group.consumer.session.timeout.ms" yaml:"group.consumer.session.timeout.ms"`

	// GroupConsumerHeartbeatIntervalMs is the heartbeat interval a
	// consumer-protocol group (KIP-848) tells its members. Default 5000, at
	// least 1. Kafka: group.consumer.heartbeat.interval.ms.
	GroupConsumerHeartbeatIntervalMs int32 `mapstructure:"group.consumer.heartbeat.interval.ms" yaml:"group.consumer.heartbeat.interval.ms"`

	// GroupConsumerMinSessionTimeoutMs and GroupConsumerMaxSessionTimeoutMs
	// bound group.consumer.session.timeout.ms and every group's
	// consumer.session.timeout.ms (a group config). Defaults 45000 and
	// 60000. Kafka: group.consumer.min.session.timeout.ms,
	// group.consumer.max.session.timeout.ms.
	GroupConsumerMinSessionTimeoutMs int32 `mapstructure:"group.consumer.min.session.timeout.ms" yaml:"group.consumer.min.session.timeout.ms"`
	GroupConsumerMaxSessionTimeoutMs int32 `mapstructure:"group.consumer.max.session.timeout.ms" yaml:"group.consumer.max.session.timeout.ms"`

	// GroupConsumerMinHeartbeatIntervalMs and
	// GroupConsumerMaxHeartbeatIntervalMs bound
	// group.consumer.heartbeat.interval.ms and every group's
	// consumer.heartbeat.interval.ms. Defaults 5000 and 15000. Kafka:
	// group.consumer.min.heartbeat.interval.ms,
	// group.consumer.max.heartbeat.interval.ms.
	GroupConsumerMinHeartbeatIntervalMs int32 `mapstructure:"group.consumer.min.heartbeat.interval.ms" yaml:"group.consumer.min.heartbeat.interval.ms"`
	GroupConsumerMaxHeartbeatIntervalMs int32 `mapstructure:"group.consumer.max.heartbeat.interval.ms" yaml:"group.consumer.max.heartbeat.interval.ms"`

	// GroupShareSessionTimeoutMs is how long a member of a share group
	// (KIP-932) may go without heartbeating before it is fenced: it leaves
	// the group and the records it holds go back to the others. Default
	// 45000, within group.share.min.session.timeout.ms and
	// group.share.max.session.timeout.ms. Kafka:
	// group.share.session.timeout.ms.
	GroupShareSessionTimeoutMs int32 `mapstructure:"group.share.session.timeout.ms" yaml:"group.share.session.timeout.ms"`

	// GroupShareHeartbeatIntervalMs is the heartbeat interval a share
	// group tells its members. Default 5000, within
	// group.share.min.heartbeat.interval.ms and
	// group.share.max.heartbeat.interval.ms. Kafka:
	// group.share.heartbeat.interval.ms.
	GroupShareHeartbeatIntervalMs int32 `mapstructure:"group.share.heartbeat.interval.ms" yaml:"group.share.heartbeat.interval.ms"`

	// GroupShareMinSessionTimeoutMs and GroupShareMaxSessionTimeoutMs
	// bound group.share.session.timeout.ms and every share group's
	// share.session.timeout.ms (a group config). Defaults 45000 and
	// 60000. Kafka: group.share.min.session.timeout.ms,
	// group.share.max.session.timeout.ms.
	GroupShareMinSessionTimeoutMs int32 `mapstructure:"group.share.min.session.timeout.ms" yaml:"group.share.min.session.timeout.ms"`
	GroupShareMaxSessionTimeoutMs int32 `mapstructure:"group.share.max.session.timeout.ms" yaml:"group.share.max.session.timeout.ms"`

	// GroupShareMinHeartbeatIntervalMs and GroupShareMaxHeartbeatIntervalMs
	// bound group.share.heartbeat.interval.ms and every share group's
	// share.heartbeat.interval.ms. Defaults 5000 and 15000. Kafka:
	// group.share.min.heartbeat.interval.ms,
	// group.share.max.heartbeat.interval.ms.
	GroupShareMinHeartbeatIntervalMs int32 `mapstructure:"group.share.min.heartbeat.interval.ms" yaml:"group.share.min.heartbeat.interval.ms"`
	GroupShareMaxHeartbeatIntervalMs int32 `mapstructure:"group.share.max.heartbeat.interval.ms" yaml:"group.share.max.heartbeat.interval.ms"`

	// GroupShareRecordLockDurationMs is how long a record a share
	// consumer acquired stays locked to it: when the lock expires
	// unacknowledged, the record is available again (or archived at the
	// delivery count limit). Default 30000, 1000 to 3600000, within
	// group.share.min.record.lock.duration.ms and
	// group.share.max.record.lock.duration.ms. Kafka:
	// group.share.record.lock.duration.ms.
	GroupShareRecordLockDurationMs int32 `mapstructure:"group.share.record.lock.duration.ms" yaml:"group.share.record.lock.duration.ms"`

	// GroupShareMinRecordLockDurationMs and
	// GroupShareMaxRecordLockDurationMs bound
	// group.share.record.lock.duration.ms and every share group's
	// share.record.lock.duration.ms. Defaults 15000 (1000 to 30000) and
	// 60000 (30000 to 3600000). Kafka:
	// group.share.min.record.lock.duration.ms,
	// group.share.max.record.lock.duration.ms.
	GroupShareMinRecordLockDurationMs int32 `mapstructure:"group.share.min.record.lock.duration.ms" yaml:"group.share.min.record.lock.duration.ms"`
	GroupShareMaxRecordLockDurationMs int32 `mapstructure:"group.share.max.record.lock.duration.ms" yaml:"group.share.max.record.lock.duration.ms"`

	// GroupShareDeliveryCountLimit is how many times a share group
	// delivers a record before it archives it instead of making it
	// available again. Default 5, 2 to 10, within
	// group.share.min.delivery.count.limit and
	// group.share.max.delivery.count.limit. Kafka:
	// group.share.delivery.count.limit.
	GroupShareDeliveryCountLimit int32 `mapstructure:"group.share.delivery.count.limit" yaml:"group.share.delivery.count.limit"`

	// GroupShareMinDeliveryCountLimit and GroupShareMaxDeliveryCountLimit
	// bound group.share.delivery.count.limit and every share group's
	// share.delivery.count.limit (KIP-1240). Defaults 2 and 10. Kafka
	// (4.3): group.share.min.delivery.count.limit,
	// group.share.max.delivery.count.limit.
	GroupShareMinDeliveryCountLimit int32 `mapstructure:"group.share.min.delivery.count.limit" yaml:"group.share.min.delivery.count.limit"`
	GroupShareMaxDeliveryCountLimit int32 `mapstructure:"group.share.max.delivery.count.limit" yaml:"group.share.max.delivery.count.limit"`

	// GroupShareMaxSize is the most members a share group may have; one
	// more is refused GROUP_MAX_SIZE_REACHED. Default 200, 10 to 1000.
	// Kafka: group.share.max.size.
	GroupShareMaxSize int32 `mapstructure:"group.share.max.size" yaml:"group.share.max.size"`

	// GroupSharePartitionMaxRecordLocks is the most records of one
	// partition a share group holds in flight (acquired and not yet
	// acknowledged) at once. Default 2000, 100 to 10000. Kafka:
	// group.share.partition.max.record.locks.
	GroupSharePartitionMaxRecordLocks int32 `mapstructure:"group.share.partition.max.record.locks" yaml:"group.share.partition.max.record.locks"`

	// GroupStreamsSessionTimeoutMs is how long a member of a streams
	// group (KIP-1071) may go without a heartbeat before it is removed and
	// its tasks given to others, unless the group sets
	// streams.session.timeout.ms. Default 45000, within
	// group.streams.min.session.timeout.ms and
	// group.streams.max.session.timeout.ms. Kafka:
	// group.streams.session.timeout.ms.
	GroupStreamsSessionTimeoutMs int32 `mapstructure:"group.streams.session.timeout.ms" yaml:"group.streams.session.timeout.ms"`

	// GroupStreamsMinSessionTimeoutMs and GroupStreamsMaxSessionTimeoutMs
	// bound group.streams.session.timeout.ms and every streams group's
	// streams.session.timeout.ms. Defaults 45000 and 60000. Kafka:
	// group.streams.min.session.timeout.ms,
	// group.streams.max.session.timeout.ms.
	GroupStreamsMinSessionTimeoutMs int32 `mapstructure:"group.streams.min.session.timeout.ms" yaml:"group.streams.min.session.timeout.ms"`
	GroupStreamsMaxSessionTimeoutMs int32 `mapstructure:"group.streams.max.session.timeout.ms" yaml:"group.streams.max.session.timeout.ms"`

	// GroupStreamsHeartbeatIntervalMs is the heartbeat interval a streams
	// group gives its members, unless it sets
	// streams.heartbeat.interval.ms. Default 5000, within
	// group.streams.min.heartbeat.interval.ms and
	// group.streams.max.heartbeat.interval.ms, and below
	// group.streams.session.timeout.ms. Kafka:
	// group.streams.heartbeat.interval.ms.
	GroupStreamsHeartbeatIntervalMs int32 `mapstructure:"group.streams.heartbeat.interval.ms" yaml:"group.streams.heartbeat.interval.ms"`

	// GroupStreamsMinHeartbeatIntervalMs and
	// GroupStreamsMaxHeartbeatIntervalMs bound
	// group.streams.heartbeat.interval.ms and every streams group's
	// streams.heartbeat.interval.ms. Defaults 5000 and 15000. Kafka:
	// group.streams.min.heartbeat.interval.ms,
	// group.streams.max.heartbeat.interval.ms.
	GroupStreamsMinHeartbeatIntervalMs int32 `mapstructure:"group.streams.min.heartbeat.interval.ms" yaml:"group.streams.min.heartbeat.interval.ms"`
	GroupStreamsMaxHeartbeatIntervalMs int32 `mapstructure:"group.streams.max.heartbeat.interval.ms" yaml:"group.streams.max.heartbeat.interval.ms"`

	// GroupStreamsMaxSize is the most members a streams group may have;
	// one more is refused GROUP_MAX_SIZE_REACHED. Default 2147483647 (no
	// limit), at least 1. Kafka: group.streams.max.size.
	GroupStreamsMaxSize int32 `mapstructure:"group.streams.max.size" yaml:"group.streams.max.size"`

	// GroupStreamsNumStandbyReplicas is how many standby replicas of each
	// stateful task a streams group's assignor places, unless the group
	// sets streams.num.standby.replicas. Default 0, at most
	// group.streams.max.standby.replicas. Kafka:
	// group.streams.num.standby.replicas.
	GroupStreamsNumStandbyReplicas int32 `mapstructure:"group.streams.num.standby.replicas" yaml:"group.streams.num.standby.replicas"`

	// GroupStreamsMaxStandbyReplicas bounds
	// group.streams.num.standby.replicas and every streams group's
	// streams.num.standby.replicas. Default 2, at least 0. Kafka:
	// group.streams.max.standby.replicas.
	GroupStreamsMaxStandbyReplicas int32 `mapstructure:"group.streams.max.standby.replicas" yaml:"group.streams.max.standby.replicas"`

	// GroupStreamsInitialRebalanceDelayMs is how long a new streams group
	// waits for more members before its first assignment (members get an
	// empty one meanwhile), unless the group sets
	// streams.initial.rebalance.delay.ms. Default 3000, at least 0. Kafka:
	// group.streams.initial.rebalance.delay.ms.
	GroupStreamsInitialRebalanceDelayMs int32 `mapstructure:"group.streams.initial.rebalance.delay.ms" yaml:"group.streams.initial.rebalance.delay.ms"`

	// OffsetsRetentionMinutes is how long the committed offsets of a group
	// with no members are kept after it became empty (or, for offsets
	// committed by standalone consumers, after the last commit); then they
	// are deleted (KIP-211). Default 10080 (7 days), at least 1. Kafka:
	// offsets.retention.minutes.
	OffsetsRetentionMinutes int32 `mapstructure:"offsets.retention.minutes" yaml:"offsets.retention.minutes"`

	// ProcessRoles are the roles this node plays: broker (hosts
	// partitions and serves clients), controller (a voter of the metadata
	// quorum), or both, comma-separated. Default "broker,controller".
	// Kafka: process.roles.
	ProcessRoles string `mapstructure:"process.roles" yaml:"process.roles"`

	// ControllerQuorumVoters are the controller quorum's voters,
	// id@host:port of each one's cluster address, comma-separated (e.g.
	// "1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093"). Nodes started
	// with the same voters form one cluster. Default empty: this node is
	// a cluster of its own, its only controller and broker, and does not
	// open cluster.listen. Kafka: controller.quorum.voters.
	ControllerQuorumVoters string `mapstructure:"controller.quorum.voters" yaml:"controller.quorum.voters"`

	// ClusterListen is the host:port the node's remoting (messages between
	// nodes: the controller quorum, heartbeats, replication) binds when
	// controller.quorum.voters is set. Default "127.0.0.1:9093".
	// Skein-only (Kafka's controller and inter-broker listeners).
	ClusterListen string `mapstructure:"cluster.listen" yaml:"cluster.listen"`

	// ClusterAdvertise is the host:port other nodes reach this one's
	// remoting at. Default: the value of cluster.listen. For a controller
	// it must be its address in controller.quorum.voters. Skein-only.
	ClusterAdvertise string `mapstructure:"cluster.advertise" yaml:"cluster.advertise"`

	// BrokerRack is the rack (or zone) of this broker, used to place a
	// partition's replicas in different racks. Default empty. Kafka:
	// broker.rack.
	BrokerRack string `mapstructure:"broker.rack" yaml:"broker.rack"`

	// ReplicaSelectorClass chooses the replica a consumer reads from
	// (KIP-392). Default empty: the leader. Kafka's
	// org.apache.kafka.common.replica.RackAwareReplicaSelector (the one
	// selector Skein has) makes a leader send a consumer that gives its
	// rack (client.rack) to an in-sync replica in that rack, when the
	// leader is not in it. Followers serve consumers' fetches whatever
	// this says, as Kafka's do. Kafka: replica.selector.class.
	ReplicaSelectorClass string `mapstructure:"replica.selector.class" yaml:"replica.selector.class"`

	// BrokerHeartbeatIntervalMs is how often a broker heartbeats the
	// active controller. Default 2000, at least 1. Kafka:
	// broker.heartbeat.interval.ms.
	BrokerHeartbeatIntervalMs int32 `mapstructure:"broker.heartbeat.interval.ms" yaml:"broker.heartbeat.interval.ms"`

	// BrokerSessionTimeoutMs is how long the active controller waits for a
	// broker's heartbeat before fencing it. Default 9000, at least
	// broker.heartbeat.interval.ms. Kafka: broker.session.timeout.ms.
	BrokerSessionTimeoutMs int32 `mapstructure:"broker.session.timeout.ms" yaml:"broker.session.timeout.ms"`

	// MetadataSnapshotBytes is how many bytes of metadata entries a
	// controller applies between two snapshots of its image, which
	// compact its log and bring a lagging or new member up to date.
	// Default 20971520 (20 MiB), at least 1. Kafka:
	// metadata.log.max.record.bytes.between.snapshots.
	MetadataSnapshotBytes int64 `mapstructure:"metadata.log.max.record.bytes.between.snapshots" yaml:"metadata.log.max.record.bytes.between.snapshots"`

	// ReplicaLagTimeMaxMs is how long a follower may go without catching
	// up with its leader before the leader asks to remove it from the
	// ISR. Default 30000, at least 1. Kafka: replica.lag.time.max.ms.
	ReplicaLagTimeMaxMs int32 `mapstructure:"replica.lag.time.max.ms" yaml:"replica.lag.time.max.ms"`

	// ReplicaFetchWaitMaxMs is how long a leader holds a follower's fetch
	// that finds nothing new. Default 500, at least 0, below
	// replica.lag.time.max.ms. Kafka: replica.fetch.wait.max.ms.
	ReplicaFetchWaitMaxMs int32 `mapstructure:"replica.fetch.wait.max.ms" yaml:"replica.fetch.wait.max.ms"`

	// ReplicaFetchMaxBytes caps the record bytes of one partition in a
	// follower's fetch answer (one batch larger than it still comes
	// whole). Default 1048576, at least 1. Kafka: replica.fetch.max.bytes.
	ReplicaFetchMaxBytes int32 `mapstructure:"replica.fetch.max.bytes" yaml:"replica.fetch.max.bytes"`

	// ReplicaFetchResponseMaxBytes caps the record bytes of a follower's
	// fetch answer over all its partitions. Default 10485760, at least 1.
	// Kafka: replica.fetch.response.max.bytes.
	ReplicaFetchResponseMaxBytes int32 `mapstructure:"replica.fetch.response.max.bytes" yaml:"replica.fetch.response.max.bytes"`

	// AutoLeaderRebalanceEnable makes the active controller give each
	// partition back to its preferred replica (the first of its replicas)
	// when that one is live and in sync, every
	// leader.imbalance.check.interval.seconds. Default true. Kafka:
	// auto.leader.rebalance.enable.
	AutoLeaderRebalanceEnable bool `mapstructure:"auto.leader.rebalance.enable" yaml:"auto.leader.rebalance.enable"`

	// LeaderImbalanceCheckIntervalSeconds paces that check, and the unclean
	// elections of offline partitions whose topic allows them. Default
	// 300, at least 1. Kafka: leader.imbalance.check.interval.seconds.
	LeaderImbalanceCheckIntervalSeconds int32 `mapstructure:"leader.imbalance.check.interval.seconds" yaml:"leader.imbalance.check.interval.seconds"`

	// LogMaxOpenFiles caps the descriptors the node's partitions keep open:
	// segment files and indexes are opened on demand through a node-wide
	// least-recently-used cache, and only the segment being written stays
	// open for certain (see internal/vfs.Cache). Default 0: derived at start
	// from the open-file limit (RLIMIT_NOFILE), leaving a quarter of it (at
	// least 256) for sockets, the admin listener and checkpoints. At least
	// 0. Skein-only: Kafka keeps every segment open and asks its users to
	// raise the limit.
	LogMaxOpenFiles int32 `mapstructure:"log.max.open.files" yaml:"log.max.open.files"`

	// ChaosEnable lets the admin API inject faults into this node (actor,
	// link, clock and disk faults: `skein chaos`). Default false: a node
	// refuses them unless it opts in. Skein-only.
	ChaosEnable bool `mapstructure:"chaos.enable" yaml:"chaos.enable"`

	// ConsoleFaultsWithoutAuth shows the web console's fault buttons to
	// everyone when the node authenticates nobody (no SASL listener) and
	// has no authorizer; they still need chaos.enable. Default false: a
	// console that knows nobody is read-only, and with authentication on
	// only super users (everyone authenticated, without an authorizer)
	// see them. The admin API's own fault routes are not changed by it.
	// Skein-only.
	ConsoleFaultsWithoutAuth bool `mapstructure:"console.faults.without.auth" yaml:"console.faults.without.auth"`

	// Extensions are extension instances this node sees to: once it
	// serves, each one the cluster's metadata lacks, or holds with another
	// definition, is set through the controller (replacing the one there),
	// and retried until it lands. Instances are cluster-wide, so nodes that
	// configure the same name differently overwrite each other at their
	// starts: configure an instance on one node, or the same on all.
	// Deleting one from this list does not delete it from the cluster
	// (`skein extension delete` does). Default none. Only the --config
	// file sets them, as a list of {name, kind, settings}; settings are
	// the kind's (`skein extension kinds`), their names read in lower
	// case, as every key of the file. Names must be unique and kinds
	// given; whether the kind exists and takes the settings is checked by
	// the node. Skein-only.
	Extensions []Extension `mapstructure:"extensions" yaml:"extensions"`

	// TopicDefaults are the broker-level defaults of the topic configs.
	TopicDefaults `mapstructure:",squash" yaml:",inline"`

	// ReplicationThrottle are the replication rates (KIP-73), dynamic
	// broker configs.
	ReplicationThrottle `mapstructure:",squash" yaml:",inline"`

	// ListenerSettings are the per-listener keys given
	// (listener.name.<name>.<key>), by listener name in upper case, then
	// by the key they set; see ListenerTLS.
	ListenerSettings map[string]map[string]string `mapstructure:"-" yaml:"listener.name,omitempty"`

	// Explicit holds the keys that were given explicitly (by the file, the
	// environment or a flag) with their values as given, including Kafka's
	// alternative names such as log.retention.hours. DescribeTopic reports
	// them as STATIC_BROKER_CONFIG. Load fills it; Default leaves it nil.
	// When several sources set the same setting, only the winning source's
	// keys are kept.
	Explicit map[string]string `mapstructure:"-" yaml:"-"`

	// dynamic holds the dynamic broker configs WithDynamic applied, nil
	// for none.
	dynamic *dynamicLayers
}

// Extension is an extension instance of the node configuration
// (Node.Extensions): its name (as a topic's: ASCII letters, digits, '.',
// '_' and '-'), the kind of extension it runs, and the kind's settings.
type Extension struct {
	Name     string            `mapstructure:"name" yaml:"name"`
	Kind     string            `mapstructure:"kind" yaml:"kind"`
	Settings map[string]string `mapstructure:"settings" yaml:"settings,omitempty"`
}

// keyExtensions is Node.Extensions' key: a list, which only the file sets
// (readExtensions), outside the scalar keys of nodeFields.
const keyExtensions = "extensions"

// TopicDefaults are the broker-level defaults of the topic-level configs,
// under Kafka's broker names (log.retention.ms for retention.ms, and so on).
// A topic's own configs override them: see ResolveTopic. Each field has the
// default, range and meaning of its topic config; see Topic.
type TopicDefaults struct {
	// LogRetentionMs: default for retention.ms. Default 604800000 (7 days);
	// -1 (unlimited) or at least 1. Kafka: log.retention.ms, which wins
	// over log.retention.minutes and log.retention.hours; Skein accepts
	// those two as well and converts them to milliseconds (a negative value
	// meaning unlimited, as in Kafka).
	LogRetentionMs int64 `mapstructure:"log.retention.ms" yaml:"log.retention.ms"`

	// LogRetentionBytes: default for retention.bytes. Default -1
	// (unlimited). Kafka: log.retention.bytes.
	LogRetentionBytes int64 `mapstructure:"log.retention.bytes" yaml:"log.retention.bytes"`

	// LogSegmentBytes: default for segment.bytes. Default 1073741824
	// (1 GiB), at least MinSegmentBytes. Kafka: log.segment.bytes.
	LogSegmentBytes int32 `mapstructure:"log.segment.bytes" yaml:"log.segment.bytes"`

	// LogRollMs: default for segment.ms. Default 604800000 (7 days), at
	// least 1. Kafka: log.roll.ms, which wins over log.roll.hours; Skein
	// accepts log.roll.hours as well.
	LogRollMs int64 `mapstructure:"log.roll.ms" yaml:"log.roll.ms"`

	// LogIndexSizeMaxBytes: default for segment.index.bytes. Default
	// 10485760 (10 MiB), at least 4. Kafka: log.index.size.max.bytes.
	LogIndexSizeMaxBytes int32 `mapstructure:"log.index.size.max.bytes" yaml:"log.index.size.max.bytes"`

	// LogIndexIntervalBytes: default for index.interval.bytes. Default
	// 4096, at least 0. Kafka: log.index.interval.bytes.
	LogIndexIntervalBytes int32 `mapstructure:"log.index.interval.bytes" yaml:"log.index.interval.bytes"`

	// LogCleanupPolicy: default for cleanup.policy. Default delete. Kafka:
	// log.cleanup.policy.
	LogCleanupPolicy CleanupPolicy `mapstructure:"log.cleanup.policy" yaml:"log.cleanup.policy"`

	// LogCleanerDeleteRetentionMs: default for delete.retention.ms. Default
	// 86400000 (1 day), at least 0. Kafka: log.cleaner.delete.retention.ms.
	LogCleanerDeleteRetentionMs int64 `mapstructure:"log.cleaner.delete.retention.ms" yaml:"log.cleaner.delete.retention.ms"`

	// LogCleanerMinCompactionLagMs: default for min.compaction.lag.ms.
	// Default 0, at least 0. Kafka: log.cleaner.min.compaction.lag.ms.
	LogCleanerMinCompactionLagMs int64 `mapstructure:"log.cleaner.min.compaction.lag.ms" yaml:"log.cleaner.min.compaction.lag.ms"`

	// MessageMaxBytes: default for max.message.bytes. Default 1048588
	// (1 MiB plus a batch's 12-byte log overhead), at least 0. Kafka:
	// message.max.bytes.
	MessageMaxBytes int32 `mapstructure:"message.max.bytes" yaml:"message.max.bytes"`

	// LogMessageTimestampType: default for message.timestamp.type. Default
	// CreateTime. Kafka: log.message.timestamp.type.
	LogMessageTimestampType TimestampType `mapstructure:"log.message.timestamp.type" yaml:"log.message.timestamp.type"`

	// MinInsyncReplicas: default for min.insync.replicas. Default 1, at
	// least 1. Kafka: min.insync.replicas.
	MinInsyncReplicas int32 `mapstructure:"min.insync.replicas" yaml:"min.insync.replicas"`

	// LogFlushIntervalMessages: default for flush.messages. Default
	// 9223372036854775807 (never), at least 1. Only used under durability
	// replicated. Kafka: log.flush.interval.messages.
	LogFlushIntervalMessages int64 `mapstructure:"log.flush.interval.messages" yaml:"log.flush.interval.messages"`

	// UncleanLeaderElectionEnable: default for unclean.leader.election.enable.
	// Default false. Kafka: unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool `mapstructure:"unclean.leader.election.enable" yaml:"unclean.leader.election.enable"`

	// LogFlushIntervalMs: default for flush.ms. Default
	// 9223372036854775807 (never), at least 0. Only used under durability
	// replicated. Kafka: log.flush.interval.ms (whose own default, null,
	// falls back to log.flush.scheduler.interval.ms, Long.MAX_VALUE; Skein
	// has no flush scheduler and states the value directly).
	LogFlushIntervalMs int64 `mapstructure:"log.flush.interval.ms" yaml:"log.flush.interval.ms"`

	// CompressionType: default for compression.type. Default producer.
	// Kafka: compression.type.
	CompressionType CompressionType `mapstructure:"compression.type" yaml:"compression.type"`
}

// Durability is the value of the durability key (Skein-only).
type Durability string

// The values of durability.
const (
	// DurabilityFsync acknowledges an offset once every replica counting
	// towards the high watermark has fsynced it (the default).
	DurabilityFsync Durability = "fsync"
	// DurabilityReplicated acknowledges an offset once every in-sync
	// replica has it in memory, as Kafka does.
	DurabilityReplicated Durability = "replicated"
)

// DefaultProducerIDExpirationMs is Kafka's producer.id.expiration.ms.
const DefaultProducerIDExpirationMs = 24 * 3600 * 1000

// Default returns the configuration `skein node` runs with when given
// nothing: a single node with its data in ./data, Kafka on 127.0.0.1:9092,
// and Kafka's defaults for everything Kafka has.
func Default() Node {
	return Node{
		NodeID:                      1,
		DataDir:                     "./data",
		Listen:                      "127.0.0.1:9092",
		Advertise:                   "127.0.0.1:9092",
		AdminListen:                 "127.0.0.1:9644",
		ListenerSecurityProtocolMap: defaultProtocolMap,
		TLS: TLS{KeystoreType: "PEM", TruststoreType: "PEM", ClientAuth: "none", PrincipalMappingRules: "DEFAULT",
			EnabledProtocols: "TLSv1.2,TLSv1.3"},
		SASL: SASL{EnabledMechanisms: "GSSAPI", ServerMaxReceiveSize: 524288, FailedAuthenticationDelayMs: 100,
			OAuthJWKSRefreshMs: 3600000, OAuthClockSkewSeconds: 30, OAuthSubClaimName: "sub"},
		LogLevel:                                         "info",
		LogFormat:                                        logging.FormatAuto,
		Durability:                                       DurabilityFsync,
		AutoCreateTopicsEnable:                           true,
		NumPartitions:                                    1,
		DefaultReplicationFactor:                         1,
		ProducerIDExpirationMs:                           DefaultProducerIDExpirationMs,
		SocketRequestMaxBytes:                            100 << 20,
		ConnectionsMaxIdleMs:                             600000,
		MaxConnections:                                   math.MaxInt32,
		MaxConnectionsPerIP:                              math.MaxInt32,
		MaxConnectionCreationRate:                        math.MaxInt32,
		QuotaWindowNum:                                   11,
		QuotaWindowSizeSeconds:                           1,
		OffsetsTopicNumPartitions:                        50,
		OffsetsTopicReplicationFactor:                    3,
		TransactionStateLogNumPartitions:                 50,
		TransactionStateLogReplicationFactor:             3,
		TransactionStateLogMinISR:                        2,
		ShareCoordinatorStateTopicNumPartitions:          50,
		ShareCoordinatorStateTopicReplicationFactor:      3,
		ShareCoordinatorStateTopicMinISR:                 2,
		ShareCoordinatorStateTopicSegmentBytes:           100 << 20,
		ShareCoordinatorSnapshotUpdateRecordsPerSnapshot: 500,
		ShareCoordinatorWriteTimeoutMs:                   5000,
		ShareCoordinatorStateTopicPruneIntervalMs:        300000,
		ShareCoordinatorColdPartitionSnapshotIntervalMs:  300000,
		TransactionMaxTimeoutMs:                          900000,
		TransactionalIDExpirationMs:                      604800000,
		TransactionAbortTimedOutCleanupIntervalMs:        10000,
		ExtensionCommitIntervalMs:                        1000,
		GroupMinSessionTimeoutMs:                         6000,
		GroupMaxSessionTimeoutMs:                         1800000,
		GroupInitialRebalanceDelayMs:                     3000,
		GroupConsumerMigrationPolicy:                     "bidirectional",
		GroupConsumerSessionTimeoutMs:                    45000,
		GroupConsumerHeartbeatIntervalMs:                 5000,
		GroupConsumerMinSessionTimeoutMs:                 45000,
		GroupConsumerMaxSessionTimeoutMs:                 60000,
		GroupConsumerMinHeartbeatIntervalMs:              5000,
		GroupConsumerMaxHeartbeatIntervalMs:              15000,
		GroupShareSessionTimeoutMs:                       45000,
		GroupShareHeartbeatIntervalMs:                    5000,
		GroupShareMinSessionTimeoutMs:                    45000,
		GroupShareMaxSessionTimeoutMs:                    60000,
		GroupShareMinHeartbeatIntervalMs:                 5000,
		GroupShareMaxHeartbeatIntervalMs:                 15000,
		GroupShareRecordLockDurationMs:                   30000,
		GroupShareMinRecordLockDurationMs:                15000,
		GroupShareMaxRecordLockDurationMs:                60000,
		GroupShareDeliveryCountLimit:                     5,
		GroupShareMinDeliveryCountLimit:                  2,
		GroupShareMaxDeliveryCountLimit:                  10,
		GroupShareMaxSize:                                200,
		GroupSharePartitionMaxRecordLocks:                2000,
		GroupStreamsSessionTimeoutMs:                     45000,
		GroupStreamsMinSessionTimeoutMs:                  45000,
		GroupStreamsMaxSessionTimeoutMs:                  60000,
		GroupStreamsHeartbeatIntervalMs:                  5000,
		GroupStreamsMinHeartbeatIntervalMs:               5000,
		GroupStreamsMaxHeartbeatIntervalMs:               15000,
		GroupStreamsMaxSize:                              math.MaxInt32,
		GroupStreamsNumStandbyReplicas:                   0,
		GroupStreamsMaxStandbyReplicas:                   2,
		GroupStreamsInitialRebalanceDelayMs:              3000,
		OffsetsRetentionMinutes:                          10080,
		ProcessRoles:                                     "broker,controller",
		ClusterListen:                                    "127.0.0.1:9093",
		ClusterAdvertise:                                 "127.0.0.1:9093",
		BrokerHeartbeatIntervalMs:                        2000,
		BrokerSessionTimeoutMs:                           9000,
		MetadataSnapshotBytes:                            20 << 20,
		ReplicaLagTimeMaxMs:                              30000,
		ReplicaFetchWaitMaxMs:                            500,
		ReplicaFetchMaxBytes:                             1 << 20,
		ReplicaFetchResponseMaxBytes:                     10 << 20,
		AutoLeaderRebalanceEnable:                        true,
		LeaderImbalanceCheckIntervalSeconds:              300,
		TopicDefaults:                                    DefaultTopic().brokerDefaults(),
		ReplicationThrottle:                              ReplicationThrottle{LeaderReplicationThrottledRate: Unlimited, FollowerReplicationThrottledRate: Unlimited},
	}
}

// StandardAuthorizer is Kafka's KRaft authorizer, the one
// authorizer.class.name Skein serves.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// RackAwareReplicaSelector is Kafka's rack-aware replica selector, the one
// replica.selector.class Skein serves.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// RackAwareReads reports whether leaders send consumers to replicas in
// their rack (replica.selector.class).
func (n Node) RackAwareReads() bool { return n.ReplicaSelectorClass == RackAwareReplicaSelector }

// LogDirs returns data.dir's log dirs, in order; the first holds the
// node's own files.
func (n Node) LogDirs() []string { return splitList(n.DataDir) }

// MetadataDir returns the directory holding the metadata log's:
// metadata.log.dir, or the first log dir.
func (n Node) MetadataDir() string {
	if n.MetadataLogDir != "" {
		return n.MetadataLogDir
	}
	if dirs := n.LogDirs(); len(dirs) > 0 {
		return dirs[0]
	}
	return ""
}

// Authorizing reports whether an authorizer is on.
func (n Node) Authorizing() bool { return n.AuthorizerClassName != "" }

// Validate checks every key's value. The error joins one *Error per bad
// key, each naming the key and the value, in the order of the keys in
// Node.
func (n Node) Validate() error {
	var v validator
	v.atLeast("node.id", int64(n.NodeID), 0)
	if dirs := n.LogDirs(); len(dirs) == 0 {
		v.fail("data.dir", n.DataDir, "must not be empty")
	} else {
		seen := map[string]bool{}
		for _, d := range dirs {
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			if seen[d] {
				v.fail("data.dir", n.DataDir, "names "+d+" twice")
				break
			}
			seen[d] = true
		}
	}
	if n.Listeners == "" {
		v.hostPort("listen", n.Listen, false)
		v.hostPort("advertise", n.Advertise, true)
	}
	n.listeners(&v)
	v.hostPort("admin.listen", n.AdminListen, false)
	if _, err := logging.ParseLevel(n.LogLevel); err != nil {
		v.fail("log.level", n.LogLevel, "must be one of "+strings.Join(logging.Levels, ", "))
	}
	if !logging.ValidFormat(n.LogFormat) {
		v.fail("log.format", n.LogFormat, "must be one of "+strings.Join(logging.Formats, ", "))
	}
	v.oneOf("durability", string(n.Durability), string(DurabilityFsync), string(DurabilityReplicated))
	v.atLeast("num.partitions", int64(n.NumPartitions), 1)
	v.atLeast("default.replication.factor", int64(n.DefaultReplicationFactor), 1)
	v.atLeast("producer.id.expiration.ms", n.ProducerIDExpirationMs, 1)
	v.atLeast("socket.request.max.bytes", int64(n.SocketRequestMaxBytes), 1024)
	v.atLeast("connections.max.idle.ms", n.ConnectionsMaxIdleMs, 1)
	v.atLeast("connections.max.reauth.ms", n.ConnectionsMaxReauthMs, 0)
	v.atLeast("max.connections", int64(n.MaxConnections), 0)
	v.atLeast("max.connections.per.ip", int64(n.MaxConnectionsPerIP), 0)
	v.atLeast("max.connection.creation.rate", int64(n.MaxConnectionCreationRate), 1)
	v.atLeast("quota.window.num", int64(n.QuotaWindowNum), 2)
	v.atLeast("quota.window.size.seconds", int64(n.QuotaWindowSizeSeconds), 1)
	if _, err := n.PerIPOverrides(); err != nil {
		v.fail("max.connections.per.ip.overrides", n.MaxConnectionsPerIPOverrides, err.Error())
	}
	if n.Authorizing() && n.AuthorizerClassName != StandardAuthorizer {
		v.fail("authorizer.class.name", n.AuthorizerClassName, "Skein's one authorizer is "+StandardAuthorizer+" (ACLs in the cluster's metadata); leave it empty for none")
	}
	if n.ReplicaSelectorClass != "" && n.ReplicaSelectorClass != RackAwareReplicaSelector {
		v.fail("replica.selector.class", n.ReplicaSelectorClass, "Skein's one replica selector is "+RackAwareReplicaSelector+" (consumers read from a replica in their client.rack); leave it empty for the leader only")
	}
	if _, err := n.BootstrapScramUsers(); err != nil {
		v.fail(scramBootstrapKey, Hidden, err.Error())
	}
	v.atLeast("sasl.server.max.receive.size", int64(n.ServerMaxReceiveSize), 1)
	v.atLeast("connection.failed.authentication.delay.ms", int64(n.FailedAuthenticationDelayMs), 0)
	v.atLeast("offsets.topic.num.partitions", int64(n.OffsetsTopicNumPartitions), 1)
	v.atLeast("offsets.topic.replication.factor", int64(n.OffsetsTopicReplicationFactor), 1)
	v.atLeast("transaction.state.log.num.partitions", int64(n.TransactionStateLogNumPartitions), 1)
	v.atLeast("transaction.state.log.replication.factor", int64(n.TransactionStateLogReplicationFactor), 1)
	v.atLeast("transaction.state.log.min.isr", int64(n.TransactionStateLogMinISR), 1)
	v.atLeast("share.coordinator.state.topic.num.partitions", int64(n.ShareCoordinatorStateTopicNumPartitions), 1)
	v.atLeast("share.coordinator.state.topic.replication.factor", int64(n.ShareCoordinatorStateTopicReplicationFactor), 1)
	v.atLeast("share.coordinator.state.topic.min.isr", int64(n.ShareCoordinatorStateTopicMinISR), 1)
	v.atLeast("share.coordinator.state.topic.segment.bytes", int64(n.ShareCoordinatorStateTopicSegmentBytes), 1)
	if r := n.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot; r < 0 || r > 500 {
		v.fail("share.coordinator.snapshot.update.records.per.snapshot", fmtInt(int64(r)), "must be between 0 and 500")
	}
	v.atLeast("share.coordinator.write.timeout.ms", int64(n.ShareCoordinatorWriteTimeoutMs), 1)
	v.atLeast("share.coordinator.state.topic.prune.interval.ms", int64(n.ShareCoordinatorStateTopicPruneIntervalMs), 1)
	v.atLeast("share.coordinator.cold.partition.snapshot.interval.ms", int64(n.ShareCoordinatorColdPartitionSnapshotIntervalMs), 1)
	v.atLeast("transaction.max.timeout.ms", int64(n.TransactionMaxTimeoutMs), 1)
	v.atLeast("transactional.id.expiration.ms", n.TransactionalIDExpirationMs, 1)
	v.atLeast("transaction.abort.timed.out.transaction.cleanup.interval.ms", int64(n.TransactionAbortTimedOutCleanupIntervalMs), 1)
	v.atLeast("extension.commit.interval.ms", int64(n.ExtensionCommitIntervalMs), 1)
	v.atLeast("group.min.session.timeout.ms", int64(n.GroupMinSessionTimeoutMs), 1)
	v.atLeast("group.max.session.timeout.ms", int64(n.GroupMaxSessionTimeoutMs), int64(n.GroupMinSessionTimeoutMs))
	v.atLeast("group.initial.rebalance.delay.ms", int64(n.GroupInitialRebalanceDelayMs), 0)
	v.oneOf("group.consumer.migration.policy", n.GroupConsumerMigrationPolicy, "bidirectional", "upgrade", "downgrade", "disabled")
	v.atLeast("group.consumer.min.session.timeout.ms", int64(n.GroupConsumerMinSessionTimeoutMs), 1)
	v.atLeast("group.consumer.max.session.timeout.ms", int64(n.GroupConsumerMaxSessionTimeoutMs), int64(n.GroupConsumerMinSessionTimeoutMs))
	v.atLeast("group.consumer.min.heartbeat.interval.ms", int64(n.GroupConsumerMinHeartbeatIntervalMs), 1)
	v.atLeast("group.consumer.max.heartbeat.interval.ms", int64(n.GroupConsumerMaxHeartbeatIntervalMs), int64(n.GroupConsumerMinHeartbeatIntervalMs))
	// As Kafka's GroupCoordinatorConfig: the node's own values within the
	// bounds it gives every group's.
	v.within("group.consumer.session.timeout.ms", int64(n.GroupConsumerSessionTimeoutMs),
		"group.consumer.min.session.timeout.ms", int64(n.GroupConsumerMinSessionTimeoutMs),
		"group.consumer.max.session.timeout.ms", int64(n.GroupConsumerMaxSessionTimeoutMs))
	v.within("group.consumer.heartbeat.interval.ms", int64(n.GroupConsumerHeartbeatIntervalMs),
		"group.consumer.min.heartbeat.interval.ms", int64(n.GroupConsumerMinHeartbeatIntervalMs),
		"group.consumer.max.heartbeat.interval.ms", int64(n.GroupConsumerMaxHeartbeatIntervalMs))
	n.validateShareGroups(&v)
	n.validateStreamsGroups(&v)
	v.atLeast("offsets.retention.minutes", int64(n.OffsetsRetentionMinutes), 1)
	v.atLeast("log.max.open.files", int64(n.LogMaxOpenFiles), 0)
	n.validateCluster(&v)
	n.ReplicationThrottle.validate(&v)
	seen := map[string]bool{}
	for i, e := range n.Extensions {
		key := fmt.Sprintf("%s[%d]", keyExtensions, i)
		switch {
		case e.Name == "":
			v.fail(key+".name", e.Name, "must not be empty")
		case seen[e.Name]:
			v.fail(key+".name", e.Name, "names an earlier extension too: names are unique")
		}
		seen[e.Name] = true
		if e.Kind == "" {
			v.fail(key+".kind", e.Kind, "must not be empty")
		}
	}
	d := n.TopicDefaults
	d.Topic().validate(&v, brokerName)
	// NB: Kafka's broker refuses log.retention.ms = 0 (every segment would
	// go as soon as it rolls), while a topic may set retention.ms = 0.
	if d.LogRetentionMs == 0 {
		v.fail("log.retention.ms", "0", "must be -1 (unlimited) or at least 1")
	}
	return v.err()
}

// YAML returns the configuration in the format Load reads (every key, flat,
// under its Kafka name), so that `skein node --print-config > node.yaml`
// followed by `skein node --config node.yaml` runs the same node.
func (n Node) YAML() string {
	if n.ListenerSettings != nil {
		settings := make(map[string]map[string]string, len(n.ListenerSettings))
		for name, keys := range n.ListenerSettings {
			settings[name] = map[string]string{}
			for key, val := range keys {
				settings[name][key] = redact(key, val)
			}
		}
		n.ListenerSettings = settings
	}
	n.ScramBootstrapUsers = redact(scramBootstrapKey, n.ScramBootstrapUsers)
	out, err := yaml.Marshal(n)
	if err != nil {
		// Node holds scalars, CleanupPolicy (which marshals to a string)
		// and the extensions' strings.
		panic(fmt.Sprintf("configs: marshalling Node: %v", err))
	}
	return "# Skein node configuration. Keys are Kafka's broker config names where Kafka\n" +
		"# has the setting; see package configs for each key's meaning and default.\n" +
		string(out)
}

// Map returns every key with its value as YAML prints it, for structured
// logging of the effective configuration; extensions, when there are any,
// as their names, comma-separated.
func (n Node) Map() map[string]string {
	m := make(map[string]string, len(nodeFields)+1)
	for _, f := range nodeFields {
		m[f.key] = redact(f.key, f.format(n))
	}
	for name, keys := range n.ListenerSettings {
		for key, val := range keys {
			m[listenerPrefix+strings.ToLower(name)+"."+key] = redact(key, val)
		}
	}
	if len(n.Extensions) > 0 {
		names := make([]string, len(n.Extensions))
		for i, e := range n.Extensions {
			names[i] = e.Name
		}
		m[keyExtensions] = strings.Join(names, ",")
	}
	return m
}

// Error is a configuration error: the key, the value as given, and what is
// wrong with it. Every error of this package is, or joins, *Error values;
// errors.As finds the first. Its message is Kafka's INVALID_CONFIG message
// for a bad topic config.
type Error struct {
	Key    string
	Value  string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("configs: %s = %s: %s", e.Key, quote(e.Value), e.Reason)
}

// quote leaves plain values (numbers, names, addresses, paths) bare and
// quotes the rest, so that an empty or odd value stays visible.
func quote(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._,:/+-[]", r)
		if !plain {
			return strconv.Quote(s)
		}
	}
	return s
}

// validator collects *Error values.
type validator struct{ errs []error }

func (v *validator) fail(key, value, reason string) {
	v.errs = append(v.errs, &Error{Key: key, Value: value, Reason: reason})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) atLeast(key string, value, min int64) {
	if value < min {
		v.fail(key, fmtInt(value), "must be at least "+fmtInt(min))
	}
}

// within checks that value lies between the settings minKey and maxKey.
func (v *validator) within(key string, value int64, minKey string, min int64, maxKey string, max int64) {
	switch {
	case value < min:
		v.fail(key, fmtInt(value), "must be at least "+minKey+" ("+fmtInt(min)+")")
	case value > max:
		v.fail(key, fmtInt(value), "must be at most "+maxKey+" ("+fmtInt(max)+")")
	}
}

func (v *validator) oneOf(key, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	v.fail(key, value, "must be one of "+strings.Join(allowed, ", "))
}

// hostPort checks a host:port; advertised addresses must name a host.
func (v *validator) hostPort(key, value string, advertised bool) {
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		v.fail(key, value, "must be host:port")
		return
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		v.fail(key, value, "port must be a number from 0 to 65535")
		return
	}
	if advertised {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			v.fail(key, value, "must name a host clients can reach, not an unspecified address (set advertise when listen is 0.0.0.0 or [::])")
		}
	}
}

func fmtInt(i int64) string { return strconv.FormatInt(i, 10) }

// PerIPOverrides returns max.connections.per.ip.overrides by host (an
// address or a name), as given.
func (n Node) PerIPOverrides() (map[string]int, error) {
	out := map[string]int{}
	for _, item := range splitList(n.MaxConnectionsPerIPOverrides) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q must be host:count", item)
		}
		count, err := strconv.ParseInt(item[i+1:], 10, 32)
		if err != nil || count < 0 {
			return nil, fmt.Errorf("%q must be host:count, the count a number from 0", item)
		}
		out[strings.Trim(item[:i], "[]")] = int(count)
	}
	return out, nil
}
