package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// OAuthBearer validates OAUTHBEARER tokens (RFC 7628) as Kafka's
// OAuthBearerValidatorCallbackHandler does (KIP-768): a JWT signed by a
// key of the JWKS, with an expiry, the expected issuer and one of the
// expected audiences, its principal in SubClaim.
type OAuthBearer struct {
	JWKSURL   string // https://, http:// or file://
	Refresh   time.Duration
	Issuer    string
	Audiences []string
	Skew      time.Duration
	SubClaim  string

	keys keyfunc.Keyfunc
}

// Start loads the JWKS (and, from a URL, keeps refreshing it until ctx
// ends).
func (o *OAuthBearer) Start(ctx context.Context) error {
	u, err := url.Parse(o.JWKSURL)
	if err != nil {
		return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	switch u.Scheme {
	case "file":
		raw, err := os.ReadFile(u.Path)
		if err != nil {
			return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
		o.keys, err = keyfunc.NewJWKSetJSON(json.RawMessage(raw))
		if err != nil {
			return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: %w", u.Path, err)
		}
	case "http", "https":
		o.keys, err = keyfunc.NewDefaultCtx(ctx, []string{o.JWKSURL})
		if err != nil {
			return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
	default:
		return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: want https://, http:// or file://", o.JWKSURL)
	}
	return nil
}

// validate checks a token and returns its principal's name and expiry.
func (o *OAuthBearer) validate(token string) (string, time.Time, error) {
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithLeeway(o.Skew),
		jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"})}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(token, claims, o.keys.Keyfunc, opts...); err != nil {
		return "", time.Time{}, err
	}
	if len(o.Audiences) > 0 {
		aud, _ := claims.GetAudience()
		ok := false
		for _, a := range aud {
			for _, want := range o.Audiences {
				ok = ok || a == want
			}
		}
		if !ok {
			return "", time.Time{}, errors.New("the token names none of the expected audiences")
		}
	}
	sub, _ := claims[o.SubClaim].(string)
	if sub == "" {
		return "", time.Time{}, fmt.Errorf("the token has no %q claim", o.SubClaim)
	}
	exp, _ := claims.GetExpirationTime()
	return sub, exp.Time, nil
}

// oauthSession is RFC 7628's one message: "n,,\x01auth=Bearer <token>\x01\x01".
type oauthSession struct {
	o       *OAuthBearer
	user    string
	expires time.Time
}

func (s *oauthSession) Step(msg []byte) ([]byte, bool, error) {
	fail := func(why string) ([]byte, bool, error) {
		return nil, false, fmt.Errorf("Authentication failed: invalid OAUTHBEARER token: %s", why)
	}
	gs2, rest, ok := strings.Cut(string(msg), "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") && !strings.HasPrefix(gs2, "y,") {
		return fail("not an OAUTHBEARER message (RFC 7628)")
	}
	var token string
	for kv := range strings.SplitSeq(rest, "\x01") {
		if v, ok := strings.CutPrefix(kv, "auth="); ok {
			scheme, t, _ := strings.Cut(v, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return fail("the auth value is not a Bearer token")
			}
			token = t
		}
	}
	if token == "" {
		return fail("no token")
	}
	user, exp, err := s.o.validate(token)
	if err != nil {
		return fail(err.Error())
	}
	s.user, s.expires = user, exp
	return nil, true, nil
}

func (s *oauthSession) Principal() Principal { return Principal{Type: "User", Name: s.user} }

// Expires is when the token runs out: an authentication lasts no longer.
func (s *oauthSession) Expires() time.Time { return s.expires }
