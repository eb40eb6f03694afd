package configs

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestValidateGroup: each refusal worded as Kafka 4.2's (its answers to
// kafka-configs --entity-type groups), bounds from the node's settings.
func TestValidateGroup(t *testing.T) {
	n := Default()
	for _, c := range []struct {
		configs map[string]string
		want    string // "" for valid
	}{
		{map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "15000"}, ""},
		{map[string]string{"consumer.session.timeout.ms": "45000"}, ""},
		{map[string]string{"consumer.session.timeout.ms": "5000"}, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"consumer.session.timeout.ms": "60001"}, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "4999"}, "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "100000"}, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{"consumer.session.timeout.ms": "abc"}, "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{map[string]string{"nonsense": "1"}, "Unknown group config name: nonsense"},
		// Streams groups (KIP-1071), as Kafka 4.2's GroupConfig.
		{map[string]string{"streams.session.timeout.ms": "50000", "streams.heartbeat.interval.ms": "6000"}, ""},
		{map[string]string{"streams.num.standby.replicas": "2", "streams.initial.rebalance.delay.ms": "0"}, ""},
		{map[string]string{"streams.session.timeout.ms": "44999"}, "streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"},
		{map[string]string{"streams.session.timeout.ms": "60001"}, "streams.session.timeout.ms must be less than or equal to group.streams.max.session.timeout.ms"},
		{map[string]string{"streams.heartbeat.interval.ms": "4999"}, "streams.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms"},
		{map[string]string{"streams.heartbeat.interval.ms": "15001"}, "streams.heartbeat.interval.ms must be less than or equal to group.streams.max.heartbeat.interval.ms"},
		{map[string]string{"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
		{map[string]string{"streams.num.standby.replicas": "-1"}, "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0"},
		{map[string]string{"streams.initial.rebalance.delay.ms": "-1"}, "Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be at least 0"},
		{map[string]string{"streams.session.timeout.ms": "0"}, "Invalid value 0 for configuration streams.session.timeout.ms: Value must be at least 1"},
		// Share groups (KIP-932).
		{map[string]string{"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"}, ""},
		{map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:PT1H30M", "share.isolation.level": "read_committed"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:P1DT0.5S"}, ""},
		{map[string]string{"share.auto.offset.reset": "hello"}, "Invalid value hello for configuration share.auto.offset.reset: Invalid value `hello` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{map[string]string{"share.auto.offset.reset": "by_duration:-PT1H"}, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{map[string]string{"share.auto.offset.reset": "by_duration:PT"}, "Invalid value by_duration:PT for configuration share.auto.offset.reset: Invalid value `by_duration:PT` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{map[string]string{"share.isolation.level": "hello"}, "Invalid value hello for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{map[string]string{"share.record.lock.duration.ms": "999"}, "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{map[string]string{"share.record.lock.duration.ms": "10000"}, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{"share.record.lock.duration.ms": "60001"}, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{map[string]string{"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{map[string]string{"share.delivery.count.limit": "1"}, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{map[string]string{"share.session.timeout.ms": "44999"}, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{map[string]string{"share.heartbeat.interval.ms": "x"}, "Invalid value x for configuration share.heartbeat.interval.ms: Not a number of type INT"},
	} {
		err := ValidateGroup(n, c.configs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.configs, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%v: %v, want %q", c.configs, err, c.want)
		}
	}
	// The bounds are the node's.
	n.GroupConsumerMinSessionTimeoutMs = 1000
	if err := ValidateGroup(n, map[string]string{"consumer.session.timeout.ms": "5000"}); err != nil {
		t.Errorf("with group.consumer.min.session.timeout.ms 1000: %v", err)
	}
	// A share group's session must outlast its heartbeat interval, the
	// node's value standing in for the one the group does not set.
	n.GroupShareMinSessionTimeoutMs = 1000
	err := ValidateGroup(n, map[string]string{"share.session.timeout.ms": "5000"})
	if err == nil || err.Error() != "share.session.timeout.ms must be greater than share.heartbeat.interval.ms" {
		t.Errorf("share session 5000 with heartbeat 5000: %v", err)
	}
	// And a streams group's (Kafka's GroupConfig.validateValues).
	n.GroupStreamsMinSessionTimeoutMs = 1000
	err = ValidateGroup(n, map[string]string{"streams.session.timeout.ms": "5000"})
	if err == nil || err.Error() != "streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms" {
		t.Errorf("streams session 5000 with heartbeat 5000: %v", err)
	}
	s := StreamsGroupSettings(n, map[string]string{"streams.session.timeout.ms": "5000", "streams.num.standby.replicas": "1"})
	if s.SessionTimeout != 5*time.Second || s.HeartbeatInterval != 5*time.Second || s.NumStandbyReplicas != 1 || s.InitialRebalanceDelay != 3*time.Second {
		t.Errorf("StreamsGroupSettings: %+v", s)
	}
}

func TestDescribeGroup(t *testing.T) {
	n := Default()
	n.GroupConsumerHeartbeatIntervalMs = 6000
	got := DescribeGroup(n, map[string]string{"consumer.session.timeout.ms": "50000"})
	def := func(name, value string) ConfigEntry {
		return ConfigEntry{name, value, SourceDefault, []Synonym{{name, value, SourceDefault}}}
	}
	want := []ConfigEntry{
		def("consumer.heartbeat.interval.ms", "6000"),
		{"consumer.session.timeout.ms", "50000", SourceGroup, []Synonym{{"consumer.session.timeout.ms", "50000", SourceGroup}}},
		def("share.auto.offset.reset", "latest"),
		def("share.delivery.count.limit", "5"),
		def("share.heartbeat.interval.ms", "5000"),
		def("share.isolation.level", "read_uncommitted"),
		def("share.record.lock.duration.ms", "30000"),
		def("share.session.timeout.ms", "45000"),
		def("streams.heartbeat.interval.ms", "5000"),
		def("streams.initial.rebalance.delay.ms", "3000"),
		def("streams.num.standby.replicas", "0"),
		def("streams.session.timeout.ms", "45000"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, e := range got {
		typ := TypeInt
		if e.Name == "share.auto.offset.reset" || e.Name == "share.isolation.level" {
			typ = TypeString
		}
		if TypeOf(e.Name) != typ || Doc(e.Name) == "" {
			t.Errorf("%s: type %d, doc %q", e.Name, TypeOf(e.Name), Doc(e.Name))
		}
	}
	session, heartbeat := GroupTimeouts(n, map[string]string{"consumer.session.timeout.ms": "50000"})
	if session != 50*time.Second || heartbeat != 6*time.Second {
		t.Errorf("GroupTimeouts: %v, %v", session, heartbeat)
	}
}

// TestGroupConsumerBounds: the node's own consumer-group timeouts must lie
// within the bounds it gives every group's, as Kafka requires.
func TestGroupConsumerBounds(t *testing.T) {
	n := Default()
	n.GroupConsumerSessionTimeoutMs = 2000
	err := n.Validate()
	if err == nil || !strings.Contains(err.Error(), "group.consumer.session.timeout.ms = 2000: must be at least group.consumer.min.session.timeout.ms (45000)") {
		t.Errorf("session timeout 2000 under the default minimum: %v", err)
	}
	n.GroupConsumerMinSessionTimeoutMs = 1000
	if err := n.Validate(); err != nil {
		t.Errorf("with the minimum lowered: %v", err)
	}
	n.GroupConsumerHeartbeatIntervalMs = 20000
	if err := n.Validate(); err == nil || !strings.Contains(err.Error(), "must be at most group.consumer.max.heartbeat.interval.ms (15000)") {
		t.Errorf("heartbeat 20000 over the maximum: %v", err)
	}
}

// TestShareGroupSettings: a share group's settings are its configs over
// the node's group.share.* settings.
func TestShareGroupSettings(t *testing.T) {
	n := Default()
	got := ShareGroupSettings(n, nil)
	want := ShareSettings{AutoOffsetReset: "latest", LockDuration: 30 * time.Second, DeliveryCountLimit: 5,
		SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxRecordLocks: 2000, MaxGroupSize: 200}
	if got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	got = ShareGroupSettings(n, map[string]string{"share.auto.offset.reset": "by_duration:P1DT2H", "share.record.lock.duration.ms": "15000",
		"share.delivery.count.limit": "3", "share.isolation.level": "read_committed", "share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"})
	want = ShareSettings{AutoOffsetReset: "by_duration:P1DT2H", ResetDuration: 26 * time.Hour, LockDuration: 15 * time.Second, DeliveryCountLimit: 3,
		ReadCommitted: true, SessionTimeout: 50 * time.Second, HeartbeatInterval: 6 * time.Second, MaxRecordLocks: 2000, MaxGroupSize: 200}
	if got != want {
		t.Errorf("group configs: %+v, want %+v", got, want)
	}
}

// TestParseISODuration: Java's Duration.parse, as share.auto.offset.reset's
// by_duration reads it.
func TestParseISODuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"PT1H": time.Hour, "P2D": 48 * time.Hour, "PT0.5S": 500 * time.Millisecond, "pt15m": 15 * time.Minute,
		"P1DT1H1M1.25S": 25*time.Hour + time.Minute + 1250*time.Millisecond, "PT-1H30M": -30 * time.Minute, "-PT1S": -time.Second,
	} {
		if got, err := parseISODuration(s); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "P", "PT", "1H", "P1H", "PT1D", "P1DT", "PT1.S1"} {
		if d, err := parseISODuration(s); err == nil {
			t.Errorf("%s: %v, want an error", s, d)
		}
	}
}

// TestGroupShareBounds: the node's share group settings within their
// ranges and bounds, as Kafka's ShareGroupConfig checks them.
func TestGroupShareBounds(t *testing.T) {
	n := Default()
	n.GroupShareRecordLockDurationMs = 10000
	if err := n.Validate(); err == nil || !strings.Contains(err.Error(), "group.share.record.lock.duration.ms = 10000: must be at least group.share.min.record.lock.duration.ms (15000)") {
		t.Errorf("lock duration under the minimum: %v", err)
	}
	n = Default()
	n.GroupShareDeliveryCountLimit = 11
	if err := n.Validate(); err == nil || !strings.Contains(err.Error(), "group.share.delivery.count.limit = 11: must be at most 10") {
		t.Errorf("delivery count limit 11: %v", err)
	}
	n = Default()
	n.GroupShareMaxSize = 5
	if err := n.Validate(); err == nil || !strings.Contains(err.Error(), "group.share.max.size = 5: must be at least 10") {
		t.Errorf("max size 5: %v", err)
	}
}

// TestGroupStreamsBounds: the node's streams group settings within their
// bounds and relations, as Kafka's GroupCoordinatorConfig requires them.
func TestGroupStreamsBounds(t *testing.T) {
	for _, c := range []struct {
		set  func(*Node)
		want string
	}{
		{func(n *Node) { n.GroupStreamsSessionTimeoutMs = 30000 }, "group.streams.session.timeout.ms = 30000: must be at least group.streams.min.session.timeout.ms (45000)"},
		{func(n *Node) { n.GroupStreamsMaxSessionTimeoutMs = 40000 }, "group.streams.max.session.timeout.ms = 40000: must be at least 45000"},
		{func(n *Node) { n.GroupStreamsHeartbeatIntervalMs = 20000 }, "group.streams.heartbeat.interval.ms = 20000: must be at most group.streams.max.heartbeat.interval.ms (15000)"},
		{func(n *Node) {
			n.GroupStreamsMinSessionTimeoutMs, n.GroupStreamsSessionTimeoutMs = 1000, 5000
		}, "group.streams.heartbeat.interval.ms = 5000: must be less than group.streams.session.timeout.ms (5000)"},
		{func(n *Node) { n.GroupStreamsNumStandbyReplicas = 3 }, "group.streams.num.standby.replicas = 3: must be at most group.streams.max.standby.replicas (2)"},
		{func(n *Node) { n.GroupStreamsMaxSize = 0 }, "group.streams.max.size = 0: must be at least 1"},
		{func(n *Node) { n.GroupStreamsInitialRebalanceDelayMs = -1 }, "group.streams.initial.rebalance.delay.ms = -1: must be at least 0"},
	} {
		n := Default()
		c.set(&n)
		if err := n.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	n := Default()
	n.GroupStreamsMinSessionTimeoutMs, n.GroupStreamsSessionTimeoutMs, n.GroupStreamsMinHeartbeatIntervalMs, n.GroupStreamsHeartbeatIntervalMs = 1000, 6000, 100, 1000
	if err := n.Validate(); err != nil {
		t.Errorf("lowered bounds: %v", err)
	}
}
