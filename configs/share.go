package configs

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Share groups (KIP-932): the node's group.share.* settings and a share
// group's effective settings, its group configs over the node's.

// The values of share.auto.offset.reset besides by_duration:<duration>.
const (
	ShareAutoOffsetResetLatest   = "latest"
	ShareAutoOffsetResetEarliest = "earliest"
	shareAutoOffsetResetDuration = "by_duration"
)

// ShareSettings are a share group's effective settings: its group configs
// where it sets them, the node's group.share.* settings otherwise.
type ShareSettings struct {
	// AutoOffsetReset is share.auto.offset.reset as set: "latest",
	// "earliest" or "by_duration:<ISO-8601 duration>"; ResetDuration is
	// the duration of the last (ParseShareAutoOffsetReset).
	AutoOffsetReset string
	ResetDuration   time.Duration
	// LockDuration is share.record.lock.duration.ms, else
	// group.share.record.lock.duration.ms.
	LockDuration time.Duration
	// DeliveryCountLimit is share.delivery.count.limit, else
	// group.share.delivery.count.limit.
	DeliveryCountLimit int16
	// ReadCommitted is share.isolation.level read_committed.
	ReadCommitted bool
	// SessionTimeout and HeartbeatInterval are share.session.timeout.ms
	// and share.heartbeat.interval.ms, else the node's
	// group.share.session.timeout.ms and group.share.heartbeat.interval.ms.
	SessionTimeout, HeartbeatInterval time.Duration
	// MaxRecordLocks is group.share.partition.max.record.locks.
	MaxRecordLocks int
	// MaxGroupSize is group.share.max.size.
	MaxGroupSize int
}

// ShareGroupSettings returns the effective settings of a share group with
// the given group configs (the image's GroupConfigs of the group, nil for
// none) on a node with the given configuration. The controller stores only
// valid configs; a value that does not parse counts as unset.
func ShareGroupSettings(n Node, groupConfigs map[string]string) ShareSettings {
	m := groupConfigs
	s := ShareSettings{
		AutoOffsetReset:    ShareAutoOffsetResetLatest,
		LockDuration:       groupMs(n, m, "share.record.lock.duration.ms"),
		DeliveryCountLimit: int16(min(groupInt(n, m, "share.delivery.count.limit"), math.MaxInt16)),
		ReadCommitted:      m["share.isolation.level"] == "read_committed",
		SessionTimeout:     groupMs(n, m, "share.session.timeout.ms"),
		HeartbeatInterval:  groupMs(n, m, "share.heartbeat.interval.ms"),
		MaxRecordLocks:     int(n.GroupSharePartitionMaxRecordLocks),
		MaxGroupSize:       int(n.GroupShareMaxSize),
	}
	if v, ok := m["share.auto.offset.reset"]; ok {
		if _, d, err := ParseShareAutoOffsetReset(v); err == nil {
			s.AutoOffsetReset, s.ResetDuration = v, d
		}
	}
	return s
}

// ParseShareAutoOffsetReset parses a share.auto.offset.reset value as
// Kafka's ShareGroupAutoOffsetResetStrategy does: "latest", "earliest", or
// "by_duration:" and a non-negative ISO-8601 duration (PnDTnHnMn.nS, as
// Java's Duration.parse reads it). It returns the strategy ("latest",
// "earliest" or "by_duration") and the duration of the last.
func ParseShareAutoOffsetReset(s string) (strategy string, d time.Duration, err error) {
	switch {
	case s == ShareAutoOffsetResetLatest || s == ShareAutoOffsetResetEarliest:
		return s, 0, nil
	case strings.HasPrefix(s, shareAutoOffsetResetDuration+":"):
		d, err := parseISODuration(strings.TrimPrefix(s, shareAutoOffsetResetDuration+":"))
		if err != nil {
			return "", 0, err
		}
		if d < 0 {
			return "", 0, errors.New("Negative duration is not supported in by_duration offset reset strategy.")
		}
		return shareAutoOffsetResetDuration, d, nil
	}
	return "", 0, errors.New("Unknown auto offset reset strategy: " + s)
}

// isoDuration is Java's Duration.parse pattern: days, then after a T hours,
// minutes and seconds with up to 9 fraction digits, each optional and
// signed.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// errISODuration is Java's DateTimeParseException, in short.
var errISODuration = errors.New("Unable to parse duration string in by_duration offset reset strategy.")

func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	// NB: "P" alone, and a T with nothing after it, are not durations.
	if m == nil || (m[2] == "" && m[3] == "") || m[3] == "T" || m[3] == "t" {
		return 0, errISODuration
	}
	var total float64 // seconds; float so that overflow is seen, not wrapped
	for _, part := range []struct {
		v    string
		unit float64
	}{{m[2], 86400}, {m[4], 3600}, {m[5], 60}, {m[6], 1}} {
		if part.v == "" {
			continue
		}
		n, err := strconv.ParseInt(part.v, 10, 64)
		if err != nil {
			return 0, errISODuration
		}
		total += float64(n) * part.unit
	}
	if m[7] != "" {
		frac, _ := strconv.ParseFloat("0."+m[7], 64)
		if strings.HasPrefix(m[6], "-") {
			frac = -frac
		}
		total += frac
	}
	if m[1] == "-" {
		total = -total
	}
	if math.Abs(total) > float64(math.MaxInt64/int64(time.Second)) {
		return 0, errISODuration
	}
	return time.Duration(total * float64(time.Second)), nil
}

// validateShareGroups checks the node's group.share.* settings with the
// ranges Kafka's ShareGroupConfig and GroupCoordinatorConfig give them.
func (n Node) validateShareGroups(v *validator) {
	between := func(key string, value, lo, hi int64) {
		v.atLeast(key, value, lo)
		if value > hi {
			v.fail(key, fmtInt(value), "must be at most "+fmtInt(hi))
		}
	}
	v.atLeast("group.share.min.session.timeout.ms", int64(n.GroupShareMinSessionTimeoutMs), 1)
	v.atLeast("group.share.max.session.timeout.ms", int64(n.GroupShareMaxSessionTimeoutMs), int64(n.GroupShareMinSessionTimeoutMs))
	v.atLeast("group.share.min.heartbeat.interval.ms", int64(n.GroupShareMinHeartbeatIntervalMs), 1)
	v.atLeast("group.share.max.heartbeat.interval.ms", int64(n.GroupShareMaxHeartbeatIntervalMs), int64(n.GroupShareMinHeartbeatIntervalMs))
	v.within("group.share.session.timeout.ms", int64(n.GroupShareSessionTimeoutMs),
		"group.share.min.session.timeout.ms", int64(n.GroupShareMinSessionTimeoutMs),
		"group.share.max.session.timeout.ms", int64(n.GroupShareMaxSessionTimeoutMs))
	v.within("group.share.heartbeat.interval.ms", int64(n.GroupShareHeartbeatIntervalMs),
		"group.share.min.heartbeat.interval.ms", int64(n.GroupShareMinHeartbeatIntervalMs),
		"group.share.max.heartbeat.interval.ms", int64(n.GroupShareMaxHeartbeatIntervalMs))
	between("group.share.min.record.lock.duration.ms", int64(n.GroupShareMinRecordLockDurationMs), 1000, 30000)
	between("group.share.max.record.lock.duration.ms", int64(n.GroupShareMaxRecordLockDurationMs), 30000, 3600000)
	between("group.share.record.lock.duration.ms", int64(n.GroupShareRecordLockDurationMs), 1000, 3600000)
	v.within("group.share.record.lock.duration.ms", int64(n.GroupShareRecordLockDurationMs),
		"group.share.min.record.lock.duration.ms", int64(n.GroupShareMinRecordLockDurationMs),
		"group.share.max.record.lock.duration.ms", int64(n.GroupShareMaxRecordLockDurationMs))
	v.atLeast("group.share.min.delivery.count.limit", int64(n.GroupShareMinDeliveryCountLimit), 2)
	v.atLeast("group.share.max.delivery.count.limit", int64(n.GroupShareMaxDeliveryCountLimit), int64(n.GroupShareMinDeliveryCountLimit))
	between("group.share.delivery.count.limit", int64(n.GroupShareDeliveryCountLimit), 2, 10)
	v.within("group.share.delivery.count.limit", int64(n.GroupShareDeliveryCountLimit),
		"group.share.min.delivery.count.limit", int64(n.GroupShareMinDeliveryCountLimit),
		"group.share.max.delivery.count.limit", int64(n.GroupShareMaxDeliveryCountLimit))
	between("group.share.max.size", int64(n.GroupShareMaxSize), 10, 1000)
	between("group.share.partition.max.record.locks", int64(n.GroupSharePartitionMaxRecordLocks), 100, 10000)
}
