package configs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Group configs
//
// Kafka 4 lets IncrementalAlterConfigs and AlterConfigs set configs on a
// group resource, overriding a node setting for that group alone:
//
//   - a consumer-protocol group's (KIP-848) session timeout and heartbeat
//     interval, over group.consumer.session.timeout.ms and
//     group.consumer.heartbeat.interval.ms, each within the node's
//     group.consumer.min.* and group.consumer.max.* bounds;
//   - a share group's (KIP-932) session timeout, heartbeat interval,
//     record lock duration and delivery count limit, within the node's
//     group.share.min.* and group.share.max.* bounds, and where its
//     share-partitions start (share.auto.offset.reset) and whether they
//     deliver uncommitted transactional records (share.isolation.level),
//     which have no node setting;
//   - a streams group's (KIP-1071) session timeout and heartbeat interval
//     within the node's group.streams.min.* and group.streams.max.*
//     bounds, its number of standby replicas, at most
//     group.streams.max.standby.replicas, and its initial rebalance delay.
//
// A group id need not have a group to have configs. The controller keeps
// them in the cluster metadata; a group's coordinator, and a share group's
// share-partitions, read them at every use, so a change applies at once.
//
// NB: share.delivery.count.limit is KIP-1240's, a group config from
// Kafka 4.3 on (Kafka 4.2 has only the node's); Skein takes it already,
// with 4.3's bounds.

// SourceGroup is a config set on a group resource (Kafka:
// DYNAMIC_GROUP_CONFIG).
const SourceGroup Source = 8

// groupKey is one group config: its type, its default (a node setting or
// Kafka's constant) and its check.
type groupKey struct {
	name string
	typ  ConfigType
	def  func(Node) string
	// check returns why a value is refused, worded as Kafka's GroupConfig
	// words it, or nil.
	check func(n Node, value string) error
}

// intGroupKey is an INT group config at least floor (its ConfigDef range
// in Kafka) and within two node settings.
func intGroupKey(name string, floor int64, def, lo, hi func(Node) int32, loKey, hiKey string) groupKey {
	return groupKey{
		name: name, typ: TypeInt,
		def: func(n Node) string { return strconv.Itoa(int(def(n))) },
		check: func(n Node, s string) error {
			v, err := strconv.ParseInt(s, 10, 32)
			switch {
			case err != nil:
				return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", s, name)
			case v < floor:
				return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least %d", s, name, floor)
			case v < int64(lo(n)):
				return fmt.Errorf("%s must be greater than or equal to %s", name, loKey)
			case v > int64(hi(n)):
				return fmt.Errorf("%s must be less than or equal to %s", name, hiKey)
			}
			return nil
		},
	}
}

var groupKeys = []groupKey{
	intGroupKey("consumer.heartbeat.interval.ms", 1,
		func(n Node) int32 { return n.GroupConsumerHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupConsumerMinHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupConsumerMaxHeartbeatIntervalMs },
		"group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
	intGroupKey("consumer.session.timeout.ms", 1,
		func(n Node) int32 { return n.GroupConsumerSessionTimeoutMs },
		func(n Node) int32 { return n.GroupConsumerMinSessionTimeoutMs },
		func(n Node) int32 { return n.GroupConsumerMaxSessionTimeoutMs },
		"group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
	{
		name: "share.auto.offset.reset", typ: TypeString,
		def: func(Node) string { return ShareAutoOffsetResetLatest },
		check: func(_ Node, s string) error {
			if _, _, err := ParseShareAutoOffsetReset(s); err != nil {
				return fmt.Errorf("Invalid value %s for configuration share.auto.offset.reset: Invalid value `%s` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.", s, s)
			}
			return nil
		},
	},
	intGroupKey("share.delivery.count.limit", 2,
		func(n Node) int32 { return n.GroupShareDeliveryCountLimit },
		func(n Node) int32 { return n.GroupShareMinDeliveryCountLimit },
		func(n Node) int32 { return n.GroupShareMaxDeliveryCountLimit },
		"group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
	intGroupKey("share.heartbeat.interval.ms", 1,
		func(n Node) int32 { return n.GroupShareHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupShareMinHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupShareMaxHeartbeatIntervalMs },
		"group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
	{
		name: "share.isolation.level", typ: TypeString,
		def: func(Node) string { return "read_uncommitted" },
		check: func(_ Node, s string) error {
			if s != "read_committed" && s != "read_uncommitted" {
				return fmt.Errorf("Invalid value %s for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted", s)
			}
			return nil
		},
	},
	intGroupKey("share.record.lock.duration.ms", 1000,
		func(n Node) int32 { return n.GroupShareRecordLockDurationMs },
		func(n Node) int32 { return n.GroupShareMinRecordLockDurationMs },
		func(n Node) int32 { return n.GroupShareMaxRecordLockDurationMs },
		"group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
	intGroupKey("share.session.timeout.ms", 1,
		func(n Node) int32 { return n.GroupShareSessionTimeoutMs },
		func(n Node) int32 { return n.GroupShareMinSessionTimeoutMs },
		func(n Node) int32 { return n.GroupShareMaxSessionTimeoutMs },
		"group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
	intGroupKey("streams.heartbeat.interval.ms", 1,
		func(n Node) int32 { return n.GroupStreamsHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupStreamsMinHeartbeatIntervalMs },
		func(n Node) int32 { return n.GroupStreamsMaxHeartbeatIntervalMs },
		"group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"),
	// No node setting bounds it but its floor (Kafka's atLeast(0)).
	intGroupKey("streams.initial.rebalance.delay.ms", 0,
		func(n Node) int32 { return n.GroupStreamsInitialRebalanceDelayMs },
		func(Node) int32 { return 0 },
		func(Node) int32 { return math.MaxInt32 },
		"", ""),
	intGroupKey("streams.num.standby.replicas", 0,
		func(n Node) int32 { return n.GroupStreamsNumStandbyReplicas },
		func(Node) int32 { return 0 },
		func(n Node) int32 { return n.GroupStreamsMaxStandbyReplicas },
		"", "group.streams.max.standby.replicas"),
	intGroupKey("streams.session.timeout.ms", 1,
		func(n Node) int32 { return n.GroupStreamsSessionTimeoutMs },
		func(n Node) int32 { return n.GroupStreamsMinSessionTimeoutMs },
		func(n Node) int32 { return n.GroupStreamsMaxSessionTimeoutMs },
		"group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
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
// GroupConfig words it (Kafka answers them INVALID_CONFIG), then Kafka's
// checks that a share and a streams group's session timeout exceeds its
// heartbeat interval, the node's values standing for those the group does
// not set.
func ValidateGroup(n Node, m map[string]string) error {
	var errs []error
	for _, key := range sortedKeys(m) {
		k, ok := groupKeyOf(key)
		if !ok {
			errs = append(errs, fmt.Errorf("Unknown group config name: %s", key))
			continue
		}
		if err := k.check(n, m[key]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if s := ShareGroupSettings(n, m); s.SessionTimeout <= s.HeartbeatInterval {
			errs = append(errs, errors.New("share.session.timeout.ms must be greater than share.heartbeat.interval.ms"))
		}
		if s := StreamsGroupSettings(n, m); s.SessionTimeout <= s.HeartbeatInterval {
			errs = append(errs, errors.New("streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms"))
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
		e := ConfigEntry{Name: k.name, Value: k.def(n), Source: SourceDefault}
		if v, ok := m[k.name]; ok {
			e.Value, e.Source = v, SourceGroup
		}
		e.Synonyms = []Synonym{{Name: e.Name, Value: e.Value, Source: e.Source}}
		out = append(out, e)
	}
	return out
}

// groupInt returns an INT group config of a group with the given configs:
// its own value, else the node's. The controller stores no invalid value.
func groupInt(n Node, m map[string]string, key string) int32 {
	if v, err := strconv.ParseInt(m[key], 10, 32); err == nil {
		return int32(v)
	}
	k, _ := groupKeyOf(key)
	v, _ := strconv.ParseInt(k.def(n), 10, 32)
	return int32(v)
}

func groupMs(n Node, m map[string]string, key string) time.Duration {
	return time.Duration(groupInt(n, m, key)) * time.Millisecond
}

// GroupTimeouts returns the session timeout and heartbeat interval of a
// consumer-protocol group with the given configs on a node with the given
// configuration.
func GroupTimeouts(n Node, m map[string]string) (session, heartbeat time.Duration) {
	return groupMs(n, m, "consumer.session.timeout.ms"), groupMs(n, m, "consumer.heartbeat.interval.ms")
}
