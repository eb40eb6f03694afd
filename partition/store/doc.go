// Package store is the partition log on disk: Kafka's layout of segment
// files, sparse indexes and checkpoints, written and read in plain Go over
// internal/vfs. It knows nothing of actors; the partition actor drives it.
//
// # Directory
//
// One directory per partition, made at the log's first write (make): a new
// log, opened where there is no directory, has no file until then.
//
//	00000000000000000000.log        segment: record batches, as produced
//	00000000000000000000.index      sparse offset index of that segment
//	00000000000000000000.timeindex  sparse time index of that segment
//	00000000000000000000.txnindex   aborted transactions whose abort markers are in that segment (only if any)
//	00000000000000052817.log        next segment, named by its base offset
//	...
//	partition.metadata              the topic's id, Kafka's format (KIP-516), written before the first segment
//	checkpoint                      recovery point, log start offset, high watermark
//	leader-epoch-checkpoint         leader epoch → start offset (KIP-101)
//	00000000000000052817.snapshot   producer state after the offsets below 52817 (snapshot.go)
//	.clean-shutdown                 present only between a clean Close and the next Open
//	*.deleted                       retired segment files, removed after file.delete.delay.ms
//	*.tmp                           a checkpoint being written (garbage after a crash)
//	*.cleaned                       a compacted segment being written (garbage after a crash)
//	*.swap                          a compacted segment committed but not yet in place: Open finishes the swap
//
// # Segment file (.log)
//
// Concatenated Kafka RecordBatch v2, byte for byte as the producer sent them
// except for the header fields outside the CRC (base offset, partition leader
// epoch) and, for LogAppendTime topics, the timestamp (CRC recomputed):
//
//	+--------------+--------------+-------------------+-------+-------+---------------------------------+
//	| baseOffset 8 | batchLength 4| partLeaderEpoch 4 | magic | crc 4 | attributes ... records           |
//	+--------------+--------------+-------------------+-------+-------+---------------------------------+
//	|<------------ outside the CRC ------------------------->|       |<---- covered by CRC-32C ------->|
//	                       batchLength counts the bytes after itself
//
// The full header is 61 bytes: baseOffset int64 @0, batchLength int32 @8,
// partitionLeaderEpoch int32 @12, magic int8 @16 (= 2), crc uint32 @17,
// attributes int16 @21, lastOffsetDelta int32 @23, baseTimestamp int64 @27,
// maxTimestamp int64 @35, producerId int64 @43, producerEpoch int16 @51,
// baseSequence int32 @53, recordCount int32 @57. All big-endian.
//
// # Offset index (.index)
//
// Entries of 8 bytes, one every index.interval.bytes of batches, increasing
// in both fields. While the segment is active its entries are kept in
// memory (the segment rolls when they would pass segment.index.bytes) and
// the file is written when it seals:
//
//	+-----------------------------+----------------------+
//	| offset - segment base  u32  | file position   u32  |   position of the batch whose base offset it is
//	+-----------------------------+----------------------+
//
// # Time index (.timeindex)
//
// Entries of 12 bytes, written with offset-index entries when the largest
// timestamp grew, and once more when the segment seals, so its last entry
// holds the segment's largest timestamp:
//
//	+---------------------------+-----------------------------+
//	| largest timestamp so far  | offset - segment base  u32  |   offset of the batch that has it
//	|         i64 (ms)          |                             |
//	+---------------------------+-----------------------------+
//
// # Aborted-transaction index (.txnindex)
//
// Kafka's TransactionIndex: entries of 34 bytes, one per aborted
// transaction whose abort marker is in the segment, in marker order, all
// big-endian. The file exists only while the segment has entries; they are
// also held in memory, and views read them from there (txnindex.go):
//
//	+------------+----------------+------------------+-----------------+-----------------------+
//	| version i16| producerId i64 | firstOffset i64  | lastOffset i64  | lastStableOffset i64  |
//	|     0      |                | txn's first      | its abort marker| LSO after the marker  |
//	+------------+----------------+------------------+-----------------+-----------------------+
//
// # Topic id
//
// partition.metadata holds "version: 0\ntopic_id: <id>\n", the id in
// unpadded URL-safe base64, as Kafka writes it. With Config.TopicID it is
// written, synced, into a new directory before anything else (make), and
// atomically into an older Skein's directory that has none; Open refuses a
// directory that records
// another id (TopicIDMismatchError) without touching it: the caller
// deletes it. A directory with segments and no partition.metadata was
// made by an older Skein and is adopted (Config.TopicID says why).
//
// # Checkpoints
//
// Text, replaced atomically (write name.tmp, fsync, rename, fsync the
// directory):
//
//	checkpoint                  leader-epoch-checkpoint (Kafka's format)
//	0                           0                 version
//	recovery-point 52817        2                 number of entries
//	log-start-offset 0          0 0               epoch start-offset
//	high-watermark 52810        3 40210
//
// # Invariants
//
//   - Every segment holds whole batches with increasing offsets, all at or
//     above its base and below the next segment's base (compaction may leave
//     gaps).
//   - Every offset below the durable offset is synced. Sealed segments are
//     synced with their indexes; the recovery point is never inside the
//     active segment, whose indexes live in memory.
//   - Readers see only published Views; a View never changes.
//   - Aborted-transaction entries are in marker order across the log, each
//     in the segment that holds its marker, and durable no later than the
//     marker; none outlives its marker (truncation, recovery and compaction
//     drop it first).
//   - The last stable offset is at most the high watermark, which is at
//     most the log end offset; compaction never cleans at or above it.
//
// # Recovery
//
// Open trusts the files only after a clean shutdown (the marker) or below
// the recovery point. After a clean shutdown it writes nothing: the marker
// stays, and the active segment sealed, until the first change to the
// segments removes the marker durably (prepareWrite), so that ten thousand
// idle partitions open and close without a sync. Every other segment is rescanned: each batch's header,
// length, CRC and offsets are checked, the indexes rebuilt, and the file is
// truncated at the first bad batch, the segments after it deleted; a sound
// one is truncated at its end, which gives back the space a crash left
// reserved ahead (see Durability). A read
// error is not corruption: Open fails instead of truncating. The
// aborted-transaction index of a rescanned segment keeps the entries that
// point at abort markers still in it; elsewhere a .txnindex that fails its
// checks is deleted (txnindex.go).
//
// # Durability
//
// Append writes; Stage and WriteStaged write several record sets with one
// vectored write (see stage.go); SyncTo makes durable, group-committed (see
// sync.go), and PrepareSync and CompleteSync let one sync of the whole
// filesystem make several logs durable at once.
// Segment rolls and Close always sync, directory entries included. The
// active segment reserves disk space ahead of its writes once it holds
// 1 MiB (vfs.Preallocate, as much as it holds, at most 8 MiB), best effort,
// and gives it back when it seals, when its log goes idle (ReleaseFiles) or
// closes, and at recovery (segment.go). A failed
// write or sync fails the log: it takes no more writes until reopened, since
// the kernel may have dropped what it could not write.
//
// # Transactions
//
// The store does not track transactions: the partition layer does, and
// tells it what it needs. Its duties:
//
//  1. Append a transaction's marker (a control batch) like any batch.
//  2. For an abort marker, call AddAbortedTxn once the marker is in the log
//     and before the last stable offset passes the transaction.
//  3. Call SetLastStableOffset whenever the first offset of the oldest
//     unfinished transaction changes.
//  4. After Open, replay the markers from its producer-state snapshot on,
//     calling AddAbortedTxn again (it ignores entries it has) and
//     SetLastStableOffset: the last stable offset is not persisted, and an
//     entry lost with a corrupt .txnindex comes back this way.
//
// A read_committed fetch reads below View.LastStableOffset and asks
// View.AbortedTxns which aborted transactions the data overlaps.
//
// # Concurrency
//
// One writer (the partition actor) calls Append, Truncate, ApplyRetention,
// AddAbortedTxn and the setters; the Log serialises them with a mutex
// anyway. Any goroutine may call SyncTo. Readers load a View and read
// through it.
package store
