package security

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"
)

// PlainModule is the login module class of Kafka's PLAIN users.
const PlainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ErrAuthentication is what a client whose credentials are wrong is
// told, as Kafka tells it: nothing about which part was wrong.
var ErrAuthentication = errors.New("Authentication failed: Invalid username or password")

// SASL is what a SASL listener authenticates with: its mechanisms, in the
// order offered, and each one's credentials.
type SASL struct {
	mechanisms []string
	plain      map[string][]byte      // PLAIN: user -> password
	scram      map[string]ScramLookup // by mechanism
	oauth      *OAuthBearer
}

// ScramCredential is what a SCRAM server keeps of a user's password.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int
}

// ScramLookup returns a user's credential of a SCRAM mechanism, from the
// cluster's metadata as it is at the moment of the lookup.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)

// NewSASL builds a listener's SASL from its mechanisms, each one's
// sasl.jaas.config (PLAIN's users), the SCRAM credentials and the
// OAUTHBEARER validation (started).
func NewSASL(mechanisms []string, jaas map[string]string, lookup ScramLookup, oauth *OAuthBearer) (*SASL, error) {
	s := &SASL{mechanisms: mechanisms, scram: map[string]ScramLookup{}}
	for _, m := range mechanisms {
		switch m {
		case "OAUTHBEARER":
			if oauth == nil {
				return nil, errors.New("OAUTHBEARER: no token validation configured")
			}
			s.oauth = oauth
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			s.scram[m] = lookup
		case "PLAIN":
			j, err := ParseJAAS(jaas[m])
			if err != nil {
				return nil, fmt.Errorf("PLAIN: %w", err)
			}
			if j.Module != PlainModule {
				return nil, fmt.Errorf("PLAIN: sasl.jaas.config names %s, want %s", j.Module, PlainModule)
			}
			s.plain = map[string][]byte{}
			for k, v := range j.Options {
				if user, ok := strings.CutPrefix(k, "user_"); ok && user != "" {
					s.plain[user] = []byte(v)
				}
			}
			if len(s.plain) == 0 {
				return nil, errors.New(`PLAIN: sasl.jaas.config declares no user (user_<name>="<password>")`)
			}
		default:
			return nil, fmt.Errorf("SASL mechanism %s is not served", m)
		}
	}
	return s, nil
}

// Mechanisms returns the mechanisms offered, as SaslHandshake lists them.
func (s *SASL) Mechanisms() []string { return s.mechanisms }

// Session is one client's authentication exchange under one mechanism.
type Session interface {
	// Step takes the client's next message and returns the server's
	// answer; done once the client is authenticated. An error ends the
	// exchange: the client failed.
	Step(msg []byte) (answer []byte, done bool, err error)
	// Principal is who the client authenticated as, once done.
	Principal() Principal
}

// Expirer is a Session whose credential runs out (an OAUTHBEARER token):
// the authentication lasts no longer than it.
type Expirer interface {
	Expires() time.Time
}

// Start begins a session of a mechanism the listener offers; ok is false
// for any other.
func (s *SASL) Start(mechanism string) (Session, bool) {
	switch {
	case mechanism == "PLAIN" && s.plain != nil:
		return &plainSession{users: s.plain}, true
	case s.scram[mechanism] != nil:
		return newScramSession(mechanism, s.scram[mechanism]), true
	case mechanism == "OAUTHBEARER" && s.oauth != nil:
		return &oauthSession{o: s.oauth}, true
	}
	return nil, false
}

// plainSession is RFC 4616: one message, authzid NUL authcid NUL passwd.
type plainSession struct {
	users map[string][]byte
	user  string
}

func (p *plainSession) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, errors.New("Invalid SASL/PLAIN response: expected 3 tokens")
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || len(pass) == 0 {
		return nil, false, errors.New("Authentication failed: username or password not specified")
	}
	if authzid != "" && authzid != user {
		return nil, false, errors.New("Authentication failed: Client requested an authorization id that is different from username")
	}
	want, ok := p.users[user]
	// Compare even for an unknown user, so that the time does not say
	// which users exist.
	if !ok {
		want = []byte{0}
	}
	if subtle.ConstantTimeCompare(want, pass) != 1 || !ok {
		return nil, false, ErrAuthentication
	}
	p.user = user
	return nil, true, nil
}

func (p *plainSession) Principal() Principal { return Principal{Type: "User", Name: p.user} }

// CheckPassword checks a user's password against the listener's PLAIN
// users and SCRAM credentials, for HTTP Basic authentication (the admin
// API): a SCRAM credential is checked as a SCRAM server would, by salting
// the password with its salt and iterations and comparing the stored key.
func (s *SASL) CheckPassword(user, password string) (Principal, bool) {
	if _, ok := s.PasswordMechanism(user, password); ok {
		return Principal{Type: "User", Name: user}, true
	}
	return Principal{}, false
}

// PasswordMechanism returns the mechanism under which user's password
// checks, as CheckPassword checks it: PLAIN first, then the SCRAM
// mechanisms in the listener's order. The console logs in with it.
func (s *SASL) PasswordMechanism(user, password string) (string, bool) {
	if want, ok := s.plain[user]; ok && subtle.ConstantTimeCompare(want, []byte(password)) == 1 {
		return "PLAIN", true
	}
	for _, mechanism := range s.mechanisms {
		lookup := s.scram[mechanism]
		if lookup == nil {
			continue
		}
		c, ok := lookup(mechanism, user)
		if !ok {
			continue
		}
		h := scramHash(mechanism)
		salted, err := pbkdf2.Key(h, password, c.Salt, c.Iterations, h().Size())
		if err != nil {
			continue
		}
		if stored, _ := ScramKeys(mechanism, salted); subtle.ConstantTimeCompare(stored, c.StoredKey) == 1 {
			return mechanism, true
		}
	}
	return "", false
}

// CheckToken validates an OAUTHBEARER token for bearer authentication
// (the admin API), when the listener offers OAUTHBEARER.
func (s *SASL) CheckToken(token string) (Principal, bool) {
	if s.oauth == nil {
		return Principal{}, false
	}
	name, _, err := s.oauth.validate(token)
	if err != nil {
		return Principal{}, false
	}
	return Principal{Type: "User", Name: name}, true
}
