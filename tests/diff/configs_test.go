//go:build kafkadiff

package diff

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeConfigs asks for one resource's configs (names nil: all), with
// synonyms and documentation.
func describeConfigs(typ kmsg.ConfigResourceType, name string, names ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	req.Resources = append(req.Resources, r)
	return req
}

// TestDescribeConfigs compares DescribeConfigs' answers for a topic with
// overrides, a topic with none, chosen names, the broker, the cluster's
// defaults and bad resources: values, sources, synonyms (in precedence
// order), types and documentation of every config both brokers know.
func TestDescribeConfigs(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-configs", 1, 1, "cleanup.policy=compact,delete", "retention.ms=3600000",
		"max.message.bytes=2000000", "segment.bytes=2097152", "min.insync.replicas=1"))
	createTopic(c, newTopic("diff-configs-plain", 1, 1))

	cases := []struct {
		name string
		req  *kmsg.DescribeConfigsRequest
	}{
		{"topic with overrides", describeConfigs(kmsg.ConfigResourceTypeTopic, "diff-configs")},
		{"topic with defaults", describeConfigs(kmsg.ConfigResourceTypeTopic, "diff-configs-plain")},
		{"chosen names", describeConfigs(kmsg.ConfigResourceTypeTopic, "diff-configs",
			"retention.ms", "cleanup.policy", "no.such.config")},
		{"unknown topic", describeConfigs(kmsg.ConfigResourceTypeTopic, "diff-configs-unknown")},
		{"bad topic name", describeConfigs(kmsg.ConfigResourceTypeTopic, "..")},
		{"broker", describeConfigs(kmsg.ConfigResourceTypeBroker, "1")},
		{"broker, chosen names", describeConfigs(kmsg.ConfigResourceTypeBroker, "1",
			"num.partitions", "log.retention.ms", "auto.create.topics.enable", "no.such.config")},
		{"cluster defaults", describeConfigs(kmsg.ConfigResourceTypeBroker, "")},
		{"another broker", describeConfigs(kmsg.ConfigResourceTypeBroker, "2")},
		{"broker name not a number", describeConfigs(kmsg.ConfigResourceTypeBroker, "one")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newCase(t).compare(tc.req)
		})
	}
}

// settle waits, up to 10 s, until both brokers answer req alike. Kafka's
// broker applies a config change to its metadata cache a moment after its
// controller answered the alter, and describes the old configs until
// then; Skein answers once its image has the change. A difference that
// lasts is then reported by the compare that follows.
func settle(t *testing.T, req kmsg.Request) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := newCase(t)
		ko, so := c.exchange(req, -1)
		if ko.err == nil && so.err == nil && len(diff("", treeOf(ko.resp, nil), treeOf(so.resp, nil))) == countIntended(t, ko, so) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countIntended counts the differences between two answers that
// differences.go lists for t.
func countIntended(t *testing.T, kafka, skein outcome) int {
	n := 0
	for _, d := range diff("", treeOf(kafka.resp, nil), treeOf(skein.resp, nil)) {
		if intended(t.Name(), d) != "" {
			n++
		}
	}
	return n
}

// incrementalAlter is one IncrementalAlterConfigs resource with ops as
// (op, name, value) triples.
func incrementalAlter(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...[3]string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = o[1], kmsg.StringPtr(o[2])
		switch o[0] {
		case "set":
			c.Op = kmsg.IncrementalAlterConfigOpSet
		case "delete":
			c.Op, c.Value = kmsg.IncrementalAlterConfigOpDelete, nil
		case "append":
			c.Op = kmsg.IncrementalAlterConfigOpAppend
		case "subtract":
			c.Op = kmsg.IncrementalAlterConfigOpSubtract
		default:
			c.Op = kmsg.IncrementalAlterConfigOp(9)
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return req
}

// TestIncrementalAlterConfigs compares IncrementalAlterConfigs' answers for
// good and bad changes to a topic and to the broker, each with
// ValidateOnly and for real, and the topic's configs after.
func TestIncrementalAlterConfigs(t *testing.T) {
	c := newCase(t)
	createTopic(c, newTopic("diff-alter", 1, 1))
	topic := kmsg.ConfigResourceTypeTopic
	broker := kmsg.ConfigResourceTypeBroker
	cases := []struct {
		name  string
		typ   kmsg.ConfigResourceType
		rname string
		ops   [][3]string
	}{
		{"set retention", topic, "diff-alter", [][3]string{{"set", "retention.ms", "7200000"}}},
		{"append a policy", topic, "diff-alter", [][3]string{{"append", "cleanup.policy", "compact"}}},
		{"subtract a policy", topic, "diff-alter", [][3]string{{"subtract", "cleanup.policy", "compact"}}},
		{"delete an override", topic, "diff-alter", [][3]string{{"delete", "retention.ms", ""}}},
		{"delete what is not set", topic, "diff-alter", [][3]string{{"delete", "segment.ms", ""}}},
		{"unknown config", topic, "diff-alter", [][3]string{{"set", "no.such.config", "1"}}},
		{"broker config on a topic", topic, "diff-alter", [][3]string{{"set", "num.partitions", "3"}}},
		{"value not a number", topic, "diff-alter", [][3]string{{"set", "retention.ms", "soon"}}},
		{"value below the minimum", topic, "diff-alter", [][3]string{{"set", "min.insync.replicas", "0"}}},
		{"bad enum value", topic, "diff-alter", [][3]string{{"set", "cleanup.policy", "sometimes"}}},
		{"append to a non-list", topic, "diff-alter", [][3]string{{"append", "retention.ms", "5"}}},
		{"unknown op", topic, "diff-alter", [][3]string{{"bogus", "retention.ms", "5"}}},
		{"same config twice", topic, "diff-alter", [][3]string{{"set", "retention.ms", "5"}, {"set", "retention.ms", "6"}}},
		{"unknown topic", topic, "diff-alter-unknown", [][3]string{{"set", "retention.ms", "5"}}},
		{"broker, dynamic config", broker, "1", [][3]string{{"set", "log.retention.ms", "86400000"}}},
		{"broker, read-only config", broker, "1", [][3]string{{"set", "num.partitions", "3"}}},
		{"broker, unknown config", broker, "1", [][3]string{{"set", "no.such.config", "3"}}},
		{"broker, bad value", broker, "1", [][3]string{{"set", "log.retention.ms", "soon"}}},
		{"cluster default, dynamic config", broker, "", [][3]string{{"set", "log.retention.ms", "86400000"}}},
		{"cluster default, delete", broker, "", [][3]string{{"delete", "log.retention.ms", ""}}},
		{"broker, delete", broker, "1", [][3]string{{"delete", "log.retention.ms", ""}}},
		{"another broker", broker, "2", [][3]string{{"set", "log.retention.ms", "86400000"}}},
	}
	bothModes(t, "alter", func(t *testing.T, validateOnly bool) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := newCase(t)
				c.compare(incrementalAlter(validateOnly, tc.typ, tc.rname, tc.ops...))
				if tc.typ == topic && tc.rname == "diff-alter" {
					settle(t, describeConfigs(topic, "diff-alter"))
					c.compare(describeConfigs(topic, "diff-alter"))
				}
			})
		}
	})
}
