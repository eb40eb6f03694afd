// Package extension runs user code inside the broker, as actors beside the
// partitions: an extension instance (cluster metadata, image.Extension) of
// a kind registered in the binary (Register) processes the records of the
// topics its source.topics names, of this cluster or of another.
//
// # Actors
//
//	extensions                    supervisor (SupervisorProps), one-for-one with backoff
//	└── <instance>/<topic>-<n>    one per source partition this node leads (runner.go)
//
// The supervisor takes the node's metadata (Placement: the image and the
// partitions this node leads) and starts, stops or restarts the actors to
// match: an actor per source partition of each instance, on the node that
// leads it; for a source in another cluster (source.bootstrap.servers), on
// the live broker a hash of its name picks, from the topics a discovery
// goroutine lists there every few seconds.
//
// An actor's cycle: load its position (the group GroupFor's committed
// offset, whose metadata holds its producer id and the next sequence of
// each target; for a remote source, the last position record in the state
// topic), the state as of it (StateTopic) and what each target already
// holds of its producer (Positions.LastSequence); then, chunk by chunk,
// read the source (the partition's published view, or a Kafka client for
// a remote source), hand the records to the Extension on a goroutine,
// number its output per target, write it through the targets' leaders'
// appends actors (partition.RemoteAppend) as an idempotent producer, and
// move the position on, committing it every commit interval and when it
// catches up. Output a target already has is dropped (Status.Skipped): the
// output is written exactly once as long as the kind is deterministic.
// Ticks of a Timed extension that write are noted in the state topic and
// replayed after a restart. With output.transactions (txn.go) the output,
// state and position go in a Kafka transaction per commit instead, under a
// transactional id of the partition's own, and a restart's InitProducerId
// aborts what the run before left open: exactly once whatever the kind.
//
// Failures: what the cluster cannot take yet (no leader, a missing topic,
// a commit that fails) is retried with backoff and shown as the waiting
// state, logged when it starts and when it ends; a panic, an error from
// the extension or an output refused for good restarts the actor, and the
// sixth start without a quiet minute parks it. Runtime collects the
// statuses (Status) and counts (Totals) for the admin API and /metrics.
package extension
