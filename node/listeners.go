package node

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
)

// kafkaListener is one of the node's Kafka listeners, bound.
type kafkaListener struct {
	configs.Listener
	ln net.Listener
}

// kafkaListeners are the node's Kafka listeners, the inter-broker one
// first.
type kafkaListeners []kafkaListener

// bindKafka binds every listener, or none.
func bindKafka(ls []configs.Listener) (kafkaListeners, error) {
	var out kafkaListeners
	for _, l := range ls {
		ln, err := net.Listen("tcp", l.Listen)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("node: listener %s: %w", l.Name, err)
		}
		out = append(out, kafkaListener{Listener: l, ln: ln})
	}
	return out, nil
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
