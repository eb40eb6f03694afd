package configs

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// Replication throttling (Kafka's KIP-73)
//
// A reassignment copies whole partitions to new replicas; Kafka bounds the
// bytes it moves with two dynamic broker configs, the rates, and two topic
// configs, the lists of replicas they apply to:
//
//	leader.replication.throttled.rate      bytes/s a broker serves to throttled followers
//	follower.replication.throttled.rate    bytes/s a broker fetches for its throttled replicas
//	leader.replication.throttled.replicas  partition:broker pairs (or *) whose leader on that broker is throttled
//	follower.replication.throttled.replicas partition:broker pairs (or *) whose follower on that broker is throttled
//
// kafka-reassign-partitions --throttle (and skein topic reassign --throttle)
// lists each moving partition's current replicas as leader-throttled and
// its new ones as follower-throttled, and sets both rates on the brokers
// involved. Replicas in the ISR are never throttled.

// ThrottledReplicas is the value of leader.replication.throttled.replicas
// and follower.replication.throttled.replicas: Kafka's list of
// "partition:broker" pairs, comma-separated, or "*" for every replica of
// the topic; "" (the default) throttles none. It is kept as it was given,
// so that the Topic struct stays comparable; Throttles reads it.
type ThrottledReplicas string

var throttledReplicasType = reflect.TypeFor[ThrottledReplicas]()

// throttledReplicasReason is Kafka's ThrottledReplicaListValidator message.
const throttledReplicasReason = "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."

// ValidThrottledReplicas checks s as Kafka's ThrottledReplicaListValidator
// does: split at commas and trimmed, the entries must be exactly "*", or
// each "partition:broker" (decimal digits that fit an int32), empty
// entries allowed only at the end ("", "0:1," and "0:1, " are lists).
func ValidThrottledReplicas(s string) error {
	entries := strings.Split(s, ",")
	if len(entries) == 1 && strings.TrimSpace(entries[0]) == "*" {
		return nil
	}
	empty := false
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			empty = true
		case empty:
			return errors.New(throttledReplicasReason)
		default:
			if _, _, ok := parseReplica(e); !ok {
				return errors.New(throttledReplicasReason)
			}
		}
	}
	return nil
}

// parseReplica parses "partition:broker", both unsigned decimal int32s.
func parseReplica(e string) (partition, broker int32, ok bool) {
	p, b, found := strings.Cut(e, ":")
	if !found || !digits(p) || !digits(b) {
		return 0, 0, false
	}
	pi, err1 := strconv.ParseInt(p, 10, 32)
	bi, err2 := strconv.ParseInt(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int32(pi), int32(bi), true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Throttles reports whether the list throttles the replica of partition on
// broker: it is "*" or names partition:broker. An invalid list throttles
// nothing (the controller stores none). It does not allocate: the leader
// asks it for every partition of every replica fetch.
func (l ThrottledReplicas) Throttles(partition, broker int32) bool {
	s := string(l)
	if s == "" {
		return false
	}
	if strings.TrimSpace(s) == "*" {
		return true
	}
	for s != "" {
		var e string
		e, s, _ = strings.Cut(s, ",")
		if p, b, ok := parseReplica(strings.TrimSpace(e)); ok && p == partition && b == broker {
			return true
		}
	}
	return false
}

// ReplicationThrottle holds a broker's replication rates (KIP-73). Kafka
// allows them only as dynamic broker configs (per broker, or for all with
// the resource ""), and ignores them in the static file; Skein takes them
// from its configuration as well, below the dynamic values, so that a
// static setting is not silently ignored.
type ReplicationThrottle struct {
	// LeaderReplicationThrottledRate: the most bytes per second this
	// broker's leaders serve to the follower replicas their topics'
	// leader.replication.throttled.replicas list (under this broker's id,
	// or "*") while those followers are out of the ISR. Default
	// 9223372036854775807 (unlimited); at least 0. Kafka:
	// leader.replication.throttled.rate.
	LeaderReplicationThrottledRate int64 `mapstructure:"leader.replication.throttled.rate" yaml:"leader.replication.throttled.rate"`

	// FollowerReplicationThrottledRate: the most bytes per second this
	// broker's followers fetch for the replicas their topics'
	// follower.replication.throttled.replicas list (under this broker's
	// id, or "*") while they are behind their leader's high watermark.
	// Default 9223372036854775807 (unlimited); at least 0. Kafka:
	// follower.replication.throttled.rate.
	FollowerReplicationThrottledRate int64 `mapstructure:"follower.replication.throttled.rate" yaml:"follower.replication.throttled.rate"`
}

// Unlimited is the default replication rate: Kafka's Long.MAX_VALUE.
const Unlimited = int64(1<<63 - 1)

// replicationThrottleKeys are the dynamic broker configs of
// ReplicationThrottle, which are not broker names of topic configs.
var replicationThrottleKeys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}

func (t ReplicationThrottle) validate(v *validator) {
	// NB: Kafka's lower bound is 0 ("round minimum value down, to make it
	// easier for users", QuotaConfig.brokerQuotaConfigs): 0 stops throttled
	// replication altogether.
	v.atLeast("leader.replication.throttled.rate", t.LeaderReplicationThrottledRate, 0)
	v.atLeast("follower.replication.throttled.rate", t.FollowerReplicationThrottledRate, 0)
}
