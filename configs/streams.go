package configs

import "time"

// Streams groups (KIP-1071): the node's group.streams.* settings and a
// streams group's effective settings, its streams.* group configs over
// the node's, as Kafka 4.2's GroupCoordinatorConfig and GroupConfig have
// them.

// StreamsSettings are a streams group's effective settings: its group
// configs where it sets them, the node's group.streams.* settings
// otherwise.
type StreamsSettings struct {
	// SessionTimeout is streams.session.timeout.ms, else
	// group.streams.session.timeout.ms.
	SessionTimeout time.Duration
	// HeartbeatInterval is streams.heartbeat.interval.ms, else
	// group.streams.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// NumStandbyReplicas is streams.num.standby.replicas, else
	// group.streams.num.standby.replicas.
	NumStandbyReplicas int
	// InitialRebalanceDelay is streams.initial.rebalance.delay.ms, else
	// group.streams.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
}

// StreamsGroupSettings returns the effective settings of a streams group
// with the given group configs (the image's GroupConfigs of the group,
// nil for none) on a node with the given configuration. The controller
// stores only valid configs; a value that does not parse counts as unset.
func StreamsGroupSettings(n Node, groupConfigs map[string]string) StreamsSettings {
	m := groupConfigs
	return StreamsSettings{
		SessionTimeout:        groupMs(n, m, "streams.session.timeout.ms"),
		HeartbeatInterval:     groupMs(n, m, "streams.heartbeat.interval.ms"),
		NumStandbyReplicas:    int(groupInt(n, m, "streams.num.standby.replicas")),
		InitialRebalanceDelay: groupMs(n, m, "streams.initial.rebalance.delay.ms"),
	}
}

// validateStreamsGroups checks the node's group.streams.* settings with
// the ranges and relations Kafka's GroupCoordinatorConfig gives them.
func (n Node) validateStreamsGroups(v *validator) {
	v.atLeast("group.streams.min.session.timeout.ms", int64(n.GroupStreamsMinSessionTimeoutMs), 1)
	v.atLeast("group.streams.max.session.timeout.ms", int64(n.GroupStreamsMaxSessionTimeoutMs), int64(n.GroupStreamsMinSessionTimeoutMs))
	v.atLeast("group.streams.min.heartbeat.interval.ms", int64(n.GroupStreamsMinHeartbeatIntervalMs), 1)
	v.atLeast("group.streams.max.heartbeat.interval.ms", int64(n.GroupStreamsMaxHeartbeatIntervalMs), int64(n.GroupStreamsMinHeartbeatIntervalMs))
	v.within("group.streams.session.timeout.ms", int64(n.GroupStreamsSessionTimeoutMs),
		"group.streams.min.session.timeout.ms", int64(n.GroupStreamsMinSessionTimeoutMs),
		"group.streams.max.session.timeout.ms", int64(n.GroupStreamsMaxSessionTimeoutMs))
	v.within("group.streams.heartbeat.interval.ms", int64(n.GroupStreamsHeartbeatIntervalMs),
		"group.streams.min.heartbeat.interval.ms", int64(n.GroupStreamsMinHeartbeatIntervalMs),
		"group.streams.max.heartbeat.interval.ms", int64(n.GroupStreamsMaxHeartbeatIntervalMs))
	if n.GroupStreamsHeartbeatIntervalMs >= n.GroupStreamsSessionTimeoutMs {
		v.fail("group.streams.heartbeat.interval.ms", fmtInt(int64(n.GroupStreamsHeartbeatIntervalMs)),
			"must be less than group.streams.session.timeout.ms ("+fmtInt(int64(n.GroupStreamsSessionTimeoutMs))+")")
	}
	v.atLeast("group.streams.max.size", int64(n.GroupStreamsMaxSize), 1)
	v.atLeast("group.streams.max.standby.replicas", int64(n.GroupStreamsMaxStandbyReplicas), 0)
	v.within("group.streams.num.standby.replicas", int64(n.GroupStreamsNumStandbyReplicas),
		"0", 0, "group.streams.max.standby.replicas", int64(n.GroupStreamsMaxStandbyReplicas))
	v.atLeast("group.streams.initial.rebalance.delay.ms", int64(n.GroupStreamsInitialRebalanceDelayMs), 0)
}
