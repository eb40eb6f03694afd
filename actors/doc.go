// Package actors is the shared actor plumbing of Skein: actor-system setup,
// the bridge that sends protoactor-go's slog output into zerolog,
// remoting and its one wire type, supervision strategies, stable actor
// names, and the fault-injection middleware.
//
// Every other package that runs actors builds them through this package, so
// that supervision, logging and fault injection are the same everywhere.
//
// # Actor systems and logging
//
// NewSystem is the only way Skein makes an actor system. It replaces
// protoactor's default logger (coloured text on stderr, at info) with the
// node's zerolog logger, at warn unless the node logs at debug, and leaves
// protoactor's OpenTelemetry metrics off. SlogHandler is the bridge itself,
// for other slog users.
//
// # Remoting
//
// StartRemote starts protoactor's remote on a node's actor system with
// Skein's limits. Exactly one protobuf type travels between nodes, Frame
// (frame.proto; `make generate` regenerates frame.pb.go): a message's
// stable type id, its msgpack body, and raw bytes kept out of msgpack. A
// message type is a struct registered with Register under an id that
// never changes, and embeds Origin (sender node and incarnation). A frame
// the receiver cannot decode reaches its target as *Unknown instead of
// tearing the connection down. Remoting is at-most-once: protocols on it
// pull or retry. A *kerr.Error in a message travels as its code and comes
// back as kerr's own value (kerr.go). RemoteFrames counts the frames sent
// and received per type, for /metrics. A peer that cannot be reached is
// logged when its link fails and when it works again, not at every retry
// protoactor makes (links.go).
//
// Every message to another node, whoever sends it (an actor, the root
// context, a future), passes peers.go on its way out: the process that a
// PID on another node resolves to encodes it at once, refuses a frame over
// MaxRemoteMessage (logged once per message type), and drops it when the
// peer's queue holds PeerQueueBytes already (a slow or paused peer), since
// every protocol on remoting retries what it loses; the link faults of
// Links (cut, drop, delay) apply there too, and a cut is enforced again on
// the gRPC stream to the peer, which every message to it crosses.
// Drops counts what was not sent, by reason.
//
// # Supervision
//
// NewBackoffStrategy is the one-for-one strategy Skein's supervisors use:
// a failed child stays suspended for a delay that doubles with each
// failure (10 ms to 10 s by default, with jitter) and resets after a quiet
// minute; a decider may resume, stop or escalate instead. The sender of
// the request a child failed on is answered Abandoned, which Ask returns
// as ErrAbandoned, so nobody waits for a timeout on a lost message.
//
// # Observing and breaking actors
//
// A Tree spawns a node's root actor and, through a spawn middleware that
// passes itself on, instruments every actor below it: mailbox length
// (posted and received counters in the mailbox), restart count (from the
// SupervisorEvents on the EventStream), kind, role (actors that implement
// Roled), and the Faults middleware. It is a prometheus.Collector and gives
// the live tree as a snapshot. It keeps a bounded journal of what happened
// to its actors (events.go): started, failed (with the cause and the
// supervisor's directive), restarted (with the time from the failure to
// the new instance's Started handled), stopped, role and epoch changes;
// the admin API serves it at /v1/events.
//
// Every actor a Tree spawns runs on the Tree's Dispatcher (dispatch.go),
// which keeps the goroutines that ran mailboxes for the next runs instead
// of starting one per run as protoactor's default does, so that an actor
// that goes deep (a partition's append) does not grow a new stack each
// time it wakes.
//
// Faults is the fault-injection registry: panic, stop, delay or drop the
// messages of the actors whose name (exact, or a prefix ending in "*")
// it selects. It is compiled in and off by default: with no fault set,
// its middleware costs an atomic load per message. Lifecycle messages are
// never touched.
package actors
