package cli

import (
	"crypto/x509/pkix"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/testcerts"
	"github.com/skeinlog/skein/node"
)

// startLoopback11 starts a node on 127.0.11.1, the loopback addresses the
// cli's newer tests use, with free ports.
func startLoopback11(t *testing.T, edit ...func(*configs.Node)) *node.Node {
	t.Helper()
	return startNodeProcess(t, append([]func(*configs.Node){func(c *configs.Node) {
		c.Listen, c.Advertise, c.AdminListen = "127.0.11.1:0", "127.0.11.1:0", "127.0.11.1:0"
	}}, edit...)...)
}

// skeinWith runs `skein args...` with environ() and env, and no
// SKEIN_BROKERS unless env sets it.
func skeinWith(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(args, environ(env...), strings.NewReader(""), &stdout, &stderr)
	}()
	select {
	case code := <-done:
		return result{stdout.String(), stderr.String(), code}
	case <-time.After(deadline):
		t.Fatalf("skein %s did not return within %v", strings.Join(args, " "), deadline)
		return result{}
	}
}

// TestProfiles: a profile of the config file names the brokers and the
// admin API of the commands that give none, selected by --profile,
// SKEIN_PROFILE or the file's current one; a flag and an environment
// variable win over it; a missing profile and a key the file may not have
// are usage errors.
func TestProfiles(t *testing.T) {
	n := startLoopback11(t)
	addr, admin := n.Addr().String(), n.AdminAddr().String()
	file := filepath.Join(t.TempDir(), "skein", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("profiles:\n"+
		"  here:\n    brokers: "+addr+"\n    admin: http://"+admin+"\n"+
		"  listed:\n    brokers: [127.0.11.9:1, "+addr+"]\n"+
		"  nowhere:\n    brokers: 127.0.11.9:1\n    admin: 127.0.11.9:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{envConfigFile + "=" + file}
	must := func(env []string, args ...string) string {
		t.Helper()
		r := skeinWith(t, env, args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("skein %s: %v", strings.Join(args, " "), r)
		}
		return r.stdout
	}
	must(env, "topic", "create", "profiled", "-p", "3", "--profile", "here")
	has := func(out string) bool { return row(out, "profiled", "3") != nil }
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{env, []string{"--profile", "here"}},
		{env, []string{"--profile=listed"}}, // a YAML list, whose second broker answers
		{append(env, envProfile+"=here"), nil},
		// Flags and environment variables win over the profile.
		{append(env, envProfile+"=nowhere"), []string{"--brokers", addr}},
		{append(env, envBrokers+"="+addr), []string{"--profile", "nowhere"}},
	} {
		if out := must(tc.env, append([]string{"topic", "list"}, tc.args...)...); !has(out) {
			t.Errorf("topic list %v with %v:\n%s", tc.args, tc.env, out)
		}
	}
	// The admin-API commands take the profile's admin.
	if out := must(env, "extension", "list", "--profile", "here"); !strings.HasPrefix(out, "NAME") {
		t.Errorf("extension list --profile here:\n%s", out)
	}
	if r := skeinWith(t, env, "extension", "list", "--profile", "nowhere", "--timeout", "2s"); r.code != 1 || !strings.Contains(r.stderr, "127.0.11.9:1") {
		t.Errorf("extension list --profile nowhere: %v\nwant exit 1 naming the profile's admin", r)
	}

	// Without a selection, no profile: the default brokers. profile use
	// makes one current.
	if r := skeinWith(t, env, "topic", "list", "--timeout", "1s", "--brokers", "127.0.11.9:1"); r.code != 1 {
		t.Errorf("topic list without a profile: %v", r)
	}
	if out := must(env, "profile", "use", "here"); out != "using profile here\n" {
		t.Errorf("profile use printed %q", out)
	}
	if !has(must(env, "topic", "list")) {
		t.Error("topic list does not use the current profile")
	}

	// Mistakes: exit 2, naming them.
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{env, []string{"topic", "list", "--profile", "nope"}, `skein: profile "nope" is not in ` + file + " (its profiles: here, listed, nowhere)"},
		{append(env, envProfile+"=nope"), []string{"extension", "list"}, `skein: profile "nope" is not in`},
		{env, []string{"profile", "use", "nope"}, `skein: profile "nope" is not in`},
		{[]string{envConfigFile + "=" + file + ".missing"}, []string{"topic", "list", "--profile", "here"}, `skein: profile "here": there is no ` + file + ".missing"},
	} {
		if r := skeinWith(t, tc.env, tc.args...); r.code != 2 || !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("skein %s: %v\nwant exit 2 and one line starting %q", strings.Join(tc.args, " "), r, tc.want)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("profiles:\n  x:\n    broker: a:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := skeinWith(t, []string{envConfigFile + "=" + bad}, "topic", "list", "--profile", "x"); r.code != 2 || !strings.Contains(r.stderr, "field broker not found") || !strings.Contains(r.stderr, bad) {
		t.Errorf("a profile with an unknown key: %v\nwant exit 2 naming the key and the file", r)
	}
}

// TestProfileCommands: profile create writes the file 0600 and makes the
// profile current; list and show print it (show hides a password), as
// text, json and yaml; delete removes it.
func TestProfileCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cfg", "skein", "config.yaml")
	env := []string{envConfigFile + "=" + file}
	must := func(args ...string) string {
		t.Helper()
		r := skeinWith(t, env, args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("skein %s: %v", strings.Join(args, " "), r)
		}
		return r.stdout
	}
	if out := must("profile", "list"); out != "NAME  CURRENT  BROKERS  ADMIN  TLS  SASL\n" {
		t.Errorf("profile list of no file: %q", out)
	}
	must("profile", "create", "local", "--brokers", "127.0.0.1:9092", "--admin", "127.0.0.1:9644")
	must("profile", "create", "prod", "--brokers", "a:9093,b:9093", "--admin", "https://a:9644",
		"--tls-ca", "/etc/ca.pem", "--sasl-mechanism", "scram-sha-512", "--user", "alice", "--password-env", "PROD_PW")
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v; want 0600", file, st.Mode().Perm())
	}
	if row(must("profile", "list"), "prod", "*", "a:9093,b:9093", "https://a:9644", "yes", "SCRAM-SHA-512", "alice") == nil {
		t.Errorf("profile list:\n%s", must("profile", "list"))
	}
	var views []profileView
	if err := json.Unmarshal([]byte(must("profile", "list", "-o", "json")), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Name != "local" || views[0].Current || views[0].Brokers != "127.0.0.1:9092" ||
		views[1].Name != "prod" || !views[1].Current || views[1].TLS == nil || views[1].TLS.CA != "/etc/ca.pem" || views[1].SASL.PasswordEnv != "PROD_PW" {
		t.Errorf("profile list -o json: %+v", views)
	}

	// A password written into the file is hidden by show.
	pf, _, err := readProfiles(file)
	if err != nil {
		t.Fatal(err)
	}
	pf.Profiles["prod"].SASL.PasswordEnv, pf.Profiles["prod"].SASL.Password = "", "s3cret"
	if err := writeProfiles(file, pf); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"profile", "show"}, {"profile", "show", "prod", "-o", "yaml"}, {"profile", "show", "--profile", "prod", "-o", "json"}} {
		out := must(args...)
		var v profileView
		if err := yaml.Unmarshal([]byte(out), &v); err != nil { // json is yaml too
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if strings.Contains(out, "s3cret") || !strings.Contains(out, "[hidden]") || !strings.Contains(out, "a:9093,b:9093") {
			t.Errorf("skein %s:\n%s", strings.Join(args, " "), out)
		}
	}
	if r := skeinWith(t, env, "profile", "create", "local", "--brokers", "x:1"); r.code != 2 || !strings.Contains(r.stderr, `profile "local" is already in`) {
		t.Errorf("profile create of an existing one: %v", r)
	}
	must("profile", "delete", "prod")
	if out := must("profile", "list"); row(out, "local") == nil || row(out, "prod") != nil || strings.Contains(out, "*") {
		t.Errorf("profile list after deleting the current one:\n%s", out)
	}
	if r := skeinWith(t, env, "profile", "show"); r.code != 2 || !strings.Contains(r.stderr, "no profile selected") {
		t.Errorf("profile show with none current: %v", r)
	}
}

// TestProfileSecurity: a profile's SASL settings log the client commands
// in, the password from an environment variable, a file or the profile
// itself; its TLS settings and an https:// admin address reach an HTTPS
// admin API, checking its certificate unless insecure_skip_verify.
func TestProfileSecurity(t *testing.T) {
	ca := testcerts.New(t)
	dir := t.TempDir()
	keystore, caFile, pwFile := filepath.Join(dir, "admin.pem"), filepath.Join(dir, "ca.pem"), filepath.Join(dir, "pw")
	_, serverPEM := ca.Issue(t, pkix.Name{CommonName: "127.0.0.1"}, true) // not 127.0.11.2
	testcerts.WriteFile(t, keystore, serverPEM)
	testcerts.WriteFile(t, caFile, ca.PEM)
	if err := os.WriteFile(pwFile, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNodeProcess(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.11.2:0,SASL_PLAINTEXT://127.0.11.2:0"
		c.Advertise, c.AdminListen = "", "127.0.11.2:0"
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`}}
		c.AdminKeystoreLocation = keystore
	})
	sasl, admin := n.ListenerAddr("SASL_PLAINTEXT").String(), n.AdminAddr().String()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("profiles:\n"+
		"  env:\n    brokers: "+sasl+"\n    sasl: {mechanism: PLAIN, user: alice, password_env: ALICE_PW}\n"+
		"  file:\n    brokers: "+sasl+"\n    sasl: {mechanism: plain, user: alice, password_file: "+pwFile+"}\n"+
		"  inline:\n    brokers: "+sasl+"\n    sasl: {mechanism: PLAIN, user: alice, password: alice-secret}\n"+
		"  lax:\n    admin: https://"+admin+"\n    tls: {insecure_skip_verify: true}\n    sasl: {user: alice, password: alice-secret}\n"+
		"  strict:\n    admin: https://"+admin+"\n    tls: {ca: "+caFile+"}\n    sasl: {user: alice, password: alice-secret}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{envConfigFile + "=" + file, "ALICE_PW=alice-secret"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"password_env", []string{"topic", "create", "secured", "--profile", "env"}, 0, ""},
		{"password_file", []string{"topic", "list", "--profile", "file"}, 0, "secured"},
		{"password", []string{"topic", "list", "--profile", "inline"}, 0, "secured"},
		{"another user has not the profile's password", []string{"topic", "list", "--profile", "inline", "--user", "bob"}, 2, "the password in SKEIN_PASSWORD"},
		{"https admin, certificate not checked", []string{"extension", "kinds", "--profile", "lax"}, 0, "KIND"},
		{"https admin, certificate checked", []string{"extension", "kinds", "--profile", "strict", "--timeout", "5s"}, 1, "certificate"},
	} {
		r := skeinWith(t, env, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
			t.Errorf("%s: %v\nwant exit %d and output containing %q", tc.name, r, tc.code, tc.want)
		}
	}
	if r := skeinWith(t, env[:1], "topic", "list", "--profile", "env"); r.code != 2 || !strings.Contains(r.stderr, "sasl.password_env ALICE_PW is not set") {
		t.Errorf("password_env unset: %v", r)
	}
}
