package transport

import (
	"math"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound a node's client connections, as Kafka's max.connections,
// max.connections.per.ip and max.connections.per.ip.overrides do, with
// Kafka's meaning: 0 allows none (an address may be shut out with an
// override of 0), and no limit is math.MaxInt32, Kafka's default.
type Limits struct {
	// MaxConnections bounds the connections of all listeners but the
	// inter-broker one: at the bound, a listener stops accepting (new
	// connections wait in the kernel's backlog) until one closes, so that
	// a flood of clients cannot shut followers and other nodes out.
	MaxConnections int
	// MaxPerIP bounds the connections from one address, PerIP overrides
	// it for some (by IP): one more is closed as soon as it is accepted.
	MaxPerIP int
	PerIP    map[string]int
	// CreationRate bounds how many connections a second each listener
	// but the inter-broker one accepts (max.connection.creation.rate):
	// past it, the listener waits before it accepts the next, and the
	// clients wait in the kernel's backlog. math.MaxInt32 for none.
	CreationRate int
}

// acceptPace paces a listener's accepts to Limits.CreationRate; nil for
// a listener without a bound.
type acceptPace struct {
	limiter *rate.Limiter
}

func newAcceptPace(l Limits, exempt bool) *acceptPace {
	if exempt || l.CreationRate <= 0 || l.CreationRate >= math.MaxInt32 {
		return nil
	}
	return &acceptPace{limiter: rate.NewLimiter(rate.Limit(l.CreationRate), l.CreationRate)}
}

// wait blocks until the listener may accept another connection, or stop
// is closed (false then); it returns how long it waited.
func (p *acceptPace) wait(stop <-chan struct{}) (time.Duration, bool) {
	if p == nil {
		return 0, true
	}
	d := p.limiter.Reserve().Delay()
	if d <= 0 {
		return 0, true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, true
	case <-stop:
		return d, false
	}
}

// connCount counts a server's connections for its Limits.
type connCount struct {
	limits Limits
	mu     sync.Mutex
	total  int // of the listeners the total bounds
	perIP  map[string]int
	freed  chan struct{} // closed and replaced whenever a connection closes
}

func newConnCount(l Limits) *connCount {
	return &connCount{limits: l, perIP: map[string]int{}, freed: make(chan struct{})}
}

func (cc *connCount) perIPLimit(ip string) int {
	if n, ok := cc.limits.PerIP[ip]; ok {
		return n
	}
	return cc.limits.MaxPerIP
}

// waitRoom blocks while the node holds MaxConnections, unless the
// listener is exempt, or until stop is closed (false then).
func (cc *connCount) waitRoom(exempt bool, stop <-chan struct{}) bool {
	for {
		cc.mu.Lock()
		if exempt || cc.total < cc.limits.MaxConnections {
			cc.mu.Unlock()
			return true
		}
		freed := cc.freed
		cc.mu.Unlock()
		select {
		case <-freed:
		case <-stop:
			return false
		}
	}
}

// add counts a connection from ip, or reports false when ip has its
// limit already.
func (cc *connCount) add(ip string, exempt bool) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.perIP[ip] >= cc.perIPLimit(ip) {
		return false
	}
	cc.perIP[ip]++
	if !exempt {
		cc.total++
	}
	return true
}

// remove uncounts a connection that add counted.
func (cc *connCount) remove(ip string, exempt bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.perIP[ip]--; cc.perIP[ip] <= 0 {
		delete(cc.perIP, ip)
	}
	if !exempt {
		cc.total--
	}
	close(cc.freed)
	cc.freed = make(chan struct{})
}

// remoteIP is the address a connection comes from, without its port.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return host
}
