package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/configs"
)

// skeinEnv is skeinCmd with more environment variables, env, for the
// passwords.
func skeinEnv(t *testing.T, addr string, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(args, environ(append([]string{"SKEIN_BROKERS=" + addr}, env...)...), strings.NewReader(""), &stdout, &stderr)
	}()
	select {
	case code := <-done:
		return result{stdout.String(), stderr.String(), code}
	case <-time.After(deadline):
		t.Fatalf("skein %s did not return within %v", strings.Join(args, " "), deadline)
		return result{}
	}
}

// userRows runs `skein user list args...` and returns its rows without
// the header, which it checks.
func userRows(t *testing.T, addr string, args ...string) [][]string {
	t.Helper()
	out := ok(t, addr, "", append([]string{"user", "list"}, args...)...)
	rows := table(out)
	if len(rows) == 0 || !slices.Equal(rows[0], []string{"USER", "MECHANISM", "ITERATIONS"}) {
		t.Fatalf("user list %v: no header\n%s", args, out)
	}
	return rows[1:]
}

// TestUserCommands: SCRAM users created with `skein user create`, the
// password from SKEIN_NEW_PASSWORD or a file, are listed, can log in
// through the client's own SCRAM flags, and once deleted (all their
// mechanisms, or one) are gone and cannot; the command line's mistakes are
// usage errors.
func TestUserCommands(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "SCRAM-SHA-256,SCRAM-SHA-512"
	})
	addr := n.Addr().String()
	sasl := n.ListenerAddr("SASL_PLAINTEXT").String()

	r := skeinEnv(t, addr, []string{"SKEIN_NEW_PASSWORD=alice-secret"}, "user", "create", "alice")
	if want := "set SCRAM-SHA-256 credential of alice (8192 iterations)\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("user create alice: %v\nwant %q", r, want)
	}
	pw := filepath.Join(t.TempDir(), "bob.pw")
	if err := os.WriteFile(pw, []byte("bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := ok(t, addr, "", "user", "create", "bob", "--new-password-file", pw, "--mechanism", "scram-sha-256,SCRAM-SHA-512", "--iterations", "4096")
	if want := "set SCRAM-SHA-256 credential of bob (4096 iterations)\nset SCRAM-SHA-512 credential of bob (4096 iterations)\n"; out != want {
		t.Errorf("user create bob printed %q, want %q", out, want)
	}
	alice := []string{"alice", "SCRAM-SHA-256", "8192"}
	bob256, bob512 := []string{"bob", "SCRAM-SHA-256", "4096"}, []string{"bob", "SCRAM-SHA-512", "4096"}
	if got, want := userRows(t, addr), [][]string{alice, bob256, bob512}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("user list: %v, want %v", got, want)
	}
	if got, want := userRows(t, addr, "alice"), [][]string{alice}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("user list alice: %v, want %v", got, want)
	}
	fails(t, addr, 1, "skein: list user nobody: RESOURCE_NOT_FOUND", "", "user", "list", "nobody")

	// The credentials work: each user connects with the client's SCRAM
	// flags, the password in SKEIN_PASSWORD.
	login := func(user, password, mechanism string) result {
		t.Helper()
		return skeinEnv(t, sasl, []string{"SKEIN_PASSWORD=" + password}, "topic", "list", "--timeout", "5s",
			"--sasl-mechanism", mechanism, "--user", user)
	}
	for _, c := range [][3]string{{"alice", "alice-secret", "SCRAM-SHA-256"}, {"bob", "bob-secret", "SCRAM-SHA-512"}} {
		if r := login(c[0], c[1], c[2]); r.code != 0 {
			t.Errorf("%s logging in with %s: %v", c[0], c[2], r)
		}
	}

	// Deleted, by default every mechanism the user has, or one.
	if out = ok(t, addr, "", "user", "delete", "alice"); out != "deleted SCRAM-SHA-256 credential of alice\n" {
		t.Errorf("user delete alice printed %q", out)
	}
	if r := login("alice", "alice-secret", "SCRAM-SHA-256"); r.code != 1 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("alice logging in once deleted: %v", r)
	}
	if out = ok(t, addr, "", "user", "delete", "bob", "--mechanism", "SCRAM-SHA-512"); out != "deleted SCRAM-SHA-512 credential of bob\n" {
		t.Errorf("user delete bob --mechanism SCRAM-SHA-512 printed %q", out)
	}
	if got, want := userRows(t, addr), [][]string{bob256}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("user list after deleting: %v, want %v", got, want)
	}
	fails(t, addr, 1, "skein: delete user bob (SCRAM-SHA-512): RESOURCE_NOT_FOUND", "", "user", "delete", "bob", "--mechanism", "SCRAM-SHA-512")
	r = skeinCmd(t, addr, "", "user", "delete", "alice", "bob")
	if r.code != 1 || r.stdout != "deleted SCRAM-SHA-256 credential of bob\n" || r.stderr != "skein: delete user alice: the user has no SCRAM credential\n" {
		t.Errorf("user delete alice bob: %v", r)
	}
	if got := userRows(t, addr); len(got) != 0 {
		t.Errorf("user list after deleting all: %v", got)
	}

	// The new password never comes from SKEIN_PASSWORD, nor from two places.
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"SKEIN_PASSWORD=x"}, nil, "give the new user's password in SKEIN_NEW_PASSWORD or --new-password-file"},
		{[]string{"SKEIN_NEW_PASSWORD=x"}, []string{"--new-password-file", pw}, "not both"},
		{nil, []string{"--new-password-file", filepath.Join(t.TempDir(), "missing")}, "--new-password-file: open"},
		{[]string{"SKEIN_NEW_PASSWORD=x"}, []string{"--iterations", "100"}, "--iterations 100: want 4096 to 16384"},
		{[]string{"SKEIN_NEW_PASSWORD=x"}, []string{"--mechanism", "PLAIN"}, `--mechanism "PLAIN": want SCRAM-SHA-256 or SCRAM-SHA-512`},
	} {
		r := skeinEnv(t, addr, tc.env, append([]string{"user", "create", "carol"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("user create carol %v %v: %v\nwant exit 2 and %q", tc.env, tc.args, r, tc.want)
		}
	}
	fails(t, addr, 2, "accepts 1 arg(s)", "", "user", "create")
}
