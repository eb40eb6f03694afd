// Package partition is the partition actor: the single writer of one hosted
// replica's log, and the "partitions" supervisor that hosts them.
//
// # Actors
//
//	partitions            supervisor, one-for-one; spawns and stops partition actors
//	└── <topic>-<n>       one per hosted partition
//	fetchers              supervisor of the fetchers (fetcher.go)
//	└── <leader node id>  fetches, for every partition this node follows there, from the leader
//	                      (Kafka Fetch requests on its Kafka listener, which transport answers with
//	                      Registry.ReadForFollower: replication.go)
//	appends               takes appends and transaction markers from writers on any node (remote.go)
//
// A partition actor runs the behaviour of its role (protoactor's Become,
// roles.go): leading (appends, record deletions, followers' positions),
// following (its leader's answers; appends are refused
// NOT_LEADER_OR_FOLLOWER), and under both the common one (ticks, syncs,
// configs, state changes), which is all it runs while no log is open. Where
// it switches, it publishes its role and leader epoch in an atomic, which
// ActorRole reports (actors.Roled) to the node's actor tree: /v1/actors
// shows it, /v1/events journals its changes. It handles:
//
//	message        from                   does                                                  reply
//	Append         transport (Produce),   queued for the next writeAppends; a transaction       Reply callback
//	               group and txn          marker when Marker is set (txns.go)
//	               coordinators, the
//	               appends actor
//	writeAppends   itself, after queuing  each queued Append in turn: idempotence check, staged  none
//	               an Append              in the log; one write for all (append.go); then each
//	                                      waits for durability per acks (a duplicate: for its
//	                                      original's)
//	DeleteRecords  transport              moves the log start offset (≤ high watermark)          Reply callback
//	SetConfig      supervisor             applies a changed topic config                         none
//	SetState       supervisor             the partition's state in the newest metadata: leads   none
//	                                      or follows as it says (roles.go)
//	FollowerFetched transport (a          a follower's fetch position: the leader's account of  none
//	               follower's Fetch)      its followers, the high watermark, ISR changes
//	Replicate      the fetcher for the    the leader's answer to a follower's fetch: truncate,  Done callback
//	               leader's node          append, high watermark
//	isrChanged     AlterISR's reply       the controller's answer to an ISR change              none
//	txnVerified    Append.Verify's reply  the coordinator's answer about a transactional batch  none
//	                                      held for it: the held Appends go on or are refused
//	DescribeProducers transport           the producers this leader knows                       Reply callback
//	synced         the node's Syncer, or  raises the high watermark, answers waiting appends;   none
//	               its fsync's goroutine  without a Syncer, starts the next sync if appends
//	                                      came meanwhile
//	tick           its timer              retention, compaction, checkpoints, flush.ms,          none
//	                                      producer expiry, periodic producer snapshot, giving
//	                                      back an idle log's descriptor; when failed, a retry.
//	                                      Every tick interval while the partition works,
//	                                      doubling to 30 s while it idles
//	compacted      its cleaner goroutine  a compaction pass ended: publishes the view; a failure none
//	                                      fails the partition, corruption turns compaction off
//
// An idle partition has no goroutine: its appends are made durable by the
// node's Syncer (syncer.go: one syncfs(2) a round for every partition
// waiting; a Produce request's Appends are announced to it, and each
// partition reports its Append once its sync is asked for), or, without
// one, by an fsync on a goroutine of its own while it lasts, one at a time
// (group commit). Ticks come from a timer.
//
// It persists everything through partition/store: records before replying,
// the high watermark and log start offset in checkpoints, the idempotent
// producers' state in snapshots. Readers never message it: they load the
// Handle's View.
//
// # Idempotent producers
//
// producers (producers.go) is the KIP-98 state machine, no IO: per producer
// id the epoch and the last five batches. The actor checks each idempotent
// batch before appending it (a retry is answered with its original offsets,
// a gap or an old epoch refused, nothing appended) and updates the state
// after. It snapshots the state at segment rolls, every minute when the log
// has grown, and at a clean stop; on start it loads the newest snapshot and
// replays the batch headers after it.
//
// # Transactions
//
// The same state machine tracks each producer's transaction in progress:
// its first offset here, which bounds the last stable offset that
// read_committed fetches stop at (with the transactions whose marker is
// still above the high watermark), and the coordinator epoch of its last
// marker. A marker (Append.Marker) ends the transaction; an abort adds an
// entry to the log's aborted-transaction index. A producer's first
// transactional batch here waits for its coordinator's verification
// (KIP-890, Append.Verify). Followers and the replay at start apply the
// markers they read as the leader applied them (txns.go).
//
// # Validation
//
// Validate runs on the connection's goroutine before Append is sent, so the
// actor only assigns offsets and writes: CRCs are checked in parallel.
//
// # Appends from other nodes
//
// RemoteAppend (remote.go) is an Append from a writer inside the cluster
// (an extension's output), sent to the leader node's appends actor
// (AppendsProps), over remoting when the writer is on another node. The
// appends actor checks that this node leads the partition in the writer's
// epoch, validates the batches as a Produce's, hands them to the
// partition's actor, and answers RemoteAppendResult. A writer retries a
// lost answer; its idempotent producer id and sequence make the retry
// return the first offsets. RemoteMarker is a transaction coordinator's
// marker, taken the same way and answered once it is below the high
// watermark.
//
// # Failed state
//
// Storage that fails (no file descriptor, no space, an I/O error, at any
// open, write, sync or rename, from an append or from periodic work) puts
// the actor in the failed state (failure.go) instead of restarting it:
// appends are answered KAFKA_STORAGE_ERROR, which clients retry; readers
// keep the last published view, whose high watermark never covers what
// was not durable; the ticks try to open the log anew, at intervals
// doubling from the tick interval to 30 s, and the first log that opens
// replaces the failed one, recovered from disk as after a restart. The View
// says so (Failure, with a cause: descriptors, disk_full or io), for
// /readyz and /metrics. A failure is logged when it starts and when it
// ends, through a node-wide rate limit.
//
// At most 64 partitions of the supervisor open their logs at once (a new
// log costs a few fsyncs, and more at once make no more a second); the
// others wait for a turn in Started, and give up, opening nothing, when
// the supervisor stops, so that a node stopped just after creating
// thousands of partitions does not wait for all of them to open.
//
// # Restart
//
// A panic restarts the actor (the supervisor's strategy decides): the old
// instance answers its waiting appends REQUEST_TIMED_OUT and closes the
// log, without a producer snapshot, since a panic may have left the state
// half updated; the new one reopens and recovers the log and rebuilds the
// producer state from the last snapshot and the log. Nothing acknowledged
// is lost, because nothing is acknowledged before it is durable
// (durability fsync) or in the log (durability replicated).
//
// # Deleted partitions
//
// A partition's directory records its topic's id (store's
// partition.metadata), and the log is opened only from a directory that
// records the id of the topic the partition is hosted for: one that
// records another is a deleted topic's of the same name, left by a node
// that stopped before it had removed it, and is never served; it goes to
// the Trash before a new log is opened. The metadata actor marks a deleted
// partition's Handle (Registry.Deleting) as it sends its Unhost, so that
// the actor, stopped by the Unhost or by the node's stop, closes its log
// without a sync (store.Log.Abandon); once the actor has stopped, the
// supervisor hands the directory to the node's Trash (trash.go), which
// renames it to <dir>.<topic id in hex>-delete at once (the name is free
// for a new topic) and removes it on goroutines of its own, four
// directories at a time; a stop never waits for them, and the next start
// removes what is left. What a node left without renaming (it stopped or
// crashed before the Unhost, or before the deletion reached it) is found
// by the node at start (package node's sweep) or at hosting (the id check
// above).
package partition
