// Package coordinator holds the group coordinator (the classic protocol,
// KIP-848's consumer protocol, with regex subscriptions, static members and
// classic members in consumer groups, and KIP-932's share groups' membership
// and admin APIs; the transaction coordinator is package txn, the share
// coordinator and share-partitions package share, which this package never
// imports). Its state lives in the internal topic __consumer_offsets
// and is rebuilt, when an actor starts, from the group's records in an
// in-memory index of its partition (index.go). Offsets committed in a
// transaction (TxnOffsetCommit) stay pending until the transaction's marker
// reaches the group's partition (txn_offsets.go).
//
// # Actors
//
//	groups                  supervisor, one-for-one with backoff; spawns a group's actor on first use
//	└── <escaped group id>  one per group (url.PathEscape: a group id may hold '/')
//
// The groups supervisor handles:
//
//	message      from        does                                              reply
//	Open         transport   spawns the group's actor if it has none            OpenResult (Respond)
//	TopicsDeleted metadata   spawns the actors of the groups with offsets on     none
//	                         the topics (found in the partitions' indexes),
//	                         tells every group actor to forget them
//	Leading      metadata    stops the groups of partitions no longer led,      none
//	                         drops those partitions' indexes
//	TxnCompleted node        a marker written in a partition: its group         none
//	                         actors apply or drop the producer's offsets
//	Terminated   protoactor  forgets the group's actor (Directory too)          none
//
// A group actor handles:
//
//	message      from                  does                                                reply
//	Request      transport             one group request, given to the Group state         Reply callback, when the
//	                                   machine; commits append records first               answer is ready
//	timerFired   time.AfterFunc        a Timer the state machine asked for                 none
//	appended     the partition actor   an append's outcome: apply the commit, answer       none
//	forgetTopics the groups supervisor tombstones for its offsets on deleted topics,       none
//	                                   then forgets them (topic_deleted.go)
//	TxnCompleted the groups supervisor applies (commit) or drops (abort) the producer's    none
//	                                   pending offsets
//	shareStateReplied any goroutine    an answer of ShareStates (share_offsets.go),         none
//	                                   applied on the actor
//
// # The state machine
//
// Group is the classic protocol as Kafka's ClassicGroup runs it: states
// Empty, PreparingRebalance, CompletingRebalance, Stable and Dead; JoinGroup
// (KIP-394 member ids, protocol selection by vote, rebalance and session
// timeouts, and the initial rebalance delay: the first rebalance of an
// Empty group waits group.initial.rebalance.delay.ms for more members,
// each newcomer extending the wait within the rebalance timeout),
// SyncGroup, Heartbeat, LeaveGroup (batched), generation fencing, static
// membership (KIP-345) and the offset commit checks. It does no I/O
// and reads no clock: each step leaves, in Ready, the answers to send, the
// timers to schedule and whether the group's metadata record must be
// written. Its caller, the group actor, must:
//
//  1. call one step (Join, Sync, Heartbeat, Leave, Fire, Commit, ...);
//  2. take Ready, call each Reply's responder, schedule each Timer as a
//     message back to itself (never cancelled: a stale one does nothing),
//     and append the group's MetadataRecord when asked;
//  3. for OffsetCommit, append the records first and call Commit for each
//     offset only once the append is durable, then answer.
//
// # The consumer protocol (KIP-848)
//
// The same Group also runs a consumer-protocol group (consumer.go). A
// group is classic or consumer as Kafka decides it (classic_members.go):
// a consumer group may have classic members, which join and sync through
// JoinGroup/SyncGroup and are assigned by the broker; a classic group
// with members becomes a consumer group when a consumer-protocol member
// joins, and back when the last one leaves, as
// group.consumer.migration.policy allows (GROUP_ID_NOT_FOUND to the
// heartbeat otherwise); empty groups change at once. ConsumerHeartbeat
// keeps a group epoch,
// moved by membership, subscription and partition-count changes; a target
// assignment (uniform, or range when every member asks for it) computed
// at that epoch; and per member an epoch, its assigned partitions and
// those it is revoking. A partition has at most one owner: it moves only
// once its old owner's heartbeat lists its owned partitions without it.
// Members expire on TimerConsumerSession (the group's
// consumer.session.timeout.ms, else group.consumer.session.timeout.ms) and
// leave with epoch -1/-2. OffsetCommit by a member carries its member
// epoch (or the previous one): STALE_MEMBER_EPOCH otherwise,
// UNKNOWN_MEMBER_ID for an unknown member.
//
// A consumer group is written as Kafka's ConsumerGroup* records
// (consumer_records.go) and a heartbeat that changed it is answered once
// they are durable, so a coordinator or broker restart keeps its members'
// epochs and partitions.
//
// # Share groups (KIP-932)
//
// The same Group also runs a share group (share.go): a group id is a
// classic, a consumer or a share group, and the other protocols' requests
// to a share group are GROUP_ID_NOT_FOUND, as Kafka answers them.
// ShareHeartbeat keeps a group epoch and a target assignment computed by
// the share "simple" assignor (share_assignor.go), which lets several
// members share a partition; a member takes its target at its next
// heartbeat, with no revocation. A member that leaves or is fenced
// (TimerShareSession) is reported in Ready.ShareGone, and the actor calls
// SupervisorConfig.ShareMemberGone so that the records it holds are
// released. The records of share-partitions (their start offsets and
// in-flight state) are the share coordinator's: the admin APIs
// (share_offsets.go) reach it through SupervisorConfig.ShareStates, whose
// answers come back to the actor as messages; the group keeps only which
// partitions have state. A share group is written as Kafka's ShareGroup*
// records (share_records.go), answered once durable.
//
// # Streams groups (KIP-1071)
//
// A group id may instead be a streams group (streams.go): its first
// member's topology (streams_topology.go) is configured against the
// topics, its missing internal topics handed to transport to create, and
// its tasks assigned by the sticky task assignor (streams_assignor.go) and
// reconciled as Kafka's streams CurrentAssignmentBuilder does. A refused
// heartbeat changes nothing. A streams group is written as Kafka's
// StreamsGroup* records (streams_records.go), the topology included,
// answered once durable, so a coordinator restart or move keeps its
// members, epochs, tasks and topology.
//
// # Persistence
//
// Records use Kafka's own formats (kmsg.OffsetCommitKey v1 with
// OffsetCommitValue v3, GroupMetadataKey v2 with GroupMetadataValue v3, and
// for consumer, share and streams groups the records of
// consumer_records.go, share_records.go and streams_records.go; a null
// value is a tombstone), appended with acks=-1 to the group's partition
// abs(javaStringHashCode(group)) % offsets.topic.num.partitions. Commits and
// consumer-group heartbeats that changed the group are answered once
// durable. The classic group metadata record is written without waiting: a
// member whose record is lost to a crash rejoins, as after any coordinator
// move. On start, a group actor takes its group's records from the index
// of its partition, applies them in log order (Restore), and starts the
// restored members' session timers (Loaded).
//
// # The index of a partition
//
// Loading a group costs its own records, not its partition's: as Kafka's
// GroupMetadataManager loads a partition's groups once when it becomes
// their coordinator, the Directory keeps, per __consumer_offsets partition
// this node leads, an index (index.go) holding per group what compaction
// would leave of its records with the transaction markers applied: the
// last record of each key (a tombstone removes its key; a consumer, share
// or streams group's tombstone removes the group's other records of its
// kind, as Restore forgets them) and the offset records of transactions not ended,
// by producer. Restore gives from these what it gives from the whole log.
//
// The first use of a partition since this node leads it (a group's load,
// ListGroups, a topic deletion) builds its index by reading the partition
// once, from its log start offset to its log end (a new leader's high
// watermark may lag records its predecessor acknowledged); other users of
// the partition wait for it meanwhile, its appends' answers too. From
// then on the index takes, in log order on the partition's goroutine,
// each record a group actor of this node appends (when its append is
// answered) and each marker written (Directory.MarkerWritten: a marker
// applies only to the records before it). An append whose failure leaves
// it unknown whether its records are in the log (a timeout, a storage
// error) makes the next use build the index again, as does a change of
// the partition's leader epoch (leadership lost and won back: the log may
// have been truncated meanwhile); the supervisor drops the index of a
// partition this node no longer leads. Clients cannot write
// __consumer_offsets (Produce answers INVALID_TOPIC_EXCEPTION), so the
// index and the log agree, and a restarted actor, or node, loses nothing
// acknowledged.
//
// ListGroups asks the actors of the groups that have one and answers for
// the others from the index (Directory.ListIdle), restoring each from its
// records without spawning an actor.
//
// # Coordinators follow leadership
//
// A node coordinates the groups of the __consumer_offsets partitions it
// leads. The metadata actor tells the groups supervisor which those are at
// every image (Leading); the actors of groups whose partition it no longer
// leads are stopped, answering their waiting requests NOT_COORDINATOR, so
// that a node that leads the partition again later loads the groups anew
// from the log its successor wrote (its index is dropped, and built again
// at the next use).
//
// # Deleted topics
//
// As Kafka's OffsetMetadataManager.onPartitionsDeleted, a deleted topic
// takes every group's offsets on it along, so that a topic created again
// under its name starts with none: the metadata actor sends TopicsDeleted,
// and each group with offsets on the topic, loaded or known only from its
// partition's index, appends their tombstones (acks=-1) and then forgets them. This
// happens after DeleteTopics is answered; a crash before the tombstones
// are durable, or a __consumer_offsets partition still loading, leaves
// the offsets in place, as in Kafka.
//
// # Concurrency
//
// A Group is owned by its actor. Directory's actors are written by the
// supervisor and read by any goroutine; an index is safe for concurrent
// use (a mutex: group actors, the partition's append answers, the
// supervisor and transport use it). Requests lost to a failing actor are never
// answered: transport bounds every wait.
package coordinator
