package configs

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
)

// SecurityProtocol is a listener's protocol, as Kafka names it.
type SecurityProtocol string

// Kafka's security protocols.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

var securityProtocols = []SecurityProtocol{Plaintext, SSL, SASLPlaintext, SASLSSL}

// defaultProtocolMap is Kafka's listener.security.protocol.map default:
// each protocol is a listener name of its own.
const defaultProtocolMap = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

// Listener is one of the node's Kafka listeners.
type Listener struct {
	// Name is the listener's name in upper case, as Kafka normalises it
	// (PLAINTEXT, EXTERNAL...).
	Name     string
	Protocol SecurityProtocol
	// Listen is the host:port it binds; Advertise the one clients are
	// given (port 0: the port bound).
	Listen, Advertise string
}

// KafkaListeners returns the Kafka listeners the node serves, inter-broker
// listener first, from listeners, advertised.listeners and
// listener.security.protocol.map; without listeners, the one PLAINTEXT
// listener of listen and advertise. The listeners named in
// controller.listener.names are not among them: their address is the
// node's remoting (cluster.listen, see ClusterListener). The config must
// have passed Validate.
func (n Node) KafkaListeners() []Listener {
	return n.listeners(&validator{})
}

// ClusterListener returns the host:port of the first listener named in
// controller.listener.names that listeners declares, and the one it
// advertises; ok is false when there is none.
func (n Node) ClusterListener() (listen, advertise string, ok bool) {
	for _, name := range splitList(n.ControllerListenerNames) {
		for _, e := range parseListenerList(n.Listeners) {
			if e.name == strings.ToUpper(name) {
				advertise = e.addr
				for _, a := range parseListenerList(n.AdvertisedListeners) {
					if a.name == e.name {
						advertise = a.addr
					}
				}
				return e.addr, advertise, true
			}
		}
	}
	return "", "", false
}

// ClusterProtocol returns the security protocol of the node's remoting and
// the name of its listener: that of the controller listener that gives
// cluster.listen, PLAINTEXT when listener.security.protocol.map does not
// name it (as Kafka assumes for controller listeners); PLAINTEXT and ""
// without one.
func (n Node) ClusterProtocol() (listener string, p SecurityProtocol) {
	for _, name := range splitList(n.ControllerListenerNames) {
		name = strings.ToUpper(name)
		for _, e := range parseListenerList(n.Listeners) {
			if e.name != name {
				continue
			}
			for _, item := range splitList(n.ListenerSecurityProtocolMap) {
				if l, proto, ok := strings.Cut(item, ":"); ok && strings.ToUpper(strings.TrimSpace(l)) == name {
					return name, SecurityProtocol(strings.ToUpper(strings.TrimSpace(proto)))
				}
			}
			return name, Plaintext
		}
	}
	return "", Plaintext
}

// InterBrokerListener returns the listener followers fetch from:
// inter.broker.listener.name, or else the one named PLAINTEXT, or else the
// only one.
func (n Node) InterBrokerListener() Listener {
	return n.KafkaListeners()[0]
}

type listenerEntry struct{ name, addr string }

// parseListenerList splits Kafka's NAME://host:port,... list; an entry
// without "://" has an empty name.
func parseListenerList(s string) []listenerEntry {
	var out []listenerEntry
	for _, item := range splitList(s) {
		name, addr, ok := strings.Cut(item, "://")
		if !ok {
			name, addr = "", item
		}
		out = append(out, listenerEntry{strings.ToUpper(name), addr})
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// listeners derives the Kafka listeners and reports every bad setting
// to v.
func (n Node) listeners(v *validator) []Listener {
	fail := v.fail
	if n.Listeners == "" {
		if n.AdvertisedListeners != "" {
			fail("advertised.listeners", n.AdvertisedListeners, "needs listeners (with listen, set advertise)")
		}
		return []Listener{{Name: string(Plaintext), Protocol: Plaintext, Listen: n.Listen, Advertise: n.Advertise}}
	}
	protocols := map[string]SecurityProtocol{}
	protocolMap := n.ListenerSecurityProtocolMap
	if protocolMap == "" {
		protocolMap = defaultProtocolMap
	}
	for _, item := range splitList(protocolMap) {
		name, proto, ok := strings.Cut(item, ":")
		p := SecurityProtocol(strings.ToUpper(strings.TrimSpace(proto)))
		if !ok || !slices.Contains(securityProtocols, p) {
			fail("listener.security.protocol.map", n.ListenerSecurityProtocolMap,
				fmt.Sprintf("%q must be NAME:PROTOCOL, the protocol one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", item))
			continue
		}
		protocols[strings.ToUpper(strings.TrimSpace(name))] = p
	}
	controllers := map[string]bool{}
	for _, name := range splitList(n.ControllerListenerNames) {
		controllers[strings.ToUpper(name)] = true
	}
	advertised := map[string]string{}
	for _, e := range parseListenerList(n.AdvertisedListeners) {
		if _, dup := advertised[e.name]; dup || e.name == "" {
			fail("advertised.listeners", n.AdvertisedListeners, fmt.Sprintf("%q: each entry is NAME://host:port, each name once", e.name+"://"+e.addr))
			continue
		}
		advertised[e.name] = e.addr
	}
	var out []Listener
	seen := map[string]bool{}
	for _, e := range parseListenerList(n.Listeners) {
		switch {
		case e.name == "":
			fail("listeners", n.Listeners, fmt.Sprintf("%q must be NAME://host:port", e.addr))
			continue
		case seen[e.name]:
			fail("listeners", n.Listeners, fmt.Sprintf("names listener %s twice", e.name))
			continue
		}
		seen[e.name] = true
		if !validHostPort(e.addr) {
			fail("listeners", n.Listeners, fmt.Sprintf("listener %s: %q must be host:port", e.name, e.addr))
			continue
		}
		if controllers[e.name] {
			// The node's remoting (ClusterListener): mutual TLS or none.
			switch p := protocols[e.name]; p {
			case "", Plaintext:
			case SSL:
				t := n.ListenerTLS(e.name)
				v.validateTLS(e.name, t)
				if t.TruststoreLocation == "" {
					fail("ssl.truststore.location (listener "+e.name+")", "", "remoting between nodes is mutual TLS: give the CAs the other nodes' certificates chain to")
				}
			default:
				fail("listener.security.protocol.map", n.ListenerSecurityProtocolMap,
					fmt.Sprintf("controller listener %s: the remoting between nodes takes PLAINTEXT or SSL (mutual TLS), not %s", e.name, p))
			}
			continue
		}
		p, ok := protocols[e.name]
		if !ok {
			fail("listener.security.protocol.map", n.ListenerSecurityProtocolMap,
				fmt.Sprintf("names no security protocol for listener %s", e.name))
			continue
		}
		if p == SSL || p == SASLSSL {
			v.validateTLS(e.name, n.ListenerTLS(e.name))
		}
		if p == SASLPlaintext || p == SASLSSL {
			v.validateSASL(n, e.name)
		}
		adv, ok := advertised[e.name]
		if !ok {
			adv = e.addr
		}
		if host, _, _ := net.SplitHostPort(adv); !validHostPort(adv) || unspecified(host) {
			fail("advertised.listeners", n.AdvertisedListeners,
				fmt.Sprintf("listener %s: %q must name a host clients can reach (set advertised.listeners when a listener binds 0.0.0.0, [::] or no host)", e.name, adv))
			continue
		}
		out = append(out, Listener{Name: e.name, Protocol: p, Listen: e.addr, Advertise: adv})
	}
	for name := range advertised {
		if !seen[name] {
			fail("advertised.listeners", n.AdvertisedListeners, fmt.Sprintf("advertises %s, which listeners does not declare", name))
		}
	}
	if len(out) == 0 {
		fail("listeners", n.Listeners, "declares no broker listener")
		return nil
	}
	inter := strings.ToUpper(n.InterBrokerListenerName)
	if inter == "" && len(out) > 1 {
		inter = string(Plaintext)
	}
	if inter != "" {
		i := slices.IndexFunc(out, func(l Listener) bool { return l.Name == inter })
		if i < 0 {
			fail("inter.broker.listener.name", n.InterBrokerListenerName,
				"must name one of the broker listeners in listeners (default PLAINTEXT when there are several)")
			return nil
		}
		out[0], out[i] = out[i], out[0]
	}
	// listen and advertise, when given beside listeners, are the
	// inter-broker listener's (as --print-config writes them).
	for _, c := range []struct{ key, want string }{{"listen", out[0].Listen}, {"advertise", out[0].Advertise}} {
		if given, ok := n.Explicit[c.key]; ok && given != c.want {
			fail(c.key, given, "listeners gives the inter-broker listener "+c.want+": set either listeners (Kafka's) or "+c.key)
		}
	}
	if out[0].Protocol != Plaintext && out[0].Protocol != SSL {
		fail("inter.broker.listener.name", out[0].Name, "followers fetch over PLAINTEXT or SSL (mutual TLS with the listener's keystore), not SASL: name such a listener")
	}
	if out[0].Protocol == SSL && n.ListenerTLS(out[0].Name).TruststoreLocation == "" {
		fail("inter.broker.listener.name", out[0].Name, "followers check their leaders' certificates against the SSL inter-broker listener's ssl.truststore.location: set it")
	}
	for name := range n.ListenerSettings {
		if !seen[name] {
			for key := range n.ListenerSettings[name] {
				fail(listenerPrefix+strings.ToLower(name)+"."+key, n.ListenerSettings[name][key], "listeners declares no listener "+name)
			}
		}
	}
	return out
}

func validHostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	var p uint16
	_, err = fmt.Sscan(port, &p)
	return err == nil
}

func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// TLS is the TLS of a listener, under Kafka's ssl.* names. Skein reads
// PEM files only (Kafka's ssl.keystore.type=PEM): a keystore file holding
// the private key (unencrypted) and the certificate chain, a truststore
// file of CA certificates.
type TLS struct {
	// KeystoreType must be PEM. Kafka: ssl.keystore.type (whose default
	// is JKS; Skein's is PEM, the only type it reads).
	KeystoreType string `mapstructure:"ssl.keystore.type" yaml:"ssl.keystore.type"`
	// KeystoreLocation is the PEM file of the listener's private key and
	// certificate chain. Kafka: ssl.keystore.location.
	KeystoreLocation string `mapstructure:"ssl.keystore.location" yaml:"ssl.keystore.location"`
	// TruststoreType must be PEM. Kafka: ssl.truststore.type.
	TruststoreType string `mapstructure:"ssl.truststore.type" yaml:"ssl.truststore.type"`
	// TruststoreLocation is the PEM file of the CA certificates client
	// certificates must chain to. Kafka: ssl.truststore.location.
	TruststoreLocation string `mapstructure:"ssl.truststore.location" yaml:"ssl.truststore.location"`
	// ClientAuth asks clients for a certificate: none, requested (checked
	// when given) or required. Default none. Kafka: ssl.client.auth.
	ClientAuth string `mapstructure:"ssl.client.auth" yaml:"ssl.client.auth"`
	// PrincipalMappingRules map a client certificate's subject
	// (RFC 2253, CN=alice,OU=eng,O=Example) to the principal's name:
	// RULE:pattern/replacement/[LU] and DEFAULT (the whole subject),
	// comma-separated, the first that matches wins. Default DEFAULT.
	// Kafka: ssl.principal.mapping.rules.
	PrincipalMappingRules string `mapstructure:"ssl.principal.mapping.rules" yaml:"ssl.principal.mapping.rules"`
	// EnabledProtocols are the TLS versions served: TLSv1.2, TLSv1.3.
	// Default both. Kafka: ssl.enabled.protocols.
	EnabledProtocols string `mapstructure:"ssl.enabled.protocols" yaml:"ssl.enabled.protocols"`
	// CipherSuites are the TLS 1.2 cipher suites served, by their IANA
	// names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); TLS 1.3's are fixed.
	// Default empty: Go's safe defaults. Kafka: ssl.cipher.suites.
	CipherSuites string `mapstructure:"ssl.cipher.suites" yaml:"ssl.cipher.suites"`
}

// Protocols returns ssl.enabled.protocols as a list.
func (t TLS) Protocols() []string { return splitList(t.EnabledProtocols) }

// Ciphers returns ssl.cipher.suites as a list.
func (t TLS) Ciphers() []string { return splitList(t.CipherSuites) }

// listenerPrefix starts Kafka's per-listener keys:
// listener.name.<name>.<key>.
const listenerPrefix = "listener.name."

// listenerKey splits a per-listener key into the listener's name (upper
// case) and the key it sets; ok is false when key is not one, or sets a
// key that cannot be given per listener.
func listenerKey(key string) (listener, of string, ok bool) {
	rest, found := strings.CutPrefix(key, listenerPrefix)
	if !found {
		return "", "", false
	}
	listener, of, found = strings.Cut(rest, ".")
	if !found || listener == "" {
		return "", "", false
	}
	for _, suffix := range []string{jaasKey, callbackKey} {
		if mech, ok := strings.CutSuffix(of, "."+suffix); ok && slices.Contains(saslMechanisms, strings.ToUpper(mech)) {
			return strings.ToUpper(listener), strings.ToLower(mech) + "." + suffix, true
		}
	}
	f, isField := nodeByKey[of]
	if !isField || len(f.index) != 2 || f.index[0] != tlsFieldIndex && of != "sasl.enabled.mechanisms" {
		return "", "", false
	}
	return strings.ToUpper(listener), of, true
}

// tlsFieldIndex is the index of Node.TLS: its keys may be set per
// listener.
var tlsFieldIndex = func() int {
	f, _ := reflect.TypeFor[Node]().FieldByName("TLS")
	return f.Index[0]
}()

// SASL is the SASL of a node's listeners, under Kafka's names.
type SASL struct {
	// EnabledMechanisms are the SASL mechanisms a SASL listener offers,
	// comma-separated: PLAIN (users in the listener's JAAS line),
	// SCRAM-SHA-256 and SCRAM-SHA-512 (credentials in the cluster's
	// metadata, set with AlterUserScramCredentials). Default GSSAPI, as
	// Kafka's, which Skein does not serve: a SASL listener must name its
	// mechanisms. Kafka: sasl.enabled.mechanisms.
	EnabledMechanisms string `mapstructure:"sasl.enabled.mechanisms" yaml:"sasl.enabled.mechanisms"`
	// ServerMaxReceiveSize bounds a request before authentication, in
	// bytes. Default 524288. Kafka: sasl.server.max.receive.size.
	ServerMaxReceiveSize int32 `mapstructure:"sasl.server.max.receive.size" yaml:"sasl.server.max.receive.size"`
	// ConnectionsMaxReauthMs, when positive, is how long an authentication
	// lasts (KIP-368): SaslAuthenticate v1+ tells the client, which must
	// authenticate again on the connection before it runs out; a
	// connection past it that sends anything else is closed. So a changed
	// password or a deleted credential stops working within it. Default 0:
	// an authentication lasts as long as its connection. Kafka:
	// connections.max.reauth.ms.
	ConnectionsMaxReauthMs int64 `mapstructure:"connections.max.reauth.ms" yaml:"connections.max.reauth.ms"`
	// OAUTHBEARER's token validation (KIP-768's names): the JWKS the
	// tokens' signatures are checked with (an https://, http:// or file://
	// URL, refreshed every JWKSRefreshMs), the issuer and audiences a token
	// must name, the clock skew allowed on its times, and the claim that
	// names the principal. Tokens are always validated: Kafka's unsecured
	// default is not served.
	OAuthJWKSURL          string `mapstructure:"sasl.oauthbearer.jwks.endpoint.url" yaml:"sasl.oauthbearer.jwks.endpoint.url"`
	OAuthJWKSRefreshMs    int64  `mapstructure:"sasl.oauthbearer.jwks.endpoint.refresh.ms" yaml:"sasl.oauthbearer.jwks.endpoint.refresh.ms"`
	OAuthExpectedIssuer   string `mapstructure:"sasl.oauthbearer.expected.issuer" yaml:"sasl.oauthbearer.expected.issuer"`
	OAuthExpectedAudience string `mapstructure:"sasl.oauthbearer.expected.audience" yaml:"sasl.oauthbearer.expected.audience"`
	OAuthClockSkewSeconds int32  `mapstructure:"sasl.oauthbearer.clock.skew.seconds" yaml:"sasl.oauthbearer.clock.skew.seconds"`
	OAuthSubClaimName     string `mapstructure:"sasl.oauthbearer.sub.claim.name" yaml:"sasl.oauthbearer.sub.claim.name"`
	// FailedAuthenticationDelayMs delays the answer to a failed
	// authentication, which closes the connection, to slow down guessing.
	// Default 100. Kafka: connection.failed.authentication.delay.ms.
	FailedAuthenticationDelayMs int32 `mapstructure:"connection.failed.authentication.delay.ms" yaml:"connection.failed.authentication.delay.ms"`
}

// saslMechanisms are the mechanisms Kafka knows; servedMechanisms those
// Skein serves.
var (
	saslMechanisms   = []string{"GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
	servedMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
)

// OAuthAudiences returns sasl.oauthbearer.expected.audience as a list.
func (s SASL) OAuthAudiences() []string { return splitList(s.OAuthExpectedAudience) }

// Hidden is what the log and --print-config show for a secret: a JAAS
// configuration, which holds passwords.
const Hidden = "[hidden]"

func redact(key, val string) string {
	if strings.HasSuffix(key, jaasKey) || key == scramBootstrapKey && val != "" {
		return Hidden
	}
	return val
}

// callbackKey ends a mechanism's per-listener server callback handler:
// for OAUTHBEARER, Kafka's validating handler is what Skein does, and
// nothing else may be named.
const (
	callbackKey       = "sasl.server.callback.handler.class"
	oauthValidatorKey = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
)

// jaasKey ends a mechanism's per-listener JAAS configuration:
// listener.name.<name>.<mechanism>.sasl.jaas.config.
const jaasKey = "sasl.jaas.config"

// ListenerSASL returns the mechanisms a listener offers, upper case, and
// each one's JAAS configuration (listener.name.<name>.<mechanism>.
// sasl.jaas.config), by mechanism.
func (n Node) ListenerSASL(listener string) (mechanisms []string, jaas map[string]string) {
	settings := n.ListenerSettings[strings.ToUpper(listener)]
	enabled := n.EnabledMechanisms
	if v, ok := settings["sasl.enabled.mechanisms"]; ok {
		enabled = v
	}
	jaas = map[string]string{}
	for _, m := range splitList(enabled) {
		m = strings.ToUpper(m)
		mechanisms = append(mechanisms, m)
		if v, ok := settings[strings.ToLower(m)+"."+jaasKey]; ok {
			jaas[m] = v
		}
	}
	return mechanisms, jaas
}

// validateSASL checks the SASL settings of a listener that serves SASL.
func (v *validator) validateSASL(n Node, listener string) {
	mechanisms, jaas := n.ListenerSASL(listener)
	key := "sasl.enabled.mechanisms (listener " + listener + ")"
	if len(mechanisms) == 0 {
		v.fail(key, "", "a SASL listener needs at least one mechanism (PLAIN)")
	}
	for mech, class := range n.ListenerSettings[strings.ToUpper(listener)] {
		if strings.HasSuffix(mech, "."+callbackKey) && class != oauthValidatorKey {
			v.fail(listenerPrefix+strings.ToLower(listener)+"."+mech, class, "Skein validates OAUTHBEARER tokens itself (as "+oauthValidatorKey+"); no other handler can be named")
		}
	}
	for _, m := range mechanisms {
		switch {
		case !slices.Contains(servedMechanisms, m):
			v.fail(key, strings.Join(mechanisms, ","), m+" is not served; Skein serves "+strings.Join(servedMechanisms, ", "))
		case m == "OAUTHBEARER" && n.OAuthJWKSURL == "":
			v.fail("sasl.oauthbearer.jwks.endpoint.url", "", "OAUTHBEARER validates tokens against a JWKS: give its URL (https:// or file://)")
		case m == "PLAIN" && jaas[m] == "":
			v.fail(listenerPrefix+strings.ToLower(listener)+"."+strings.ToLower(m)+"."+jaasKey, "",
				"the "+m+" mechanism needs its users (PlainLoginModule required user_<name>=\"<password>\" ...;)")
		}
	}
}

// ListenerTLS returns the TLS settings of the named listener: each key's
// listener.name.<name>.<key> where given, else the key's own value.
func (n Node) ListenerTLS(listener string) TLS {
	t := n.TLS
	dst := reflect.ValueOf(&t).Elem()
	for key, val := range n.ListenerSettings[strings.ToUpper(listener)] {
		if f, ok := nodeByKey[key]; ok && f.index[0] == tlsFieldIndex {
			dst.Field(f.index[1]).SetString(strings.TrimSpace(val))
		}
	}
	return t
}

// validateTLS checks the TLS settings of a listener that serves TLS.
func (v *validator) validateTLS(listener string, t TLS) {
	key := func(k string) string { return k + " (listener " + listener + ")" }
	if t.KeystoreType != "PEM" {
		v.fail(key("ssl.keystore.type"), t.KeystoreType, "Skein reads PEM keystores only (convert a JKS or PKCS12 one with keytool and openssl)")
	}
	if t.TruststoreType != "PEM" {
		v.fail(key("ssl.truststore.type"), t.TruststoreType, "Skein reads PEM truststores only")
	}
	if t.KeystoreLocation == "" {
		v.fail(key("ssl.keystore.location"), "", "a TLS listener needs its key and certificate chain")
	}
	switch t.ClientAuth {
	case "none":
	case "requested", "required":
		if t.TruststoreLocation == "" {
			v.fail(key("ssl.truststore.location"), "", "ssl.client.auth="+t.ClientAuth+" needs the CAs client certificates chain to")
		}
	default:
		v.fail(key("ssl.client.auth"), t.ClientAuth, "must be none, requested or required")
	}
	for _, p := range splitList(t.EnabledProtocols) {
		if p != "TLSv1.2" && p != "TLSv1.3" {
			v.fail(key("ssl.enabled.protocols"), t.EnabledProtocols, "may list TLSv1.2 and TLSv1.3 only")
		}
	}
	if len(splitList(t.EnabledProtocols)) == 0 {
		v.fail(key("ssl.enabled.protocols"), t.EnabledProtocols, "must list TLSv1.2, TLSv1.3 or both")
	}
}
