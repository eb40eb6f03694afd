package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The -security flag's values: the listener the clients produce and consume
// over.
const (
	securityPlaintext = "plaintext"
	securitySASLSSL   = "sasl_ssl"
)

// The one SASL/PLAIN user every SASL_SSL broker declares and every client
// logs in as.
const (
	saslUser     = "bench"
	saslPassword = "bench-secret"
)

// saslSSL is what -security sasl_ssl sets up once for a run, in the work
// directory: a throwaway CA and a broker certificate for 127.0.0.1 as PEM
// files, which every broker of the run serves (Skein and Kafka read the
// same files under the same keys), and the clients' side of it. A nil
// *saslSSL is PLAINTEXT. Nothing in it changes after newSASLSSL: brokers
// and clients share it freely.
type saslSSL struct {
	// keystore is the PEM keystore: the broker's private key, unencrypted
	// PKCS#8 ("PRIVATE KEY", which a Kafka PEM keystore needs when no
	// ssl.key.password is set), then its certificate and the CA's.
	keystore string
	// truststore is the PEM truststore: the CA's certificate.
	truststore string
	// tls is the clients' TLS: the CA as RootCAs. kgo clones it at every
	// dial and sets ServerName from the address, so the broker
	// certificate's IP SAN is what is verified.
	tls *tls.Config
}

// newSASLSSL makes a CA and a broker certificate (ECDSA P-256, the broker's
// for the IP 127.0.0.1, both valid for a day) and writes the keystore and
// the truststore into dir.
func newSASLSSL(dir string) (*saslSSL, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "skein bench CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	brokerDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	s := &saslSSL{
		keystore:   filepath.Join(dir, "broker-keystore.pem"),
		truststore: filepath.Join(dir, "ca-truststore.pem"),
	}
	keystore := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	keystore = append(keystore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: brokerDER})...)
	keystore = append(keystore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
	if err := os.WriteFile(s.keystore, keystore, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.truststore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	s.tls = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return s, nil
}

// protocol names the security protocol of the listener the clients use,
// as Kafka spells it; s may be nil (PLAINTEXT).
func (s *saslSSL) protocol() string {
	if s == nil {
		return "PLAINTEXT"
	}
	return "SASL_SSL"
}

// jaas is the PLAIN login line: the broker's users (user_<name>) and the
// client's own credentials, both the bench user.
func jaas() string {
	return fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" user_%s="%s";`,
		saslUser, saslPassword, saslUser, saslPassword)
}

// brokerProperties are the SASL_SSL listener's settings, under the same
// Kafka names for Skein and for Kafka: the PEM keystore and truststore,
// PLAIN with the bench user.
func (s *saslSSL) brokerProperties() map[string]string {
	return map[string]string{
		"ssl.keystore.type":                             "PEM",
		"ssl.keystore.location":                         s.keystore,
		"ssl.truststore.type":                           "PEM",
		"ssl.truststore.location":                       s.truststore,
		"sasl.enabled.mechanisms":                       "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": jaas(),
	}
}

// clientProperties are a Java client's settings for the SASL_SSL listener
// (Kafka's perf tools read them with --command-config).
func (s *saslSSL) clientProperties() map[string]string {
	return map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "PLAIN",
		"sasl.jaas.config":        fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";`, saslUser, saslPassword),
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": s.truststore,
	}
}

// clientOpts are the kgo options that reach the broker at addr over s:
// the address, and over SASL_SSL the CA and the bench user.
func (s *saslSSL) clientOpts(addr string) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(addr)}
	if s != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls),
			kgo.SASL(plain.Auth{User: saslUser, Pass: saslPassword}.AsMechanism()))
	}
	return opts
}

// handshake connects to the TLS listener at addr once, without SASL, and
// names the TLS version and cipher suite it negotiates with Go's client,
// as kgo's connections do: "TLS 1.3 TLS_AES_128_GCM_SHA256".
func (s *saslSSL) handshake(ctx context.Context, addr string) (string, error) {
	d := tls.Dialer{Config: s.tls}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	defer c.Close()
	st := c.(*tls.Conn).ConnectionState()
	return tls.VersionName(st.Version) + " " + tls.CipherSuiteName(st.CipherSuite), nil
}

// writeProperties writes props to path as a Java properties file, keys
// sorted. NB: no value here holds a backslash, a newline or a leading
// space, the only characters the format would need escaped.
func writeProperties(path string, props map[string]string) error {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// skeinListener returns the parser of a `node started` line that reads the
// address the listener named name is bound to, from the line's listeners
// field ("PLAINTEXT://127.0.0.1:4000,SASL_SSL://127.0.0.1:4001").
func skeinListener(name string) func(string) (string, bool) {
	return func(line string) (string, bool) {
		var l struct {
			Message   string `json:"message"`
			Listeners string `json:"listeners"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Message != "node started" {
			return "", false
		}
		for _, e := range strings.Split(l.Listeners, ",") {
			if addr, ok := strings.CutPrefix(e, name+"://"); ok {
				return addr, true
			}
		}
		return "", false
	}
}
