package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scramSession is the server's side of RFC 5802's exchange, as Kafka's
// ScramSaslServer runs it: the client's first message (its name and
// nonce), answered with the nonce, salt and iterations of its credential;
// then its final message (the proof), answered with the server's
// signature.
//
// NB: it is ours, not a library's, for one of Kafka's rules: the nonce of
// the client's final message need only end with the server's nonce.
// librdkafka, every version, sends its own nonce before the server's whole
// one, which Kafka accepts and xdg-go/scram (equality, as the RFC says)
// refuses.
type scramSession struct {
	mechanism string
	hash      func() hash.Hash
	lookup    ScramLookup

	user        string
	cred        ScramCredential
	nonce       string // the server's: the client's then ours
	first, sent string // client-first-message-bare, server-first-message
	done        bool
}

func newScramSession(mechanism string, lookup ScramLookup) *scramSession {
	return &scramSession{mechanism: mechanism, hash: scramHash(mechanism), lookup: lookup}
}

func (s *scramSession) failed() error {
	// As Kafka: one message whatever failed (no such user, a wrong proof),
	// so that it does not tell which users exist.
	return fmt.Errorf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", s.mechanism)
}

func (s *scramSession) Step(msg []byte) ([]byte, bool, error) {
	switch {
	case s.done:
		return nil, false, s.failed()
	case s.sent == "":
		return s.clientFirst(string(msg))
	default:
		return s.clientFinal(string(msg))
	}
}

// clientFirst reads "n,,n=<user>,r=<nonce>[,extensions]".
func (s *scramSession) clientFirst(m string) ([]byte, bool, error) {
	// The GS2 header: no channel binding ("n") and no authorization id,
	// or one equal to the user.
	gs2, bare, ok := strings.Cut(m, ",")
	if !ok || gs2 != "n" && gs2 != "y" {
		return nil, false, s.failed()
	}
	authzid, bare, ok := strings.Cut(bare, ",")
	if !ok || authzid != "" && !strings.HasPrefix(authzid, "a=") {
		return nil, false, s.failed()
	}
	attrs := scramAttrs(bare)
	user, okUser := unescapeScramName(attrs["n"])
	if !okUser || user == "" || attrs["r"] == "" || attrs["m"] != "" || authzid != "" && authzid[2:] != attrs["n"] {
		return nil, false, s.failed()
	}
	cred, found := s.lookup(s.mechanism, user)
	if !found || cred.Iterations <= 0 {
		return nil, false, s.failed()
	}
	s.user, s.cred, s.first = user, cred, bare
	s.nonce = attrs["r"] + serverNonce()
	s.sent = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.sent), false, nil
}

// clientFinal reads "c=<binding>,r=<nonce>[,extensions],p=<proof>" and
// checks the proof: H(proof XOR HMAC(StoredKey, AuthMessage)) must be
// StoredKey.
func (s *scramSession) clientFinal(m string) ([]byte, bool, error) {
	s.done = true
	withoutProof, proof, ok := strings.Cut(m, ",p=")
	if !ok {
		return nil, false, s.failed()
	}
	attrs := scramAttrs(withoutProof)
	// Kafka's rule (ScramSaslServer): the nonce ends with the server's.
	if attrs["c"] != "biws" && attrs["c"] != "eSws" || !strings.HasSuffix(attrs["r"], s.nonce) {
		return nil, false, s.failed()
	}
	clientProof, err := base64.StdEncoding.DecodeString(proof)
	if err != nil {
		return nil, false, s.failed()
	}
	auth := []byte(s.first + "," + s.sent + "," + withoutProof)
	signature := s.mac(s.cred.StoredKey, auth)
	if len(clientProof) != len(signature) {
		return nil, false, s.failed()
	}
	clientKey := make([]byte, len(signature))
	for i := range signature {
		clientKey[i] = clientProof[i] ^ signature[i]
	}
	h := s.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, false, s.failed()
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mac(s.cred.ServerKey, auth))), true, nil
}

func (s *scramSession) mac(key, msg []byte) []byte {
	m := hmac.New(s.hash, key)
	m.Write(msg)
	return m.Sum(nil)
}

func (s *scramSession) Principal() Principal { return Principal{Type: "User", Name: s.user} }

// scramAttrs splits "k=v,k=v" (a value may hold '=', never ',').
func scramAttrs(s string) map[string]string {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && len(k) == 1 {
			out[k] = v
		}
	}
	return out
}

// unescapeScramName undoes RFC 5802's "=2C" for ',' and "=3D" for '='; any
// other '=' is malformed.
func unescapeScramName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// serverNonce returns 32 random letters and digits, as Kafka's nonces.
func serverNonce() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// ScramKeys derives RFC 5802's stored key, H(HMAC(salted, "Client Key")),
// and server key, HMAC(salted, "Server Key"), from a salted password.
func ScramKeys(mechanism string, salted []byte) (stored, server []byte) {
	h := scramHash(mechanism)
	mac := func(msg string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	d := h()
	d.Write(mac("Client Key"))
	return d.Sum(nil), mac("Server Key")
}

// NewScramCredential salts a password (PBKDF2 with a random 32-byte salt,
// as Kafka's ScramFormatter) and derives the keys a server keeps of it.
func NewScramCredential(mechanism, password string, iterations int) (salt, stored, server []byte, err error) {
	salt = make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return nil, nil, nil, err
	}
	h := scramHash(mechanism)
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return nil, nil, nil, err
	}
	stored, server = ScramKeys(mechanism, salted)
	return salt, stored, server, nil
}

func scramHash(mechanism string) func() hash.Hash {
	if mechanism == "SCRAM-SHA-512" {
		return sha512.New
	}
	return sha256.New
}
