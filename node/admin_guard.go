package node

import (
	"net"
	"net/http"
	"strings"

	"github.com/skeinlog/skein/configs"
)

// guardAdmin wraps the admin API against browsers: Go's cross-origin
// protection refuses a state-changing request a page of another origin
// sends (CSRF: the chaos and extension routes), and a Host header that
// names neither an IP address, localhost, this node's own names nor
// admin.allowed.hosts is refused, so that a page whose name resolves to
// this node (DNS rebinding) cannot read the API either.
func guardAdmin(cfg configs.Node, h http.Handler) http.Handler {
	allowed := map[string]bool{"localhost": true}
	for _, name := range strings.Split(cfg.AdminAllowedHosts, ",") {
		if name = strings.TrimSpace(name); name != "" {
			allowed[strings.ToLower(name)] = true
		}
	}
	for _, addr := range ownAddresses(cfg) {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
			allowed[strings.ToLower(host)] = true
		}
	}
	csrf := http.NewCrossOriginProtection().Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if net.ParseIP(host) == nil && !allowed[host] {
			http.Error(w, "admin API: Host "+r.Host+" is not this node's (add it to admin.allowed.hosts)", http.StatusForbidden)
			return
		}
		csrf.ServeHTTP(w, r)
	})
}

// ownAddresses are the addresses the node is known by.
func ownAddresses(cfg configs.Node) []string {
	out := []string{cfg.AdminListen, cfg.ClusterAdvertise}
	for _, l := range cfg.KafkaListeners() {
		out = append(out, l.Listen, l.Advertise)
	}
	return out
}
