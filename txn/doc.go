// Package txn is the transaction coordinator: a deterministic state machine
// per transactional id (Txn), the records it keeps in __transaction_state,
// and the actors that drive them. Txn is Kafka's TransactionMetadata with
// the transitions of its TransactionCoordinator (KIP-98; KIP-360 producer
// recovery; KIP-447 offsets in transactions; KIP-890 verification and
// transaction version 2; KIP-664 describe and list). It does no I/O, reads
// no clock and starts no goroutine: each step takes the time in ms and
// leaves in Ready the record to write, the markers to write, the answers to
// send and when to tick next.
//
// # Actors
//
//	txns                    supervisor, one-for-one with backoff
//	└── <escaped id>        one per transactional id of the partitions this node leads
//
// A node coordinates the ids of the __transaction_state partitions it
// leads (StateTopic; an id's partition is PartitionFor, Kafka's hash). The
// supervisor handles:
//
//	message     from        does                                               reply
//	Leading     metadata    loads each partition newly led (reads it once,     none
//	                        spawns an actor per id with its state; retried
//	                        every 200 ms until the partition is ready), stops
//	                        the ids of partitions no longer led
//	Open        transport   an id's actor, spawned for a new id of a loaded    OpenResult
//	                        partition
//	Verify      a partition a producer's batch: hands it to the id's actor as    VerifyResult
//	            leader      an AddRequest (verify only, or add for TV2)
//
// An id's actor (actor.go) takes InitRequest, AddRequest, OffsetsRequest,
// EndRequest, DescribeRequest and ListRequest, drives its Txn, appends the
// records it asks for to the id's partition (acks=-1, errors mapped as
// Kafka's TransactionStateManager), writes each marker to its partition's
// leader as a partition.RemoteMarker to that node's appends actor (retried
// with a backoff until written; a deleted topic or a newer producer epoch
// counts as written), and ticks it when it asks, no sooner than
// transaction.abort.timed.out.transaction.cleanup.interval.ms after the
// last tick. A restarted actor reads its id's state from the log again;
// a stopped one answers its waiting request NOT_COORDINATOR.
//
// Verifier is the partition leaders' side of KIP-890: it asks the node
// coordinating an id, over remoting, and asks again on
// CONCURRENT_TRANSACTIONS for up to 2 s.
//
// # States
//
//	from                          on                                   to
//	none, Empty, Complete*        InitProducerId                       Empty, a new epoch
//	Empty, Complete*, Ongoing     AddPartitions, AddOffsets            Ongoing
//	Ongoing                       EndTxn                               PrepareCommit or PrepareAbort
//	Ongoing                       InitProducerId, timeout (a fence)    PrepareAbort, epoch bumped
//	Empty, Complete* (TV2 only)   EndTxn(abort)                        PrepareAbort, epoch bumped
//	PrepareCommit, PrepareAbort   every marker written                 CompleteCommit, CompleteAbort
//	Empty, Complete*              transactional.id.expiration.ms       none (a tombstone)
//
// Under transaction version 2 (EndTxn v5+) every EndTxn bumps the epoch at
// PrepareCommit/PrepareAbort. Dead and PrepareEpochFence are Kafka's
// transient states and are never written: a fence is written as
// PrepareAbort under the bumped epoch.
//
// # Invariants
//
//   - At most one write is in flight (Kafka's pendingState); a request that
//     would change the state meanwhile is answered CONCURRENT_TRANSACTIONS.
//   - The state changes only when its record is durable (Written(nil)); a
//     failed write changes nothing, and its reply gets the error.
//   - A reply that depends on a write is released only after it: a client
//     never sees a producer epoch or an outcome that a crash could undo.
//   - Markers are asked for only once PrepareCommit or PrepareAbort is
//     durable, and CompleteCommit or CompleteAbort is written only once
//     every marker is done, so a restart finds either the decision or the
//     completion and finishes what it finds.
//   - A client never holds epoch MaxInt16: the coordinator can always fence
//     with one bump; at MaxInt16-1 the producer id is replaced.
//
// # The actor's duties
//
// A Txn is driven by its actor, which must:
//
//  1. at start, read the id's records of its __transaction_state partition
//     from the log start to the end (ParseRecord, skipping ErrNotTxnKey
//     records and other ids), Restore each in order, then call Loaded with
//     the partition's leader epoch;
//  2. call one step (InitProducerID, AddPartitions, AddOffsets, EndTxn,
//     Written, MarkerWritten, Tick), then take Ready;
//  3. append Ready.Write (acks=-1) and report its outcome with Written,
//     mapping append errors to what a client is told (NOT_COORDINATOR,
//     COORDINATOR_NOT_AVAILABLE);
//  4. send WriteTxnMarkers for Ready.Markers to the partition leaders,
//     retrying retriable errors itself, and call MarkerWritten for each
//     partition once its marker is written or its topic is gone;
//  5. call each of Ready.Replies, in order;
//  6. schedule Tick at Ready.NextTick (ms), replacing the earlier one;
//  7. when Ready.Gone, drop the Txn (it has no state left);
//  8. when going away, call Abort so that a reply waiting on a write is
//     answered.
//
// DescribeTransactions and ListTransactions read Describe and List.
//
// # Persistence
//
// Each state is one record of __transaction_state (compacted), in Kafka's
// format: key TxnMetadataKey v0 (the transactional id), value
// TxnMetadataValue v1 with the KIP-890 tagged fields PreviousProducerID,
// NextProducerID and ClientTransactionVersion (2 for TV2); a null value is
// the tombstone of an expired id. The last record of an id is its state.
// LastEpoch is not in the record, as in Kafka: a restart forgets it.
//
// # Concurrency
//
// A Txn is not safe for concurrent use: its actor owns it. The callbacks
// given with the requests are never called by the steps themselves, only
// through Ready.Replies, by the actor. Directory is written by the
// supervisor and read by any goroutine; Stats is atomic.
package txn
