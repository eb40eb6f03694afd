package configs

import (
	"errors"
	"testing"
)

// TestThrottledReplicasKIP73 checks the lists as Kafka's
// ThrottledReplicaListValidator takes them: "*", or partition:broker pairs
// split at commas and trimmed, empty entries only at the end.
func TestThrottledReplicasKIP73(t *testing.T) {
	for s, valid := range map[string]bool{
		"":              true,
		"*":             true,
		" * ":           true,
		"0:1":           true,
		"0:1,1:2, 2:3 ": true,
		"0:1,":          true,
		"0:1, ,":        true,
		"*,0:1":         false,
		"0:1,*":         false,
		",0:1":          false, // an empty entry before a replica
		"0":             false,
		"0:":            false,
		":1":            false,
		"a:1":           false,
		"-1:2":          false,
		"0:1:2":         false,
		"0:99999999999": false, // not an int
		"0;1":           false,
	} {
		if err := ValidThrottledReplicas(s); (err == nil) != valid {
			t.Errorf("ValidThrottledReplicas(%q) = %v, want valid %v", s, err, valid)
		}
		err := ValidateTopicOverrides(map[string]string{"leader.replication.throttled.replicas": s, "follower.replication.throttled.replicas": s})
		if (err == nil) != valid {
			t.Errorf("ValidateTopicOverrides(%q) = %v, want valid %v", s, err, valid)
		}
		var e *Error
		if !valid && (!errors.As(err, &e) || e.Key != "follower.replication.throttled.replicas") {
			t.Errorf("ValidateTopicOverrides(%q): %v, want an *Error for the key", s, err)
		}
	}
	l := ThrottledReplicas(" 0:1, 3:2,")
	for _, tc := range []struct {
		partition, broker int32
		want              bool
	}{{0, 1, true}, {3, 2, true}, {0, 2, false}, {1, 0, false}, {3, 1, false}} {
		if got := l.Throttles(tc.partition, tc.broker); got != tc.want {
			t.Errorf("%q.Throttles(%d, %d) = %v", l, tc.partition, tc.broker, got)
		}
	}
	if !ThrottledReplicas("*").Throttles(7, 9) || ThrottledReplicas("").Throttles(0, 0) {
		t.Error("* throttles every replica and \"\" none")
	}
	if n := testing.AllocsPerRun(100, func() { l.Throttles(3, 2) }); n != 0 {
		t.Errorf("Throttles allocates %v times", n)
	}
	cfg, err := ResolveTopic(Default(), map[string]string{"leader.replication.throttled.replicas": "0:1"})
	if err != nil || cfg.LeaderReplicationThrottledReplicas != "0:1" || cfg.FollowerReplicationThrottledReplicas != "" {
		t.Errorf("ResolveTopic = %+v, %v", cfg, err)
	}
}

// TestReplicationRatesAreDynamic checks KIP-73's broker rates: dynamic,
// Long.MAX_VALUE by default, at least 0, per broker over the cluster-wide
// default.
func TestReplicationRatesAreDynamic(t *testing.T) {
	def := Default()
	if def.LeaderReplicationThrottledRate != Unlimited || def.FollowerReplicationThrottledRate != Unlimited {
		t.Errorf("defaults %+v", def.ReplicationThrottle)
	}
	if err := ValidateDynamic(map[string]string{"leader.replication.throttled.rate": "0", "follower.replication.throttled.rate": "1048576"}); err != nil {
		t.Errorf("valid rates: %v", err)
	}
	for _, v := range []string{"-1", "fast", "9223372036854775808"} {
		if err := ValidateDynamic(map[string]string{"leader.replication.throttled.rate": v}); err == nil {
			t.Errorf("leader.replication.throttled.rate = %s accepted", v)
		}
	}
	static := Default()
	static.FollowerReplicationThrottledRate = 5
	n, err := static.WithDynamic(map[string]string{"leader.replication.throttled.rate": "100", "follower.replication.throttled.rate": "200"},
		map[string]string{"leader.replication.throttled.rate": "10"})
	if err != nil || n.LeaderReplicationThrottledRate != 10 || n.FollowerReplicationThrottledRate != 200 {
		t.Fatalf("WithDynamic = %+v, %v", n.ReplicationThrottle, err)
	}
	// Deleting them brings back the static values.
	again, _ := n.WithDynamic(nil, nil)
	if again.LeaderReplicationThrottledRate != Unlimited || again.FollowerReplicationThrottledRate != 5 {
		t.Errorf("WithDynamic(nil, nil) = %+v, want the static rates", again.ReplicationThrottle)
	}
	for _, e := range DescribeBroker(n, false) {
		if e.Name == "leader.replication.throttled.rate" && (e.Value != "10" || e.Source != SourceDynamicBroker || len(e.Synonyms) != 3) {
			t.Errorf("described %+v", e)
		}
	}
}
