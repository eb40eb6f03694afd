package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// loadProperties loads a Java properties file given as text, as
// `skein node --config server.properties` does.
func loadProperties(t *testing.T, text string, args ...string) (Node, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(append([]string{"--config", path}, args...)); err != nil {
		t.Fatal(err)
	}
	return Load(fs, nil)
}

// A Kafka server.properties (KRaft, combined roles) reads as it is: its
// listeners, the controller listener as the node's remoting, log.dirs as
// data.dir, continuation lines and comments.
func TestKafkaServerProperties(t *testing.T) {
	n, err := loadProperties(t, `# Kafka's config/server.properties, trimmed
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093,\
    EXTERNAL://0.0.0.0:9094
advertised.listeners=PLAINTEXT://localhost:9092,EXTERNAL://kafka.example.com:19094
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT
log.dirs=/var/lib/kafka
num.partitions=3
log.retention.hours=168
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{Name: "PLAINTEXT", Protocol: Plaintext, Listen: ":9092", Advertise: "localhost:9092"},
		{Name: "EXTERNAL", Protocol: Plaintext, Listen: "0.0.0.0:9094", Advertise: "kafka.example.com:19094"},
	}
	if got := n.KafkaListeners(); !slices.Equal(got, want) {
		t.Errorf("listeners %+v, want %+v", got, want)
	}
	// The CONTROLLER listener is the node's remoting, reached at the
	// node's address in controller.quorum.voters, as Kafka's controllers.
	if n.ClusterListen != ":9093" || n.ClusterAdvertise != "localhost:9093" {
		t.Errorf("cluster.listen %q, cluster.advertise %q; want :9093, localhost:9093", n.ClusterListen, n.ClusterAdvertise)
	}
	if n.DataDir != "/var/lib/kafka" || n.NumPartitions != 3 || n.LogRetentionMs != 168*3600*1000 {
		t.Errorf("data.dir %q, num.partitions %d, retention %d", n.DataDir, n.NumPartitions, n.LogRetentionMs)
	}
}

// Bad listener settings are refused at start, each with what is wrong.
func TestListenersRefused(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"listen and listeners", "listeners=PLAINTEXT://127.0.0.1:9092\nlisten=127.0.0.1:9093\n", "listen = 127.0.0.1:9093: listeners gives the inter-broker listener 127.0.0.1:9092: set either listeners (Kafka's) or listen"},
		{"no name", "listeners=127.0.0.1:9092\n", `"127.0.0.1:9092" must be NAME://host:port`},
		{"twice", "listeners=A://127.0.0.1:1,A://127.0.0.1:2\nlistener.security.protocol.map=A:PLAINTEXT\n", "names listener A twice"},
		{"unmapped", "listeners=EXTERNAL://127.0.0.1:9094\n", "names no security protocol for listener EXTERNAL"},
		{"bad protocol", "listeners=A://127.0.0.1:1\nlistener.security.protocol.map=A:TLS\n", `"A:TLS" must be NAME:PROTOCOL`},
		{"unspecified host", "listeners=PLAINTEXT://0.0.0.0:9092\n", "listener PLAINTEXT: \"0.0.0.0:9092\" must name a host clients can reach"},
		{"advertises unknown", "listeners=PLAINTEXT://127.0.0.1:9092\nadvertised.listeners=OTHER://h:1\n", "advertises OTHER, which listeners does not declare"},
		{"inter-broker unknown", "listeners=A://127.0.0.1:1,B://127.0.0.1:2\nlistener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\n", "inter.broker.listener.name = \"\": must name one of the broker listeners"},
		{"GSSAPI", "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\n", "sasl.enabled.mechanisms (listener SASL_PLAINTEXT) = GSSAPI: GSSAPI is not served; Skein serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"},
		{"no users", "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n", "listener.name.sasl_plaintext.plain.sasl.jaas.config = \"\": the PLAIN mechanism needs its users"},
		{"no keystore", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093\n", "ssl.keystore.location (listener SSL) = \"\": a TLS listener needs its key and certificate chain"},
		{"JKS", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093\nssl.keystore.type=JKS\nssl.keystore.location=/k.jks\n", "Skein reads PEM keystores only"},
		{"client auth without CAs", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093\nlistener.name.ssl.ssl.keystore.location=/k.pem\nlistener.name.ssl.ssl.client.auth=required\n", "ssl.client.auth=required needs the CAs"},
		{"bad client auth", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093\nssl.keystore.location=/k.pem\nssl.client.auth=always\n", "must be none, requested or required"},
		{"TLS 1.1", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093\nssl.keystore.location=/k.pem\nssl.enabled.protocols=TLSv1.1\n", "may list TLSv1.2 and TLSv1.3 only"},
		{"TLS between brokers without a truststore", "listeners=SSL://127.0.0.1:9093\nssl.keystore.location=/k.pem\n", "check their leaders' certificates against"},
		{"SASL between brokers", "listeners=SASL_SSL://127.0.0.1:9093\nssl.keystore.location=/k.pem\nsasl.enabled.mechanisms=PLAIN\n", "followers fetch over PLAINTEXT or SSL"},
		{"setting of no listener", "listeners=PLAINTEXT://127.0.0.1:9092\nlistener.name.external.ssl.keystore.location=/k.pem\n", "listeners declares no listener EXTERNAL"},
		{"OAUTHBEARER without a JWKS", "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=OAUTHBEARER\n", "sasl.oauthbearer.jwks.endpoint.url = \"\": OAUTHBEARER validates tokens against a JWKS"},
		{"OAUTHBEARER unsecured", "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=OAUTHBEARER\nsasl.oauthbearer.jwks.endpoint.url=file:///k.json\nlistener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler\n", "no other handler can be named"},
		{"not per listener", "listener.name.external.num.partitions=3\n", "listener.name.external.num.partitions"},
		{"a dir twice", "log.dirs=/a,/b,/a/\n", "names /a twice"},
		{"unknown Kafka key", "num.network.threads=3\n", "num.network.threads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadProperties(t, tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %s", err, tc.want)
			}
		})
	}
}

// listener.name.<name>.ssl.* wins over ssl.* for that listener only, from
// any source; print-config writes it back.
func TestListenerTLSSettings(t *testing.T) {
	n, err := loadProperties(t, `listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094,INTERNAL://127.0.0.1:9095
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:SSL,INTERNAL:SSL
ssl.keystore.location=/etc/skein/node.pem
listener.name.external.ssl.keystore.location=/etc/skein/public.pem
listener.name.external.ssl.client.auth=required
ssl.truststore.location=/etc/skein/ca.pem
`, "--set", "listener.name.internal.ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	ext, in := n.ListenerTLS("EXTERNAL"), n.ListenerTLS("internal")
	if ext.KeystoreLocation != "/etc/skein/public.pem" || ext.ClientAuth != "required" || ext.TruststoreLocation != "/etc/skein/ca.pem" {
		t.Errorf("EXTERNAL: %+v", ext)
	}
	if in.KeystoreLocation != "/etc/skein/node.pem" || in.ClientAuth != "none" || in.PrincipalMappingRules != "RULE:^CN=(.*?),.*$/$1/" {
		t.Errorf("INTERNAL: %+v", in)
	}
	path := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(path, []byte(n.YAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	again, err := Load(fs, nil)
	if err != nil {
		t.Fatalf("loading what --print-config printed: %v\n%s", err, n.YAML())
	}
	if got := again.ListenerTLS("EXTERNAL"); got != ext {
		t.Errorf("printed and loaded again: EXTERNAL %+v, want %+v", got, ext)
	}
}

// A SASL listener's mechanisms and users, as a Kafka server.properties
// writes them; the passwords never reach the log or --print-config.
func TestListenerSASLSettings(t *testing.T) {
	n, err := loadProperties(t, `listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094
ssl.keystore.location=/etc/skein/node.pem
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="admin" password="admin-secret" \
    user_admin="admin-secret" \
    user_alice="alice-secret";
`)
	if err != nil {
		t.Fatal(err)
	}
	mechs, jaas := n.ListenerSASL("SASL_SSL")
	if !slices.Equal(mechs, []string{"PLAIN"}) || !strings.Contains(jaas["PLAIN"], `user_alice="alice-secret";`) {
		t.Errorf("mechanisms %v, JAAS %q", mechs, jaas)
	}
	for what, text := range map[string]string{"Map": fmt.Sprint(n.Map()), "YAML": n.YAML()} {
		if strings.Contains(text, "secret") {
			t.Errorf("%s shows a password:\n%s", what, text)
		}
	}
}

// scram.bootstrap.users in kafka-storage's --add-scram syntax; its
// passwords never show in the log or --print-config.
func TestBootstrapScramUsers(t *testing.T) {
	n := Default()
	n.ScramBootstrapUsers = `SCRAM-SHA-256=[name=admin,password="a,b"] ; SCRAM-SHA-512=[name=ops,password=x,iterations=8192]`
	users, err := n.BootstrapScramUsers()
	want := []ScramUser{{"SCRAM-SHA-256", "admin", "a,b", 4096}, {"SCRAM-SHA-512", "ops", "x", 8192}}
	if err != nil || !reflect.DeepEqual(users, want) {
		t.Fatalf("parsed %+v (%v), want %+v", users, err, want)
	}
	if strings.Contains(n.YAML(), "a,b") || n.Map()["scram.bootstrap.users"] != Hidden {
		t.Errorf("the passwords show: %q", n.Map()["scram.bootstrap.users"])
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=b]",
		"SCRAM-SHA-256=[name=a]",
		"SCRAM-SHA-256=[name=a,password=b",
		"SCRAM-SHA-256=[name=a,password=b,iterations=10]",
		"SCRAM-SHA-256=[name=a,password=b,salt=c]",
		"admin:secret",
	} {
		n.ScramBootstrapUsers = bad
		if err := n.Validate(); err == nil || strings.Contains(err.Error(), "password=b") {
			t.Errorf("%q: %v, want refused without the password shown", bad, err)
		}
	}
}
