package cli

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/testcerts"
)

// TestClientCommandsOverSASL: the client commands reach a SASL listener
// with --sasl-mechanism and --user, the password from SKEIN_PASSWORD or
// --password-file; a wrong password and missing settings fail with a
// message that says so.
func TestClientCommandsOverSASL(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`}}
	})
	addr := n.ListenerAddr("SASL_PLAINTEXT").String()
	runWith := func(env []string, args ...string) result {
		t.Helper()
		var stdout, stderr strings.Builder
		code := run(args, environ(env...), strings.NewReader(""), &stdout, &stderr)
		return result{stdout.String(), stderr.String(), code}
	}
	if r := runWith([]string{"SKEIN_PASSWORD=alice-secret"}, "topic", "create", "sasl-t", "--brokers", addr,
		"--sasl-mechanism", "PLAIN", "--user", "alice"); r.code != 0 {
		t.Fatalf("topic create over SASL: %v", r)
	}
	pw := t.TempDir() + "/pw"
	if err := os.WriteFile(pw, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runWith([]string{"SKEIN_SASL_MECHANISM=PLAIN", "SKEIN_USER=alice"}, "topic", "list", "--brokers", addr,
		"--password-file", pw); r.code != 0 || !strings.Contains(r.stdout, "sasl-t") {
		t.Fatalf("topic list over SASL, the password from a file: %v", r)
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"SKEIN_PASSWORD=wrong"}, []string{"--sasl-mechanism", "PLAIN", "--user", "alice"}, "SASL_AUTHENTICATION_FAILED"},
		{nil, []string{"--sasl-mechanism", "PLAIN", "--user", "alice"}, "the password in SKEIN_PASSWORD or --password-file"},
		{nil, []string{"--sasl-mechanism", "KERBEROS"}, "want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"},
		{nil, []string{"--tls-cert", pw}, "--tls-cert and --tls-key go together"},
	} {
		r := runWith(tc.env, append([]string{"topic", "list", "--brokers", addr, "--timeout", "5s"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v %v: %v, want a failure saying %q", tc.env, tc.args, r, tc.want)
		}
	}
}

// TestAdminCommandsAuthenticate: with SASL listeners the admin API asks
// for a user's password, over HTTPS with admin.ssl.keystore.location;
// skein chaos and skein extension send it from the same flags as the
// Kafka commands (--tls-ca, --user, SKEIN_PASSWORD), and with an
// authorizer only a super user changes anything.
func TestAdminCommandsAuthenticate(t *testing.T) {
	ca := testcerts.New(t)
	dir := t.TempDir()
	keystore, caFile := filepath.Join(dir, "admin.pem"), filepath.Join(dir, "ca.pem")
	_, serverPEM := ca.Issue(t, pkix.Name{CommonName: "127.0.0.1"}, true)
	testcerts.WriteFile(t, keystore, serverPEM)
	testcerts.WriteFile(t, caFile, ca.PEM)
	n := startNodeProcess(t, func(c *configs.Node) {
		c.ChaosEnable = true
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";`}}
		c.AdminKeystoreLocation = keystore
		c.AuthorizerClassName = configs.StandardAuthorizer
		c.SuperUsers = "User:admin;User:ANONYMOUS"
	})
	admin := "--admin=" + n.AdminAddr().String()
	runWith := func(env []string, args ...string) result {
		var stdout, stderr strings.Builder
		code := run(args, environ(env...), strings.NewReader(""), &stdout, &stderr)
		return result{stdout.String(), stderr.String(), code}
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no TLS", nil, []string{"chaos", "list", admin}, 1, ""},
		{"no credentials", nil, []string{"chaos", "list", admin, "--tls-ca", caFile}, 1, "401"},
		{"a wrong password", []string{"SKEIN_PASSWORD=nope"}, []string{"chaos", "list", admin, "--tls-ca", caFile, "--user", "alice"}, 1, "401"},
		{"alice looks", []string{"SKEIN_PASSWORD=alice-secret"}, []string{"chaos", "list", admin, "--tls-ca", caFile, "--user", "alice"}, 0, ""},
		{"alice may not inject", []string{"SKEIN_PASSWORD=alice-secret"}, []string{"chaos", "heal", admin, "--tls-ca", caFile, "--user", "alice"}, 1, "only super.users"},
		{"the admin may", []string{"SKEIN_PASSWORD=admin-secret"}, []string{"chaos", "heal", admin, "--tls-ca", caFile, "--user", "admin"}, 0, ""},
		{"alice lists extension kinds", []string{"SKEIN_PASSWORD=alice-secret"}, []string{"extension", "kinds", admin, "--tls-ca", caFile, "--user", "alice"}, 0, ""},
		{"alice may not delete an extension", []string{"SKEIN_PASSWORD=alice-secret"}, []string{"extension", "delete", "x", admin, "--tls-ca", caFile, "--user", "alice"}, 1, "only super.users"},
	} {
		r := runWith(tc.env, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: %v, want exit %d and stderr containing %q", tc.name, r, tc.code, tc.want)
		}
	}
}

// TestCommandConfig: a Kafka client.properties given with --command-config
// (or SKEIN_COMMAND_CONFIG) connects a command to a SASL listener as
// Kafka's tools connect with it: the brokers, the mechanism and the JAAS
// user and password from the file; a flag wins over it; a key skein does
// not use is refused, naming it.
func TestCommandConfig(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`}}
	})
	dir := t.TempDir()
	props := filepath.Join(dir, "client.properties")
	write := func(text string) {
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("bootstrap.servers=" + n.ListenerAddr("SASL_PLAINTEXT").String() + "\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";` + "\n")
	runWith := func(env []string, args ...string) result {
		var stdout, stderr strings.Builder
		code := run(args, environ(env...), strings.NewReader(""), &stdout, &stderr)
		return result{stdout.String(), stderr.String(), code}
	}
	if r := runWith(nil, "topic", "create", "cc-t", "--command-config", props); r.code != 0 {
		t.Fatalf("topic create with --command-config: %v", r)
	}
	if r := runWith([]string{"SKEIN_COMMAND_CONFIG=" + props}, "topic", "list"); r.code != 0 || !strings.Contains(r.stdout, "cc-t") {
		t.Errorf("topic list with SKEIN_COMMAND_CONFIG: %v", r)
	}
	if r := runWith([]string{"SKEIN_PASSWORD=wrong"}, "topic", "list", "--command-config", props, "--timeout", "5s"); r.code != 1 ||
		!strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("SKEIN_PASSWORD beside the file's: %v, want it to win and fail", r)
	}
	write("security.protocol=SASL_PLAINTEXT\nacks=all\n")
	if r := runWith(nil, "topic", "list", "--command-config", props); r.code != 2 || !strings.Contains(r.stderr, "skein does not use acks") {
		t.Errorf("a key skein does not use: %v", r)
	}
}
