package security

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// Principal is who a connection acts as, as Kafka's KafkaPrincipal:
// type User and a name; ANONYMOUS for a client that proved nothing.
type Principal struct{ Type, Name string }

// Anonymous is the principal of a PLAINTEXT connection, or a TLS one
// without a client certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// MappingRules are Kafka's ssl.principal.mapping.rules: each rule maps a
// certificate subject to a name, the first that matches wins, and a
// subject no rule matches is refused.
type MappingRules []mappingRule

type mappingRule struct {
	isDefault bool
	pattern   *regexp.Regexp
	replace   string
	caseTo    string // "", "L" or "U"
}

// ruleSyntax is Kafka's SslPrincipalMapper parser: a list of DEFAULT and
// RULE:pattern/replacement/[LU], separated by commas or new lines, where
// a pattern or replacement escapes its slashes.
var ruleSyntax = regexp.MustCompile(`^\s*((DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?).*?|(.*?))\s*(?:[,\n]\s*|$)`)

// ParseMappingRules parses ssl.principal.mapping.rules.
func ParseMappingRules(s string) (MappingRules, error) {
	var rules MappingRules
	rest := s
	for strings.TrimSpace(rest) != "" {
		m := ruleSyntax.FindStringSubmatchIndex(rest)
		if m == nil || m[1] == 0 {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: cannot read %q", rest)
		}
		group := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return rest[m[2*i]:m[2*i+1]]
		}
		switch {
		case group(6) != "":
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %q is neither DEFAULT nor RULE:pattern/replacement/[LU]", group(6))
		case group(2) != "":
			rules = append(rules, mappingRule{isDefault: true})
		default:
			unescape := strings.NewReplacer(`\/`, `/`)
			re, err := regexp.Compile(unescape.Replace(group(3)))
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %v", group(3), err)
			}
			rules = append(rules, mappingRule{pattern: re, replace: javaReplacement(unescape.Replace(group(4))), caseTo: group(5)})
		}
		rest = rest[m[1]:]
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: empty; DEFAULT keeps the whole subject")
	}
	return rules, nil
}

// javaReplacement turns Java's $1 into Go's ${1}, so that "$1x" means
// group 1 then x, as in Java, not a group named 1x.
var javaGroup = regexp.MustCompile(`\$(\d)`)

func javaReplacement(s string) string { return javaGroup.ReplaceAllString(s, "$${$1}") }

// Map returns the name a subject maps to; ok is false when no rule
// matches it (Kafka refuses such a client).
func (rs MappingRules) Map(subject string) (name string, ok bool) {
	for _, r := range rs {
		if r.isDefault {
			return subject, true
		}
		// Kafka's rule matches the whole subject (Matcher.matches).
		loc := r.pattern.FindStringSubmatchIndex(subject)
		if loc == nil || loc[0] != 0 || loc[1] != len(subject) {
			continue
		}
		out := string(r.pattern.ExpandString(nil, r.replace, subject, loc))
		switch r.caseTo {
		case "L":
			out = strings.ToLower(out)
		case "U":
			out = strings.ToUpper(out)
		}
		return out, true
	}
	return "", false
}

// Subject is a certificate's subject as Java's X500Principal.getName()
// writes it (RFC 2253: CN=alice,OU=eng,O=Example,C=US), what Kafka's
// mapping rules are written against.
func Subject(cert *x509.Certificate) string { return cert.Subject.String() }
