package cli

import (
	"strings"
	"testing"
)

// skein quota alter sets and removes an entity's quotas, describe shows
// them as kafka-configs names entities, and Kafka's refusals come back.
func TestQuotaCommands(t *testing.T) {
	n := startNodeProcess(t)
	addr := n.Addr().String()
	ok(t, addr, "", "quota", "alter", "client-id=app", "--set", "producer_byte_rate=1048576", "--set", "request_percentage=50")
	ok(t, addr, "", "quota", "alter", "user=<default>", "--set", "consumer_byte_rate=2048")
	ok(t, addr, "", "quota", "alter", "ip=127.0.0.5", "--set", "connection_creation_rate=10")
	got := table(ok(t, addr, "", "quota", "describe"))
	want := [][]string{{"ENTITY", "QUOTA", "VALUE"}, {"client-id=app", "producer_byte_rate", "1048576"}, {"client-id=app", "request_percentage", "50"},
		{"ip=127.0.0.5", "connection_creation_rate", "10"}, {"user=<default>", "consumer_byte_rate", "2048"}}
	if len(got) != len(want) {
		t.Fatalf("describe:\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if strings.Join(got[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	ok(t, addr, "", "quota", "alter", "client-id=app", "--delete", "request_percentage")
	if out := ok(t, addr, "", "quota", "describe", "client-id=app", "--strict"); strings.Contains(out, "request_percentage") || !strings.Contains(out, "producer_byte_rate") {
		t.Errorf("after the delete:\n%s", out)
	}
	fails(t, addr, 1, "must be greater than 0", "", "quota", "alter", "user=bob", "--set", "producer_byte_rate=0")
	fails(t, addr, 2, "want user=NAME", "", "quota", "alter", "bob", "--set", "producer_byte_rate=1")
	fails(t, addr, 2, "nothing to change", "", "quota", "alter", "user=bob")
}
