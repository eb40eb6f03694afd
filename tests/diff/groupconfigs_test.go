//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigResources asks for the config resources of the given types.
func listConfigResources(types ...kmsg.ConfigResourceType) *kmsg.ListConfigResourcesRequest {
	req := kmsg.NewPtrListConfigResourcesRequest()
	for _, t := range types {
		req.ResourceTypes = append(req.ResourceTypes, int8(t))
	}
	return req
}

// TestGroupConfigs compares KIP-848 group configs, in order: changes good
// and bad (outside the brokers' bounds, not a number, unknown, the empty
// group name, validate-only), a group's configs described with and without
// its own, ListConfigResources of groups and of brokers, and the listing
// once the group's last config is deleted.
func TestGroupConfigs(t *testing.T) {
	group := kmsg.ConfigResourceTypeGroupConfig
	set := func(key, value string) [3]string { return [3]string{"set", key, value} }
	steps := []struct {
		name string
		req  kmsg.Request
	}{
		{"set the session timeout", incrementalAlter(false, group, "diff-gc", set("consumer.session.timeout.ms", "50000"))},
		{"set the heartbeat interval", incrementalAlter(false, group, "diff-gc", set("consumer.heartbeat.interval.ms", "6000"))},
		{"session timeout below the minimum", incrementalAlter(false, group, "diff-gc", set("consumer.session.timeout.ms", "5000"))},
		{"session timeout above the maximum", incrementalAlter(false, group, "diff-gc", set("consumer.session.timeout.ms", "60001"))},
		{"heartbeat interval below the minimum", incrementalAlter(false, group, "diff-gc", set("consumer.heartbeat.interval.ms", "4999"))},
		{"heartbeat interval above the maximum", incrementalAlter(false, group, "diff-gc", set("consumer.heartbeat.interval.ms", "15001"))},
		{"not a number", incrementalAlter(false, group, "diff-gc", set("consumer.session.timeout.ms", "soon"))},
		{"unknown config", incrementalAlter(false, group, "diff-gc", set("no.such.config", "1"))},
		{"empty group name", incrementalAlter(false, group, "", set("consumer.session.timeout.ms", "50000"))},
		{"validate only", incrementalAlter(true, group, "diff-gc-validated", set("consumer.session.timeout.ms", "50000"))},
		{"describe a group with configs", describeConfigs(group, "diff-gc")},
		{"describe a group without", describeConfigs(group, "diff-gc-none")},
		{"describe chosen names", describeConfigs(group, "diff-gc", "consumer.heartbeat.interval.ms", "no.such.config")},
		{"describe the empty name", describeConfigs(group, "")},
		{"list groups", listConfigResources(group)},
		{"list brokers", listConfigResources(kmsg.ConfigResourceTypeBroker)},
		{"list an unknown type", listConfigResources(kmsg.ConfigResourceTypeUnknown)},
		{"delete both", incrementalAlter(false, group, "diff-gc",
			[3]string{"delete", "consumer.session.timeout.ms", ""}, [3]string{"delete", "consumer.heartbeat.interval.ms", ""})},
		{"list groups after", listConfigResources(group)},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			newCase(t).compare(s.req)
		})
	}
}
