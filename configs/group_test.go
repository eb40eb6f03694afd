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
		{map[string]string{"share.session.timeout.ms": "50000"}, "Unknown group config name: share.session.timeout.ms"},
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
}

func TestDescribeGroup(t *testing.T) {
	n := Default()
	n.GroupConsumerHeartbeatIntervalMs = 6000
	got := DescribeGroup(n, map[string]string{"consumer.session.timeout.ms": "50000"})
	want := []ConfigEntry{
		{"consumer.heartbeat.interval.ms", "6000", SourceDefault, []Synonym{{"consumer.heartbeat.interval.ms", "6000", SourceDefault}}},
		{"consumer.session.timeout.ms", "50000", SourceGroup, []Synonym{{"consumer.session.timeout.ms", "50000", SourceGroup}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, e := range got {
		if TypeOf(e.Name) != TypeInt || Doc(e.Name) == "" {
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
