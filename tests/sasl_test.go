package tests

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/testcerts"
)

// saslBroker starts a broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL
// listeners, PLAIN users admin and alice, as Kafka's server.properties
// declares them.
func saslBroker(t *testing.T, ca *testcerts.CA) *broker {
	t.Helper()
	dir := t.TempDir()
	keystore, truststore := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.PEM")
	_, serverPEM := ca.Issue(t, pkix.Name{CommonName: "skein-1"}, true)
	testcerts.WriteFile(t, keystore, serverPEM)
	testcerts.WriteFile(t, truststore, ca.PEM)
	users := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	return startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
		c.TLS.KeystoreLocation, c.TLS.TruststoreLocation = keystore, truststore
		c.EnabledMechanisms = "PLAIN"
		c.ListenerSettings = map[string]map[string]string{
			"SASL_PLAINTEXT": {"plain.sasl.jaas.config": users},
			"SASL_SSL":       {"plain.sasl.jaas.config": users},
		}
	})
}

// TestSASLPlain: franz-go clients with SASL/PLAIN, unmodified, over
// SASL_PLAINTEXT and SASL_SSL: the right password produces and consumes;
// a wrong password, an unknown user, a mechanism not offered and a client
// without SASL are refused with Kafka's errors, and the node counts the
// authentications.
func TestSASLPlain(t *testing.T) {
	ca := testcerts.New(t)
	b := saslBroker(t, ca)
	b.adminUser, b.adminPassword = "admin", "admin-secret"
	ctx := ctxFor(t)
	mustCreate(t, ctx, b.admin(), "sasl", 1, nil)
	saslAddr, saslSSLAddr := b.node.ListenerAddr("SASL_PLAINTEXT").String(), b.node.ListenerAddr("SASL_SSL").String()
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"SASL_PLAINTEXT", []kgo.Opt{kgo.SeedBrokers(saslAddr), alice}},
		{"SASL_SSL", []kgo.Opt{kgo.SeedBrokers(saslSSLAddr), alice, kgo.DialTLSConfig(clientTLS(ca, nil))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := b.client(append(tc.opts, kgo.DefaultProduceTopic("sasl"), kgo.ConsumeTopics("sasl"), kgo.FetchMaxWait(100*time.Millisecond))...)
			for i := range 10 {
				if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(tc.name, i))).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			got := 0
			for got < 10 {
				fs := cl.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if strings.HasPrefix(string(r.Value), tc.name) {
						got++
					}
				})
			}
		})
	}

	for _, tc := range []struct {
		name string
		opt  kgo.Opt
		want *kerr.Error
	}{
		{"wrong password", kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()), kerr.SaslAuthenticationFailed},
		{"unknown user", kgo.SASL(plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism()), kerr.SaslAuthenticationFailed},
		{"mechanism not offered", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()), kerr.UnsupportedSaslMechanism},
		{"no SASL", kgo.RequestRetries(0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := b.client(kgo.SeedBrokers(saslAddr), tc.opt, kgo.RequestRetries(0))
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
			switch {
			case err == nil:
				t.Fatal("Metadata answered")
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want == kerr.SaslAuthenticationFailed && !strings.Contains(err.Error(), "Invalid username or password"):
				t.Errorf("error %v does not say Kafka's message", err)
			}
		})
	}
	mfs := b.metrics()
	for result, least := range map[string]float64{"succeeded": 2, "failed": 2} {
		if v, _ := metricValue(mfs, "skein_authentications_total", map[string]string{"mechanism": "PLAIN", "result": result}); v < least {
			t.Errorf("skein_authentications_total{mechanism=PLAIN,result=%s} = %v, want at least %v", result, v, least)
		}
	}
}

// TestSASLBeforeAuthentication: on a SASL listener a client that has not
// authenticated gets nothing but ApiVersions: any other request, a frame
// larger than sasl.server.max.receive.size (refused from its size alone)
// and a SaslAuthenticate without a handshake close the connection; the
// node goes on serving.
func TestSASLBeforeAuthentication(t *testing.T) {
	b := saslBroker(t, testcerts.New(t))
	addr := b.node.ListenerAddr("SASL_PLAINTEXT").String()
	// closed sends frames and checks that the node answers the first
	// answers of them and then closes the connection.
	closed := func(t *testing.T, answers int, frames ...[]byte) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, f := range frames {
			if _, err := conn.Write(f); err != nil {
				return // closed already
			}
		}
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		// Answers to what was allowed, then the end of the stream.
		for got := 0; ; got++ {
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset") {
					if got != answers {
						t.Errorf("%d answers before the close, want %d", got, answers)
					}
					return
				}
				t.Fatalf("reading: %v, want the connection closed", err)
			}
			if _, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
				t.Fatalf("reading an answer: %v", err)
			}
		}
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	apiVersions := f.AppendRequest(nil, versioned(kmsg.NewPtrApiVersionsRequest(), 3), 1)
	metadata := f.AppendRequest(nil, versioned(kmsg.NewPtrMetadataRequest(), 12), 2)
	authenticate := f.AppendRequest(nil, versioned(kmsg.NewPtrSASLAuthenticateRequest(), 2), 2)
	t.Run("metadata before authenticating", func(t *testing.T) { closed(t, 1, apiVersions, metadata) })
	t.Run("SaslAuthenticate without a handshake", func(t *testing.T) { closed(t, 1, authenticate) }) // ILLEGAL_SASL_STATE, then closed
	t.Run("a frame over sasl.server.max.receive.size", func(t *testing.T) {
		closed(t, 0, binary.BigEndian.AppendUint32(nil, 600<<10))
	})
	// SaslHandshake v0, then PLAIN's message raw (no request header), as
	// clients before SaslAuthenticate do: an empty raw answer, then the
	// connection serves Metadata.
	t.Run("SaslHandshake v0 and a raw PLAIN message", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		token := []byte("\x00admin\x00admin-secret")
		// NB: AppendRequest sizes its frame from the start of dst: each
		// frame is made on its own.
		out := f.AppendRequest(nil, versioned(hs, 0), 1)
		out = append(binary.BigEndian.AppendUint32(out, uint32(len(token))), token...)
		out = append(out, f.AppendRequest(nil, versioned(kmsg.NewPtrMetadataRequest(), 12), 2)...)
		if _, err := conn.Write(out); err != nil {
			t.Fatal(err)
		}
		var sizes []uint32
		for range 3 {
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				t.Fatalf("after %d answers: %v", len(sizes), err)
			}
			sizes = append(sizes, binary.BigEndian.Uint32(size[:]))
			if _, err := io.CopyN(io.Discard, conn, int64(sizes[len(sizes)-1])); err != nil {
				t.Fatal(err)
			}
		}
		if sizes[1] != 0 || sizes[2] < 20 {
			t.Errorf("answer sizes %v: want the handshake's, an empty raw SASL answer, then Metadata's", sizes)
		}
	})
	t.Run("SaslHandshake v0 and a wrong password", func(t *testing.T) {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		token := []byte("\x00admin\x00wrong")
		out := f.AppendRequest(nil, versioned(hs, 0), 1)
		closed(t, 1, append(binary.BigEndian.AppendUint32(out, uint32(len(token))), token...))
	})
	// The node still serves an authenticated client.
	cl := b.client(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t), cl); err != nil {
		t.Fatal(err)
	}
}

func versioned[R kmsg.Request](r R, v int16) R {
	r.SetVersion(v)
	return r
}

// TestSASLReauthentication (KIP-368): with connections.max.reauth.ms, an
// authentication tells its lifetime; franz-go authenticates again on its
// connection and produces throughout; a client that does not is closed
// at its first request after the lifetime; a SCRAM credential deleted
// stops a connected client within it.
func TestSASLReauthentication(t *testing.T) {
	const lifetime = 1500
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "PLAIN,SCRAM-SHA-256"
		c.ConnectionsMaxReauthMs = lifetime
		c.ListenerSettings = map[string]map[string]string{"SASL_PLAINTEXT": {
			"plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`}}
	})
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "reauth", 1, nil)
	if r, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"}}); err != nil || r.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, r.Error())
	}
	// The admin API checks alice's SCRAM password as a SCRAM server would.
	b.adminUser, b.adminPassword = "alice", "alice-secret"
	addr := b.node.ListenerAddr("SASL_PLAINTEXT").String()

	// A client that never authenticates again: told the lifetime, served
	// until it passes, then closed.
	t.Run("no re-authentication", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
		roundTrip := func(r kmsg.Request, corr int32) ([]byte, error) {
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := conn.Write(f.AppendRequest(nil, r, corr)); err != nil {
				return nil, err
			}
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				return nil, err
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			_, err := io.ReadFull(conn, body)
			return body, err
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		if _, err := roundTrip(versioned(hs, 1), 1); err != nil {
			t.Fatal(err)
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte("\x00admin\x00admin-secret")
		body, err := roundTrip(versioned(auth, 1), 2)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.SetVersion(1)
		if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime {
			t.Fatalf("SaslAuthenticate v1: %v, error %d, lifetime %d ms, want %d", err, resp.ErrorCode, resp.SessionLifetimeMillis, lifetime)
		}
		corr := int32(3)
		eventually(t, "the connection closed once the authentication ran out", func() bool {
			corr++
			_, err := roundTrip(versioned(kmsg.NewPtrMetadataRequest(), 12), corr)
			return err != nil
		})
	})

	// franz-go authenticates again before the lifetime runs out, on the
	// same connection, and produces throughout.
	cl := b.client(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("reauth"))
	authentications := func() float64 {
		v, _ := metricValue(b.metrics(), "skein_authentications_total", map[string]string{"mechanism": "SCRAM-SHA-256", "result": "succeeded"})
		return v
	}
	produce := func() error { return cl.ProduceSync(ctx, kgo.StringRecord("r")).FirstErr() }
	first := authentications()
	eventually(t, "franz-go authenticated again three times while producing", func() bool {
		if err := produce(); err != nil {
			t.Fatalf("a produce failed: %v", err)
		}
		return authentications() >= first+3
	})
	// A deleted credential: the client's next re-authentication fails.
	if r, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil || r.Error() != nil {
		t.Fatalf("deleting alice's credential: %v %v", err, r.Error())
	}
	eventually(t, "alice refused once her authentication ran out", func() bool {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return cl.ProduceSync(rctx, kgo.StringRecord("r")).FirstErr() != nil
	})
}

// TestSASLSSLMechanisms: franz-go, unmodified, produces and consumes over
// SASL_SSL with each mechanism a node offers on one listener (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER with a signed JWT), and over
// SSL with a client certificate (mutual TLS).
func TestSASLSSLMechanisms(t *testing.T) {
	ca := testcerts.New(t)
	dir := t.TempDir()
	keystore, truststore, jwks := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem"), filepath.Join(dir, "jwks.json")
	_, serverPEM := ca.Issue(t, pkix.Name{CommonName: "skein-1"}, true)
	testcerts.WriteFile(t, keystore, serverPEM)
	testcerts.WriteFile(t, truststore, ca.PEM)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwksOf(t, jwks, "k1", &key.PublicKey)
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0"
		c.TLS.KeystoreLocation, c.TLS.TruststoreLocation = keystore, truststore
		c.EnabledMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
		c.OAuthJWKSURL = "file://" + jwks
		c.ListenerSettings = map[string]map[string]string{
			"SASL_SSL": {
				"plain.sasl.jaas.config":                         `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain";`,
				"oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
				"oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			},
			"SSL": {"ssl.client.auth": "required"},
		}
	})
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "sasl-ssl", 1, nil)
	if r, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-256"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-512"},
	}); err != nil || r.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, r.Error())
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	token, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, _ := ca.Issue(t, pkix.Name{CommonName: "alice"}, false)
	saslSSL, ssl := b.node.ListenerAddr("SASL_SSL").String(), b.node.ListenerAddr("SSL").String()
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"PLAIN", []kgo.Opt{kgo.SeedBrokers(saslSSL), kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-plain"}.AsMechanism())}},
		{"SCRAM-SHA-256", []kgo.Opt{kgo.SeedBrokers(saslSSL), kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism())}},
		{"SCRAM-SHA-512", []kgo.Opt{kgo.SeedBrokers(saslSSL), kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism())}},
		{"OAUTHBEARER", []kgo.Opt{kgo.SeedBrokers(saslSSL), kgo.DialTLSConfig(clientTLS(ca, nil)), kgo.SASL(oauth.Auth{Token: token}.AsMechanism())}},
		{"SSL client certificate", []kgo.Opt{kgo.SeedBrokers(ssl), kgo.DialTLSConfig(clientTLS(ca, &clientCert))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := b.client(append(tc.opts, kgo.DefaultProduceTopic("sasl-ssl"), kgo.ConsumeTopics("sasl-ssl"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond))...)
			// The consumer's position first, so that the record below is
			// the next it reads.
			if _, err := kadm.NewClient(cl).ListEndOffsets(ctx, "sasl-ssl"); err != nil {
				t.Fatal(err)
			}
			want := "over " + tc.name
			if err := cl.ProduceSync(ctx, kgo.StringRecord(want)).FirstErr(); err != nil {
				t.Fatal(err)
			}
			for got := ""; got != want; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) { got = string(r.Value) })
			}
		})
	}
}
