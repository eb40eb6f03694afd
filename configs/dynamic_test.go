package configs

import (
	"errors"
	"reflect"
	"testing"
)

func TestIsDynamicBrokerConfig(t *testing.T) {
	for key, want := range map[string]bool{
		"log.retention.ms":      true,
		"message.max.bytes":     true,
		"log.cleanup.policy":    true,
		"min.insync.replicas":   true,
		"log.retention.hours":   false, // Kafka: only the primary names are dynamic
		"log.roll.hours":        false,
		"num.partitions":        false,
		"node.id":               false,
		"retention.ms":          false, // a topic name, not a broker one
		"no.such.config":        false,
		"log.retention.minutes": false,
		// KIP-73's rates are dynamic; the topic lists have no broker name.
		"leader.replication.throttled.rate":     true,
		"follower.replication.throttled.rate":   true,
		"leader.replication.throttled.replicas": false,
	} {
		if got := IsDynamicBrokerConfig(key); got != want {
			t.Errorf("IsDynamicBrokerConfig(%s) = %v, want %v", key, got, want)
		}
	}
	for _, name := range TopicConfigNames() {
		if len(topicKeys[name].broker) == 0 {
			continue
		}
		if !IsDynamicBrokerConfig(brokerName(name)) {
			t.Errorf("%s, the broker name of %s, is not dynamic", brokerName(name), name)
		}
	}
}

func TestValidateDynamic(t *testing.T) {
	if err := ValidateDynamic(map[string]string{"log.retention.ms": "1000", "log.cleanup.policy": "compact,delete", "message.max.bytes": "10"}); err != nil {
		t.Errorf("valid configs: %v", err)
	}
	for _, tc := range []struct {
		key, value string
		notDynamic bool
	}{
		{"no.such.config", "1", false},
		{"log.retention.ms", "0", false}, // a topic may say 0, the broker not
		{"log.retention.ms", "soon", false},
		{"log.segment.bytes", "1", false},
		{"log.cleanup.policy", "shred", false},
		{"retention.ms", "1000", false}, // topic names are not broker configs
		{"num.partitions", "3", true},
		{"log.retention.hours", "1", true},
	} {
		err := ValidateDynamic(map[string]string{tc.key: tc.value})
		var ce *Error
		switch {
		case err == nil:
			t.Errorf("%s=%s: no error", tc.key, tc.value)
		case tc.notDynamic && !errors.Is(err, ErrNotDynamic):
			t.Errorf("%s=%s: %v, want ErrNotDynamic", tc.key, tc.value, err)
		case !tc.notDynamic && (!errors.As(err, &ce) || ce.Key != tc.key):
			t.Errorf("%s=%s: %v, want an *Error naming the key", tc.key, tc.value, err)
		}
	}
}

func TestWithDynamic(t *testing.T) {
	static := mustLoad(t, "log.retention.hours: 24\nmessage.max.bytes: 2000\n", nil)
	n, err := static.WithDynamic(
		map[string]string{"log.retention.ms": "1000", "message.max.bytes": "500", "log.cleanup.policy": "compact"},
		map[string]string{"message.max.bytes": "600"})
	if err != nil {
		t.Fatal(err)
	}
	if n.LogRetentionMs != 1000 || n.MessageMaxBytes != 600 || !n.LogCleanupPolicy.Compact || n.LogCleanupPolicy.Delete {
		t.Errorf("effective defaults %+v", n.TopicDefaults)
	}
	if static.LogRetentionMs != 24*3600*1000 || static.MessageMaxBytes != 2000 {
		t.Errorf("WithDynamic changed its receiver: %+v", static.TopicDefaults)
	}
	topic, err := ResolveTopic(n, map[string]string{"max.message.bytes": "700"})
	if err != nil || topic.RetentionMs != 1000 || topic.MaxMessageBytes != 700 {
		t.Errorf("ResolveTopic = %+v, %v", topic, err)
	}
	d, b := n.DynamicConfigs()
	if d["log.retention.ms"] != "1000" || b["message.max.bytes"] != "600" {
		t.Errorf("DynamicConfigs = %v, %v", d, b)
	}

	// Replacing the layers starts again from the static configuration.
	again, err := n.WithDynamic(nil, map[string]string{"log.retention.ms": "5000"})
	if err != nil || again.LogRetentionMs != 5000 || again.MessageMaxBytes != 2000 || again.LogCleanupPolicy != static.LogCleanupPolicy {
		t.Errorf("WithDynamic again = %+v, %v", again.TopicDefaults, err)
	}
	none, err := n.WithDynamic(nil, nil)
	if err != nil || !reflect.DeepEqual(none, static) {
		t.Errorf("WithDynamic(nil, nil) = %+v, %v; want the static node", none.TopicDefaults, err)
	}

	// A bad entry is reported; the good ones still apply.
	partial, err := static.WithDynamic(map[string]string{"log.retention.ms": "1000", "num.partitions": "9", "message.max.bytes": "x"}, nil)
	if err == nil || !errors.Is(err, ErrNotDynamic) {
		t.Errorf("bad entries: err = %v", err)
	}
	if partial.LogRetentionMs != 1000 || partial.MessageMaxBytes != 2000 || partial.NumPartitions != static.NumPartitions {
		t.Errorf("bad entries: %+v", partial)
	}
}

func TestDescribeWithDynamic(t *testing.T) {
	def := func(name, value string) Synonym { return Synonym{name, value, SourceDefault} }
	brk := func(name, value string) Synonym { return Synonym{name, value, SourceBroker} }
	dyn := func(name, value string) Synonym { return Synonym{name, value, SourceDynamicBroker} }
	dd := func(name, value string) Synonym { return Synonym{name, value, SourceDynamicDefault} }
	top := func(name, value string) Synonym { return Synonym{name, value, SourceTopic} }

	static := mustLoad(t, "log.retention.hours: 24\n", nil)
	n, err := static.WithDynamic(
		map[string]string{"log.retention.ms": "1000", "message.max.bytes": "500"},
		map[string]string{"message.max.bytes": "600", "min.insync.replicas": "2"})
	if err != nil {
		t.Fatal(err)
	}

	entries, err := DescribeTopic(n, map[string]string{"min.insync.replicas": "1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ConfigEntry{
		"retention.ms":        {"retention.ms", "1000", SourceDynamicDefault, []Synonym{dd("log.retention.ms", "1000"), brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
		"max.message.bytes":   {"max.message.bytes", "600", SourceDynamicBroker, []Synonym{dyn("message.max.bytes", "600"), dd("message.max.bytes", "500"), def("message.max.bytes", "1048588")}},
		"min.insync.replicas": {"min.insync.replicas", "1", SourceTopic, []Synonym{top("min.insync.replicas", "1"), dyn("min.insync.replicas", "2"), def("min.insync.replicas", "1")}},
		"segment.bytes":       {"segment.bytes", "1073741824", SourceDefault, []Synonym{def("log.segment.bytes", "1073741824")}},
	}
	checkEntries(t, "topic", entries, want)

	entries = DescribeBroker(n, false)
	want = map[string]ConfigEntry{
		"log.retention.ms":    {"log.retention.ms", "1000", SourceDynamicDefault, []Synonym{dd("log.retention.ms", "1000"), brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
		"log.retention.hours": {"log.retention.hours", "24", SourceBroker, []Synonym{brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
		"message.max.bytes":   {"message.max.bytes", "600", SourceDynamicBroker, []Synonym{dyn("message.max.bytes", "600"), dd("message.max.bytes", "500"), def("message.max.bytes", "1048588")}},
		"num.partitions":      {"num.partitions", "1", SourceDefault, []Synonym{def("num.partitions", "1")}},
		"log.roll.hours":      {"log.roll.hours", "168", SourceDefault, []Synonym{def("log.roll.hours", "168")}},
	}
	checkEntries(t, "broker", entries, want)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = true
	}
	for _, f := range nodeFields {
		if !names[f.key] {
			t.Errorf("broker: %s not described", f.key)
		}
	}
	if names["log.retention.minutes"] {
		t.Errorf("broker: the unset log.retention.minutes is described")
	}

	entries = DescribeBroker(n, true)
	want = map[string]ConfigEntry{
		"log.retention.ms":  {"log.retention.ms", "1000", SourceDynamicDefault, []Synonym{dd("log.retention.ms", "1000"), brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
		"message.max.bytes": {"message.max.bytes", "500", SourceDynamicDefault, []Synonym{dd("message.max.bytes", "500"), def("message.max.bytes", "1048588")}},
	}
	if len(entries) != len(want) {
		t.Errorf("cluster default: %d entries, want %d: %+v", len(entries), len(want), entries)
	}
	checkEntries(t, "cluster default", entries, want)
	if got := DescribeBroker(static, true); len(got) != 0 {
		t.Errorf("cluster default without dynamic configs: %+v", got)
	}
}

func checkEntries(t *testing.T, what string, entries []ConfigEntry, want map[string]ConfigEntry) {
	t.Helper()
	seen := 0
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("%s: entries not sorted: %s before %s", what, entries[i-1].Name, e.Name)
		}
		if len(e.Synonyms) > 0 && e.Source != e.Synonyms[0].Source {
			t.Errorf("%s: %s: source %v, first synonym %v", what, e.Name, e.Source, e.Synonyms[0])
		}
		if w, ok := want[e.Name]; ok {
			seen++
			if !reflect.DeepEqual(e, w) {
				t.Errorf("%s: %s:\n got %+v\nwant %+v", what, e.Name, e, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%s: %d of the %d expected entries found", what, seen, len(want))
	}
}

func TestTypeOfAndDoc(t *testing.T) {
	for key, want := range map[string]ConfigType{
		"retention.ms":                            TypeLong,
		"max.message.bytes":                       TypeInt,
		"cleanup.policy":                          TypeList,
		"log.cleanup.policy":                      TypeList,
		"message.timestamp.type":                  TypeString,
		"auto.create.topics.enable":               TypeBoolean,
		"default.replication.factor":              TypeInt,
		"log.retention.hours":                     TypeInt,
		"nope":                                    TypeUnknown,
		"leader.replication.throttled.replicas":   TypeList,
		"follower.replication.throttled.replicas": TypeList,
		"leader.replication.throttled.rate":       TypeLong,
	} {
		if got := TypeOf(key); got != want {
			t.Errorf("TypeOf(%s) = %d, want %d", key, got, want)
		}
	}
	if v, ok := DefaultValue("cleanup.policy"); !ok || v != "delete" {
		t.Errorf("DefaultValue(cleanup.policy) = %s, %v", v, ok)
	}
	if v, ok := DefaultValue("log.cleanup.policy"); !ok || v != "delete" {
		t.Errorf("DefaultValue(log.cleanup.policy) = %s, %v", v, ok)
	}
	if _, ok := DefaultValue("nope"); ok {
		t.Error("DefaultValue of an unknown key")
	}
	if !IsListConfig("cleanup.policy") || IsListConfig("retention.ms") {
		t.Error("IsListConfig")
	}
	for _, name := range TopicConfigNames() {
		if len(topicKeys[name].broker) == 0 {
			if Doc(name) == "" {
				t.Errorf("%s has no documentation", name)
			}
			continue
		}
		if Doc(name) == "" || Doc(brokerName(name)) == "" {
			t.Errorf("%s or %s has no documentation", name, brokerName(name))
		}
	}
	for _, key := range replicationThrottleKeys {
		if Doc(key) == "" {
			t.Errorf("%s has no documentation", key)
		}
	}
	if Doc("nope") != "" {
		t.Error("Doc of an unknown key")
	}
	for s, want := range map[Source]string{SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG", SourceDynamicDefault: "DYNAMIC_DEFAULT_BROKER_CONFIG"} {
		if s.String() != want {
			t.Errorf("%d.String() = %s", s, s)
		}
	}
}
