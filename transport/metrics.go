package transport

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/security"
)

// Metrics are the Kafka listener's Prometheus metrics. Each node has its own
// registry, so that several nodes can run in one test process.
type Metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	connections *prometheus.GaugeVec
	// authentications count the handshakes (TLS) by listener, mechanism
	// and result.
	authentications *prometheus.CounterVec
	// refused counts the connections closed as soon as accepted, by
	// listener and reason (per_ip).
	refused *prometheus.CounterVec
	// denials count authorization denials by resource type and
	// operation.
	denials *prometheus.CounterVec
	// acceptThrottle counts the time listeners waited to accept
	// (max.connection.creation.rate).
	acceptThrottle *prometheus.CounterVec
	// throttle counts the time clients were told to wait, by quota.
	throttle *prometheus.CounterVec
	// topics count records and bytes in and out by topic.
	topics *topicMetrics
	// followerRecords and followerBytes count what this node served to
	// consumers from partitions it follows (KIP-392); readReplica the
	// partitions of consumers' fetches answered with a preferred read
	// replica instead of records, by whether a leader or a follower
	// answered.
	followerRecords, followerBytes prometheus.Counter
	readReplica                    *prometheus.CounterVec
}

// NewMetrics registers the listener's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_requests_total", Help: "Kafka requests received, by API key and version.",
		}, []string{"api", "version"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_request_errors_total", Help: "Error codes returned, by API key, version and Kafka error name.",
		}, []string{"api", "version", "error"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "skein_request_duration_seconds", Help: "Time from decoding a request to having its response, by API key.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skein_open_connections", Help: "Open Kafka client connections, by listener.",
		}, []string{"listener"}),
		authentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_authentications_total", Help: "Client authentications (SSL: TLS handshakes), by listener, mechanism and result (succeeded, failed).",
		}, []string{"listener", "mechanism", "result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_connections_refused_total", Help: "Connections closed as soon as accepted, by listener and reason (per_ip: max.connections.per.ip).",
		}, []string{"listener", "reason"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_authorization_denials_total", Help: "Requests (or parts of requests) the authorizer denied, by resource type and operation.",
		}, []string{"resource_type", "operation"}),
		acceptThrottle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_connection_accept_throttle_seconds_total", Help: "Time each listener waited before accepting a connection, held to max.connection.creation.rate.",
		}, []string{"listener"}),
		throttle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_quota_throttle_seconds_total", Help: "Time clients were told to wait (throttle_time_ms, their connections muted meanwhile), by quota.",
		}, []string{"quota"}),
		topics: newTopicMetrics(),
		followerRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skein_fetch_follower_records_total", Help: "Records this node served to consumers from partitions it follows (KIP-392: the offsets from the fetch offset to the end of the batches served, as skein_topic_records_out_total counts them).",
		}),
		followerBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skein_fetch_follower_bytes_total", Help: "Record bytes this node served to consumers from partitions it follows (KIP-392).",
		}),
		readReplica: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_fetch_preferred_read_replica_total", Help: "Partitions of consumers' fetches answered with a preferred read replica instead of records (KIP-392), by who answered: a leader sending the consumer to a replica in its rack, or a follower not in sync sending it back to its leader.",
		}, []string{"by"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.latency, m.connections, m.authentications, m.refused, m.denials, m.acceptThrottle, m.throttle, m.topics,
			m.followerRecords, m.followerBytes, m.readReplica)
	}
	return m
}

func apiName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" {
		return name
	}
	return strconv.Itoa(int(key))
}

func (m *Metrics) request(key, version int16) {
	m.requests.WithLabelValues(apiName(key), strconv.Itoa(int(version))).Inc()
}

func (m *Metrics) observe(key, version int16, d time.Duration, _ kmsg.Response) {
	m.latency.WithLabelValues(apiName(key)).Observe(d.Seconds())
}

// errorCode counts an error code a handler returned (0 is not an error).
func (m *Metrics) errorCode(key, version int16, code int16) {
	if code == 0 {
		return
	}
	m.errors.WithLabelValues(apiName(key), strconv.Itoa(int(version)), errorName(code)).Inc()
}

// topic returns a topic's counters of records and bytes in and out.
func (m *Metrics) topic(name string) *topicCounters { return m.topics.counters(name) }

// servedAsFollower counts records a follower served to a consumer.
func (m *Metrics) servedAsFollower(records, bytes int64) {
	m.followerRecords.Add(float64(records))
	m.followerBytes.Add(float64(bytes))
}

// sentElsewhere counts a partition answered with a preferred read replica.
func (m *Metrics) sentElsewhere(byFollower bool) {
	by := "leader"
	if byFollower {
		by = "follower"
	}
	m.readReplica.WithLabelValues(by).Inc()
}

func (m *Metrics) connectionOpened(listener string) { m.connections.WithLabelValues(listener).Inc() }
func (m *Metrics) connectionClosed(listener string) { m.connections.WithLabelValues(listener).Dec() }

func (m *Metrics) acceptThrottled(listener string, d time.Duration) {
	m.acceptThrottle.WithLabelValues(listener).Add(d.Seconds())
}

func (m *Metrics) connectionRefused(listener, reason string) {
	m.refused.WithLabelValues(listener, reason).Inc()
}

func (m *Metrics) authenticated(listener, mechanism string, ok bool) {
	result := "succeeded"
	if !ok {
		result = "failed"
	}
	m.authentications.WithLabelValues(listener, mechanism, result).Inc()
}

func (m *Metrics) denied(rt security.ResourceType, op security.Operation) {
	m.denials.WithLabelValues(rt.String(), op.String()).Inc()
}

func (m *Metrics) throttled(quota string, d time.Duration) {
	if d > 0 {
		m.throttle.WithLabelValues(quota).Add(d.Seconds())
	}
}
