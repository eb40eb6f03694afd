// Package partition is the partition actor: the single writer of one hosted
// replica's log. It validates produced batches, checks idempotent producer
// sequences, assigns offsets, appends through partition/store, and publishes
// the immutable read view that fetch handlers use without a message.
package partition
