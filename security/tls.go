package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// TLSFiles are a TLS listener's settings, under Kafka's ssl.* meanings:
// PEM files, read at start and again when they change.
type TLSFiles struct {
	Listener string
	// Keystore is the PEM file of the private key and the certificate
	// chain (ssl.keystore.location).
	Keystore string
	// Truststore is the PEM file of the CAs a client certificate must
	// chain to (ssl.truststore.location); empty for none.
	Truststore string
	// ClientAuth is none, requested or required (ssl.client.auth).
	ClientAuth string
	// Protocols are TLSv1.2 and/or TLSv1.3 (ssl.enabled.protocols);
	// CipherSuites the TLS 1.2 suites by IANA name, empty for Go's.
	Protocols, CipherSuites []string
	// PeerAllowed, when set, checks the peer's certificate once its chain
	// is verified, in the handshake, on both ends of a mutual TLS
	// connection: an error refuses the peer before anything else is read.
	PeerAllowed func(leaf *x509.Certificate) error
}

// verifyPeer is tls.Config.VerifyPeerCertificate for PeerAllowed.
func (f TLSFiles) verifyPeer(_ [][]byte, chains [][]*x509.Certificate) error {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return errors.New("no verified peer certificate")
	}
	return f.PeerAllowed(chains[0][0])
}

// recheck bounds how often the files are looked at for a change.
const recheck = time.Second

// ServerTLS serves a listener's TLS from files, reloading them when they
// change (their size or modification time), at most once a second, at a
// new connection's handshake: a rotated certificate is served without a
// restart, and connections already open keep theirs. A reload that fails
// (a file half written, a key that does not match) keeps the last good
// one and is logged when it starts failing and when it works again.
type ServerTLS struct {
	files TLSFiles
	base  *tls.Config // version, suites, client auth: fixed at start
	log   zerolog.Logger

	mu      sync.Mutex
	checked time.Time
	stamp   string // the files' sizes and times when current was read
	current *tls.Config
	failing bool
}

// NewServerTLS reads the files once: an error means the listener cannot
// serve.
func NewServerTLS(f TLSFiles, log zerolog.Logger) (*ServerTLS, error) {
	// The versions from the lowest to the highest enabled.
	base := &tls.Config{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS12}
	versions := map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}
	for _, p := range f.Protocols {
		v, ok := versions[p]
		if !ok {
			return nil, fmt.Errorf("ssl.enabled.protocols: %q is not TLSv1.2 or TLSv1.3", p)
		}
		base.MinVersion, base.MaxVersion = min(base.MinVersion, v), max(base.MaxVersion, v)
	}
	if base.MinVersion > base.MaxVersion {
		return nil, errors.New("ssl.enabled.protocols: none given")
	}
	if len(f.CipherSuites) > 0 {
		byName := map[string]uint16{}
		for _, s := range tls.CipherSuites() {
			byName[s.Name] = s.ID
		}
		for _, name := range f.CipherSuites {
			id, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("ssl.cipher.suites: %q is not a secure cipher suite Go serves", name)
			}
			base.CipherSuites = append(base.CipherSuites, id)
		}
	}
	switch f.ClientAuth {
	case "", "none":
		base.ClientAuth = tls.NoClientCert
	case "requested":
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		base.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth: %q is not none, requested or required", f.ClientAuth)
	}
	s := &ServerTLS{files: f, base: base, log: log}
	stamp, err := s.stampFiles()
	if err != nil {
		return nil, err
	}
	if s.current, err = s.load(); err != nil {
		return nil, err
	}
	s.stamp, s.checked = stamp, time.Now()
	return s, nil
}

// Config returns the tls.Config a listener serves with.
func (s *ServerTLS) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.config(), nil }}
}

// config returns the current configuration, reloaded if the files
// changed.
func (s *ServerTLS) config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.checked) < recheck {
		return s.current
	}
	s.checked = time.Now()
	stamp, err := s.stampFiles()
	if err == nil && stamp == s.stamp {
		return s.current
	}
	var c *tls.Config
	if err == nil {
		c, err = s.load()
	}
	if err != nil {
		if !s.failing {
			s.failing = true
			s.log.Error().Err(err).Str("listener", s.files.Listener).Msg("tls: reloading the certificates failed; serving the last good ones")
		}
		return s.current
	}
	if s.failing {
		s.failing = false
		s.log.Warn().Str("listener", s.files.Listener).Msg("tls: reloading the certificates works again")
	}
	s.current, s.stamp = c, stamp
	s.log.Info().Str("listener", s.files.Listener).Str("subject", c.Certificates[0].Leaf.Subject.String()).
		Time("not_after", c.Certificates[0].Leaf.NotAfter).Msg("tls: certificates reloaded")
	return c
}

// stamp identifies the files' versions.
func (s *ServerTLS) stampFiles() (string, error) {
	var b strings.Builder
	for _, path := range []string{s.files.Keystore, s.files.Truststore} {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%d:%d;", path, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

// load reads the files into a configuration.
func (s *ServerTLS) load() (*tls.Config, error) {
	pem, err := os.ReadFile(s.files.Keystore)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	// One PEM file holds both, as Kafka's PEM keystore: X509KeyPair takes
	// the CERTIFICATE blocks of the first and the key of the second.
	cert, err := tls.X509KeyPair(pem, pem)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location %s: %w (it must hold the unencrypted private key and the certificate chain, PEM)", s.files.Keystore, err)
	}
	c := s.base.Clone()
	c.Certificates = []tls.Certificate{cert}
	if s.files.PeerAllowed != nil {
		c.VerifyPeerCertificate = s.files.verifyPeer
	}
	if s.files.Truststore != "" {
		pem, err := os.ReadFile(s.files.Truststore)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ssl.truststore.location %s: no PEM certificate in it", s.files.Truststore)
		}
		c.ClientCAs = pool
	}
	return c, nil
}

// ClientConfig returns the configuration to dial a peer with, mutual TLS:
// this listener's certificate (the current one at each handshake) as the
// client's, and its truststore's CAs for the peer's.
func (s *ServerTLS) ClientConfig() *tls.Config {
	c := &tls.Config{
		MinVersion: s.base.MinVersion, MaxVersion: s.base.MaxVersion, CipherSuites: s.base.CipherSuites,
		RootCAs: s.config().ClientCAs,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.config().Certificates[0], nil
		},
	}
	if s.files.PeerAllowed != nil {
		c.VerifyPeerCertificate = s.files.verifyPeer
	}
	return c
}
