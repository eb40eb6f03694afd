package tests

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/skeinlog/skein/configs"
)

// jwksOf writes the JWKS of a public key, as an identity provider
// publishes it.
func jwksOf(t *testing.T, path, kid string, pub *rsa.PublicKey) {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	set := map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}}
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOAuthBearer: franz-go's OAUTHBEARER client with JWTs, validated as
// Kafka's OAuthBearerValidatorCallbackHandler does against a JWKS file:
// a token signed by the provider's key, unexpired, for the expected
// issuer and audience, logs in as its subject; an expired one, one for
// another audience or issuer, one signed by another key and an unsigned
// one (alg none) are refused with SASL_AUTHENTICATION_FAILED.
func TestOAuthBearer(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	jwksOf(t, jwks, "k1", &key.PublicKey)
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "OAUTHBEARER"
		c.OAuthJWKSURL = "file://" + jwks
		c.OAuthExpectedIssuer, c.OAuthExpectedAudience = "https://idp.example", "kafka,skein"
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			"oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		}}
	})
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "oauth", 1, nil)
	addr := b.node.ListenerAddr("SASL_PLAINTEXT").String()
	sign := func(k *rsa.PrivateKey, method jwt.SigningMethod, claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(method, claims)
		tok.Header["kid"] = "k1"
		var signWith any = k
		if method == jwt.SigningMethodNone {
			signWith = jwt.UnsafeAllowNoneSignatureType
		}
		s, err := tok.SignedString(signWith)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "svc-orders", "iss": "https://idp.example", "aud": "kafka", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	login := func(token string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()), kgo.RequestRetries(0),
			kgo.DefaultProduceTopic("oauth"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl); err != nil {
			return err
		}
		return cl.ProduceSync(rctx, kgo.StringRecord("x")).FirstErr()
	}
	if err := login(sign(key, jwt.SigningMethodRS256, claims(nil))); err != nil {
		t.Fatalf("a valid token: %v", err)
	}
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"expired", sign(key, jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }))},
		{"another audience", sign(key, jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { c["aud"] = "billing" }))},
		{"another issuer", sign(key, jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }))},
		{"no expiry", sign(key, jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { delete(c, "exp") }))},
		{"no subject", sign(key, jwt.SigningMethodRS256, claims(func(c jwt.MapClaims) { delete(c, "sub") }))},
		{"another key", sign(other, jwt.SigningMethodRS256, claims(nil))},
		{"unsigned (alg none)", sign(nil, jwt.SigningMethodNone, claims(nil))},
		{"not a JWT", "not-a-token"},
	} {
		if err := login(tc.token); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", tc.name, err)
		}
	}
}
