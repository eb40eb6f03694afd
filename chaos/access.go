package chaos

import (
	"crypto/tls"
	"net/http"
	"time"
)

// Access is how a client reaches nodes' admin APIs: over HTTPS or not,
// and with which credentials (a node whose Kafka listeners authenticate
// asks for them, admin.ssl.keystore.location makes it HTTPS).
type Access struct {
	// HTTPS, with TLS's roots (nil for the system's).
	HTTPS bool
	TLS   *tls.Config
	// User and Password are sent as HTTP Basic when User is set; Token,
	// when set, as a Bearer token (an OAUTHBEARER JWT) instead.
	User, Password string
	Token          string
}

// URL returns the address of path on the admin API at addr.
func (ac Access) URL(addr, path string) string {
	if ac.HTTPS {
		return "https://" + addr + path
	}
	return "http://" + addr + path
}

// Authorize adds the credentials to a request.
func (ac Access) Authorize(req *http.Request) {
	switch {
	case ac.Token != "":
		req.Header.Set("Authorization", "Bearer "+ac.Token)
	case ac.User != "":
		req.SetBasicAuth(ac.User, ac.Password)
	}
}

// Client returns an HTTP client with the access's TLS and a timeout on
// each request.
func (ac Access) Client(timeout time.Duration) *http.Client {
	if !ac.HTTPS || ac.TLS == nil {
		return &http.Client{Timeout: timeout}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = ac.TLS
	return &http.Client{Timeout: timeout, Transport: t}
}
