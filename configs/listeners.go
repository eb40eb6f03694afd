package configs

import (
	"fmt"
	"net"
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
	for _, key := range []string{"listen", "advertise"} {
		if _, ok := n.Explicit[key]; ok {
			fail(key, n.Explicit[key], "set either listeners (Kafka's) or "+key+", not both")
		}
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
			continue // the node's remoting: ClusterListener
		}
		p, ok := protocols[e.name]
		if !ok {
			fail("listener.security.protocol.map", n.ListenerSecurityProtocolMap,
				fmt.Sprintf("names no security protocol for listener %s", e.name))
			continue
		}
		if p != Plaintext {
			fail("listeners", n.Listeners, fmt.Sprintf("listener %s: security protocol %s is not supported yet; only PLAINTEXT is", e.name, p))
			continue
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
