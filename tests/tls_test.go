package tests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/testcerts"
)

// tlsBroker starts a broker with a PLAINTEXT listener and an SSL one
// (ssl.client.auth=required, the certificate's CN as principal for the
// eng unit only) and returns it with the SSL listener's address and the
// files it reads.
func tlsBroker(t *testing.T, ca *testcerts.CA) (b *broker, sslAddr, keystore string) {
	t.Helper()
	dir := t.TempDir()
	keystore, truststore := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.PEM")
	_, serverPEM := ca.Issue(t, pkix.Name{CommonName: "skein-1"}, true)
	testcerts.WriteFile(t, keystore, serverPEM)
	testcerts.WriteFile(t, truststore, ca.PEM)
	b = startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
		c.TLS.KeystoreLocation, c.TLS.TruststoreLocation, c.TLS.ClientAuth = keystore, truststore, "required"
		c.TLS.PrincipalMappingRules = "RULE:^CN=([^,]+),OU=eng(,.*)?$/$1/L"
	})
	return b, b.node.ListenerAddr("SSL").String(), keystore
}

// clientTLS is a client's TLS: it trusts ca and presents cert, if any.
func clientTLS(ca *testcerts.CA, cert *tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// TestSSLListener: a franz-go client with a certificate the node's CA
// issued, for a subject the mapping rules map, produces and consumes over
// the SSL listener and is told the SSL listener's address; a client
// without a certificate, one whose subject no rule maps, one that does not
// trust the node's certificate and a PLAINTEXT client on the SSL port are
// all refused, and the node counts what it refused.
func TestSSLListener(t *testing.T) {
	ca := testcerts.New(t)
	b, sslAddr, _ := tlsBroker(t, ca)
	ctx := ctxFor(t)
	alice, _ := ca.Issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"eng"}}, false)
	mustCreate(t, ctx, b.admin(), "over-tls", 1, nil)
	cl := b.client(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(clientTLS(ca, &alice)), kgo.DefaultProduceTopic("over-tls"),
		kgo.ConsumeTopics("over-tls"), kgo.FetchMaxWait(100*time.Millisecond))
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, fmt.Sprint(meta.Brokers[0].Port)) != sslAddr {
		t.Fatalf("Metadata over SSL names brokers %+v, want one at %s", meta.Brokers, sslAddr)
	}
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < 20 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	bob, _ := ca.Issue(t, pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"sales"}}, false)
	otherCA := testcerts.New(t)
	for _, tc := range []struct {
		name string
		opt  kgo.Opt
	}{
		{"no client certificate", kgo.DialTLSConfig(clientTLS(ca, nil))},
		{"a subject no rule maps", kgo.DialTLSConfig(clientTLS(ca, &bob))},
		{"not trusting the node", kgo.DialTLSConfig(clientTLS(otherCA, &alice))},
		{"no TLS", kgo.RequestRetries(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := b.client(kgo.SeedBrokers(sslAddr), tc.opt, kgo.RequestRetries(0))
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, refused); err == nil {
				t.Errorf("Metadata answered")
			}
		})
	}
	// The node's count: alice's client connected (once or more), and at
	// least the three that reached a handshake were refused.
	mfs := b.metrics()
	if v, _ := metricValue(mfs, "skein_authentications_total", map[string]string{"listener": "SSL", "mechanism": "SSL", "result": "succeeded"}); v < 1 {
		t.Errorf("skein_authentications_total succeeded = %v", v)
	}
	if v, _ := metricValue(mfs, "skein_authentications_total", map[string]string{"listener": "SSL", "mechanism": "SSL", "result": "failed"}); v < 3 {
		t.Errorf("skein_authentications_total failed = %v, want at least 3", v)
	}
}

// TestSSLCertificateRotation: the node's certificate file is replaced
// while a client produces over TLS without pause; new connections get the
// new certificate without a restart, and no produce fails.
func TestSSLCertificateRotation(t *testing.T) {
	ca := testcerts.New(t)
	b, sslAddr, keystore := tlsBroker(t, ca)
	ctx := ctxFor(t)
	alice, _ := ca.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, false)
	mustCreate(t, ctx, b.admin(), "rotation", 1, nil)
	cl := b.client(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(clientTLS(ca, &alice)), kgo.DefaultProduceTopic("rotation"))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	failed := make(chan error, 1)
	var produced atomic.Int64
	go func() {
		defer close(failed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, kgo.StringRecord("during")).FirstErr(); err != nil {
				failed <- err
				return
			}
			produced.Add(1)
		}
	}()
	served := func() string {
		conn, err := tls.Dial("tcp", sslAddr, clientTLS(ca, &alice))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "skein-1" {
		t.Fatalf("serving %q before the rotation", cn)
	}
	_, rotated := ca.Issue(t, pkix.Name{CommonName: "skein-1-rotated"}, true)
	testcerts.WriteFile(t, keystore, rotated)
	eventually(t, "the rotated certificate served", func() bool { return served() == "skein-1-rotated" })
	before := produced.Load()
	eventually(t, "produces after the rotation", func() bool { return produced.Load() > before+10 })
	close(stop)
	if err := <-failed; err != nil {
		t.Fatalf("a produce failed during the rotation: %v", err)
	}
}
