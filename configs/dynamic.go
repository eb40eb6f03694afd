package configs

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Dynamic broker configs
//
// Kafka lets AlterConfigs and IncrementalAlterConfigs change some broker
// configs at run time, without a restart: for every broker at once (the
// resource name "", Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG) or for one broker
// (the resource name is its id, DYNAMIC_BROKER_CONFIG). The controller keeps
// them in the cluster metadata; each node applies them over its static
// configuration with WithDynamic. Precedence, highest first:
//
//	a topic's own config > this broker's dynamic config > the cluster-wide
//	dynamic default > the node's static configuration > the default
//
// Skein allows exactly what Kafka's DynamicLogConfig allows: the broker
// names of the topic configs (log.retention.ms, message.max.bytes,
// log.cleanup.policy, ...), under their primary names only, so
// log.retention.hours stays static as in Kafka.

// The sources of dynamic broker config values, with Kafka's ids.
const (
	// SourceDynamicBroker is set with AlterConfigs for this broker (Kafka:
	// DYNAMIC_BROKER_CONFIG).
	SourceDynamicBroker Source = 2
	// SourceDynamicDefault is set with AlterConfigs for every broker, with
	// the resource name "" (Kafka: DYNAMIC_DEFAULT_BROKER_CONFIG).
	SourceDynamicDefault Source = 3
)

// dynamicLayers are the dynamic configs a Node holds after WithDynamic.
type dynamicLayers struct {
	clusterDefault map[string]string // resource name ""
	broker         map[string]string // resource name: this node's id
	// static are the TopicDefaults and the replication rates before the
	// layers were applied, for describing where each value comes from.
	static         TopicDefaults
	staticThrottle ReplicationThrottle
}

// IsBrokerConfig reports whether key is a node config Skein knows,
// including Kafka's alternative names such as log.retention.hours.
func IsBrokerConfig(key string) bool { return known(key) }

// IsDynamicBrokerConfig reports whether key may be changed at run time with
// AlterConfigs on a broker resource: the broker name of a topic config, or
// a replication rate (leader.replication.throttled.rate,
// follower.replication.throttled.rate).
func IsDynamicBrokerConfig(key string) bool {
	if slices.Contains(replicationThrottleKeys, key) {
		return true
	}
	for _, k := range topicKeys {
		if len(k.broker) > 0 && k.broker[0] == key {
			return true
		}
	}
	return false
}

// IsListConfig reports whether the topic or broker config key holds a
// list, which IncrementalAlterConfigs may append to and subtract from.
func IsListConfig(key string) bool { return TypeOf(key) == TypeList }

// ErrNotDynamic marks a broker config that exists but cannot be changed at
// run time (Kafka answers such a change INVALID_REQUEST, "Cannot update
// these configs dynamically"). errors.Is finds it in ValidateDynamic's error.
var ErrNotDynamic = errors.New("configs: cannot be updated dynamically")

// ValidateDynamic checks one resource's dynamic broker configs, as the
// controller does before storing them: every key must be a dynamic broker
// config and every value valid for it. The error joins one error per bad
// entry, in key order: an *Error for an unknown key (also wrapping
// ErrUnknownBrokerConfig) or a bad value, or one wrapping ErrNotDynamic
// for a static key.
func ValidateDynamic(m map[string]string) error {
	var errs []error
	for _, key := range sortedKeys(m) {
		if err := validateDynamicEntry(key, m[key]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ErrUnknownBrokerConfig marks a key that names no broker config, in
// ValidateDynamic's error (errors.Is finds it). Kafka keeps such a key (a
// plugin's); Skein refuses it INVALID_CONFIG, where a bad value of a known
// key is INVALID_REQUEST, as Kafka answers it.
var ErrUnknownBrokerConfig = errors.New("configs: unknown broker config")

// unknownKeyError is an *Error for a key that names no broker config.
type unknownKeyError struct{ err *Error }

func (e unknownKeyError) Error() string   { return e.err.Error() }
func (e unknownKeyError) Unwrap() []error { return []error{ErrUnknownBrokerConfig, e.err} }

// notDynamicError is a static broker config given to AlterConfigs.
type notDynamicError struct{ key string }

func (e *notDynamicError) Error() string {
	return "configs: " + e.key + ": cannot be updated dynamically"
}
func (e *notDynamicError) Unwrap() error { return ErrNotDynamic }

func validateDynamicEntry(key, value string) error {
	switch {
	case !known(key):
		return unknownKeyError{&Error{Key: key, Value: value, Reason: "unknown broker config"}}
	case !IsDynamicBrokerConfig(key):
		return &notDynamicError{key: key}
	}
	// Set the one key on an otherwise default node: only it can fail.
	n := Default()
	if err := nodeByKey[key].set(reflect.ValueOf(&n), value); err != nil {
		return err
	}
	if slices.Contains(replicationThrottleKeys, key) {
		var v validator
		n.ReplicationThrottle.validate(&v)
		return v.err()
	}
	return n.validateTopicDefaults()
}

// validateTopicDefaults checks the broker's topic defaults as Validate does.
func (n Node) validateTopicDefaults() error {
	var v validator
	n.TopicDefaults.Topic().validate(&v, brokerName)
	// NB: Kafka's broker refuses log.retention.ms = 0 (every segment would
	// go as soon as it rolls), while a topic may set retention.ms = 0.
	if n.LogRetentionMs == 0 {
		v.fail("log.retention.ms", "0", "must be -1 (unlimited) or at least 1")
	}
	return v.err()
}

// WithDynamic returns n with the dynamic broker configs in force: the
// cluster-wide defaults (resource name "") and then this broker's own
// (resource name: its id) applied over n's static TopicDefaults. Calling it
// on a Node that already has dynamic configs replaces them. The maps are
// copied.
//
// Every valid entry is applied; the error joins the entries that are not
// (see ValidateDynamic), which the controller never stores, so an error
// means a metadata log written under other rules.
func (n Node) WithDynamic(clusterDefault, broker map[string]string) (Node, error) {
	out := n
	if n.dynamic != nil {
		out.TopicDefaults, out.ReplicationThrottle = n.dynamic.static, n.dynamic.staticThrottle
	}
	out.dynamic = nil
	if len(clusterDefault) == 0 && len(broker) == 0 {
		return out, nil
	}
	static, staticThrottle := out.TopicDefaults, out.ReplicationThrottle
	dst := reflect.ValueOf(&out)
	var errs []error
	for _, layer := range []map[string]string{clusterDefault, broker} {
		for _, key := range sortedKeys(layer) {
			if err := validateDynamicEntry(key, layer[key]); err != nil {
				errs = append(errs, err)
				continue
			}
			// Cannot fail: validateDynamicEntry parsed it.
			_ = nodeByKey[key].set(dst, layer[key])
		}
	}
	out.dynamic = &dynamicLayers{clusterDefault: maps.Clone(clusterDefault), broker: maps.Clone(broker), static: static, staticThrottle: staticThrottle}
	return out, errors.Join(errs...)
}

// DynamicConfigs returns the dynamic broker configs n was given by
// WithDynamic: the cluster-wide defaults and this broker's own. The maps
// must not be changed.
func (n Node) DynamicConfigs() (clusterDefault, broker map[string]string) {
	if n.dynamic == nil {
		return nil, nil
	}
	return n.dynamic.clusterDefault, n.dynamic.broker
}

// staticTopicDefaults returns the TopicDefaults from the node's own
// configuration, before dynamic configs.
func (n Node) staticTopicDefaults() TopicDefaults {
	if n.dynamic != nil {
		return n.dynamic.static
	}
	return n.TopicDefaults
}

// dynamicSynonyms returns the dynamic values of the broker configs names,
// this broker's first, then the cluster-wide defaults, as Kafka lists them.
// With clusterOnly, this broker's own are left out (describing the
// resource "").
func (n Node) dynamicSynonyms(names []string, clusterOnly bool) []Synonym {
	if n.dynamic == nil {
		return nil
	}
	var out []Synonym
	if !clusterOnly {
		for _, name := range names {
			if v, ok := n.dynamic.broker[name]; ok {
				out = append(out, Synonym{Name: name, Value: v, Source: SourceDynamicBroker})
			}
		}
	}
	for _, name := range names {
		if v, ok := n.dynamic.clusterDefault[name]; ok {
			out = append(out, Synonym{Name: name, Value: v, Source: SourceDynamicDefault})
		}
	}
	return out
}

// DescribeBroker returns the broker's configs as DescribeConfigs reports a
// broker resource, sorted by name, each with its value in force, source and
// synonyms (dynamic for this broker, dynamic default, static, default, as
// Kafka orders them).
//
// With clusterDefault it describes the resource "" instead, as Kafka does:
// only the configs set as cluster-wide dynamic defaults, with their values
// there and without this broker's own dynamic values among the synonyms.
func DescribeBroker(n Node, clusterDefault bool) []ConfigEntry {
	if clusterDefault {
		var entries []ConfigEntry
		d, _ := n.DynamicConfigs()
		for _, key := range sortedKeys(d) {
			e, _ := n.describeBrokerKey(key, true)
			e.Value = d[key]
			entries = append(entries, e)
		}
		return entries
	}
	keys := make([]string, 0, len(nodeFields)+len(aliases))
	for _, f := range nodeFields {
		keys = append(keys, f.key)
	}
	keys = append(keys, sortedKeys(aliases)...)
	slices.Sort(keys)
	entries := make([]ConfigEntry, 0, len(keys))
	for _, key := range keys {
		e, set := n.describeBrokerKey(key, false)
		if !set {
			// Kafka's value is null (log.retention.minutes has no
			// default): Skein leaves such an unset alias out.
			continue
		}
		entries = append(entries, e)
	}
	return entries
}

// describeBrokerKey describes one broker config key (a Node field or an
// alias). Its synonyms are the names of its group from key down, Kafka's
// brokerSynonyms after its dropWhile. It reports false for an alias that
// has no value (Kafka's null).
func (n Node) describeBrokerKey(key string, clusterOnly bool) (ConfigEntry, bool) {
	names := []string{key}
	if g := group(key); g != nil {
		names = g[slices.Index(g, key):]
	}
	e := ConfigEntry{Name: key}
	e.Synonyms = n.dynamicSynonyms(names, clusterOnly)
	explicit := false
	for _, name := range names {
		if v, ok := n.Explicit[name]; ok {
			e.Synonyms = append(e.Synonyms, Synonym{Name: name, Value: v, Source: SourceBroker})
			explicit = true
		}
	}
	f, isField := nodeByKey[key]
	def := Default()
	if isField {
		// A Node built in code rather than loaded has no Explicit: a value
		// other than the default was still set on the broker.
		static := n
		static.TopicDefaults = n.staticTopicDefaults()
		if n.dynamic != nil {
			static.ReplicationThrottle = n.dynamic.staticThrottle
		}
		if v := f.format(static); !explicit && v != f.format(def) {
			e.Synonyms = append(e.Synonyms, Synonym{Name: key, Value: v, Source: SourceBroker})
		}
	}
	if d, ok := brokerDefault(key, names); ok {
		e.Synonyms = append(e.Synonyms, d)
	}
	e.Source = SourceDefault
	if len(e.Synonyms) > 0 {
		e.Source = e.Synonyms[0].Source
	}
	if isField {
		e.Value = f.format(n)
		return e, true
	}
	// An alias has a value only where it is set under its own name (or
	// has a default under it); its synonyms below are in other units.
	for _, s := range e.Synonyms {
		if s.Name == key {
			e.Value, e.Source = s.Value, s.Source
			return e, true
		}
	}
	return e, false
}

// brokerDefault returns the DEFAULT_CONFIG synonym of a broker key whose
// synonyms are names: Kafka reports log.retention.ms's default under
// log.retention.hours (168), and log.retention.minutes has none.
func brokerDefault(key string, names []string) (Synonym, bool) {
	for _, k := range topicKeys {
		if k.defaultName != "" && slices.Contains(names, k.defaultName) {
			return Synonym{Name: k.defaultName, Value: k.defaultValue, Source: SourceDefault}, true
		}
	}
	if f, ok := nodeByKey[key]; ok {
		return Synonym{Name: key, Value: f.format(Default()), Source: SourceDefault}, true
	}
	return Synonym{}, false
}

// DefaultValue returns Kafka's default of a topic or broker config (its
// DEFAULT_CONFIG value): IncrementalAlterConfigs' APPEND and SUBTRACT start
// from it when the resource does not set the config, as Kafka's do.
func DefaultValue(key string) (string, bool) {
	if f, ok := topicByKey[key]; ok {
		return f.format(DefaultTopic()), true
	}
	if f, ok := nodeByKey[key]; ok {
		return f.format(Default()), true
	}
	return "", false
}

// kafkaTypes are the broker configs whose Kafka type is not the one their
// Go field's kind gives (tests/diff compares them with Kafka's).
var kafkaTypes = map[string]ConfigType{
	"offsets.topic.replication.factor":                 TypeShort,
	"leader.replication.throttled.replicas":            TypeList,
	"follower.replication.throttled.replicas":          TypeList,
	"transaction.state.log.replication.factor":         TypeShort,
	"share.coordinator.state.topic.replication.factor": TypeShort,
	"share.coordinator.state.topic.min.isr":            TypeShort,
	"transactional.id.expiration.ms":                   TypeInt,
	"producer.id.expiration.ms":                        TypeInt,
	"replica.lag.time.max.ms":                          TypeLong,
	"leader.imbalance.check.interval.seconds":          TypeLong,
	"process.roles":                                    TypeList,
	"controller.quorum.voters":                         TypeList,
	"listeners":                                        TypeList,
	"advertised.listeners":                             TypeList,
	"controller.listener.names":                        TypeList,
	"ssl.enabled.protocols":                            TypeList,
	"ssl.cipher.suites":                                TypeList,
	"sasl.enabled.mechanisms":                          TypeList,
	"sasl.oauthbearer.expected.audience":               TypeList,
}

// ConfigType is a config's type as DescribeConfigs v3+ reports it, with
// Kafka's ids.
type ConfigType int8

// The config types Skein's configs have.
const (
	TypeUnknown ConfigType = 0
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeShort   ConfigType = 4
	TypeLong    ConfigType = 5
	TypeList    ConfigType = 7
)

// TypeOf returns the type of a topic, broker or group config, or
// TypeUnknown.
func TypeOf(key string) ConfigType {
	if t, ok := kafkaTypes[key]; ok {
		return t
	}
	f, ok := topicByKey[key]
	if !ok {
		f, ok = nodeByKey[key]
	}
	if !ok {
		if _, isAlias := aliases[key]; isAlias {
			return TypeInt // log.retention.hours and friends are Kafka INTs
		}
		if k, ok := groupKeyOf(key); ok {
			return k.typ
		}
		return TypeUnknown
	}
	if f.typ == cleanupPolicyType {
		return TypeList
	}
	switch f.typ.Kind() {
	case reflect.Bool:
		return TypeBoolean
	case reflect.String:
		return TypeString
	case reflect.Int16, reflect.Int32:
		// NB: default.replication.factor is an int16 here but an INT in
		// Kafka, as every 32-bit-or-smaller broker setting is.
		return TypeInt
	case reflect.Int64:
		return TypeLong
	}
	return TypeUnknown
}

// Doc returns a one-line description of a topic, broker or group config, for
// DescribeConfigs with IncludeDocumentation, or "" for none.
func Doc(key string) string {
	if d, ok := docs[key]; ok {
		return d
	}
	// A broker name of a topic config documents the default of that config.
	for name, k := range topicKeys {
		if slices.Contains(k.broker, key) {
			return "The default for the topic config " + name + ": " + lowerFirst(docs[name])
		}
	}
	return ""
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// docs describes the topic configs and the broker configs that are not
// broker names of topic configs.
var docs = map[string]string{
	"retention.ms":                            "Segments whose newest record is older than this many milliseconds are deleted (cleanup.policy delete); -1 keeps them forever.",
	"retention.bytes":                         "The oldest segments are deleted while the partition is larger than this many bytes (cleanup.policy delete); -1 means no limit.",
	"segment.bytes":                           "The active segment rolls before it would grow past this many bytes.",
	"segment.ms":                              "The active segment rolls once its first record is this many milliseconds old, even if not full.",
	"segment.index.bytes":                     "The most bytes the offset and time indexes of a segment may hold; a segment rolls when its index is full.",
	"index.interval.bytes":                    "An offset index entry is added after at least this many bytes of batches.",
	"cleanup.policy":                          "delete (retention by time and size), compact (keep the newest record per key), or both.",
	"delete.retention.ms":                     "How long compaction keeps tombstones, in milliseconds.",
	"min.compaction.lag.ms":                   "A record stays uncompacted for at least this many milliseconds.",
	"max.message.bytes":                       "The largest record batch accepted, after compression, in bytes.",
	"message.timestamp.type":                  "CreateTime keeps the producer's timestamps; LogAppendTime replaces them with the broker's clock.",
	"min.insync.replicas":                     "An acks=all produce fails with NOT_ENOUGH_REPLICAS when fewer replicas than this are in sync.",
	"leader.replication.throttled.replicas":   "The replicas whose leader throttles replication to followers outside the ISR, as partition:broker pairs (partitionId:brokerId,...), or * for every replica of the topic; the rate is the leader broker's leader.replication.throttled.rate.",
	"follower.replication.throttled.replicas": "The replicas whose follower throttles its fetches while behind the leader's high watermark, as partition:broker pairs (partitionId:brokerId,...), or * for every replica of the topic; the rate is the follower broker's follower.replication.throttled.rate.",
	"leader.replication.throttled.rate":       "The upper bound, in bytes per second, on what this broker's leaders serve to the followers their topics' leader.replication.throttled.replicas lists; Kafka suggests keeping it above 1 MB/s.",
	"follower.replication.throttled.rate":     "The upper bound, in bytes per second, on what this broker's followers fetch for the replicas their topics' follower.replication.throttled.replicas lists; Kafka suggests keeping it above 1 MB/s.",
	"flush.messages":                          "Under durability replicated, fsync after this many records.",
	"flush.ms":                                "Under durability replicated, fsync when the oldest unsynced record is this many milliseconds old.",
	"compression.type":                        "producer keeps batches as the producer compressed them; any other codec makes the broker recompress to it.",

	"node.id":                                                     "This node's id in the cluster.",
	"data.dir":                                                    "The node's log dirs, comma-separated (Kafka's log.dirs): its partitions, placed by free space; the first also holds its metadata unless metadata.log.dir says otherwise.",
	"metadata.log.dir":                                            "The directory of the cluster metadata log; empty: the first log dir.",
	"listen":                                                      "The host:port of the one PLAINTEXT Kafka listener when listeners is not set (Skein-only).",
	"advertise":                                                   "The host:port given to clients for listen (Skein-only).",
	"listeners":                                                   "The Kafka listeners, NAME://host:port comma-separated; a CONTROLLER listener in controller.listener.names is the node's remoting address.",
	"advertised.listeners":                                        "The addresses clients are given, by listener name; a client is told the brokers' addresses on the listener it connected to.",
	"listener.security.protocol.map":                              "Each listener's security protocol, NAME:PROTOCOL comma-separated (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).",
	"inter.broker.listener.name":                                  "The listener followers fetch from; by default the one named PLAINTEXT, or the only one.",
	"controller.listener.names":                                   "The listeners of the controllers' traffic; the first that listeners declares gives cluster.listen.",
	"ssl.keystore.type":                                           "The keystore's format: PEM, the only one Skein reads.",
	"ssl.keystore.location":                                       "The PEM file of a TLS listener's unencrypted private key and certificate chain, reread when it changes.",
	"ssl.truststore.type":                                         "The truststore's format: PEM, the only one Skein reads.",
	"ssl.truststore.location":                                     "The PEM file of the CAs client certificates must chain to, reread when it changes.",
	"ssl.client.auth":                                             "Whether a TLS listener asks clients for a certificate: none, requested or required.",
	"ssl.principal.mapping.rules":                                 "How a client certificate's subject maps to its principal: RULE:pattern/replacement/[LU] and DEFAULT, the first that matches wins.",
	"ssl.enabled.protocols":                                       "The TLS versions served: TLSv1.2, TLSv1.3.",
	"ssl.cipher.suites":                                           "The TLS 1.2 cipher suites served, by IANA name; empty for Go's defaults.",
	"sasl.enabled.mechanisms":                                     "The SASL mechanisms a SASL listener offers (PLAIN).",
	"sasl.server.max.receive.size":                                "The largest request a client may send before it has authenticated, in bytes.",
	"connection.failed.authentication.delay.ms":                   "How long the answer to a failed authentication waits before the connection closes, in milliseconds.",
	"sasl.oauthbearer.jwks.endpoint.url":                          "The JWKS OAUTHBEARER tokens' signatures are checked with: an https://, http:// or file:// URL.",
	"sasl.oauthbearer.jwks.endpoint.refresh.ms":                   "How often the JWKS is fetched again, in milliseconds.",
	"sasl.oauthbearer.expected.issuer":                            "The issuer (iss) an OAUTHBEARER token must name; empty for any.",
	"sasl.oauthbearer.expected.audience":                          "The audiences (aud) an OAUTHBEARER token must name one of, comma-separated; empty for any.",
	"sasl.oauthbearer.clock.skew.seconds":                         "The clock skew allowed on an OAUTHBEARER token's times, in seconds.",
	"sasl.oauthbearer.sub.claim.name":                             "The claim of an OAUTHBEARER token that names its principal.",
	"max.connections":                                             "The most client connections of all listeners but the inter-broker one; at it a listener stops accepting until one closes.",
	"max.connections.per.ip":                                      "The most connections from one address; one more is closed at once.",
	"max.connections.per.ip.overrides":                            "max.connections.per.ip for some addresses or host names, host:count comma-separated.",
	"max.connection.creation.rate":                                "The most connections a second each listener but the inter-broker one accepts; past it the listener waits.",
	"quota.window.num":                                            "How many windows a client quota measures a client's rate over.",
	"quota.window.size.seconds":                                   "How long each window of a client quota lasts, in seconds.",
	"connections.max.reauth.ms":                                   "How long a SASL authentication lasts before the client must authenticate again on its connection (KIP-368); 0 for as long as the connection.",
	"authorizer.class.name":                                       "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on; empty allows every request.",
	"super.users":                                                 "Principals that may do anything, separated by semicolons (User:admin;User:ops).",
	"allow.everyone.if.no.acl.found":                              "With an authorizer, allow a request on a resource no ACL names.",
	"scram.bootstrap.users":                                       "SCRAM credentials a new cluster starts with, as kafka-storage format --add-scram takes them: SCRAM-SHA-256=[name=admin,password=...] (Skein-only).",
	"admin.listen":                                                "The host:port of the admin HTTP API (Skein-only).",
	"admin.ssl.keystore.location":                                 "The PEM file of the admin API's key and certificate chain: HTTPS when set (Skein-only).",
	"admin.allowed.hosts":                                         "Host names a request to the admin API may name in its Host header, besides IP addresses, localhost and this node's own names (Skein-only).",
	"log.level":                                                   "The level of the node's own log (Skein-only).",
	"log.format":                                                  "The format of the node's log: auto, console or json (Skein-only).",
	"durability":                                                  "fsync: an offset counts towards the high watermark once fsynced on every replica; replicated: once in memory on every in-sync replica, as Kafka (Skein-only).",
	"auto.create.topics.enable":                                   "Metadata and Produce requests create a missing topic.",
	"num.partitions":                                              "The partition count of auto-created topics and of CreateTopics requests that leave it at -1.",
	"default.replication.factor":                                  "The replication factor of auto-created topics and of CreateTopics requests that leave it at -1.",
	"producer.id.expiration.ms":                                   "A partition forgets an idempotent producer that has not written to it for this many milliseconds.",
	"socket.request.max.bytes":                                    "The largest request a client may send; a bigger one closes its connection.",
	"connections.max.idle.ms":                                     "A client connection that sent nothing for this long is closed.",
	"offsets.topic.num.partitions":                                "The partition count of __consumer_offsets, created on the first FindCoordinator.",
	"transaction.state.log.num.partitions":                        "The partition count of __transaction_state, created on the first FindCoordinator for a transactional id.",
	"transaction.state.log.replication.factor":                    "The replication factor of __transaction_state, capped at the live brokers when it is created.",
	"transaction.state.log.min.isr":                               "The min.insync.replicas of __transaction_state.",
	"share.coordinator.state.topic.num.partitions":                "The partition count of __share_group_state, created on first use.",
	"share.coordinator.state.topic.replication.factor":            "The replication factor of __share_group_state, capped at the live brokers when it is created.",
	"share.coordinator.state.topic.min.isr":                       "The min.insync.replicas of __share_group_state.",
	"share.coordinator.state.topic.segment.bytes":                 "The segment.bytes of __share_group_state.",
	"share.coordinator.snapshot.update.records.per.snapshot":      "How many update records a share coordinator writes for a share-partition between two snapshots of its state.",
	"share.coordinator.write.timeout.ms":                          "How long a share coordinator waits for its records to be replicated.",
	"share.coordinator.state.topic.prune.interval.ms":             "How often a share coordinator deletes the __share_group_state records no share-partition needs.",
	"share.coordinator.cold.partition.snapshot.interval.ms":       "How long a share-partition's state goes unwritten before its coordinator snapshots it.",
	"transaction.max.timeout.ms":                                  "The longest transaction timeout a producer may ask for.",
	"transactional.id.expiration.ms":                              "A transactional id with no transaction in progress is forgotten after this many milliseconds unused.",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "How often a transaction coordinator aborts the transactions older than their timeout.",
	"extension.commit.interval.ms":                                "How often an extension instance's actor commits its position while it makes progress.",
	"group.min.session.timeout.ms":                                "The shortest session timeout a group member may ask for.",
	"group.max.session.timeout.ms":                                "The longest session timeout a group member may ask for.",
	"group.initial.rebalance.delay.ms":                            "How long an empty classic group waits for more members after its first join before the first rebalance completes.",
	"group.consumer.migration.policy":                             "Whether a group with members may change protocol: upgrade (classic to consumer), downgrade (consumer to classic), bidirectional or disabled.",
	"group.consumer.session.timeout.ms":                           "A consumer-protocol group member (KIP-848) that does not heartbeat for this long is removed.",
	"group.consumer.heartbeat.interval.ms":                        "The heartbeat interval a consumer-protocol group (KIP-848) gives its members.",
	"group.consumer.min.session.timeout.ms":                       "The least session timeout a consumer-protocol group may be given (its consumer.session.timeout.ms).",
	"group.consumer.max.session.timeout.ms":                       "The greatest session timeout a consumer-protocol group may be given (its consumer.session.timeout.ms).",
	"group.consumer.min.heartbeat.interval.ms":                    "The least heartbeat interval a consumer-protocol group may be given (its consumer.heartbeat.interval.ms).",
	"group.consumer.max.heartbeat.interval.ms":                    "The greatest heartbeat interval a consumer-protocol group may be given (its consumer.heartbeat.interval.ms).",
	"consumer.session.timeout.ms":                                 "How long a member of this consumer-protocol group (KIP-848) may go without heartbeating before it is removed and its partitions reassigned.",
	"consumer.heartbeat.interval.ms":                              "The heartbeat interval this consumer-protocol group (KIP-848) gives its members.",
	"group.share.session.timeout.ms":                              "A share group member (KIP-932) that does not heartbeat for this long is fenced and its records' locks released.",
	"group.share.heartbeat.interval.ms":                           "The heartbeat interval a share group (KIP-932) gives its members.",
	"group.share.min.session.timeout.ms":                          "The least session timeout a share group may be given (its share.session.timeout.ms).",
	"group.share.max.session.timeout.ms":                          "The greatest session timeout a share group may be given (its share.session.timeout.ms).",
	"group.share.min.heartbeat.interval.ms":                       "The least heartbeat interval a share group may be given (its share.heartbeat.interval.ms).",
	"group.share.max.heartbeat.interval.ms":                       "The greatest heartbeat interval a share group may be given (its share.heartbeat.interval.ms).",
	"group.share.record.lock.duration.ms":                         "How long a record a share consumer acquired stays locked to it before it is available again.",
	"group.share.min.record.lock.duration.ms":                     "The least record lock duration a share group may be given (its share.record.lock.duration.ms).",
	"group.share.max.record.lock.duration.ms":                     "The greatest record lock duration a share group may be given (its share.record.lock.duration.ms).",
	"group.share.delivery.count.limit":                            "How many times a share group delivers a record before archiving it.",
	"group.share.min.delivery.count.limit":                        "The least delivery count limit a share group may be given (its share.delivery.count.limit, KIP-1240).",
	"group.share.max.delivery.count.limit":                        "The greatest delivery count limit a share group may be given (its share.delivery.count.limit, KIP-1240).",
	"group.share.max.size":                                        "The most members a share group may have.",
	"group.share.partition.max.record.locks":                      "The most records of one partition a share group holds acquired and unacknowledged at once.",
	"group.streams.session.timeout.ms":                            "A streams group member (KIP-1071) that does not heartbeat for this long is removed and its tasks given to others.",
	"group.streams.heartbeat.interval.ms":                         "The heartbeat interval a streams group (KIP-1071) gives its members.",
	"group.streams.min.session.timeout.ms":                        "The least session timeout a streams group may be given (its streams.session.timeout.ms).",
	"group.streams.max.session.timeout.ms":                        "The greatest session timeout a streams group may be given (its streams.session.timeout.ms).",
	"group.streams.min.heartbeat.interval.ms":                     "The least heartbeat interval a streams group may be given (its streams.heartbeat.interval.ms).",
	"group.streams.max.heartbeat.interval.ms":                     "The greatest heartbeat interval a streams group may be given (its streams.heartbeat.interval.ms).",
	"group.streams.max.size":                                      "The most members (streams clients) a streams group may have.",
	"group.streams.num.standby.replicas":                          "How many standby replicas of each stateful task a streams group's assignor places.",
	"group.streams.max.standby.replicas":                          "The most standby replicas a streams group may be given (its streams.num.standby.replicas).",
	"group.streams.initial.rebalance.delay.ms":                    "How long a new streams group waits for more members before its first task assignment.",
	"share.auto.offset.reset":                                     "Where this share group starts on a partition it has no state for: latest, earliest, or by_duration:<ISO-8601 duration> back from now.",
	"share.isolation.level":                                       "read_committed delivers only committed transactional records; read_uncommitted delivers every record.",
	"share.record.lock.duration.ms":                               "How long a record a member of this share group acquired stays locked to it before it is available again.",
	"share.delivery.count.limit":                                  "How many times this share group delivers a record before archiving it (KIP-1240).",
	"share.session.timeout.ms":                                    "How long a member of this share group may go without heartbeating before it is fenced.",
	"streams.heartbeat.interval.ms":                               "The heartbeat interval this streams group gives its members.",
	"streams.initial.rebalance.delay.ms":                          "How long this streams group, when new, waits for more members before its first task assignment.",
	"streams.num.standby.replicas":                                "How many standby replicas of each stateful task this streams group's assignor places.",
	"streams.session.timeout.ms":                                  "How long a member of this streams group may go without heartbeating before it is removed.",
	"share.heartbeat.interval.ms":                                 "The heartbeat interval this share group gives its members.",
	"log.max.open.files":                                          "The most segment and index files the node keeps open; 0 derives it from the open-file limit (Skein-only).",
	"chaos.enable":                                                "The admin API may inject faults into this node (Skein-only).",
	"console.faults.without.auth":                                 "The web console shows its fault buttons to everyone when the node authenticates nobody and has no authorizer (needs chaos.enable; Skein-only).",
	"offsets.retention.minutes":                                   "The committed offsets of a group with no members are deleted this long after it became empty.",
	"log.retention.minutes":                                       "log.retention.ms in minutes, used when log.retention.ms is not set.",
	"log.retention.hours":                                         "log.retention.ms in hours, used when log.retention.ms and log.retention.minutes are not set.",
	"log.roll.hours":                                              "log.roll.ms in hours, used when log.roll.ms is not set.",
	"auto.leader.rebalance.enable":                                "The active controller moves each partition's leadership back to its preferred replica when that one is live and in sync.",
	"leader.imbalance.check.interval.seconds":                     "How often, in seconds, the controller checks for partitions led by other than their preferred replica (and runs unclean elections where a topic allows them).",
	"broker.heartbeat.interval.ms":                                "How often a broker heartbeats the active controller, in milliseconds.",
	"broker.session.timeout.ms":                                   "How long the active controller waits for a broker's heartbeat before fencing it, in milliseconds.",
	"broker.rack":                                                 "The rack or zone of this broker; a partition's replicas are placed in different racks.",
	"replica.selector.class":                                      "org.apache.kafka.common.replica.RackAwareReplicaSelector sends a consumer that gives its client.rack to an in-sync replica in that rack; empty reads from the leader.",
	"cluster.listen":                                              "The host:port the node's remoting between nodes (controller quorum, heartbeats, replication) binds when controller.quorum.voters is set (Skein-only).",
	"cluster.advertise":                                           "The host:port other nodes reach this node's remoting at; defaults to cluster.listen (Skein-only).",
	"controller.quorum.voters":                                    "The controller quorum's voters as id@host:port, comma-separated; empty makes the node a cluster of its own.",
	"process.roles":                                               "The roles this node plays: broker, controller, or both, comma-separated.",
	"metadata.log.max.record.bytes.between.snapshots":             "How many bytes of metadata entries a controller applies between two snapshots of its image.",
	"offsets.topic.replication.factor":                            "The replication factor of __consumer_offsets, capped at the live brokers when it is created.",
	"replica.fetch.max.bytes":                                     "The most record bytes of one partition in a follower's fetch answer; a larger first batch still comes whole.",
	"replica.fetch.response.max.bytes":                            "The most record bytes of a follower's fetch answer over all its partitions.",
	"replica.fetch.wait.max.ms":                                   "How long a leader holds a follower's fetch that finds nothing new, in milliseconds.",
	"replica.lag.time.max.ms":                                     "How long a follower may go without catching up with its leader before it leaves the ISR, in milliseconds.",
}
