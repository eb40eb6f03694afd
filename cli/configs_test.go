package cli

import (
	"strings"
	"testing"
)

// configOf returns the config key of the resource res in described, failing
// the test when it is not there.
func configOf(t *testing.T, described []describedResource, res, key string) configEntry {
	t.Helper()
	for _, d := range described {
		if d.Resource != res {
			continue
		}
		for _, c := range d.Configs {
			if c.Name == key {
				return c
			}
		}
	}
	t.Fatalf("no config %s of resource %q in %+v", key, res, described)
	return configEntry{}
}

func value(c configEntry) string {
	if c.Value == nil {
		return "(null)"
	}
	return *c.Value
}

// TestClusterConfig: a dynamic broker config altered cluster-wide is
// described with DYNAMIC_DEFAULT_BROKER_CONFIG and applies at once (a
// record above the new message.max.bytes is refused); the broker's own
// value wins over it (DYNAMIC_BROKER_CONFIG), deleting it falls back; a
// static config is refused with Kafka's INVALID_REQUEST.
func TestClusterConfig(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "events", "-p", "1")
	big := strings.Repeat("x", 400) + "\n"

	var described []describedResource
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "message.max.bytes", "num.partitions", "-o", "json"), &described)
	c := configOf(t, described, "1", "message.max.bytes")
	if c.Source != "DEFAULT_CONFIG" || c.ReadOnly || c.Documentation == "" || value(c) != "1048588" {
		t.Fatalf("message.max.bytes before any change: %+v, want Kafka's default, dynamic, documented", c)
	}
	if c := configOf(t, described, "1", "num.partitions"); !c.ReadOnly {
		t.Fatalf("num.partitions: %+v, want read-only (static)", c)
	}
	out := ok(t, addr, "", "cluster", "config", "describe", "--broker", "1", "num.partitions")
	if r := row(out, "num.partitions"); len(r) != 4 || r[3] != "no" {
		t.Fatalf("describe num.partitions: row %v, want DYNAMIC no\n%s", r, out)
	}

	var altered []alteredResource
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "alter", "--set", "message.max.bytes=200", "-o", "json"), &altered)
	if len(altered) != 1 || altered[0] != (alteredResource{Type: "broker", Resource: ""}) {
		t.Fatalf("alter the cluster-wide default: %+v", altered)
	}
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "--default", "-o", "json"), &described)
	if c := configOf(t, described, "", "message.max.bytes"); value(c) != "200" || c.Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Fatalf("the cluster-wide default after the alter: %+v", c)
	}
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "--broker", "1", "message.max.bytes", "-o", "json"), &described)
	if c := configOf(t, described, "1", "message.max.bytes"); value(c) != "200" || c.Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Fatalf("broker 1 after the alter: %+v", c)
	}
	// In force at once: the record is refused.
	fails(t, addr, 1, "MESSAGE_TOO_LARGE", big, "produce", "events")

	// The broker's own value wins over the default.
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "alter", "--broker", "1", "--set", "message.max.bytes=100000", "-o", "json"), &altered)
	if len(altered) != 1 || altered[0].Resource != "1" {
		t.Fatalf("alter broker 1: %+v", altered)
	}
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "--broker", "1", "--dynamic", "-o", "json"), &described)
	c = configOf(t, described, "1", "message.max.bytes")
	if value(c) != "100000" || c.Source != "DYNAMIC_BROKER_CONFIG" || len(c.Synonyms) < 2 || c.Synonyms[1].Source != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Fatalf("broker 1's own value: %+v", c)
	}
	ok(t, addr, big, "produce", "events")

	// Deleting both: back to the default, and the record fits.
	ok(t, addr, "", "cluster", "config", "alter", "--broker", "1", "--delete", "message.max.bytes")
	out = ok(t, addr, "", "cluster", "config", "alter", "--delete", "message.max.bytes")
	if out != "altered the cluster-wide default\n" {
		t.Fatalf("alter --delete: %q", out)
	}
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "message.max.bytes", "-o", "json"), &described)
	if c := configOf(t, described, "1", "message.max.bytes"); c.Source != "DEFAULT_CONFIG" {
		t.Fatalf("after deleting both: %+v", c)
	}
	ok(t, addr, big, "produce", "events")

	// A static config, a bad value (INVALID_REQUEST, as Kafka's "Invalid
	// config value for resource"), validation only.
	fails(t, addr, 1, "alter configs of the cluster-wide default: INVALID_REQUEST", "", "cluster", "config", "alter", "--set", "num.partitions=3")
	fails(t, addr, 1, "alter configs of broker 1: INVALID_REQUEST", "", "cluster", "config", "alter", "--broker", "1", "--set", "message.max.bytes=many")
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "alter", "--set", "log.retention.ms=1000", "--validate-only", "-o", "json"), &altered)
	if len(altered) != 1 || !altered[0].ValidateOnly {
		t.Fatalf("alter --validate-only: %+v", altered)
	}
	decodeJSON(t, ok(t, addr, "", "cluster", "config", "describe", "--default", "-o", "json"), &described)
	if len(described) != 1 || len(described[0].Configs) != 0 {
		t.Fatalf("the cluster-wide default after --validate-only and deletes: %+v", described)
	}
	fails(t, addr, 2, "nothing to alter", "", "cluster", "config", "alter")
	fails(t, addr, 2, "give --broker or --default, not both", "", "cluster", "config", "describe", "--broker", "1", "--default")
}

// TestGroupConfig: a group's config set is described with
// DYNAMIC_GROUP_CONFIG and its value, others with DEFAULT_CONFIG; deleting
// it falls back; a value outside the broker's bounds is INVALID_CONFIG.
func TestGroupConfig(t *testing.T) {
	addr := startNode(t)
	var described []describedResource
	decodeJSON(t, ok(t, addr, "", "group", "config", "describe", "billing", "-o", "json"), &described)
	c := configOf(t, described, "billing", "consumer.session.timeout.ms")
	if c.Source != "DEFAULT_CONFIG" || value(c) != "45000" {
		t.Fatalf("consumer.session.timeout.ms before any change: %+v", c)
	}
	configOf(t, described, "billing", "share.auto.offset.reset")

	var altered []alteredResource
	decodeJSON(t, ok(t, addr, "", "group", "config", "alter", "billing", "--set", "consumer.session.timeout.ms=50000", "--set", "share.auto.offset.reset=earliest", "-o", "json"), &altered)
	if len(altered) != 1 || altered[0] != (alteredResource{Type: "group", Resource: "billing"}) {
		t.Fatalf("group config alter: %+v", altered)
	}
	decodeJSON(t, ok(t, addr, "", "group", "config", "describe", "billing", "other", "-o", "json"), &described)
	for key, want := range map[string]string{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"} {
		if c := configOf(t, described, "billing", key); value(c) != want || c.Source != "DYNAMIC_GROUP_CONFIG" {
			t.Fatalf("%s of billing after the alter: %+v, want %s", key, c, want)
		}
	}
	if c := configOf(t, described, "other", "consumer.session.timeout.ms"); c.Source != "DEFAULT_CONFIG" {
		t.Fatalf("another group's: %+v", c)
	}
	out := ok(t, addr, "", "group", "config", "describe", "billing")
	if r := row(out, "share.auto.offset.reset"); len(r) != 3 || r[1] != "earliest" || r[2] != "DYNAMIC_GROUP_CONFIG" {
		t.Fatalf("text describe: row %v\n%s", r, out)
	}

	ok(t, addr, "", "group", "config", "alter", "billing", "--delete", "share.auto.offset.reset")
	decodeJSON(t, ok(t, addr, "", "group", "config", "describe", "billing", "-o", "json"), &described)
	if c := configOf(t, described, "billing", "share.auto.offset.reset"); c.Source != "DEFAULT_CONFIG" || value(c) != "latest" {
		t.Fatalf("share.auto.offset.reset after --delete: %+v", c)
	}
	fails(t, addr, 1, "alter configs of group billing: INVALID_CONFIG", "", "group", "config", "alter", "billing", "--set", "consumer.session.timeout.ms=1")
	fails(t, addr, 2, `--set "x": want key=value`, "", "group", "config", "alter", "billing", "--set", "x")
}
