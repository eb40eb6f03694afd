package configs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Group configs
//
// Kafka 4 lets IncrementalAlterConfigs and AlterConfigs set configs on a
// group resource: a consumer-protocol group's (KIP-848) session timeout
// and heartbeat interval, overriding the node's
// group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms
// for that group alone, each within the node's group.consumer.min.* and
// group.consumer.max.* bounds. A group id need not have a group to have
// configs. The controller keeps them in the cluster metadata; a group's
// coordinator reads them at every heartbeat, so a change applies to the
// next heartbeat of every member.
//
// Kafka's share.* and streams.* group configs are not here: Skein has no
// share groups and no streams groups.

// SourceGroup is a config set on a group resource (Kafka:
// DYNAMIC_GROUP_CONFIG).
const SourceGroup Source = 8

// groupKey is one group config: its default and bounds are node settings.
type groupKey struct {
	name          string
	def, min, max func(Node) int32
	minKey        string // the node settings that bound it, for messages
	maxKey        string
}

var groupKeys = []groupKey{
	{
		name:   "consumer.heartbeat.interval.ms",
		def:    func(n Node) int32 { return n.GroupConsumerHeartbeatIntervalMs },
		min:    func(n Node) int32 { return n.GroupConsumerMinHeartbeatIntervalMs },
		max:    func(n Node) int32 { return n.GroupConsumerMaxHeartbeatIntervalMs },
		minKey: "group.consumer.min.heartbeat.interval.ms", maxKey: "group.consumer.max.heartbeat.interval.ms",
	},
	{
		name:   "consumer.session.timeout.ms",
		def:    func(n Node) int32 { return n.GroupConsumerSessionTimeoutMs },
		min:    func(n Node) int32 { return n.GroupConsumerMinSessionTimeoutMs },
		max:    func(n Node) int32 { return n.GroupConsumerMaxSessionTimeoutMs },
		minKey: "group.consumer.min.session.timeout.ms", maxKey: "group.consumer.max.session.timeout.ms",
	},
}

func groupKeyOf(name string) (groupKey, bool) {
	i := slices.IndexFunc(groupKeys, func(k groupKey) bool { return k.name == name })
	if i < 0 {
		return groupKey{}, false
	}
	return groupKeys[i], true
}

// IsGroupConfig reports whether key is a group config.
func IsGroupConfig(key string) bool {
	_, ok := groupKeyOf(key)
	return ok
}

// ValidateGroup checks a group's configs on a node with the given
// configuration, as the controller does before storing them. The error
// joins one error per bad entry, in key order, each worded as Kafka's
// GroupConfig words it (Kafka answers them INVALID_CONFIG).
func ValidateGroup(n Node, m map[string]string) error {
	var errs []error
	for _, key := range sortedKeys(m) {
		k, ok := groupKeyOf(key)
		if !ok {
			errs = append(errs, fmt.Errorf("Unknown group config name: %s", key))
			continue
		}
		v, err := strconv.ParseInt(m[key], 10, 32)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", m[key], key))
		case v < int64(k.min(n)):
			errs = append(errs, fmt.Errorf("%s must be greater than or equal to %s", key, k.minKey))
		case v > int64(k.max(n)):
			errs = append(errs, fmt.Errorf("%s must be less than or equal to %s", key, k.maxKey))
		}
	}
	return errors.Join(errs...)
}

// DescribeGroup returns every group config of a group with the given
// configs on a node with the given configuration, sorted by name: a
// config the group sets with SourceGroup, any other with the node's value
// as its DEFAULT_CONFIG under the group config's own name, as Kafka
// describes them.
func DescribeGroup(n Node, m map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(groupKeys))
	for _, k := range groupKeys {
		e := ConfigEntry{Name: k.name, Value: strconv.Itoa(int(k.def(n))), Source: SourceDefault}
		if v, ok := m[k.name]; ok {
			e.Value, e.Source = v, SourceGroup
		}
		e.Synonyms = []Synonym{{Name: e.Name, Value: e.Value, Source: e.Source}}
		out = append(out, e)
	}
	return out
}

// GroupTimeouts returns the session timeout and heartbeat interval of a
// consumer-protocol group with the given configs on a node with the given
// configuration.
func GroupTimeouts(n Node, m map[string]string) (session, heartbeat time.Duration) {
	value := func(key string) time.Duration {
		k, _ := groupKeyOf(key)
		v, err := strconv.ParseInt(m[key], 10, 32)
		if err != nil {
			// Unset; the controller stores no invalid value.
			v = int64(k.def(n))
		}
		return time.Duration(v) * time.Millisecond
	}
	return value("consumer.session.timeout.ms"), value("consumer.heartbeat.interval.ms")
}
