package security

import (
	"strings"
	"testing"
)

// Kafka's ssl.principal.mapping.rules, with cases from its
// SslPrincipalMapperTest.
func TestMappingRules(t *testing.T) {
	for _, tc := range []struct{ rules, subject, want string }{
		{"DEFAULT", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "CN=kafka1,OU=ServiceUsers,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "CN=Kafka1,OU=ServiceUsers,O=Org,C=US", "kafka1"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U", "CN=kafka1,OU=ServiceUsers,O=Org,C=US", "KAFKA1"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
			"CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
			"CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/\nDEFAULT", "CN=other,O=Org", "CN=other,O=Org"},
		{`RULE:^CN=(.*),O=(.*)$/$1\/$2/`, "CN=a,O=b", "a/b"},
		{"RULE:^CN=(.*?),.*$/$1x/", "CN=a,O=b", "ax"}, // Java's $1 then x
	} {
		rules, err := ParseMappingRules(tc.rules)
		if err != nil {
			t.Errorf("%q: %v", tc.rules, err)
			continue
		}
		if got, ok := rules.Map(tc.subject); !ok || got != tc.want {
			t.Errorf("%q on %q: %q %v, want %q", tc.rules, tc.subject, got, ok, tc.want)
		}
	}
	// A subject no rule matches is refused (the rule matches whole
	// subjects only).
	rules, _ := ParseMappingRules("RULE:^CN=(.*?),OU=eng$/$1/")
	if got, ok := rules.Map("CN=a,OU=eng,O=x"); ok {
		t.Errorf("mapped to %q", got)
	}
	for _, bad := range []string{"", "DEFAUL", "DEFAULT/L", "RULE:/", "RULE:^CN=(.*?)$/$1", "RULE:^CN=(?P<x/$1/", "DEFAULT,, FOO"} {
		if _, err := ParseMappingRules(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// Kafka's JAAS lines, as server.properties writes them, and PLAIN's
// checks.
func TestPlainUsersFromJAAS(t *testing.T) {
	s, err := NewSASL([]string{"PLAIN"}, map[string]string{"PLAIN": `org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="al\"ice";`}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		msg  string
		ok   bool
		user string
	}{
		{"\x00alice\x00al\"ice", true, "alice"},
		{"alice\x00alice\x00al\"ice", true, "alice"},
		{"bob\x00alice\x00al\"ice", false, ""},
		{"\x00alice\x00wrong", false, ""},
		{"\x00mallory\x00al\"ice", false, ""},
		{"\x00username\x00admin-secret", false, ""}, // the module's own options are not users
		{"\x00alice", false, ""},
	} {
		sess, _ := s.Start("PLAIN")
		_, done, err := sess.Step([]byte(tc.msg))
		if done != tc.ok || (err == nil) != tc.ok || tc.ok && sess.Principal().Name != tc.user {
			t.Errorf("%q: done %v err %v principal %v", tc.msg, done, err, sess.Principal())
		}
	}
	if _, ok := s.Start("SCRAM-SHA-256"); ok {
		t.Error("a session of a mechanism not offered")
	}
	for _, bad := range []string{
		``, `PlainLoginModule required user_a="x"`, `org.apache.kafka.common.security.plain.PlainLoginModule always user_a="x";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin";`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required user_a="x";`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x;`,
	} {
		if _, err := NewSASL([]string{"PLAIN"}, map[string]string{"PLAIN": bad}, nil, nil); err == nil {
			t.Errorf("%q: accepted", bad)
		} else if strings.Contains(err.Error(), `"x"`) {
			t.Errorf("%q: the error shows a password: %v", bad, err)
		}
	}
}
