// Package node composes one Skein process: the actor system, the
// controller, the partitions and group coordinators, and the listeners; it
// owns start-up and graceful stop. A node holds an exclusive lock on
// data.dir/.lock from before it reads the directory until it stops
// (datadir.go), so that a second node on the same directory is refused.
// With controller.quorum.voters empty a
// node is a cluster of its own; with it set, the node starts remoting on
// cluster.listen, its controller joins the quorum, and the node serves
// clients once its broker is registered in the cluster's metadata. A
// broker-only node (not a voter) follows the voters' log; Start refuses a
// controller-only node. A node hosts the replicas placed on it, leading or
// following each as the metadata says; its partition leaders ask the
// active controller for ISR changes (AlterPartition), and on Stop a
// clustered node first has its broker fenced, so that its leaderships
// move while it still serves (controlled shutdown).
//
// A node's actors form one tree under its root actor, node/<id>
// (docs/architecture.md, "The actor tree"): partitions, with one child per
// hosted partition; groups, with one child per consumer group this node
// coordinates (package coordinator; a node coordinates the groups of the
// __consumer_offsets partitions it leads); txns, with one child per
// transactional id this node coordinates (package txn; the ids of the
// __transaction_state partitions it leads); fetchers, with one child per
// node it follows partitions on, which fetches from that node's Kafka
// listener; extensions, with one child per source partition this node
// leads of each extension instance (package extension); metadata, which
// turns each image the controller publishes into what the others host,
// lead and follow (metadata.go); appends, which takes appends and
// transaction markers from other nodes (partition.RemoteAppend,
// partition.RemoteMarker); and controller, this node's seat in the
// controller quorum. The root actor's guardian restarts it up to 10 times
// a minute and then stops it, which closes Done. The root's children, and
// the children of partitions, fetchers, groups, txns and extensions,
// restart with exponential backoff (actors.NewBackoffStrategy). Every
// actor is spawned through an actors.Tree, which counts its mailbox and
// restarts and installs the fault-injection middleware (actors.Faults).
//
// Every log's files are opened through one descriptor cache sized from the
// open-file limit (vfs.Cache, files.go), and under durability fsync the
// partitions' appends are made durable together, one syncfs(2) a round of
// each log dir's filesystem with appends waiting (partition.Syncer).
//
// Deleted partitions: the metadata actor hosts and unhosts partitions only
// from the first image that registers this run of the node onwards (the
// images replayed from the node's own metadata log may be older than the
// partition directories on disk). On that first image, before hosting
// anything, the node renames for deletion every partition directory in
// data.dir that the image does not place on it (sweep.go): those of topics
// deleted, or replicas moved away, while the node was down or before it had
// removed them. The directories are removed in the background by a
// partition.Trash that survives restarts and that Stop does not wait for.
//
// Besides the Kafka listener, a node serves the admin HTTP API on
// admin.listen (admin.go): Prometheus metrics, health and readiness, the
// live actor tree, its events and the cluster as this node sees it; fault
// injection (chaos.go); and the cluster's extension instances
// (extensions.go); behind a guard (admin_guard.go) that refuses what a
// browser page of another site sends, asks for a SASL user's credentials
// when the Kafka side authenticates, and keeps changes to super users
// under an authorizer. Its listeners.go binds the Kafka listeners with
// their TLS and SASL, and makes remoting and followers' fetches mutual
// TLS when the controller and inter-broker listeners are SSL, admitting
// only peers whose certificates name brokers.
//
// The caller's duties (package cli's `skein node` does this):
//
//  1. load and validate a configs.Node and build a logger;
//  2. Start, which creates data.dir and starts the actor system;
//  3. wait for a signal, or for Done, which closes if the root actor dies
//     for good;
//  4. Stop with a deadline, and exit.
//
// Start and Stop may be called from any goroutine; Stop is idempotent.
package node
