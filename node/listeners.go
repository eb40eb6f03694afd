package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/security"
	"github.com/skeinlog/skein/transport"
)

// kafkaListener is one of the node's Kafka listeners, bound.
type kafkaListener struct {
	configs.Listener
	ln net.Listener
	// serve is what the transport serves it with: its TLS, for SSL.
	serve transport.Listener
	// tls is its TLS, also what followers dial leaders with when it is
	// the inter-broker listener; nil for PLAINTEXT.
	tls *security.ServerTLS
}

// kafkaListeners are the node's Kafka listeners, the inter-broker one
// first.
type kafkaListeners []kafkaListener

// bindKafka reads the TLS files of every SSL listener and binds every
// listener, or none. SCRAM credentials are looked up in the image that
// current returns at each authentication.
func bindKafka(cfg configs.Node, log zerolog.Logger, current func() *image.Image) (kafkaListeners, error) {
	var out kafkaListeners
	for i, l := range cfg.KafkaListeners() {
		serve, tc, err := serving(cfg, l, log, current)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("node: listener %s: %w", l.Name, err)
		}
		serve.InterBroker = i == 0
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("node: listener %s: %w", l.Name, err)
		}
		out = append(out, kafkaListener{Listener: l, ln: ln, serve: serve, tls: tc})
	}
	return out, nil
}

// serving returns what the transport serves a listener with, and its
// TLS (nil for none).
func serving(cfg configs.Node, l configs.Listener, log zerolog.Logger, current func() *image.Image) (transport.Listener, *security.ServerTLS, error) {
	serve := transport.Listener{Name: l.Name}
	if l.Protocol == configs.SASLPlaintext || l.Protocol == configs.SASLSSL {
		mechanisms, jaas := cfg.ListenerSASL(l.Name)
		var oauth *security.OAuthBearer
		if slices.Contains(mechanisms, "OAUTHBEARER") {
			oauth = &security.OAuthBearer{JWKSURL: cfg.OAuthJWKSURL, Refresh: time.Duration(cfg.OAuthJWKSRefreshMs) * time.Millisecond,
				Issuer: cfg.OAuthExpectedIssuer, Audiences: cfg.OAuthAudiences(),
				Skew: time.Duration(cfg.OAuthClockSkewSeconds) * time.Second, SubClaim: cfg.OAuthSubClaimName}
			// NB: a JWKS from a URL is refreshed for the process's life.
			if err := oauth.Start(context.Background()); err != nil {
				return serve, nil, err
			}
		}
		sasl, err := security.NewSASL(mechanisms, jaas, func(mechanism, user string) (security.ScramCredential, bool) {
			c, ok := current().Scram[user][mechanism]
			return security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}, ok
		}, oauth)
		if err != nil {
			return serve, nil, err
		}
		serve.SASL = sasl
	}
	if l.Protocol != configs.SSL && l.Protocol != configs.SASLSSL {
		return serve, nil, nil
	}
	t := cfg.ListenerTLS(l.Name)
	rules, err := security.ParseMappingRules(t.PrincipalMappingRules)
	if err != nil {
		return serve, nil, err
	}
	tc, err := security.NewServerTLS(security.TLSFiles{
		Listener: l.Name, Keystore: t.KeystoreLocation, Truststore: t.TruststoreLocation, ClientAuth: t.ClientAuth,
		Protocols: t.Protocols(), CipherSuites: t.Ciphers(),
	}, log)
	if err != nil {
		return serve, nil, err
	}
	serve.TLS, serve.Principals = tc.Config(), rules
	return serve, tc, nil
}

// followerTLS is how followers dial leaders: mutual TLS with the
// inter-broker listener's keystore and truststore when it is SSL, nil for
// PLAINTEXT.
func (ls kafkaListeners) followerTLS() *tls.Config {
	if ls[0].tls == nil {
		return nil
	}
	return ls[0].tls.ClientConfig()
}

// sasls returns the SASL listeners' authentication, which the admin API
// checks its users against too.
func (ls kafkaListeners) sasls() []*security.SASL {
	var out []*security.SASL
	for _, l := range ls {
		if l.serve.SASL != nil {
			out = append(out, l.serve.SASL)
		}
	}
	return out
}

// Close closes every listener.
func (ls kafkaListeners) Close() {
	for _, l := range ls {
		l.ln.Close()
	}
}

// endpoints returns what the node registers: each listener's advertised
// host and port, the bound port where it names port 0.
func (ls kafkaListeners) endpoints() []image.Endpoint {
	out := make([]image.Endpoint, 0, len(ls))
	for _, l := range ls {
		host, port, _ := net.SplitHostPort(l.Advertise)
		p, _ := strconv.Atoi(port)
		if p == 0 {
			p = l.ln.Addr().(*net.TCPAddr).Port
		}
		out = append(out, image.Endpoint{Name: l.Name, Host: host, Port: int32(p), Protocol: string(l.Protocol)})
	}
	return out
}

// String lists the listeners as NAME://bound address.
func (ls kafkaListeners) String() string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "://" + l.ln.Addr().String()
	}
	return strings.Join(parts, ",")
}

// connectionLimits returns the transport's Limits from the config, the
// host names of max.connections.per.ip.overrides resolved to their
// addresses.
func connectionLimits(cfg configs.Node) (transport.Limits, error) {
	l := transport.Limits{MaxConnections: int(cfg.MaxConnections), MaxPerIP: int(cfg.MaxConnectionsPerIP), PerIP: map[string]int{},
		CreationRate: int(cfg.MaxConnectionCreationRate)}
	overrides, err := cfg.PerIPOverrides()
	if err != nil {
		return l, err
	}
	for host, n := range overrides {
		if ip := net.ParseIP(host); ip != nil {
			l.PerIP[ip.String()] = n
			continue
		}
		addrs, err := net.LookupHost(host)
		if err != nil {
			return l, fmt.Errorf("max.connections.per.ip.overrides: %w", err)
		}
		for _, a := range addrs {
			l.PerIP[a] = n
		}
	}
	return l, nil
}

// remotingTLS makes the node's remoting mutual TLS when its controller
// listener is SSL: the listener's keystore is both the server's and the
// dialing client's certificate, its truststore the CAs both sides check,
// and peerAllowed the principal the peer's certificate maps to.
func remotingTLS(cfg configs.Node, log zerolog.Logger, r *actors.RemoteConfig, peerAllowed func(security.Principal) bool) error {
	name, p := cfg.ClusterProtocol()
	if p != configs.SSL {
		return nil
	}
	t := cfg.ListenerTLS(name)
	rules, err := security.ParseMappingRules(t.PrincipalMappingRules)
	if err != nil {
		return err
	}
	refusals := logging.NewLimiter(10, time.Minute)
	st, err := security.NewServerTLS(security.TLSFiles{
		Listener: name, Keystore: t.KeystoreLocation, Truststore: t.TruststoreLocation, ClientAuth: "required",
		Protocols: t.Protocols(), CipherSuites: t.Ciphers(),
		PeerAllowed: func(leaf *x509.Certificate) error {
			subject := security.Subject(leaf)
			name, ok := rules.Map(subject)
			if !ok {
				return fmt.Errorf("no ssl.principal.mapping.rules rule maps the peer certificate's subject %q", subject)
			}
			if p := (security.Principal{Type: "User", Name: name}); !peerAllowed(p) {
				refusals.Event(log.Warn()).Str("principal", p.String()).Str("subject", subject).
					Msg("remoting: refusing a peer whose principal may not act as a broker (neither in super.users nor allowed CLUSTER_ACTION)")
				return fmt.Errorf("%s may not act as a broker", p)
			}
			return nil
		},
	}, log)
	if err != nil {
		return fmt.Errorf("listener %s: %w", name, err)
	}
	r.ServerTLS, r.ClientTLS = st.Config(), st.ClientConfig()
	return nil
}

// mayActAsBroker reports whether a remoting peer's principal may: any,
// without an authorizer; with one, a super user, or a principal the ACLs
// this node has loaded allow CLUSTER_ACTION on the cluster (before its
// metadata is loaded, at start, only super users).
func (n *Node) mayActAsBroker(p security.Principal) bool {
	if n.authorizer == nil || n.authorizer.SuperUser(p) {
		return true
	}
	im := n.image.Load()
	return im != nil && n.authorizer.Allowed(im.ACLSet(), security.Request{Principal: p, Host: "*"},
		kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, security.ClusterName)
}

// authorizer returns the node's authorizer, nil when authorizer.class.name
// turns none on.
func authorizer(cfg configs.Node) *security.Authorizer {
	if !cfg.Authorizing() {
		return nil
	}
	return security.NewAuthorizer(cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound)
}
