// Package configs holds Skein's typed configuration: the node configuration
// and Kafka's topic-level configs under their Kafka names, with defaults,
// validation and loading (YAML file, SKEIN_* environment, flags). viper and
// pflag are used only here; every other package receives plain structs.
package configs
