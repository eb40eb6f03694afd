package transport

import (
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// Kafka's client quota keys.
const (
	quotaProduce      = "producer_byte_rate"
	quotaFetch        = "consumer_byte_rate"
	quotaRequest      = "request_percentage"
	quotaMutation     = "controller_mutation_rate"
	quotaIPConnection = "connection_creation_rate"
)

// quotas enforce the image's client quotas on this node. Each client is
// measured in a token bucket per quota (Kafka's TokenBucket of KIP-599,
// which Kafka uses for controller mutations): it fills at the quota's rate
// up to what quota.window.num windows of quota.window.size.seconds hold,
// and each request takes what it costs. A client that drives it below
// zero is told to wait until it is back at zero (throttle_time_ms), and
// its connection is not read meanwhile (KIP-219). Kafka measures bytes
// and request time in sampled windows instead, whose rate swings as the
// oldest window drops out (measured here: 20-50 % over the quota for
// seconds at a time with large requests); a bucket holds a steady client
// to its quota exactly, and allows the same burst.
type quotas struct {
	span    time.Duration // the windows together: the burst a bucket holds
	mu      sync.Mutex
	buckets map[sensorKey]*bucket
	charges int // since the last sweep of full buckets
}

// sensorKey names a sensor: a quota key and the user and client id it
// measures ("" where the quota that applies does not name one: every
// client id of a user shares a user quota).
type sensorKey struct {
	key, user, client string
}

func newQuotas(samples int, size time.Duration) *quotas {
	return &quotas{span: time.Duration(max(samples, 1)) * max(size, time.Millisecond), buckets: map[sensorKey]*bucket{}}
}

// resolve finds the quota of key for a user and client id, with Kafka's
// precedence: user and client id, user and default client id, user, the
// default user and the client id, the defaults of both, the default user,
// the client id, the default client id. It returns the quota and the
// sensor that measures against it.
func resolve(im *image.Image, key, user, client string) (float64, sensorKey, bool) {
	if len(im.ClientQuotas) == 0 {
		return 0, sensorKey{}, false
	}
	u, c, none := image.Named(user), image.Named(client), image.QuotaName{}
	for _, e := range []image.QuotaEntity{
		{User: u, ClientID: c}, {User: u, ClientID: image.DefaultName}, {User: u},
		{User: image.DefaultName, ClientID: c}, {User: image.DefaultName, ClientID: image.DefaultName}, {User: image.DefaultName},
		{User: none, ClientID: c}, {ClientID: image.DefaultName},
	} {
		v, ok := im.ClientQuotas[e][key]
		if !ok {
			continue
		}
		sk := sensorKey{key: key}
		if e.User.Present {
			sk.user = user
		}
		if e.ClientID.Present {
			sk.client = client
		}
		return v, sk, true
	}
	return 0, sensorKey{}, false
}

// resolveIP finds the connection_creation_rate of an address: its own or
// the default.
func resolveIP(im *image.Image, ip string) (float64, sensorKey, bool) {
	for _, e := range []image.QuotaEntity{{IP: image.Named(ip)}, {IP: image.DefaultName}} {
		if v, ok := im.ClientQuotas[e][quotaIPConnection]; ok {
			return v, sensorKey{key: quotaIPConnection, client: ip}, true
		}
	}
	return 0, sensorKey{}, false
}

// charge takes amount from the sensor's bucket and returns how long its
// client must wait for the bucket to be back at zero; 0 when it is not
// below.
func (q *quotas) charge(sk sensorKey, quota, amount float64, now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.charges++; q.charges >= 1024 {
		q.sweep(now)
	}
	b := q.buckets[sk]
	if b == nil {
		b = &bucket{tokens: quota * q.span.Seconds(), last: now}
		q.buckets[sk] = b
	}
	b.refill(quota, q.span, now)
	b.tokens -= amount
	return b.wait(quota, q.span)
}

// over returns how long a client whose bucket is below zero must wait,
// taking nothing: Kafka's strict check of controller mutations, which
// refuses a request while the client is over.
func (q *quotas) over(sk sensorKey, quota float64, now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.buckets[sk]
	if b == nil {
		return 0
	}
	b.refill(quota, q.span, now)
	return b.wait(quota, q.span)
}

// sweep forgets the buckets that have been full long enough that a new
// one would be the same.
func (q *quotas) sweep(now time.Time) {
	q.charges = 0
	for k, b := range q.buckets {
		if now.Sub(b.last) > q.span {
			delete(q.buckets, k)
		}
	}
}

// bucket is one client's tokens against one quota.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill adds what the quota's rate gave since the last charge, up to
// what span holds (a quota changed meanwhile applies from now).
func (b *bucket) refill(quota float64, span time.Duration, now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.tokens+quota*now.Sub(b.last).Seconds(), quota*span.Seconds())
		b.last = now
	}
}

// wait is how long the bucket takes to be back at zero, at most span.
func (b *bucket) wait(quota float64, span time.Duration) time.Duration {
	if b.tokens >= 0 {
		return 0
	}
	return min(time.Duration(-b.tokens/quota*float64(time.Second)), span)
}

// mute stops reading the connection for d (KIP-219): its client was told
// to wait that long, and one that does not is not served meanwhile.
func (c *conn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted waits, on the reader goroutine, until the connection may be
// read; false when it is stopping meanwhile.
func (c *conn) waitUnmuted() bool {
	d := time.Until(time.Unix(0, c.mutedUntil.Load()))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	case <-c.gone:
		return false
	}
}

// quotaUser is whom user quotas measure: the principal's name.
func (c *conn) quotaUser() string { return c.principal.Name }

// chargeRequest measures a request just handled against its client's
// producer_byte_rate (Produce's records) and request_percentage (the time
// its handler took, a percentage of one goroutine), mutes the connection
// for the longer throttle, and returns it. The SASL exchange and a
// follower's fetch are not measured, as Kafka exempts them.
func (c *conn) chargeRequest(key int16, req kmsg.Request, took time.Duration) time.Duration {
	a := c.s.api
	im := a.quotaImage()
	if im == nil || key == 17 || key == 18 || key == 36 || fromFollower(req) {
		return 0
	}
	now := time.Now()
	var throttle time.Duration
	if quota, sk, ok := resolve(im, quotaRequest, c.quotaUser(), c.client); ok {
		throttle = a.quotas.charge(sk, quota, took.Seconds()*100, now)
		a.metrics.throttled(quotaRequest, throttle)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		if quota, sk, ok := resolve(im, quotaProduce, c.quotaUser(), c.client); ok {
			var n int
			for _, t := range p.Topics {
				for _, part := range t.Partitions {
					n += len(part.Records)
				}
			}
			d := a.quotas.charge(sk, quota, float64(n), now)
			a.metrics.throttled(quotaProduce, d)
			throttle = max(throttle, d)
		}
	}
	if throttle > 0 {
		c.mute(throttle)
	}
	return throttle
}

// fromFollower reports whether a request is another node's replication.
func fromFollower(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return r.ReplicaState.ID >= 0 || r.ReplicaID >= 0
	case *kmsg.OffsetForLeaderEpochRequest:
		return r.ReplicaID >= 0
	}
	return false
}

// withThrottle sets a response's throttle_time_ms to at least d.
func withThrottle(f finish, d time.Duration) finish {
	return func() kmsg.Response {
		resp := f()
		setThrottle(resp, d)
		return resp
	}
}

func setThrottle(resp kmsg.Response, d time.Duration) {
	t, ok := resp.(kmsg.ThrottleResponse)
	if !ok || resp == nil {
		return
	}
	if cur, _ := t.Throttle(); int64(cur) < d.Milliseconds() {
		resp.(kmsg.SetThrottleResponse).SetThrottle(int32(min(d.Milliseconds(), math.MaxInt32)))
	}
}

// mutations is a client's controller_mutation_rate (KIP-599), checked
// strictly: a request that would create or delete partitions while the
// client's rate is over its quota is refused THROTTLING_QUOTA_EXCEEDED
// (by the versions that know it), and the partitions a request did
// create or delete are charged after it.
type mutations struct {
	a     *API
	c     *conn
	sk    sensorKey
	quota float64
	on    bool
}

func (c *conn) mutations() mutations {
	m := mutations{a: c.s.api, c: c}
	m.quota, m.sk, m.on = resolve(m.a.Image(), quotaMutation, c.quotaUser(), c.client)
	return m
}

// over returns how long the client must wait before it may mutate again;
// 0 when it may now.
func (m mutations) over() time.Duration {
	if !m.on {
		return 0
	}
	return m.a.quotas.over(m.sk, m.quota, time.Now())
}

// charge records n partitions created or deleted and returns the
// throttle, muting the connection for it.
func (m mutations) charge(n int) time.Duration {
	if !m.on || n == 0 {
		return 0
	}
	d := m.a.quotas.charge(m.sk, m.quota, float64(n), time.Now())
	if d > 0 {
		m.a.metrics.throttled(quotaMutation, d)
		m.c.mute(d)
	}
	return d
}

// ipOverRate counts a new connection from ip against its
// connection_creation_rate quota (KIP-612) and reports whether it is past
// it: that connection is closed.
func (a *API) ipOverRate(ip string) bool {
	im := a.quotaImage()
	if im == nil {
		return false
	}
	quota, sk, ok := resolveIP(im, ip)
	return ok && a.quotas.charge(sk, quota, 1, time.Now()) > 0
}

// quotaImage returns the image when it has client quotas, nil otherwise
// (and in tests without an image): most nodes have none, and pay nothing.
func (a *API) quotaImage() *image.Image {
	if a.Image == nil {
		return nil
	}
	if im := a.Image(); len(im.ClientQuotas) > 0 {
		return im
	}
	return nil
}
