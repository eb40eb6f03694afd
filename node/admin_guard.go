package node

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/security"
)

// adminGuard stands in front of the admin API: against browsers (Host
// and cross-origin checks), and, when the Kafka listeners authenticate,
// against anyone who has not.
type adminGuard struct {
	allowed map[string]bool // host names a Host header may name
	// sasls are the SASL listeners' users: when there is one, every
	// request but the health probes must authenticate against them,
	// HTTP Basic with a PLAIN or SCRAM user's password or a Bearer
	// OAUTHBEARER token.
	sasls []*security.SASL
	// authorizer, when set, keeps the requests that change something
	// (any method but GET and HEAD) to super.users.
	authorizer *security.Authorizer
	delay      time.Duration // connection.failed.authentication.delay.ms
	log        zerolog.Logger
	failures   *logging.Limiter
}

// guardAdmin wraps the admin API: Go's cross-origin protection refuses a
// state-changing request a page of another origin sends (CSRF: the chaos
// and extension routes), and a Host header that names neither an IP
// address, localhost, this node's own names nor admin.allowed.hosts is
// refused, so that a page whose name resolves to this node (DNS
// rebinding) cannot read the API either. Then, with SASL listeners, the
// request must authenticate (401 otherwise), and with an authorizer a
// change must come from a super user (403 otherwise).
func guardAdmin(cfg configs.Node, sasls []*security.SASL, authorizer *security.Authorizer, log zerolog.Logger, h http.Handler) http.Handler {
	g := &adminGuard{allowed: map[string]bool{"localhost": true}, sasls: sasls, authorizer: authorizer,
		delay: time.Duration(cfg.FailedAuthenticationDelayMs) * time.Millisecond, log: log, failures: logging.NewLimiter(10, time.Minute)}
	for _, name := range strings.Split(cfg.AdminAllowedHosts, ",") {
		if name = strings.TrimSpace(name); name != "" {
			g.allowed[strings.ToLower(name)] = true
		}
	}
	for _, addr := range ownAddresses(cfg) {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
			g.allowed[strings.ToLower(host)] = true
		}
	}
	csrf := http.NewCrossOriginProtection().Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if net.ParseIP(host) == nil && !g.allowed[host] {
			http.Error(w, "admin API: Host "+r.Host+" is not this node's (add it to admin.allowed.hosts)", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			csrf.ServeHTTP(w, r) // probes carry no credentials, and learn nothing
			return
		}
		who, ok := g.authenticate(r)
		if !ok {
			g.failures.Event(g.log.Warn()).Str("remote", r.RemoteAddr).Str("path", r.URL.Path).
				Msg("admin API: a request without valid credentials refused")
			time.Sleep(g.delay)
			w.Header().Set("WWW-Authenticate", `Basic realm="skein admin", charset="UTF-8"`)
			http.Error(w, "admin API: authenticate with a SASL user's password (HTTP Basic) or an OAUTHBEARER token (Bearer)", http.StatusUnauthorized)
			return
		}
		if g.authorizer != nil && r.Method != http.MethodGet && r.Method != http.MethodHead && !g.authorizer.SuperUser(who) {
			http.Error(w, "admin API: "+who.String()+" may not change anything here: only super.users may", http.StatusForbidden)
			return
		}
		csrf.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, who)))
	})
}

// principalKey is the request context's key of the principal the guard
// authenticated.
type principalKey struct{}

// requestPrincipal returns who the guard found r to be
// (User:ANONYMOUS when no listener authenticates); ok is false for a
// request that did not pass the guard (the health probes).
func requestPrincipal(r *http.Request) (security.Principal, bool) {
	p, ok := r.Context().Value(principalKey{}).(security.Principal)
	return p, ok
}

// authenticate returns who the request proves to be: anyone
// (User:ANONYMOUS) when no listener authenticates.
func (g *adminGuard) authenticate(r *http.Request) (security.Principal, bool) {
	if len(g.sasls) == 0 {
		return security.Anonymous, true
	}
	if user, password, ok := r.BasicAuth(); ok {
		for _, s := range g.sasls {
			if p, ok := s.CheckPassword(user, password); ok {
				return p, true
			}
		}
		return security.Principal{}, false
	}
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		for _, s := range g.sasls {
			if p, ok := s.CheckToken(token); ok {
				return p, true
			}
		}
	}
	return security.Principal{}, false
}

// ownAddresses are the addresses the node is known by.
func ownAddresses(cfg configs.Node) []string {
	out := []string{cfg.AdminListen, cfg.ClusterAdvertise}
	for _, l := range cfg.KafkaListeners() {
		out = append(out, l.Listen, l.Advertise)
	}
	return out
}
