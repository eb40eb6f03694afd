package configs

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Topic is the configuration in force for one topic: the broker's defaults
// (TopicDefaults) overridden by the topic's own configs. Names, defaults,
// ranges and meanings are Kafka's (TopicConfig, LogConfig); the struct tags
// carry the Kafka names. Times are int64 milliseconds and sizes are bytes,
// as in Kafka, and -1 keeps Kafka's meaning of "unlimited" where Kafka has it.
type Topic struct {
	// RetentionMs: segments whose newest record is older than this are
	// deleted (under the delete policy). Default 604800000 (7 days); -1
	// means unlimited; at least -1. Kafka: retention.ms.
	RetentionMs int64 `mapstructure:"retention.ms" yaml:"retention.ms"`

	// RetentionBytes: the oldest segments are deleted while the partition
	// is larger than this (under the delete policy). Default -1
	// (unlimited); any value, a negative one meaning unlimited. Kafka:
	// retention.bytes.
	RetentionBytes int64 `mapstructure:"retention.bytes" yaml:"retention.bytes"`

	// SegmentBytes: the active segment rolls before it would grow past
	// this. Default 1073741824 (1 GiB); at least MinSegmentBytes. Kafka:
	// segment.bytes.
	SegmentBytes int32 `mapstructure:"segment.bytes" yaml:"segment.bytes"`

	// SegmentMs: the active segment rolls once its first record is this
	// old, even if not full. Default 604800000 (7 days); at least 1.
	// Kafka: segment.ms.
	SegmentMs int64 `mapstructure:"segment.ms" yaml:"segment.ms"`

	// SegmentIndexBytes: the most bytes the offset and time indexes of a
	// segment may hold; a segment also rolls when its index is full.
	// (Kafka preallocates its index files to it; Skein keeps an active
	// segment's entries in memory and writes them when it seals.) Default
	// 10485760 (10 MiB); at least 4. Kafka: segment.index.bytes.
	SegmentIndexBytes int32 `mapstructure:"segment.index.bytes" yaml:"segment.index.bytes"`

	// IndexIntervalBytes: an index entry is added after at least this many
	// bytes of batches. Default 4096; at least 0 (0 indexes every batch).
	// Kafka: index.interval.bytes.
	IndexIntervalBytes int32 `mapstructure:"index.interval.bytes" yaml:"index.interval.bytes"`

	// CleanupPolicy: delete (retention by time and size), compact (keep
	// the newest record per key), or both. Default delete. Kafka:
	// cleanup.policy, a list: "delete", "compact", "compact,delete" or
	// "delete,compact".
	CleanupPolicy CleanupPolicy `mapstructure:"cleanup.policy" yaml:"cleanup.policy"`

	// DeleteRetentionMs: how long compaction keeps tombstones (and
	// transaction markers). Default 86400000 (1 day); at least 0. Kafka:
	// delete.retention.ms.
	DeleteRetentionMs int64 `mapstructure:"delete.retention.ms" yaml:"delete.retention.ms"`

	// MinCompactionLagMs: a record stays uncompacted for at least this
	// long. Default 0; at least 0. Kafka: min.compaction.lag.ms.
	MinCompactionLagMs int64 `mapstructure:"min.compaction.lag.ms" yaml:"min.compaction.lag.ms"`

	// MaxMessageBytes: the largest record batch accepted, after
	// compression. Default 1048588 (1 MiB plus the 12-byte log overhead);
	// at least 0. Kafka: max.message.bytes.
	MaxMessageBytes int32 `mapstructure:"max.message.bytes" yaml:"max.message.bytes"`

	// MessageTimestampType: CreateTime keeps the producer's timestamps;
	// LogAppendTime replaces them with the broker's clock. Default
	// CreateTime. Kafka: message.timestamp.type.
	MessageTimestampType TimestampType `mapstructure:"message.timestamp.type" yaml:"message.timestamp.type"`

	// MinInsyncReplicas: an acks=all produce fails with
	// NOT_ENOUGH_REPLICAS when fewer replicas are in sync. Default 1; at
	// least 1. Kafka: min.insync.replicas.
	MinInsyncReplicas int32 `mapstructure:"min.insync.replicas" yaml:"min.insync.replicas"`

	// FlushMessages: under durability replicated, fsync after this many
	// records. Default 9223372036854775807 (leave it to the OS); at least
	// 1. Under durability fsync every acknowledged record is already
	// synced and this is unused. Kafka: flush.messages.
	FlushMessages int64 `mapstructure:"flush.messages" yaml:"flush.messages"`

	// FlushMs: under durability replicated, fsync when the oldest unsynced
	// record is this old. Default 9223372036854775807; at least 0. Unused
	// under durability fsync. Kafka: flush.ms.
	FlushMs int64 `mapstructure:"flush.ms" yaml:"flush.ms"`

	// CompressionType: producer keeps batches as the producer compressed
	// them; any other value makes the broker recompress to that codec.
	// Default producer. Kafka: compression.type.
	CompressionType CompressionType `mapstructure:"compression.type" yaml:"compression.type"`

	// UncleanLeaderElectionEnable lets the controller make a replica
	// outside the ISR leader when no ISR member is live: the partition
	// comes back at once, losing what only the ISR held. Default false.
	// Kafka: unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool `mapstructure:"unclean.leader.election.enable" yaml:"unclean.leader.election.enable"`

	// LeaderReplicationThrottledReplicas: the replicas, as
	// "partition:broker" pairs or "*" for all, whose leader throttles
	// what it serves to followers outside the ISR to its broker's
	// leader.replication.throttled.rate (KIP-73). Default "" (none); no
	// broker default, as in Kafka. Kafka:
	// leader.replication.throttled.replicas.
	LeaderReplicationThrottledReplicas ThrottledReplicas `mapstructure:"leader.replication.throttled.replicas" yaml:"leader.replication.throttled.replicas"`

	// FollowerReplicationThrottledReplicas: the replicas, as
	// "partition:broker" pairs or "*" for all, whose follower on that
	// broker fetches within the broker's
	// follower.replication.throttled.rate while behind its leader's high
	// watermark (KIP-73). Default "" (none); no broker default. Kafka:
	// follower.replication.throttled.replicas.
	FollowerReplicationThrottledReplicas ThrottledReplicas `mapstructure:"follower.replication.throttled.replicas" yaml:"follower.replication.throttled.replicas"`
}

// MinSegmentBytes is the smallest segment.bytes (and log.segment.bytes)
// accepted: 14, Kafka 3.x's minimum (LegacyRecord.RECORD_OVERHEAD_V0).
//
// NB: Kafka 4.0 (KIP-1030) raised the minimum to 1 MiB and moved tiny
// segments behind an internal config, internal.segment.bytes. Skein keeps
// the 3.x minimum instead: tests of rolling, retention and compaction need
// segments of a few batches, and a segment smaller than one batch is still
// correct (it holds that one batch).
const MinSegmentBytes = 14

// DefaultTopic returns Kafka's defaults for every topic config (Kafka's
// DEFAULT_CONFIG values).
func DefaultTopic() Topic {
	return Topic{
		RetentionMs:          7 * 24 * 60 * 60 * 1000,
		RetentionBytes:       -1,
		SegmentBytes:         1 << 30,
		SegmentMs:            7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:    10 << 20,
		IndexIntervalBytes:   4096,
		CleanupPolicy:        CleanupPolicy{Delete: true},
		DeleteRetentionMs:    24 * 60 * 60 * 1000,
		MinCompactionLagMs:   0,
		MaxMessageBytes:      1<<20 + 12,
		MessageTimestampType: CreateTime,
		MinInsyncReplicas:    1,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		CompressionType:      CompressionProducer,
	}
}

// Validate checks every value against Kafka's range for it; the error joins
// one *Error per bad key.
func (t Topic) Validate() error {
	var v validator
	t.validate(&v, func(k string) string { return k })
	return v.err()
}

// validate checks t, reporting each key under name(topic key): the topic
// name itself, or the broker name when t holds the broker's defaults.
func (t Topic) validate(v *validator, name func(string) string) {
	v.atLeast(name("retention.ms"), t.RetentionMs, -1)
	v.atLeast(name("segment.bytes"), int64(t.SegmentBytes), MinSegmentBytes)
	v.atLeast(name("segment.ms"), t.SegmentMs, 1)
	v.atLeast(name("segment.index.bytes"), int64(t.SegmentIndexBytes), 4)
	v.atLeast(name("index.interval.bytes"), int64(t.IndexIntervalBytes), 0)
	if !t.CleanupPolicy.Delete && !t.CleanupPolicy.Compact {
		v.fail(name("cleanup.policy"), "", cleanupPolicyReason)
	}
	v.atLeast(name("delete.retention.ms"), t.DeleteRetentionMs, 0)
	v.atLeast(name("min.compaction.lag.ms"), t.MinCompactionLagMs, 0)
	v.atLeast(name("max.message.bytes"), int64(t.MaxMessageBytes), 0)
	v.oneOf(name("message.timestamp.type"), string(t.MessageTimestampType), string(CreateTime), string(LogAppendTime))
	v.atLeast(name("min.insync.replicas"), int64(t.MinInsyncReplicas), 1)
	v.atLeast(name("flush.messages"), t.FlushMessages, 1)
	v.atLeast(name("flush.ms"), t.FlushMs, 0)
	v.oneOf(name("compression.type"), string(t.CompressionType), compressionTypes...)
	// NB: these two have no broker name (no broker default), so name is
	// not called for them unless a topic's own value is bad.
	for key, l := range map[string]ThrottledReplicas{
		"leader.replication.throttled.replicas":   t.LeaderReplicationThrottledReplicas,
		"follower.replication.throttled.replicas": t.FollowerReplicationThrottledReplicas,
	} {
		if err := ValidThrottledReplicas(string(l)); err != nil {
			v.fail(key, string(l), err.Error())
		}
	}
}

// Topic returns the topic configuration these broker defaults give a topic
// with no overrides of its own.
func (d TopicDefaults) Topic() Topic {
	return Topic{
		RetentionMs:                 d.LogRetentionMs,
		RetentionBytes:              d.LogRetentionBytes,
		SegmentBytes:                d.LogSegmentBytes,
		SegmentMs:                   d.LogRollMs,
		SegmentIndexBytes:           d.LogIndexSizeMaxBytes,
		IndexIntervalBytes:          d.LogIndexIntervalBytes,
		CleanupPolicy:               d.LogCleanupPolicy,
		DeleteRetentionMs:           d.LogCleanerDeleteRetentionMs,
		MinCompactionLagMs:          d.LogCleanerMinCompactionLagMs,
		MaxMessageBytes:             d.MessageMaxBytes,
		MessageTimestampType:        d.LogMessageTimestampType,
		MinInsyncReplicas:           d.MinInsyncReplicas,
		FlushMessages:               d.LogFlushIntervalMessages,
		FlushMs:                     d.LogFlushIntervalMs,
		CompressionType:             d.CompressionType,
		UncleanLeaderElectionEnable: d.UncleanLeaderElectionEnable,
	}
}

// brokerDefaults is the inverse of TopicDefaults.Topic.
func (t Topic) brokerDefaults() TopicDefaults {
	return TopicDefaults{
		LogRetentionMs:               t.RetentionMs,
		LogRetentionBytes:            t.RetentionBytes,
		LogSegmentBytes:              t.SegmentBytes,
		LogRollMs:                    t.SegmentMs,
		LogIndexSizeMaxBytes:         t.SegmentIndexBytes,
		LogIndexIntervalBytes:        t.IndexIntervalBytes,
		LogCleanupPolicy:             t.CleanupPolicy,
		LogCleanerDeleteRetentionMs:  t.DeleteRetentionMs,
		LogCleanerMinCompactionLagMs: t.MinCompactionLagMs,
		MessageMaxBytes:              t.MaxMessageBytes,
		LogMessageTimestampType:      t.MessageTimestampType,
		MinInsyncReplicas:            t.MinInsyncReplicas,
		LogFlushIntervalMessages:     t.FlushMessages,
		LogFlushIntervalMs:           t.FlushMs,
		CompressionType:              t.CompressionType,
		UncleanLeaderElectionEnable:  t.UncleanLeaderElectionEnable,
	}
}

// CleanupPolicy is the value of cleanup.policy: Kafka's list of "delete"
// and "compact", at least one of them.
type CleanupPolicy struct {
	Delete  bool // delete segments past retention.ms or retention.bytes
	Compact bool // keep only the newest record per key
}

const cleanupPolicyReason = "must be delete, compact, or both (compact,delete)"

// ParseCleanupPolicy parses Kafka's list syntax: "delete", "compact",
// "compact,delete" or "delete,compact", with optional spaces around the
// commas. Values are case-sensitive, as in Kafka; an empty list and repeated
// values are refused.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, part := range strings.Split(s, ",") {
		var seen *bool
		switch strings.TrimSpace(part) {
		case "delete":
			seen = &p.Delete
		case "compact":
			seen = &p.Compact
		default:
			return CleanupPolicy{}, errors.New(cleanupPolicyReason)
		}
		if *seen {
			return CleanupPolicy{}, fmt.Errorf("%s appears twice", strings.TrimSpace(part))
		}
		*seen = true
	}
	return p, nil
}

// String returns the policy as Kafka lists it: "delete", "compact",
// "compact,delete", or "" for the invalid empty policy.
func (p CleanupPolicy) String() string {
	switch {
	case p.Compact && p.Delete:
		return "compact,delete"
	case p.Compact:
		return "compact"
	case p.Delete:
		return "delete"
	}
	return ""
}

// MarshalYAML writes the policy in Kafka's list syntax.
func (p CleanupPolicy) MarshalYAML() (any, error) { return p.String(), nil }

// TimestampType is the value of message.timestamp.type.
type TimestampType string

// The values of message.timestamp.type.
const (
	CreateTime    TimestampType = "CreateTime"
	LogAppendTime TimestampType = "LogAppendTime"
)

// CompressionType is the value of compression.type.
type CompressionType string

// The values of compression.type (Kafka's BrokerCompressionType).
const (
	CompressionProducer     CompressionType = "producer"
	CompressionUncompressed CompressionType = "uncompressed"
	CompressionGzip         CompressionType = "gzip"
	CompressionSnappy       CompressionType = "snappy"
	CompressionLz4          CompressionType = "lz4"
	CompressionZstd         CompressionType = "zstd"
)

var compressionTypes = []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

// topicKey describes how Kafka relates a topic config to the broker.
type topicKey struct {
	// broker lists the broker synonyms in Kafka's order of precedence
	// (ServerTopicConfigSynonyms): broker[0] is the TopicDefaults field,
	// the others are the alternative names Load converts (see aliases).
	// Empty for a topic config without a broker default (Kafka's
	// CONFIGS_WITH_NO_SERVER_DEFAULTS: the throttled replicas).
	broker []string
	// defaultName is the broker config under which Kafka reports the
	// default: the one with a non-null default in KafkaConfig, which for
	// retention.ms and segment.ms is the hours one (168).
	defaultName  string
	defaultValue string // in defaultName's unit; "" means the topic default
}

// topicKeys maps every topic config to its broker synonyms.
var topicKeys = map[string]topicKey{
	"retention.ms":                   {broker: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}, defaultName: "log.retention.hours", defaultValue: "168"},
	"retention.bytes":                {broker: []string{"log.retention.bytes"}},
	"segment.bytes":                  {broker: []string{"log.segment.bytes"}},
	"segment.ms":                     {broker: []string{"log.roll.ms", "log.roll.hours"}, defaultName: "log.roll.hours", defaultValue: "168"},
	"segment.index.bytes":            {broker: []string{"log.index.size.max.bytes"}},
	"index.interval.bytes":           {broker: []string{"log.index.interval.bytes"}},
	"cleanup.policy":                 {broker: []string{"log.cleanup.policy"}},
	"delete.retention.ms":            {broker: []string{"log.cleaner.delete.retention.ms"}},
	"min.compaction.lag.ms":          {broker: []string{"log.cleaner.min.compaction.lag.ms"}},
	"max.message.bytes":              {broker: []string{"message.max.bytes"}},
	"message.timestamp.type":         {broker: []string{"log.message.timestamp.type"}},
	"min.insync.replicas":            {broker: []string{"min.insync.replicas"}},
	"flush.messages":                 {broker: []string{"log.flush.interval.messages"}},
	"flush.ms":                       {broker: []string{"log.flush.interval.ms"}},
	"compression.type":               {broker: []string{"compression.type"}},
	"unclean.leader.election.enable": {broker: []string{"unclean.leader.election.enable"}},
	// No broker defaults (Kafka's CONFIGS_WITH_NO_SERVER_DEFAULTS).
	"leader.replication.throttled.replicas":   {},
	"follower.replication.throttled.replicas": {},
}

// brokerName maps a topic config name to its broker config name.
func brokerName(topicKey string) string { return topicKeys[topicKey].broker[0] }

// TopicConfigNames returns the names of the topic configs Skein knows,
// sorted.
func TopicConfigNames() []string { return sortedKeys(topicKeys) }

// ValidateTopicOverrides checks topic configs as given to CreateTopics,
// AlterConfigs or IncrementalAlterConfigs: every name must be a topic config
// and every value valid for it. The error joins one *Error per bad entry
// (errors.As gives the first); each message is fit for INVALID_CONFIG.
func ValidateTopicOverrides(overrides map[string]string) error {
	_, err := applyOverrides(DefaultTopic(), overrides)
	return err
}

// ResolveTopic returns the configuration in force for a topic with the
// given overrides on a node with the given configuration. Errors are as
// ValidateTopicOverrides's.
func ResolveTopic(broker Node, overrides map[string]string) (Topic, error) {
	return applyOverrides(broker.TopicDefaults.Topic(), overrides)
}

func applyOverrides(t Topic, overrides map[string]string) (Topic, error) {
	var v validator
	dst := reflect.ValueOf(&t)
	for _, name := range sortedKeys(overrides) {
		f, ok := topicByKey[name]
		if !ok {
			v.fail(name, overrides[name], "unknown topic config")
			continue
		}
		if err := f.set(dst, overrides[name]); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	if err := v.err(); err != nil {
		return Topic{}, err
	}
	t.validate(&v, func(k string) string { return k })
	if err := v.err(); err != nil {
		return Topic{}, err
	}
	return t, nil
}

// Source tells where a config value comes from. The values are Kafka's
// DescribeConfigs ConfigSource ids, so transport can send them as they are.
type Source int8

// The sources of a topic config's value.
const (
	// SourceTopic is a topic's own config (Kafka: TOPIC_CONFIG).
	SourceTopic Source = 1
	// SourceBroker is set in the node's configuration: its file, the
	// environment or a flag (Kafka: STATIC_BROKER_CONFIG).
	SourceBroker Source = 4
	// SourceDefault is Kafka's default (Kafka: DEFAULT_CONFIG).
	SourceDefault Source = 5
)

// String returns Kafka's name for the source.
func (s Source) String() string {
	switch s {
	case SourceTopic:
		return "TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefault:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	case SourceGroup:
		return "DYNAMIC_GROUP_CONFIG"
	}
	return fmt.Sprintf("Source(%d)", int8(s))
}

// ConfigEntry is one topic config as DescribeConfigs reports it.
type ConfigEntry struct {
	Name   string // the topic config name, e.g. retention.ms
	Value  string // the value in force
	Source Source // where Value comes from: Synonyms[0].Source
	// Synonyms lists every place the value could come from that has one,
	// highest precedence first: the topic's override, then the broker's
	// dynamic configs (its own, then the cluster-wide defaults; see
	// WithDynamic), then its static settings in Kafka's synonym order, then
	// the default. What
	// DescribeConfigs sends with IncludeSynonyms.
	Synonyms []Synonym
}

// Synonym is one source of a config value.
type Synonym struct {
	Name   string // the config name in that source: topic or broker name
	Value  string // the value there, in that name's unit (log.retention.hours counts hours)
	Source Source
}

// DescribeTopic returns every topic config of a topic with the given
// overrides on a node with the given configuration, sorted by name, each
// with its value in force, its source and its synonyms. Errors are as
// ValidateTopicOverrides's.
//
// NB: Kafka's broker drops the synonyms that precede the first broker name
// (ConfigHelper.configSynonyms' dropWhile), so it describes retention.ms on
// an unconfigured broker with no synonyms at all and a broker that set only
// log.retention.hours as DEFAULT_CONFIG. Skein lists every synonym that has
// a value, so the source is always where the value really comes from.
func DescribeTopic(broker Node, overrides map[string]string) ([]ConfigEntry, error) {
	t, err := ResolveTopic(broker, overrides)
	if err != nil {
		return nil, err
	}
	def := DefaultTopic()
	brokerTopic := broker.staticTopicDefaults().Topic()
	entries := make([]ConfigEntry, 0, len(topicKeys))
	for _, name := range TopicConfigNames() {
		k, f := topicKeys[name], topicByKey[name]
		e := ConfigEntry{Name: name, Value: f.format(t)}
		if v, ok := overrides[name]; ok {
			// The override as it was set, as Kafka shows it: a policy
			// list keeps its order ("delete,compact").
			e.Value = v
			e.Synonyms = append(e.Synonyms, Synonym{Name: name, Value: v, Source: SourceTopic})
		}
		e.Synonyms = append(e.Synonyms, broker.dynamicSynonyms(k.broker, false)...)
		explicit := false
		for _, b := range k.broker {
			if val, ok := broker.Explicit[b]; ok {
				e.Synonyms = append(e.Synonyms, Synonym{Name: b, Value: val, Source: SourceBroker})
				explicit = true
			}
		}
		// A Node built in code rather than loaded has no Explicit: a value
		// other than the default was still set on the broker.
		if v := f.format(brokerTopic); !explicit && len(k.broker) > 0 && v != f.format(def) {
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.broker[0], Value: v, Source: SourceBroker})
		}
		if len(k.broker) > 0 {
			d := Synonym{Name: k.broker[0], Value: f.format(def), Source: SourceDefault}
			if k.defaultName != "" {
				d.Name, d.Value = k.defaultName, k.defaultValue
			}
			e.Synonyms = append(e.Synonyms, d)
		}
		// A config without a broker default and not set on the topic has
		// no synonym at all, as in Kafka: its source is the default.
		e.Source = SourceDefault
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		entries = append(entries, e)
	}
	return entries, nil
}
