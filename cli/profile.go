package cli

// --command-config: Kafka's client.properties, as Kafka's own tools take
// it, so that the file a Kafka user already has for a secured cluster
// works with skein as it is.

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/magiconair/properties"
	"golang.org/x/term"

	"github.com/skeinlog/skein/security"
)

const envCommandConfig = "SKEIN_COMMAND_CONFIG"

// commandConfig is what a client.properties says.
type commandConfig struct {
	bootstrap      string
	tls            bool
	mechanism      string
	user, password string
	truststore     string
	keystore       string // PEM: the key and the certificate chain
}

// clientKeys are the client.properties keys skein uses; any other is
// refused, naming it, rather than ignored.
var clientKeys = []string{"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type", "ssl.keystore.location"}

// readCommandConfig reads a client.properties: PEM stores only, and the
// user and password of a PlainLoginModule or ScramLoginModule JAAS line.
func readCommandConfig(path string) (commandConfig, error) {
	var cc commandConfig
	l := &properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadFile(path)
	if err != nil {
		return cc, fmt.Errorf("--command-config: %w", err)
	}
	for _, key := range p.Keys() {
		if !slices.Contains(clientKeys, key) {
			return cc, fmt.Errorf("--command-config %s: skein does not use %s (it reads %s)", path, key, strings.Join(clientKeys, ", "))
		}
	}
	get := func(key string) string { v, _ := p.Get(key); return strings.TrimSpace(v) }
	cc.bootstrap = get("bootstrap.servers")
	switch proto := strings.ToUpper(get("security.protocol")); proto {
	case "", "PLAINTEXT":
	case "SSL":
		cc.tls = true
	case "SASL_SSL", "SASL_PLAINTEXT":
		cc.tls = proto == "SASL_SSL"
		cc.mechanism = strings.ToUpper(get("sasl.mechanism"))
		if cc.mechanism == "" {
			cc.mechanism = "GSSAPI" // Kafka's default, which skein refuses by name
		}
	default:
		return cc, fmt.Errorf("--command-config %s: security.protocol %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", path, proto)
	}
	for _, key := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := get(key); t != "" && !strings.EqualFold(t, "PEM") {
			return cc, fmt.Errorf("--command-config %s: %s=%s: skein reads PEM stores only", path, key, t)
		}
	}
	cc.truststore, cc.keystore = get("ssl.truststore.location"), get("ssl.keystore.location")
	if jaas := get("sasl.jaas.config"); jaas != "" {
		j, err := security.ParseJAAS(jaas)
		if err != nil {
			return cc, fmt.Errorf("--command-config %s: sasl.jaas.config: %w", path, err)
		}
		cc.user, cc.password = j.Options["username"], j.Options["password"]
	}
	return cc, nil
}

// applyCommandConfig fills what the flags and the environment left unset
// from --command-config: they win over the file.
func (s *securityFlags) applyCommandConfig() error {
	if s.commandConfig == "" || s.applied {
		return nil
	}
	s.applied = true
	cc, err := readCommandConfig(s.commandConfig)
	if err != nil {
		return err
	}
	s.bootstrap = cc.bootstrap
	s.tls = s.tls || cc.tls
	if s.ca == "" {
		s.ca = cc.truststore
	}
	if s.cert == "" && s.key == "" && cc.keystore != "" {
		s.cert, s.key = cc.keystore, cc.keystore // one PEM file holds both, as Kafka's PEM keystore
	}
	if s.mechanism == "" {
		s.mechanism = cc.mechanism
	}
	if s.user == "" {
		s.user = cc.user
	}
	if s.password == "" && s.passwordFile == "" {
		s.password = cc.password
	}
	return nil
}

// promptPassword asks for the password on the terminal, without echo,
// when there is one; "" otherwise.
func promptPassword(user string) (string, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", nil
	}
	fmt.Fprintf(os.Stderr, "Password for %s: ", user)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return string(b), nil
}
