package transport

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is the set of Kafka API keys the node serves, each with its versions
// and handler (one file per key, named as Kafka numbers them).
type API struct {
	handlers [maxKey + 1]handler
	metrics  *Metrics
}

// maxKey bounds the API keys this broker can know.
const maxKey = 100

func (a *API) handler(key int16) handler {
	if key < 0 || int(key) > maxKey {
		return handler{}
	}
	return a.handlers[key]
}

// requestVersionOK reports whether the server serves key at version.
func (a *API) requestVersionOK(key, version int16) bool {
	h := a.handler(key)
	return h.handle != nil && version >= h.min && version <= h.max
}

// register adds a handler for key.
func (a *API) register(key int16, h handler) {
	if h.advertiseMin == 0 || h.advertiseMin > h.min {
		h.advertiseMin = h.min
	}
	a.handlers[key] = h
}

// timed wraps a request's finish to observe its latency and error code.
func (a *API) timed(key, version int16, f finish) finish {
	start := time.Now()
	return func() kmsg.Response {
		resp := f()
		a.metrics.observe(key, version, time.Since(start), resp)
		return resp
	}
}

// registrations add each API key's handler to a new API; each NN_*.go file
// appends its own in init.
var registrations []func(*API)

// NewAPI returns the API with every key registered. metrics may be nil in
// tests that do not look at them.
func NewAPI(metrics *Metrics) *API {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	a := &API{metrics: metrics}
	for _, r := range registrations {
		r(a)
	}
	return a
}
