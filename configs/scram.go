package configs

import (
	"fmt"
	"strconv"
	"strings"
)

// ScramUser is one SCRAM credential a new cluster starts with.
type ScramUser struct {
	Mechanism, Name, Password string
	Iterations                int
}

// scramBootstrapKey is the key of the bootstrap credentials, which hold
// passwords: shown as Hidden.
const scramBootstrapKey = "scram.bootstrap.users"

// BootstrapScramUsers parses scram.bootstrap.users: entries as Kafka's
// `kafka-storage format --add-scram` takes them,
// SCRAM-SHA-256=[name=admin,password=admin-secret,iterations=8192],
// separated by spaces or semicolons; a value may be double-quoted (a
// password with a comma); iterations default to 4096, as Kafka's.
func (n Node) BootstrapScramUsers() ([]ScramUser, error) {
	var out []ScramUser
	rest := strings.TrimSpace(n.ScramBootstrapUsers)
	for rest != "" {
		mech, body, ok := strings.Cut(rest, "=[")
		if !ok {
			return nil, fmt.Errorf("%q: want MECHANISM=[name=...,password=...]", rest)
		}
		mech = strings.ToUpper(strings.TrimSpace(mech))
		if mech != "SCRAM-SHA-256" && mech != "SCRAM-SHA-512" {
			return nil, fmt.Errorf("%q is not SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
		u := ScramUser{Mechanism: mech, Iterations: 4096}
		var err error
		if rest, err = u.parse(body); err != nil {
			return nil, err
		}
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("%s entry without a name or a password", mech)
		}
		if u.Iterations < 4096 || u.Iterations > 16384 {
			return nil, fmt.Errorf("%s entry for %s: iterations %d outside Kafka's 4096-16384", mech, u.Name, u.Iterations)
		}
		out = append(out, u)
		rest = strings.TrimLeft(rest, " \t\n;")
	}
	return out, nil
}

// parse reads name=value pairs up to the closing bracket and returns
// what follows it.
func (u *ScramUser) parse(s string) (string, error) {
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "]") {
			return s[1:], nil
		}
		key, after, ok := strings.Cut(s, "=")
		if !ok {
			return "", fmt.Errorf("%s entry: unterminated, want name=value pairs and ]", u.Mechanism)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				return "", fmt.Errorf("%s entry: unterminated quote", u.Mechanism)
			}
			val, s = after[1:1+end], after[2+end:]
		} else {
			end := strings.IndexAny(after, ",]")
			if end < 0 {
				return "", fmt.Errorf("%s entry: unterminated, want ]", u.Mechanism)
			}
			val, s = after[:end], after[end:]
		}
		switch strings.TrimSpace(key) {
		case "name":
			u.Name = val
		case "password":
			u.Password = val
		case "iterations":
			n, err := strconv.Atoi(val)
			if err != nil {
				return "", fmt.Errorf("%s entry: iterations %q is not a number", u.Mechanism, val)
			}
			u.Iterations = n
		default:
			return "", fmt.Errorf("%s entry: unknown field %q (Skein takes name, password and iterations)", u.Mechanism, key)
		}
	}
}
