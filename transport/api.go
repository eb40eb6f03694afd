package transport

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/coordinator"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/security"
	"github.com/skeinlog/skein/share"
	"github.com/skeinlog/skein/txn"
)

// ask sends a command to the controller and waits for its answer.
func (a *API) askController(msg any) (any, error) {
	return actors.Ask(a.System, a.Controller, msg, a.RequestTimeout)
}

// API is the set of Kafka API keys the node serves, each with its versions
// and handler (one file per key, named as Kafka numbers them).
type API struct {
	handlers [maxKey + 1]handler
	metrics  *Metrics
	// fetchSessions are the node's fetch sessions (KIP-227): a client may
	// go on with its session over another connection.
	fetchSessions *fetchSessionCache
	// shareSessions are the node's share sessions (KIP-932).
	shareSessions shareSessions
	// denials rate-limits the log lines of authorization denials.
	denials *logging.Limiter
	// quotas measure clients against the image's client quotas.
	quotas *quotas
	Deps
}

// Deps is what the handlers reach: the actors that own the data and the
// published state they read without messages.
type Deps struct {
	System     *actor.ActorSystem
	Controller *actor.PID
	// Image returns the newest cluster metadata image.
	Image func() *image.Image
	// Partitions holds the handles of the partitions this node hosts.
	Partitions *partition.Registry
	// LogDirs says which log dir holds each hosted partition
	// (DescribeLogDirs); nil: data.dir's one directory holds them all.
	LogDirs *partition.LogDirs
	// Groups maps consumer groups to their coordinator actors; GroupsPID
	// is the groups supervisor, which spawns one on first use.
	Groups    *coordinator.Directory
	GroupsPID *actor.PID
	// Txns maps transactional ids to their coordinator actors; TxnsPID is
	// the txns supervisor; Verifier asks coordinators about produced
	// transactional batches (KIP-890).
	Txns     *txn.Directory
	TxnsPID  *actor.PID
	Verifier *txn.Verifier
	// Shares maps share groups' partitions led here to their actors;
	// SharesPID is the shares supervisor, which spawns one on first use;
	// ShareSettings returns a share group's settings in force.
	Shares        *share.Directory
	SharesPID     *actor.PID
	ShareSettings func(group string) share.Settings
	// Appends is the node's appends actor (partition.AppendsProps), which
	// writes WriteTxnMarkers' markers.
	Appends *actor.PID
	// ProducerClients, if set, is told which client produces with each
	// producer id (a connection tells it when its batches' id changes).
	ProducerClients *ProducerClients
	// NewProducerID hands out a producer id no one had (InitProducerId).
	NewProducerID func() (int64, *kerr.Error)
	// Node is this node's configuration.
	Node configs.Node
	// Quorum returns what this node knows of the controller quorum (the
	// active controller); nil means this node is the only controller.
	Quorum func() controller.Status
	// ControllerOf returns the PID of a voter's controller actor, nil for
	// a node that is not a voter.
	ControllerOf func(node int32) *actor.PID
	// RequestTimeout bounds how long a handler waits for an actor.
	RequestTimeout time.Duration
	Logger         zerolog.Logger
	// Links are the node's injected network faults, which apply to
	// followers' fetches; nil for none.
	Links *actors.Links
	// Replication counts the record bytes followers fetch; nil counts
	// none.
	Replication *partition.Stats
	// Syncer, under durability fsync, is the node's group commit, told of
	// each Produce request's appends before they are sent (see
	// partition.Syncer.Announce); nil otherwise.
	Syncer *partition.Syncer
	// Authorizer decides requests from the image's ACLs (authorizer.class.name);
	// nil allows everything.
	Authorizer *security.Authorizer
	// Failures rate-limits the lines logged about storage failures
	// (segment reads that fail), node-wide; nil means no limit.
	Failures *logging.Limiter
	// Clock is the node's clock, the one its partitions' views are
	// stamped with (a follower's CaughtUp); nil is the real one.
	Clock clock.Clock
}

// now returns the time by the node's clock.
func (a *API) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

// activeController returns the node id of the active controller, -1 if
// none is known.
func (a *API) activeController() int32 {
	if a.Quorum == nil {
		return a.Node.NodeID
	}
	return a.Quorum().Leader
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
func NewAPI(deps Deps, metrics *Metrics) *API {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if deps.RequestTimeout <= 0 {
		deps.RequestTimeout = 30 * time.Second
	}
	if deps.Image != nil {
		metrics.topics.image.Store(&deps.Image)
	}
	a := &API{metrics: metrics, Deps: deps, denials: logging.NewLimiter(10, time.Minute),
		quotas: newQuotas(int(deps.Node.QuotaWindowNum), time.Duration(deps.Node.QuotaWindowSizeSeconds)*time.Second)}
	for _, r := range registrations {
		r(a)
	}
	return a
}
