// Package share serves Kafka's share groups (KIP-932) on the partition
// side. Membership and assignment are the group coordinator's
// (coordinator/share*.go); this package holds the two halves that live
// with the data.
//
// The share-partition actors (partition.go, window.go), under the node's
// "shares" supervisor (supervisor.go), one per share group and partition
// led here, spawned at the first ShareFetch or ShareAcknowledge: the
// single owner of the group's in-flight window of that partition. The
// window runs from the share-partition start offset (SPSO) to the offset
// read last; each offset in it is available, acquired (by a member, until
// its lock expires), acknowledged or archived, with its delivery count.
// An acquisition takes released records first, then reads the log from
// the partition's published view (no message to the partition's actor)
// up to the high watermark, or the last stable offset under
// read_committed, where aborted transactions and control batches are
// archived as gaps. At most group.share.partition.max.record.locks
// offsets are in flight. Records released, or whose lock expired (one
// timer at the earliest lock), are delivered again until
// share.delivery.count.limit, then archived; on its last attempt a record
// is delivered alone (as Kafka), so that a consumer failing whole fetches
// has only the bad record archived. The SPSO moves past every
// finished offset at its head.
//
// The share coordinator (coordinator.go, state.go, state_records.go),
// under the node's "sharestate" supervisor, one actor per
// __share_group_state partition led here: the durable state of every
// share-partition whose key ("group:topicId:partition") hashes to it, as
// Kafka's ShareCoordinatorShard keeps it: snapshots and updates in Kafka's
// record formats, replayed at load, state epochs (a reset fences the
// state it replaces) and leader epochs (a new partition leader's read
// fences the old one's writes). It answers a write once it is durable.
//
// How they meet: a share-partition actor reads its state at start, in its
// partition's leader epoch (initializing it from share.auto.offset.reset
// the first time), and writes every change of acknowledgements, releases
// and expiries back through StateClient, which finds the coordinator on
// any node; acknowledgements are answered only once their write is
// durable. Acquisitions are not written, so a crash makes acquired
// records available again (their delivery count as last written). A
// share-partition actor stops when its partition's leadership moves or
// its write is refused (fenced, or the state was reset by
// AlterShareGroupOffsets); the next request spawns one that reads the
// state again.
package share
