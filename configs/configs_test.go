package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// load parses args as `skein node` would and loads with the given file
// contents (written to a temp file and passed as --config when not empty)
// and environment.
func load(t *testing.T, yaml string, environ []string, args ...string) (Node, error) {
	t.Helper()
	if yaml != "" {
		path := filepath.Join(t.TempDir(), "node.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"--config", path}, args...)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Load(fs, environ)
}

func mustLoad(t *testing.T, yaml string, environ []string, args ...string) Node {
	t.Helper()
	n, err := load(t, yaml, environ, args...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDefaultTopicIsKafkas checks each topic config default against Kafka's
// (LogConfig / ServerLogConfigs), written out as Kafka documents them.
func TestDefaultTopicIsKafkas(t *testing.T) {
	kafka := map[string]string{
		"retention.ms":                   "604800000",
		"retention.bytes":                "-1",
		"segment.bytes":                  "1073741824",
		"segment.ms":                     "604800000",
		"segment.index.bytes":            "10485760",
		"index.interval.bytes":           "4096",
		"cleanup.policy":                 "delete",
		"delete.retention.ms":            "86400000",
		"min.compaction.lag.ms":          "0",
		"max.message.bytes":              "1048588",
		"message.timestamp.type":         "CreateTime",
		"min.insync.replicas":            "1",
		"flush.messages":                 "9223372036854775807",
		"flush.ms":                       "9223372036854775807",
		"compression.type":               "producer",
		"unclean.leader.election.enable": "false",
		// Empty lists (QuotaConfig's *_THROTTLED_REPLICAS_DEFAULT).
		"leader.replication.throttled.replicas":   "",
		"follower.replication.throttled.replicas": "",
	}
	def := DefaultTopic()
	for _, f := range topicFields {
		want, ok := kafka[f.key]
		if !ok {
			t.Errorf("%s: no Kafka default in this test", f.key)
			continue
		}
		if got := f.format(def); got != want {
			t.Errorf("%s = %s, Kafka's default is %s", f.key, got, want)
		}
	}
	if len(topicFields) != len(kafka) || len(topicKeys) != len(kafka) {
		t.Errorf("%d Topic fields, %d topicKeys, %d Kafka defaults", len(topicFields), len(topicKeys), len(kafka))
	}
	if err := def.Validate(); err != nil {
		t.Errorf("DefaultTopic().Validate() = %v", err)
	}
}

func TestDefaultNode(t *testing.T) {
	want := map[string]string{
		"node.id":                                                     "1",
		"data.dir":                                                    "./data",
		"metadata.log.dir":                                            "",
		"listen":                                                      "127.0.0.1:9092",
		"advertise":                                                   "127.0.0.1:9092",
		"listeners":                                                   "",
		"advertised.listeners":                                        "",
		"listener.security.protocol.map":                              "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"inter.broker.listener.name":                                  "",
		"controller.listener.names":                                   "",
		"ssl.keystore.type":                                           "PEM",
		"ssl.keystore.location":                                       "",
		"ssl.truststore.type":                                         "PEM",
		"ssl.truststore.location":                                     "",
		"ssl.client.auth":                                             "none",
		"ssl.principal.mapping.rules":                                 "DEFAULT",
		"ssl.enabled.protocols":                                       "TLSv1.2,TLSv1.3",
		"ssl.cipher.suites":                                           "",
		"sasl.enabled.mechanisms":                                     "GSSAPI",
		"sasl.server.max.receive.size":                                "524288",
		"connection.failed.authentication.delay.ms":                   "100",
		"connections.max.reauth.ms":                                   "0",
		"sasl.oauthbearer.jwks.endpoint.url":                          "",
		"sasl.oauthbearer.jwks.endpoint.refresh.ms":                   "3600000",
		"sasl.oauthbearer.expected.issuer":                            "",
		"sasl.oauthbearer.expected.audience":                          "",
		"sasl.oauthbearer.clock.skew.seconds":                         "30",
		"sasl.oauthbearer.sub.claim.name":                             "sub",
		"max.connections":                                             "2147483647",
		"max.connections.per.ip":                                      "2147483647",
		"max.connections.per.ip.overrides":                            "",
		"max.connection.creation.rate":                                "2147483647",
		"quota.window.num":                                            "11",
		"leader.replication.throttled.rate":                           "9223372036854775807",
		"follower.replication.throttled.rate":                         "9223372036854775807",
		"quota.window.size.seconds":                                   "1",
		"authorizer.class.name":                                       "",
		"super.users":                                                 "",
		"allow.everyone.if.no.acl.found":                              "false",
		"scram.bootstrap.users":                                       "",
		"admin.listen":                                                "127.0.0.1:9644",
		"admin.allowed.hosts":                                         "",
		"admin.ssl.keystore.location":                                 "",
		"log.level":                                                   "info",
		"log.max.open.files":                                          "0",
		"chaos.enable":                                                "false",
		"console.faults.without.auth":                                 "false",
		"log.format":                                                  "auto",
		"durability":                                                  "fsync",
		"auto.create.topics.enable":                                   "true",
		"num.partitions":                                              "1",
		"default.replication.factor":                                  "1",
		"producer.id.expiration.ms":                                   "86400000",
		"offsets.topic.replication.factor":                            "3",
		"transaction.state.log.num.partitions":                        "50",
		"transaction.state.log.replication.factor":                    "3",
		"transaction.state.log.min.isr":                               "2",
		"share.coordinator.state.topic.num.partitions":                "50",
		"share.coordinator.state.topic.replication.factor":            "3",
		"share.coordinator.state.topic.min.isr":                       "2",
		"share.coordinator.state.topic.segment.bytes":                 "104857600",
		"share.coordinator.snapshot.update.records.per.snapshot":      "500",
		"share.coordinator.write.timeout.ms":                          "5000",
		"share.coordinator.state.topic.prune.interval.ms":             "300000",
		"share.coordinator.cold.partition.snapshot.interval.ms":       "300000",
		"transaction.max.timeout.ms":                                  "900000",
		"transactional.id.expiration.ms":                              "604800000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
		"extension.commit.interval.ms":                                "1000",
		"unclean.leader.election.enable":                              "false",
		"auto.leader.rebalance.enable":                                "true",
		"leader.imbalance.check.interval.seconds":                     "300",
		"replica.fetch.max.bytes":                                     "1048576",
		"replica.fetch.response.max.bytes":                            "10485760",
		"replica.fetch.wait.max.ms":                                   "500",
		"replica.lag.time.max.ms":                                     "30000",
		"socket.request.max.bytes":                                    "104857600",
		"connections.max.idle.ms":                                     "600000",
		"offsets.topic.num.partitions":                                "50",
		"group.min.session.timeout.ms":                                "6000",
		"group.max.session.timeout.ms":                                "1800000",
		"group.initial.rebalance.delay.ms":                            "3000",
		"group.consumer.session.timeout.ms":                           "45000",
		"group.consumer.heartbeat.interval.ms":                        "5000",
		"group.consumer.min.session.timeout.ms":                       "45000",
		"group.consumer.max.session.timeout.ms":                       "60000",
		"group.consumer.min.heartbeat.interval.ms":                    "5000",
		"group.consumer.max.heartbeat.interval.ms":                    "15000",
		"group.share.session.timeout.ms":                              "45000",
		"group.share.heartbeat.interval.ms":                           "5000",
		"group.share.min.session.timeout.ms":                          "45000",
		"group.share.max.session.timeout.ms":                          "60000",
		"group.share.min.heartbeat.interval.ms":                       "5000",
		"group.share.max.heartbeat.interval.ms":                       "15000",
		"group.share.record.lock.duration.ms":                         "30000",
		"group.share.min.record.lock.duration.ms":                     "15000",
		"group.share.max.record.lock.duration.ms":                     "60000",
		"group.share.delivery.count.limit":                            "5",
		"group.share.min.delivery.count.limit":                        "2",
		"group.share.max.delivery.count.limit":                        "10",
		"group.share.max.size":                                        "200",
		"group.share.partition.max.record.locks":                      "2000",
		"group.streams.session.timeout.ms":                            "45000",
		"group.streams.heartbeat.interval.ms":                         "5000",
		"group.streams.min.session.timeout.ms":                        "45000",
		"group.streams.max.session.timeout.ms":                        "60000",
		"group.streams.min.heartbeat.interval.ms":                     "5000",
		"group.streams.max.heartbeat.interval.ms":                     "15000",
		"group.streams.max.size":                                      "2147483647",
		"group.streams.num.standby.replicas":                          "0",
		"group.streams.max.standby.replicas":                          "2",
		"group.streams.initial.rebalance.delay.ms":                    "3000",
		"group.consumer.migration.policy":                             "bidirectional",
		"offsets.retention.minutes":                                   "10080",
		"process.roles":                                               "broker,controller",
		"controller.quorum.voters":                                    "",
		"cluster.listen":                                              "127.0.0.1:9093",
		"cluster.advertise":                                           "127.0.0.1:9093",
		"broker.rack":                                                 "",
		"replica.selector.class":                                      "",
		"broker.heartbeat.interval.ms":                                "2000",
		"broker.session.timeout.ms":                                   "9000",
		"metadata.log.max.record.bytes.between.snapshots":             "20971520",
		// Kafka's broker defaults for the topic configs.
		"log.retention.ms":                  "604800000",
		"log.retention.bytes":               "-1",
		"log.segment.bytes":                 "1073741824",
		"log.roll.ms":                       "604800000",
		"log.index.size.max.bytes":          "10485760",
		"log.index.interval.bytes":          "4096",
		"log.cleanup.policy":                "delete",
		"log.cleaner.delete.retention.ms":   "86400000",
		"log.cleaner.min.compaction.lag.ms": "0",
		"message.max.bytes":                 "1048588",
		"log.message.timestamp.type":        "CreateTime",
		"min.insync.replicas":               "1",
		"log.flush.interval.messages":       "9223372036854775807",
		"log.flush.interval.ms":             "9223372036854775807",
		"compression.type":                  "producer",
	}
	def := Default()
	if got := def.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default().Map() =\n%v\nwant\n%v", got, want)
	}
	if err := def.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	if got := def.TopicDefaults.Topic(); got != DefaultTopic() {
		t.Errorf("Default().TopicDefaults.Topic() = %+v, want DefaultTopic()", got)
	}
	// Load with nothing given is Default.
	n := mustLoad(t, "", nil)
	n.Explicit = nil
	if !reflect.DeepEqual(n, def) {
		t.Errorf("Load() = %+v, want Default()", n)
	}
}

// TestBrokerSynonymsMapToTopic checks that each topic config's broker name
// (topicKeys) is the TopicDefaults field that TopicDefaults.Topic copies
// into it.
func TestBrokerSynonymsMapToTopic(t *testing.T) {
	for _, name := range TopicConfigNames() {
		if len(topicKeys[name].broker) == 0 {
			continue // no broker default, as in Kafka
		}
		brokerKey := brokerName(name)
		bf, ok := nodeByKey[brokerKey]
		if !ok {
			t.Errorf("%s: broker key %s is not a Node field", name, brokerKey)
			continue
		}
		n := Default()
		value := map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime", "compression.type": "zstd", "unclean.leader.election.enable": "true"}[name]
		if value == "" {
			value = "4242"
		}
		if err := bf.set(reflect.ValueOf(&n), value); err != nil {
			t.Fatal(err)
		}
		if got := topicByKey[name].format(n.TopicDefaults.Topic()); got != value {
			t.Errorf("%s = %s after setting %s = %s", name, got, brokerKey, value)
		}
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"data.dir":          "SKEIN_DATA_DIR",
		"log.segment.bytes": "SKEIN_LOG_SEGMENT_BYTES",
		"node.id":           "SKEIN_NODE_ID",
		"some-key.x":        "SKEIN_SOME_KEY_X",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestLoadPrecedence: flags win over the environment, which wins over the
// file, which wins over the defaults.
func TestLoadPrecedence(t *testing.T) {
	const file = "data.dir: /from/file\nlog.segment.bytes: 1000\nnode.id: 7\n"
	for _, tc := range []struct {
		name          string
		file          string
		env           []string
		args          []string
		dataDir       string
		segmentBytes  int32
		nodeID        int32
		explicitValue string // Explicit["data.dir"]
	}{
		{"defaults", "", nil, nil, "./data", 1 << 30, 1, ""},
		{"file", file, nil, nil, "/from/file", 1000, 7, "/from/file"},
		{"env over file", file, []string{"SKEIN_DATA_DIR=/from/env", "SKEIN_LOG_SEGMENT_BYTES=2000"}, nil, "/from/env", 2000, 7, "/from/env"},
		{"flag over env", file, []string{"SKEIN_DATA_DIR=/from/env", "SKEIN_NODE_ID=8"}, []string{"--data-dir", "/from/flag"}, "/from/flag", 1000, 8, "/from/flag"},
		{"set over env", file, []string{"SKEIN_LOG_SEGMENT_BYTES=2000"}, []string{"--set", "log.segment.bytes=3000", "--node-id=9"}, "/from/file", 3000, 9, "/from/file"},
		{"last set wins", "", nil, []string{"--set", "log.segment.bytes=3000", "--set", "log.segment.bytes=4000"}, "./data", 4000, 1, ""},
		{"env without file", "", []string{"SKEIN_DATA_DIR=/from/env", "OTHER=x", "SKEIN_UNRELATED=ignored"}, nil, "/from/env", 1 << 30, 1, "/from/env"},
		{"nested file", "data:\n  dir: /nested\nlog:\n  segment:\n    bytes: 5000\n", nil, nil, "/nested", 5000, 1, "/nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := mustLoad(t, tc.file, tc.env, tc.args...)
			if n.DataDir != tc.dataDir || n.LogSegmentBytes != tc.segmentBytes || n.NodeID != tc.nodeID {
				t.Errorf("data.dir, log.segment.bytes, node.id = %s, %d, %d; want %s, %d, %d",
					n.DataDir, n.LogSegmentBytes, n.NodeID, tc.dataDir, tc.segmentBytes, tc.nodeID)
			}
			if got := n.Explicit["data.dir"]; got != tc.explicitValue {
				t.Errorf("Explicit[data.dir] = %q, want %q", got, tc.explicitValue)
			}
		})
	}
}

// TestLoadGroupInitialRebalanceDelay: the key is set like any other, by
// SKEIN_GROUP_INITIAL_REBALANCE_DELAY_MS and by --set, the flag winning;
// 0 (no delay) is a value, not "unset".
func TestLoadGroupInitialRebalanceDelay(t *testing.T) {
	if n := mustLoad(t, "", []string{"SKEIN_GROUP_INITIAL_REBALANCE_DELAY_MS=0"}); n.GroupInitialRebalanceDelayMs != 0 {
		t.Errorf("env: group.initial.rebalance.delay.ms = %d, want 0", n.GroupInitialRebalanceDelayMs)
	}
	n := mustLoad(t, "", []string{"SKEIN_GROUP_INITIAL_REBALANCE_DELAY_MS=0"}, "--set", "group.initial.rebalance.delay.ms=250")
	if n.GroupInitialRebalanceDelayMs != 250 || n.Explicit["group.initial.rebalance.delay.ms"] != "250" {
		t.Errorf("--set: group.initial.rebalance.delay.ms = %d (explicit %q), want 250",
			n.GroupInitialRebalanceDelayMs, n.Explicit["group.initial.rebalance.delay.ms"])
	}
}

func TestLoadFileFormats(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"node.conf": "data.dir: /conf\n",
		"node":      "data.dir: /conf\n",
		"node.json": `{"data.dir": "/conf"}`,
		"node.toml": `"data.dir" = "/conf"` + "\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if n := mustLoad(t, "", nil, "--config", path); n.DataDir != "/conf" {
			t.Errorf("%s: data.dir = %s", name, n.DataDir)
		}
	}
}

func TestLoadAdvertiseFollowsListen(t *testing.T) {
	n := mustLoad(t, "", nil, "--listen", "127.0.0.2:19092")
	if n.Advertise != "127.0.0.2:19092" {
		t.Errorf("advertise = %s, want the listen address", n.Advertise)
	}
	n = mustLoad(t, "", nil, "--listen", "0.0.0.0:9092", "--advertise", "broker-1:9092")
	if n.Advertise != "broker-1:9092" {
		t.Errorf("advertise = %s, want broker-1:9092", n.Advertise)
	}
	if _, ok := n.Explicit["advertise"]; !ok {
		t.Errorf("advertise given by flag is not in Explicit: %v", n.Explicit)
	}
}

// TestLoadAliases covers Kafka's other names for log.retention.ms and
// log.roll.ms: converted, ranked as Kafka ranks them within a source, and
// overridden as a group by a higher source.
func TestLoadAliases(t *testing.T) {
	for _, tc := range []struct {
		name        string
		file        string
		env         []string
		args        []string
		retentionMs int64
		rollMs      int64
		explicit    map[string]string // the retention and roll keys of Explicit
	}{
		{"hours", "log.retention.hours: 24\nlog.roll.hours: 2\n", nil, nil, 86400000, 7200000,
			map[string]string{"log.retention.hours": "24", "log.roll.hours": "2"}},
		{"minutes over hours", "log.retention.hours: 24\nlog.retention.minutes: 5\n", nil, nil, 300000, 604800000,
			map[string]string{"log.retention.hours": "24", "log.retention.minutes": "5"}},
		{"ms over minutes", "log.retention.ms: 1000\nlog.retention.minutes: 5\n", nil, nil, 1000, 604800000,
			map[string]string{"log.retention.ms": "1000", "log.retention.minutes": "5"}},
		{"negative is unlimited", "log.retention.hours: -5\n", nil, nil, -1, 604800000,
			map[string]string{"log.retention.hours": "-5"}},
		{"env hours over file ms", "log.retention.ms: 1000\n", []string{"SKEIN_LOG_RETENTION_HOURS=1"}, nil, 3600000, 604800000,
			map[string]string{"log.retention.hours": "1"}},
		{"set ms over env hours", "", []string{"SKEIN_LOG_RETENTION_HOURS=1"}, []string{"--set", "log.retention.ms=42"}, 42, 604800000,
			map[string]string{"log.retention.ms": "42"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := mustLoad(t, tc.file, tc.env, tc.args...)
			if n.LogRetentionMs != tc.retentionMs || n.LogRollMs != tc.rollMs {
				t.Errorf("log.retention.ms, log.roll.ms = %d, %d; want %d, %d", n.LogRetentionMs, n.LogRollMs, tc.retentionMs, tc.rollMs)
			}
			got := map[string]string{}
			for k, v := range n.Explicit {
				if strings.HasPrefix(k, "log.retention.") && k != "log.retention.bytes" || strings.HasPrefix(k, "log.roll.") {
					got[k] = v
				}
			}
			if !reflect.DeepEqual(got, tc.explicit) {
				t.Errorf("Explicit = %v, want %v", got, tc.explicit)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  []string
		args []string
		want string
	}{
		{"unknown file key", "data.dir: /x\nlog.segment.byte: 1000\n", nil, nil, "configs: log.segment.byte = 1000: unknown key; did you mean log.segment.bytes? (in "},
		{"unknown nested file key", "log:\n  levle: debug\n", nil, nil, "configs: log.levle = debug: unknown key; did you mean log.level? (in "},
		{"unknown set key", "", nil, []string{"--set", "no.such.key=1"}, "configs: no.such.key = 1: unknown key (in --set)"},
		{"mistyped set key", "", nil, []string{"--set", "log.segment.size=1"}, "configs: log.segment.size = 1: unknown key; did you mean log.segment.bytes? (in --set)"},
		{"set key without its prefix", "", nil, []string{"--set", "retention.hours=1"}, "configs: retention.hours = 1: unknown key; did you mean log.retention.hours? (in --set)"},
		{"set without =", "", nil, []string{"--set", "log.segment.bytes"}, "configs: --set log.segment.bytes: want key=value"},
		{"flag and set", "", nil, []string{"--data-dir", "/a", "--set", "data.dir=/b"}, "configs: data.dir is given both by --data-dir and by --set"},
		{"not an integer in env", "", []string{"SKEIN_LOG_SEGMENT_BYTES=abc"}, nil, "configs: log.segment.bytes = abc: not an integer"},
		{"out of range", "", nil, []string{"--set", "log.segment.bytes=4294967296"}, "configs: log.segment.bytes = 4294967296: out of range for a 32-bit integer"},
		{"bad flag value", "", nil, []string{"--node-id", "one"}, "configs: node.id = one: not an integer"},
		{"too small", "log.segment.bytes: 10\n", nil, nil, "configs: log.segment.bytes = 10: must be at least 14"},
		{"bad bool", "auto.create.topics.enable: maybe\n", nil, nil, "configs: auto.create.topics.enable = maybe: must be true or false"},
		{"bad level", "", nil, []string{"--log-level", "verbose"}, "configs: log.level = verbose: must be one of trace, debug, info, warn, error"},
		{"bad durability", "", []string{"SKEIN_DURABILITY=sometimes"}, nil, "configs: durability = sometimes: must be one of fsync, replicated"},
		{"list for a scalar", "data.dir: [a, b]\n", nil, nil, `configs: data.dir = "[a b]": a list is allowed only for log.cleanup.policy`},
		{"bad alias", "log.roll.hours: 0\n", nil, nil, "configs: log.roll.hours = 0: must be at least 1"},
		{"alias not an integer", "", []string{"SKEIN_LOG_RETENTION_HOURS=1.5"}, nil, "configs: log.retention.hours = 1.5: not a 32-bit integer"},
		{"unspecified advertise", "", nil, []string{"--listen", "0.0.0.0:9092"}, "configs: advertise = 0.0.0.0:9092: must name a host clients can reach"},
		{"missing file", "", nil, []string{"--config", "/nonexistent/node.yaml"}, "configs: reading /nonexistent/node.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.file, tc.env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Node)
		want   string // the whole message; "" for valid
	}{
		{"default", func(*Node) {}, ""},
		{"node.id", func(n *Node) { n.NodeID = -1 }, "configs: node.id = -1: must be at least 0"},
		{"data.dir", func(n *Node) { n.DataDir = "" }, `configs: data.dir = "": must not be empty`},
		{"listen", func(n *Node) { n.Listen = "localhost" }, "configs: listen = localhost: must be host:port"},
		{"listen port", func(n *Node) { n.Listen = "localhost:70000" }, "configs: listen = localhost:70000: port must be a number from 0 to 65535"},
		{"listen any", func(n *Node) { n.Listen = ":9092" }, ""},
		{"advertise empty host", func(n *Node) { n.Advertise = ":9092" }, "configs: advertise = :9092: must name a host clients can reach, not an unspecified address (set advertise when listen is 0.0.0.0 or [::])"},
		{"advertise ipv6 any", func(n *Node) { n.Advertise = "[::]:9092" }, "configs: advertise = [::]:9092: must name a host"},
		{"admin.listen", func(n *Node) { n.AdminListen = "x" }, "configs: admin.listen = x: must be host:port"},
		{"log.format", func(n *Node) { n.LogFormat = "xml" }, "configs: log.format = xml: must be one of auto, console, json"},
		{"num.partitions", func(n *Node) { n.NumPartitions = 0 }, "configs: num.partitions = 0: must be at least 1"},
		{"default.replication.factor", func(n *Node) { n.DefaultReplicationFactor = 0 }, "configs: default.replication.factor = 0: must be at least 1"},
		{"group.initial.rebalance.delay.ms", func(n *Node) { n.GroupInitialRebalanceDelayMs = -1 }, "configs: group.initial.rebalance.delay.ms = -1: must be at least 0"},
		{"group.initial.rebalance.delay.ms 0", func(n *Node) { n.GroupInitialRebalanceDelayMs = 0 }, ""},
		{"group.consumer.migration.policy", func(n *Node) { n.GroupConsumerMigrationPolicy = "sideways" }, "configs: group.consumer.migration.policy = sideways: must be one of bidirectional, upgrade, downgrade, disabled"},
		{"log.retention.ms 0", func(n *Node) { n.LogRetentionMs = 0 }, "configs: log.retention.ms = 0: must be -1 (unlimited) or at least 1"},
		{"log.retention.ms -2", func(n *Node) { n.LogRetentionMs = -2 }, "configs: log.retention.ms = -2: must be at least -1"},
		{"log.retention.ms unlimited", func(n *Node) { n.LogRetentionMs = -1 }, ""},
		{"log.segment.bytes", func(n *Node) { n.LogSegmentBytes = 10 }, "configs: log.segment.bytes = 10: must be at least 14"},
		{"log.segment.bytes minimum", func(n *Node) { n.LogSegmentBytes = MinSegmentBytes }, ""},
		{"log.roll.ms", func(n *Node) { n.LogRollMs = 0 }, "configs: log.roll.ms = 0: must be at least 1"},
		{"log.index.size.max.bytes", func(n *Node) { n.LogIndexSizeMaxBytes = 3 }, "configs: log.index.size.max.bytes = 3: must be at least 4"},
		{"log.index.interval.bytes", func(n *Node) { n.LogIndexIntervalBytes = -1 }, "configs: log.index.interval.bytes = -1: must be at least 0"},
		{"log.cleanup.policy", func(n *Node) { n.LogCleanupPolicy = CleanupPolicy{} }, `configs: log.cleanup.policy = "": must be delete, compact, or both (compact,delete)`},
		{"log.cleaner.delete.retention.ms", func(n *Node) { n.LogCleanerDeleteRetentionMs = -1 }, "configs: log.cleaner.delete.retention.ms = -1: must be at least 0"},
		{"log.cleaner.min.compaction.lag.ms", func(n *Node) { n.LogCleanerMinCompactionLagMs = -1 }, "configs: log.cleaner.min.compaction.lag.ms = -1: must be at least 0"},
		{"message.max.bytes", func(n *Node) { n.MessageMaxBytes = -1 }, "configs: message.max.bytes = -1: must be at least 0"},
		{"log.message.timestamp.type", func(n *Node) { n.LogMessageTimestampType = "createtime" }, "configs: log.message.timestamp.type = createtime: must be one of CreateTime, LogAppendTime"},
		{"min.insync.replicas", func(n *Node) { n.MinInsyncReplicas = 0 }, "configs: min.insync.replicas = 0: must be at least 1"},
		{"log.flush.interval.messages", func(n *Node) { n.LogFlushIntervalMessages = 0 }, "configs: log.flush.interval.messages = 0: must be at least 1"},
		{"log.flush.interval.ms", func(n *Node) { n.LogFlushIntervalMs = -1 }, "configs: log.flush.interval.ms = -1: must be at least 0"},
		{"compression.type", func(n *Node) { n.CompressionType = "brotli" }, "configs: compression.type = brotli: must be one of producer, uncompressed, gzip, snappy, lz4, zstd"},
		{"replica.selector.class", func(n *Node) { n.ReplicaSelectorClass = "com.example.NearestSelector" }, "configs: replica.selector.class = com.example.NearestSelector: Skein's one replica selector is org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		{"replica.selector.class rack-aware", func(n *Node) { n.ReplicaSelectorClass = RackAwareReplicaSelector }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Default()
			tc.change(&n)
			err := n.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want == "":
			case err == nil || !strings.HasPrefix(err.Error(), tc.want):
				t.Fatalf("Validate() = %v\nwant %s", err, tc.want)
			default:
				var e *Error
				if !errors.As(err, &e) || e.Key != tc.name && !strings.HasPrefix(tc.name, e.Key) {
					t.Fatalf("errors.As(*Error) = %+v, want key %s", e, tc.name)
				}
			}
		})
	}
}

func TestValidateJoinsEveryError(t *testing.T) {
	n := Default()
	n.NodeID, n.LogSegmentBytes = -1, 1
	err := n.Validate()
	want := "configs: node.id = -1: must be at least 0\nconfigs: log.segment.bytes = 1: must be at least 14"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v, want\n%s", err, want)
	}
}

func TestParseCleanupPolicy(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    CleanupPolicy
		str     string
		wantErr string
	}{
		{"delete", CleanupPolicy{Delete: true}, "delete", ""},
		{"compact", CleanupPolicy{Compact: true}, "compact", ""},
		{"compact,delete", CleanupPolicy{Delete: true, Compact: true}, "compact,delete", ""},
		{"delete,compact", CleanupPolicy{Delete: true, Compact: true}, "compact,delete", ""},
		{"delete, compact", CleanupPolicy{Delete: true, Compact: true}, "compact,delete", ""},
		{"", CleanupPolicy{}, "", "must be delete, compact, or both (compact,delete)"},
		{"Delete", CleanupPolicy{}, "", "must be delete, compact, or both"},
		{"delete,", CleanupPolicy{}, "", "must be delete, compact, or both"},
		{"delete,delete", CleanupPolicy{}, "", "delete appears twice"},
		{"compact,delete,compact", CleanupPolicy{}, "", "compact appears twice"},
	} {
		p, err := ParseCleanupPolicy(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCleanupPolicy(%q) = %v, %v; want error %q", tc.in, p, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p != tc.want || p.String() != tc.str {
			t.Errorf("ParseCleanupPolicy(%q) = %+v (%q), %v; want %+v (%q)", tc.in, p, p.String(), err, tc.want, tc.str)
		}
	}
	// In a file, the policy may also be a YAML list.
	n := mustLoad(t, "log.cleanup.policy: [delete, compact]\n", nil)
	if n.LogCleanupPolicy != (CleanupPolicy{Delete: true, Compact: true}) {
		t.Errorf("YAML list: log.cleanup.policy = %v", n.LogCleanupPolicy)
	}
	n = mustLoad(t, "", []string{"SKEIN_LOG_CLEANUP_POLICY=compact"})
	if n.LogCleanupPolicy != (CleanupPolicy{Compact: true}) {
		t.Errorf("env: log.cleanup.policy = %v", n.LogCleanupPolicy)
	}
}

func TestResolveTopic(t *testing.T) {
	broker := Default()
	broker.LogSegmentBytes = 1 << 20
	broker.LogCleanupPolicy = CleanupPolicy{Compact: true}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		check     func(Topic) bool
		wantErr   string
	}{
		{"broker defaults", nil, func(t Topic) bool {
			return t.SegmentBytes == 1<<20 && t.CleanupPolicy == CleanupPolicy{Compact: true} && t.RetentionMs == 604800000
		}, ""},
		{"overrides", map[string]string{"segment.bytes": "4096", "cleanup.policy": "delete,compact", "retention.ms": "-1", "message.timestamp.type": "LogAppendTime", "compression.type": "zstd"},
			func(t Topic) bool {
				return t.SegmentBytes == 4096 && t.CleanupPolicy == CleanupPolicy{Delete: true, Compact: true} && t.RetentionMs == -1 &&
					t.MessageTimestampType == LogAppendTime && t.CompressionType == CompressionZstd
			}, ""},
		{"topic may set retention.ms 0", map[string]string{"retention.ms": "0"}, func(t Topic) bool { return t.RetentionMs == 0 }, ""},
		{"unknown", map[string]string{"segment.byte": "1"}, nil, "configs: segment.byte = 1: unknown topic config"},
		{"broker name is not a topic config", map[string]string{"log.segment.bytes": "1"}, nil, "configs: log.segment.bytes = 1: unknown topic config"},
		{"not a number", map[string]string{"retention.ms": "7d"}, nil, "configs: retention.ms = 7d: not an integer"},
		{"too small", map[string]string{"segment.bytes": "13"}, nil, "configs: segment.bytes = 13: must be at least 14"},
		{"retention.ms -2", map[string]string{"retention.ms": "-2"}, nil, "configs: retention.ms = -2: must be at least -1"},
		{"bad policy", map[string]string{"cleanup.policy": "archive"}, nil, "configs: cleanup.policy = archive: must be delete, compact, or both (compact,delete)"},
		{"bad timestamp type", map[string]string{"message.timestamp.type": "Now"}, nil, "configs: message.timestamp.type = Now: must be one of CreateTime, LogAppendTime"},
		{"several", map[string]string{"segment.ms": "0", "flush.ms": "-1"}, nil, "configs: segment.ms = 0: must be at least 1\nconfigs: flush.ms = -1: must be at least 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveTopic(broker, tc.overrides)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("ResolveTopic = %v, want error %q", err, tc.wantErr)
				}
				if verr := ValidateTopicOverrides(tc.overrides); verr == nil || verr.Error() != err.Error() {
					t.Fatalf("ValidateTopicOverrides = %v, want %v", verr, err)
				}
				return
			}
			if err != nil || !tc.check(got) {
				t.Fatalf("ResolveTopic = %+v, %v", got, err)
			}
			if err := ValidateTopicOverrides(tc.overrides); err != nil {
				t.Fatalf("ValidateTopicOverrides = %v", err)
			}
		})
	}
}

func TestDescribeTopic(t *testing.T) {
	def := func(name, value string) Synonym { return Synonym{name, value, SourceDefault} }
	brk := func(name, value string) Synonym { return Synonym{name, value, SourceBroker} }
	top := func(name, value string) Synonym { return Synonym{name, value, SourceTopic} }

	// A loaded node: log.retention.hours and log.segment.bytes set in the
	// file, log.cleanup.policy by the environment.
	loaded := mustLoad(t, "log.retention.hours: 24\nlog.segment.bytes: 1048576\n", []string{"SKEIN_LOG_CLEANUP_POLICY=compact"})
	// A node built in code: no Explicit, but a non-default value.
	built := Default()
	built.MinInsyncReplicas = 2

	for _, tc := range []struct {
		name      string
		broker    Node
		overrides map[string]string
		want      map[string]ConfigEntry // entries to check, by name
	}{
		{"defaults", Default(), nil, map[string]ConfigEntry{
			"retention.ms":      {"retention.ms", "604800000", SourceDefault, []Synonym{def("log.retention.hours", "168")}},
			"segment.ms":        {"segment.ms", "604800000", SourceDefault, []Synonym{def("log.roll.hours", "168")}},
			"segment.bytes":     {"segment.bytes", "1073741824", SourceDefault, []Synonym{def("log.segment.bytes", "1073741824")}},
			"max.message.bytes": {"max.message.bytes", "1048588", SourceDefault, []Synonym{def("message.max.bytes", "1048588")}},
			"flush.ms":          {"flush.ms", "9223372036854775807", SourceDefault, []Synonym{def("log.flush.interval.ms", "9223372036854775807")}},
		}},
		{"broker", loaded, nil, map[string]ConfigEntry{
			"retention.ms":   {"retention.ms", "86400000", SourceBroker, []Synonym{brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
			"segment.bytes":  {"segment.bytes", "1048576", SourceBroker, []Synonym{brk("log.segment.bytes", "1048576"), def("log.segment.bytes", "1073741824")}},
			"cleanup.policy": {"cleanup.policy", "compact", SourceBroker, []Synonym{brk("log.cleanup.policy", "compact"), def("log.cleanup.policy", "delete")}},
			"segment.ms":     {"segment.ms", "604800000", SourceDefault, []Synonym{def("log.roll.hours", "168")}},
		}},
		{"topic over broker", loaded, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete,compact", "segment.ms": "60000"}, map[string]ConfigEntry{
			"retention.ms": {"retention.ms", "1000", SourceTopic, []Synonym{top("retention.ms", "1000"), brk("log.retention.hours", "24"), def("log.retention.hours", "168")}},
			// The override as set, in its order, as Kafka shows it.
			"cleanup.policy": {"cleanup.policy", "delete,compact", SourceTopic, []Synonym{top("cleanup.policy", "delete,compact"), brk("log.cleanup.policy", "compact"), def("log.cleanup.policy", "delete")}},
			"segment.ms":     {"segment.ms", "60000", SourceTopic, []Synonym{top("segment.ms", "60000"), def("log.roll.hours", "168")}},
			"segment.bytes":  {"segment.bytes", "1048576", SourceBroker, []Synonym{brk("log.segment.bytes", "1048576"), def("log.segment.bytes", "1073741824")}},
		}},
		{"built in code", built, nil, map[string]ConfigEntry{
			"min.insync.replicas": {"min.insync.replicas", "2", SourceBroker, []Synonym{brk("min.insync.replicas", "2"), def("min.insync.replicas", "1")}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := DescribeTopic(tc.broker, tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(topicKeys) {
				t.Fatalf("%d entries, want one per topic config (%d)", len(entries), len(topicKeys))
			}
			for i, e := range entries {
				if i > 0 && entries[i-1].Name >= e.Name {
					t.Errorf("entries not sorted: %s before %s", entries[i-1].Name, e.Name)
				}
				if len(topicKeys[e.Name].broker) == 0 && tc.overrides[e.Name] == "" {
					// No broker default (the throttled replicas): no
					// synonym, as in Kafka.
					if e.Source != SourceDefault || len(e.Synonyms) != 0 || e.Value != "" {
						t.Errorf("%s: %+v, want the empty default without synonyms", e.Name, e)
					}
					continue
				}
				if len(e.Synonyms) == 0 || e.Source != e.Synonyms[0].Source || e.Synonyms[len(e.Synonyms)-1].Source != SourceDefault {
					t.Errorf("%s: source %v, synonyms %v: want the first synonym's source and a default last", e.Name, e.Source, e.Synonyms)
				}
				if want, ok := tc.want[e.Name]; ok && !reflect.DeepEqual(e, want) {
					t.Errorf("%s:\n got %+v\nwant %+v", e.Name, e, want)
				}
			}
		})
	}
	if _, err := DescribeTopic(Default(), map[string]string{"nope": "1"}); err == nil {
		t.Error("DescribeTopic with an unknown config: no error")
	}
}

func TestSourceString(t *testing.T) {
	for s, want := range map[Source]string{SourceTopic: "TOPIC_CONFIG", SourceBroker: "STATIC_BROKER_CONFIG", SourceDefault: "DEFAULT_CONFIG", 9: "Source(9)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %s, want %s", s, got, want)
		}
	}
}

// TestPrintConfigRoundTrip: the YAML that --print-config prints, loaded as
// the file, gives the same configuration.
func TestPrintConfigRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"defaults", nil, nil},
		{"changed", []string{"SKEIN_LOG_RETENTION_HOURS=3"}, []string{
			"--data-dir", "/tmp/skein data", "--listen", "0.0.0.0:19092", "--advertise", "[::1]:19092", "--node-id", "42",
			"--log-level", "debug", "--log-format", "json", "--durability", "replicated",
			"--set", "log.cleanup.policy=delete,compact", "--set", "auto.create.topics.enable=false",
			"--set", "log.message.timestamp.type=LogAppendTime", "--set", "compression.type=lz4",
			"--set", "default.replication.factor=3", "--set", "log.flush.interval.ms=0",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := mustLoad(t, "", tc.env, tc.args...)
			printed := n.YAML()
			again := mustLoad(t, printed, nil)
			n.Explicit, again.Explicit = nil, nil
			if !reflect.DeepEqual(n, again) {
				t.Fatalf("round trip through\n%s\ngave %+v\nwant %+v", printed, again, n)
			}
			if again.YAML() != printed {
				t.Fatalf("YAML changed on the round trip")
			}
			for _, f := range nodeFields {
				if !strings.Contains(printed, "\n"+f.key+": ") {
					t.Errorf("YAML lacks %s:\n%s", f.key, printed)
				}
			}
		})
	}
}

// TestFieldsRoundTrip checks that every field's format parses back, so that
// no key type lacks a parser.
func TestFieldsRoundTrip(t *testing.T) {
	n, topic := Default(), DefaultTopic()
	for _, f := range nodeFields {
		var m Node
		if err := f.set(reflect.ValueOf(&m), f.format(n)); err != nil || f.format(m) != f.format(n) {
			t.Errorf("%s: %v", f.key, err)
		}
	}
	for _, f := range topicFields {
		var m Topic
		if err := f.set(reflect.ValueOf(&m), f.format(topic)); err != nil || f.format(m) != f.format(topic) {
			t.Errorf("%s: %v", f.key, err)
		}
	}
	if got := len(Keys()); got != len(nodeFields)+len(aliases) {
		t.Errorf("Keys() has %d keys", got)
	}
}
