package cli

// The client commands' TLS and SASL flags: what a secured listener asks
// of a client, as Kafka's client.properties says it.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skeinlog/skein/chaos"
)

// The environment variables of the security flags; the password and the
// token are read only from the environment (or a file), never from a
// flag, which other users of the machine could see.
const (
	envTLSCA         = "SKEIN_TLS_CA"
	envSASLMechanism = "SKEIN_SASL_MECHANISM"
	envUser          = "SKEIN_USER"
	envPassword      = "SKEIN_PASSWORD"
	envOAuthToken    = "SKEIN_OAUTH_TOKEN"
)

type securityFlags struct {
	tls             bool
	ca, cert, key   string
	mechanism, user string
	passwordFile    string
	password, token string // from the environment
	// commandConfig is Kafka's client.properties (profile.go); applied
	// once, it may also name the brokers (bootstrap).
	commandConfig string
	applied       bool
	bootstrap     string
	// insecure skips verifying the brokers' certificates (a profile's
	// tls.insecure_skip_verify).
	insecure bool
	// The profile (profiles.go): environ and cmd find it, profile is the
	// one selected (nil for none), adminHTTPS is an https:// admin
	// address; resolved once, with the error of doing so.
	environ    []string
	cmd        *cobra.Command
	profile    *profile
	adminHTTPS bool
	resolved   bool
	resolveErr error
	opts       []kgo.Opt
}

func envValue(environ []string, name string) string {
	var v string
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, name+"="); ok {
			v = val // the last one wins, as with os/exec
		}
	}
	return v
}

func (s *securityFlags) register(fs *pflag.FlagSet, environ []string) {
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS (implied by --tls-ca and --tls-cert)")
	fs.StringVar(&s.ca, "tls-ca", envValue(environ, envTLSCA), "PEM file of the CAs the brokers' certificates chain to (env "+envTLSCA+"); the system's when empty")
	fs.StringVar(&s.cert, "tls-cert", "", "PEM file of the client certificate, for ssl.client.auth")
	fs.StringVar(&s.key, "tls-key", "", "PEM file of the client certificate's key")
	fs.StringVar(&s.mechanism, "sasl-mechanism", envValue(environ, envSASLMechanism), "SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (env "+envSASLMechanism+")")
	fs.StringVar(&s.user, "user", envValue(environ, envUser), "SASL user (env "+envUser+"); the password comes from "+envPassword+" or --password-file")
	fs.StringVar(&s.passwordFile, "password-file", "", "file holding the SASL password (without it nor "+envPassword+", asked on the terminal)")
	fs.StringVar(&s.commandConfig, "command-config", envValue(environ, envCommandConfig),
		"Kafka's client.properties: security.protocol, sasl.mechanism, sasl.jaas.config, PEM ssl.truststore/keystore.location, bootstrap.servers; flags win (env "+envCommandConfig+")")
	s.password, s.token = envValue(environ, envPassword), envValue(environ, envOAuthToken)
	s.environ = environ
}

// bind ties the flags to cmd, the family of commands they were registered
// on: the values of its flags complete, and its root's --profile selects
// the profile when a command runs.
func (s *securityFlags) bind(cmd *cobra.Command) {
	s.cmd = cmd
	_ = cmd.RegisterFlagCompletionFunc("sasl-mechanism", completeValues("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"))
}

// resolve fills what the flags and the environment left unset from
// --command-config, and then from the selected profile; once.
func (s *securityFlags) resolve() error {
	if !s.resolved {
		s.resolved = true
		s.resolveErr = s.applyCommandConfig()
		if s.resolveErr == nil {
			s.resolveErr = s.applyProfile()
		}
	}
	return s.resolveErr
}

// build turns the flags into kgo options, once.
func (s *securityFlags) build() error {
	s.opts = nil
	if err := s.resolve(); err != nil {
		return err
	}
	c, err := s.tlsConfig()
	if err != nil {
		return err
	}
	if c != nil {
		s.opts = append(s.opts, kgo.DialTLSConfig(c))
	}
	if s.mechanism == "" {
		return nil
	}
	m, err := s.saslMechanism()
	if err != nil {
		return err
	}
	s.opts = append(s.opts, kgo.SASL(m))
	return nil
}

func (s *securityFlags) saslMechanism() (sasl.Mechanism, error) {
	mech := strings.ToUpper(s.mechanism)
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
	default:
		return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", s.mechanism)
	}
	if mech == "OAUTHBEARER" {
		if s.token == "" {
			return nil, errors.New("--sasl-mechanism OAUTHBEARER: give the token in " + envOAuthToken)
		}
		return oauth.Auth{Token: s.token}.AsMechanism(), nil
	}
	password, err := s.readPassword()
	if err != nil {
		return nil, err
	}
	if s.user == "" || password == "" {
		return nil, fmt.Errorf("--sasl-mechanism %s: give --user (or %s) and the password in %s or --password-file", mech, envUser, envPassword)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: s.user, Pass: password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.user, Pass: password}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: s.user, Pass: password}.AsSha512Mechanism(), nil
}

// tlsConfig returns the TLS the flags ask for, nil for none.
func (s *securityFlags) tlsConfig() (*tls.Config, error) {
	if !s.tls && s.ca == "" && s.cert == "" && s.key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.insecure}
	if s.ca != "" {
		pem, err := os.ReadFile(s.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", s.ca)
		}
	}
	if (s.cert == "") != (s.key == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if s.cert != "" {
		pair, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// readPassword returns the password, from --password-file or the
// environment.
func (s *securityFlags) readPassword() (string, error) {
	if s.passwordFile == "" && s.password == "" && s.user != "" {
		return promptPassword(s.user)
	}
	if s.passwordFile == "" {
		return s.password, nil
	}
	b, err := os.ReadFile(s.passwordFile)
	if err != nil {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// access returns how to reach admin APIs with these flags: HTTPS with
// --tls or --tls-ca (or an https:// admin address), HTTP Basic with --user and its password, or the
// OAUTHBEARER token of SKEIN_OAUTH_TOKEN as a Bearer token with
// --sasl-mechanism OAUTHBEARER.
func (s *securityFlags) access() (chaos.Access, error) {
	if err := s.resolve(); err != nil {
		return chaos.Access{}, err
	}
	c, err := s.tlsConfig()
	if err != nil {
		return chaos.Access{}, err
	}
	if c == nil && s.adminHTTPS {
		c = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	ac := chaos.Access{HTTPS: c != nil, TLS: c}
	if strings.EqualFold(s.mechanism, "OAUTHBEARER") {
		ac.Token = s.token
		return ac, nil
	}
	if s.user != "" {
		ac.User = s.user
		if ac.Password, err = s.readPassword(); err != nil {
			return chaos.Access{}, err
		}
	}
	return ac, nil
}
