package cli

import (
	"slices"
	"testing"

	"github.com/skeinlog/skein/configs"
)

// startAuthorizingNode starts a node with Kafka's StandardAuthorizer, on
// which the tests' PLAINTEXT client, User:ANONYMOUS, is a super user and
// may therefore manage ACLs.
func startAuthorizingNode(t *testing.T) string {
	t.Helper()
	return startNode(t, func(c *configs.Node) {
		c.AuthorizerClassName = configs.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS"
	})
}

// aclRows runs `skein acl list args...` and returns its rows without the
// header, which it checks.
func aclRows(t *testing.T, addr string, args ...string) [][]string {
	t.Helper()
	out := ok(t, addr, "", append([]string{"acl", "list"}, args...)...)
	rows := table(out)
	if len(rows) == 0 || !slices.Equal(rows[0], aclHeader) {
		t.Fatalf("acl list %v: no header\n%s", args, out)
	}
	return rows[1:]
}

// TestACLCommands: two ACLs created with `skein acl create` (an allow on
// a literal topic, a deny from one host on a prefixed group) are listed,
// whole and through each filter; a delete with a filter removes one and
// the list shows the other; --all removes the rest; the command line's
// mistakes are usage errors.
func TestACLCommands(t *testing.T) {
	addr := startAuthorizingNode(t)

	out := ok(t, addr, "", "acl", "create", "--allow-principal", "User:alice", "--operation", "read", "--operation", "Describe", "--topic", "orders")
	if want := "created ALLOW User:alice READ on TOPIC orders (LITERAL) from host *\n" +
		"created ALLOW User:alice DESCRIBE on TOPIC orders (LITERAL) from host *\n"; out != want {
		t.Errorf("acl create printed %q, want %q", out, want)
	}
	out = ok(t, addr, "", "acl", "create", "--deny-principal", "User:bob", "--deny-host", "10.0.0.7",
		"--operation", "READ", "--group", "billing-", "--resource-pattern-type", "Prefixed")
	if want := "created DENY User:bob READ on GROUP billing- (PREFIXED) from host 10.0.0.7\n"; out != want {
		t.Errorf("acl create printed %q, want %q", out, want)
	}
	// A principal without its type is a mistake of the command line.
	fails(t, addr, 2, `--allow-principal "bob": want TYPE:NAME`, "",
		"acl", "create", "--allow-principal", "bob", "--operation", "Read", "--group", "billing")

	alice := [][]string{
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"},
		{"TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"},
	}
	bob := [][]string{{"GROUP", "billing-", "PREFIXED", "User:bob", "10.0.0.7", "READ", "DENY"}}
	for _, tc := range []struct {
		args []string
		want [][]string
	}{
		{nil, append(slices.Clone(bob), alice...)},
		{[]string{"--principal", "User:alice"}, alice},
		{[]string{"--principal", "User:alice", "--principal", "User:bob"}, append(slices.Clone(bob), alice...)},
		{[]string{"--topic", "orders"}, alice},
		{[]string{"--topic", "orders", "--operation", "read"}, alice[1:]},
		{[]string{"--operation", "read"}, append(slices.Clone(bob), alice[1:]...)},
		{[]string{"--group", "billing-"}, bob},
		// A prefixed ACL is of exactly its name; match finds it from a
		// group it applies to.
		{[]string{"--group", "billing-eu"}, nil},
		{[]string{"--group", "billing-eu", "--resource-pattern-type", "match"}, bob},
		{[]string{"--resource-pattern-type", "literal"}, alice},
		{[]string{"--cluster"}, nil},
		{[]string{"--principal", "User:carol"}, nil},
	} {
		if got := aclRows(t, addr, tc.args...); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("acl list %v:\n%v\nwant\n%v", tc.args, got, tc.want)
		}
	}

	// A filtered delete removes bob's ACL only.
	fails(t, addr, 2, "name what to delete", "", "acl", "delete")
	fails(t, addr, 2, "name what to delete", "", "acl", "delete", "--operation", "read")
	out = ok(t, addr, "", "acl", "delete", "--principal", "User:bob")
	if want := "deleted DENY User:bob READ on GROUP billing- (PREFIXED) from host 10.0.0.7\n"; out != want {
		t.Errorf("acl delete --principal User:bob printed %q, want %q", out, want)
	}
	if got := aclRows(t, addr); !slices.EqualFunc(got, alice, slices.Equal) {
		t.Errorf("acl list after deleting bob's:\n%v\nwant\n%v", got, alice)
	}
	if out = ok(t, addr, "", "acl", "delete", "--principal", "User:bob"); out != "no ACL matched\n" {
		t.Errorf("acl delete of nothing printed %q", out)
	}
	// --all with a filter: every READ ACL, only alice's now.
	out = ok(t, addr, "", "acl", "delete", "--all", "--operation", "Read")
	if want := "deleted ALLOW User:alice READ on TOPIC orders (LITERAL) from host *\n"; out != want {
		t.Errorf("acl delete --all --operation Read printed %q, want %q", out, want)
	}
	ok(t, addr, "", "acl", "delete", "--all")
	if got := aclRows(t, addr); len(got) != 0 {
		t.Errorf("acl list after delete --all: %v", got)
	}

	for _, tc := range []struct {
		want string
		args []string
	}{
		{"name a principal", []string{"--operation", "Read", "--topic", "t"}},
		{"name an operation", []string{"--allow-principal", "User:a", "--topic", "t"}},
		{"name a resource", []string{"--allow-principal", "User:a", "--operation", "Read"}},
		{`--allow-principal "alice": want TYPE:NAME`, []string{"--allow-principal", "alice", "--operation", "Read", "--topic", "t"}},
		{`--operation "Any"`, []string{"--allow-principal", "User:a", "--operation", "Any", "--topic", "t"}},
		{`--operation "Fly"`, []string{"--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"}},
		{`--resource-pattern-type "match": want literal, prefixed`, []string{"--allow-principal", "User:a", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "match"}},
		{"--deny-host needs --deny-principal", []string{"--allow-principal", "User:a", "--deny-host", "h", "--operation", "Read", "--topic", "t"}},
		{"--topic: empty name", []string{"--allow-principal", "User:a", "--operation", "Read", "--topic", ""}},
	} {
		fails(t, addr, 2, tc.want, "", append([]string{"acl", "create"}, tc.args...)...)
	}
	fails(t, addr, 2, `--resource-pattern-type "exact"`, "", "acl", "list", "--resource-pattern-type", "exact")
}

// TestACLCommandsWithoutAuthorizer: a broker without an authorizer
// answers SECURITY_DISABLED, and each command says so and exits 1; create
// names every ACL it could not create.
func TestACLCommandsWithoutAuthorizer(t *testing.T) {
	addr := startNode(t)
	r := skeinCmd(t, addr, "", "acl", "create", "--allow-principal", "User:alice", "--operation", "Read,Write", "--topic", "orders")
	if want := "skein: create ACL ALLOW User:alice READ on TOPIC orders (LITERAL) from host *: SECURITY_DISABLED: Security features are disabled. (No Authorizer is configured.)\n" +
		"skein: create ACL ALLOW User:alice WRITE on TOPIC orders (LITERAL) from host *: SECURITY_DISABLED: Security features are disabled. (No Authorizer is configured.)\n"; r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Errorf("acl create: %v\nwant exit 1 and stderr %q", r, want)
	}
	fails(t, addr, 1, "skein: list ACLs: SECURITY_DISABLED", "", "acl", "list")
	r = skeinCmd(t, addr, "", "acl", "delete", "--principal", "User:alice", "--operation", "Read,Write")
	if want := "skein: delete ACLs: SECURITY_DISABLED: Security features are disabled. (No Authorizer is configured.)\n"; r.code != 1 || r.stderr != want {
		t.Errorf("acl delete: %v\nwant exit 1 and stderr %q, once", r, want)
	}
}
