package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// credentialOf derives what the server keeps of a password, with
// xdg-go/scram's client (a well-kept implementation to check ours with).
func credentialOf(t *testing.T, hash scram.HashGeneratorFcn, password string, salt []byte, iters int) ScramCredential {
	t.Helper()
	c, err := hash.NewClient("ignored", password, "")
	if err != nil {
		t.Fatal(err)
	}
	stored := c.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iters})
	return ScramCredential{Salt: salt, StoredKey: stored.StoredKey, ServerKey: stored.ServerKey, Iterations: iters}
}

// TestScramAgainstXdgClient: xdg-go/scram's client, SHA-256 and SHA-512,
// logs in with the right password (and verifies the server's signature),
// and not with a wrong one or an unknown user.
func TestScramAgainstXdgClient(t *testing.T) {
	creds := map[string]ScramCredential{
		"SCRAM-SHA-256": credentialOf(t, scram.SHA256, "p,=ss", []byte("salt-256"), 4096),
		"SCRAM-SHA-512": credentialOf(t, scram.SHA512, "p,=ss", []byte("salt-512"), 8192),
	}
	lookup := func(mech, user string) (ScramCredential, bool) {
		c, ok := creds[mech]
		return c, ok && user == "a,li=ce"
	}
	for mech, hash := range map[string]scram.HashGeneratorFcn{"SCRAM-SHA-256": scram.SHA256, "SCRAM-SHA-512": scram.SHA512} {
		for _, tc := range []struct {
			user, password string
			ok             bool
		}{{"a,li=ce", "p,=ss", true}, {"a,li=ce", "wrong", false}, {"bob", "p,=ss", false}} {
			client, _ := hash.NewClient(tc.user, tc.password, "")
			conv := client.NewConversation()
			server := newScramSession(mech, lookup)
			msg, err := conv.Step("")
			var done bool
			for err == nil && !done {
				var answer []byte
				if answer, done, err = server.Step([]byte(msg)); err == nil {
					msg, err = conv.Step(string(answer))
				}
			}
			if ok := err == nil && done && conv.Valid(); ok != tc.ok {
				t.Errorf("%s %s/%s: logged in %v (%v), want %v", mech, tc.user, tc.password, ok, err, tc.ok)
			}
			if tc.ok && server.Principal().Name != "a,li=ce" {
				t.Errorf("principal %v", server.Principal())
			}
		}
	}
}

// TestScramLibrdkafkaNonce: librdkafka sends its own nonce before the
// server's whole one in its final message; Kafka accepts that (the nonce
// need only end with the server's), and so does Skein. A final nonce that
// does not end with the server's is refused.
func TestScramLibrdkafkaNonce(t *testing.T) {
	cred := credentialOf(t, scram.SHA256, "secret", []byte("salt"), 4096)
	lookup := func(string, string) (ScramCredential, bool) { return cred, true }
	final := func(server *scramSession, cnonce string, rewrite func(snonce string) string) error {
		first := "n=alice,r=" + cnonce
		answer, _, err := server.Step([]byte("n,," + first))
		if err != nil {
			return err
		}
		snonce := scramAttrs(string(answer))["r"]
		withoutProof := "c=biws,r=" + rewrite(snonce)
		auth := first + "," + string(answer) + "," + withoutProof
		// The client's proof, by hand as librdkafka makes it.
		salted, err := pbkdf2.Key(sha256.New, "secret", cred.Salt, cred.Iterations, sha256.Size)
		if err != nil {
			t.Fatal(err)
		}
		ck := hmac.New(sha256.New, salted)
		ck.Write([]byte("Client Key"))
		clientKey := ck.Sum(nil)
		m := hmac.New(sha256.New, cred.StoredKey)
		m.Write([]byte(auth))
		sig := m.Sum(nil)
		proof := make([]byte, len(sig))
		for i := range sig {
			proof[i] = clientKey[i] ^ sig[i]
		}
		_, done, err := server.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
		if err == nil && !done {
			t.Fatal("not done after the final message")
		}
		return err
	}
	if err := final(newScramSession("SCRAM-SHA-256", lookup), "cn0nce", func(s string) string { return "cn0nce" + s }); err != nil {
		t.Errorf("librdkafka's final nonce: %v", err)
	}
	if err := final(newScramSession("SCRAM-SHA-256", lookup), "cn0nce", func(s string) string { return s }); err != nil {
		t.Errorf("RFC 5802's final nonce: %v", err)
	}
	if err := final(newScramSession("SCRAM-SHA-256", lookup), "cn0nce", func(s string) string { return strings.TrimSuffix(s, s[len(s)-1:]) }); err == nil {
		t.Error("a final nonce not ending with the server's: accepted")
	}
}
