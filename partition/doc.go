// Package partition is the partition actor: the single writer of one hosted
// replica's log, and the "partitions" supervisor that hosts them.
//
// # Actors
//
//	partitions            supervisor, one-for-one; spawns and stops partition actors
//	└── <topic>-<n>       one per hosted partition
//
// A partition actor handles:
//
//	message        from                   does                                                  reply
//	Append         transport (Produce)    log.Append; waits for durability per acks              Reply callback
//	DeleteRecords  transport              moves the log start offset (≤ high watermark)          Reply callback
//	SetConfig      supervisor             applies a changed topic config                         none
//	synced         its syncer goroutine   raises the high watermark, answers waiting appends     none
//	tick           its ticker goroutine   retention, compaction, checkpoints, flush.ms           none
//
// It persists everything through partition/store: records before replying,
// the high watermark and log start offset in checkpoints. Readers never
// message it: they load the Handle's View.
//
// # Validation
//
// Validate runs on the connection's goroutine before Append is sent, so the
// actor only assigns offsets and writes: CRCs are checked in parallel.
//
// # Restart
//
// A panic restarts the actor (the supervisor's strategy decides): the old
// instance answers its waiting appends REQUEST_TIMED_OUT and closes the
// log; the new one reopens and recovers it. Nothing acknowledged is lost,
// because nothing is acknowledged before it is durable (durability fsync)
// or in the log (durability replicated).
package partition
