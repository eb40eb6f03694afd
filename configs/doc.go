// Package configs holds Skein's typed configuration: the node configuration
// and Kafka's topic-level configs under their Kafka names, with defaults,
// validation and loading (a YAML file or Kafka's server.properties,
// SKEIN_* environment, flags), and the Kafka listeners with their TLS and
// SASL settings (listeners.go). viper, pflag and magiconair/properties are
// used only here; every other package receives plain structs.
//
// # Node configuration
//
// Node is one node's configuration. Its keys are Kafka's broker config names
// where Kafka has the setting (log.retention.ms, num.partitions, ...), and
// short Skein-only names otherwise (data.dir, listen, durability); each
// field's doc gives its default and its Kafka name. Default returns a working
// single node; Validate reports every bad key as "configs: key = value:
// reason"; YAML prints the configuration in the format Load reads.
//
// Load merges, lowest precedence first:
//
//  1. Default();
//  2. the file named by --config: YAML, keys flat (log.retention.ms: 1000)
//     or nested, or Java properties when it ends in .properties; an
//     unknown key is an error;
//  3. environment variables SKEIN_<KEY>, the key upper-cased with dots and
//     dashes turned into underscores (SKEIN_DATA_DIR, SKEIN_LOG_SEGMENT_BYTES);
//  4. the flags of `skein node`: --node-id, --data-dir, --listen,
//     --advertise, --admin-listen, --log-level, --log-format, --durability,
//     --roles, --controller-quorum, --cluster-listen, and --set key=value
//     for any key.
//
// The one key that is not a scalar is extensions, a list of extension
// instances ({name, kind, settings}) the node sets in the cluster's
// metadata at start (Node.Extensions): only the file sets it.
//
// Kafka's alternative names log.retention.minutes, log.retention.hours and
// log.roll.hours are accepted too and converted to milliseconds. Load records
// in Node.Explicit which keys the sources set, so that DescribeTopic can tell
// a broker setting from a default.
//
// The caller's duties (package cli does this for `skein node`):
//
//  1. RegisterFlags on the command's flag set, then parse the arguments;
//  2. Load with that flag set and os.Environ(); on error, print it and exit
//     non-zero;
//  3. pass the Node, a plain struct, to whatever needs it.
//
// # Topic configuration
//
// Topic is the configuration in force for one topic, under Kafka's topic
// config names, with Kafka's defaults (DefaultTopic) and validators. Each
// topic config has broker synonyms, the Node keys that give its default
// (retention.ms ← log.retention.ms, log.retention.minutes,
// log.retention.hours). ResolveTopic applies a topic's overrides to the
// broker's defaults; ValidateTopicOverrides checks overrides alone, as
// CreateTopics and AlterConfigs need; DescribeTopic reports each value with
// its source (topic, broker, default) and its synonyms, as DescribeConfigs
// with IncludeSynonyms needs. Where Skein departs from Kafka (the smallest
// segment.bytes; the synonyms Kafka drops) the doc of the declaration says
// so and why.
//
// # Dynamic broker configs
//
// AlterConfigs on a broker resource changes the broker names of the topic
// configs at run time, cluster-wide (resource name "") or for one broker
// (its id); the controller validates them with ValidateDynamic and keeps
// them in the cluster metadata. Node.WithDynamic applies them over the
// static configuration, so ResolveTopic and DescribeTopic see them, and
// DescribeBroker reports a broker resource with Kafka's sources
// (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG). Other keys are static: changing
// one is refused (ErrNotDynamic).
//
// # Concurrency
//
// Everything here is plain values and pure functions: safe for concurrent
// use. Load reads the file named by --config and nothing else of the
// process (the environment is an argument).
package configs
