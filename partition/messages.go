package partition

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition/store"
)

// Append asks a partition actor to append validated batches (see
// Validate). It is sent by transport's Produce handler; the actor answers by
// calling Reply exactly once, from its own goroutine or its syncer's: at
// once for acks=0, after the append for acks=1 under durability replicated,
// and once the records are durable (fsync) or below the high watermark
// otherwise. Reply must not block. The actor owns Records after the send.
//
// Release, when not nil, is called once by the actor, on its goroutine, as
// soon as it no longer reads Records (whose memory the sender may then
// reuse): after the log has written them, or after refusing them, and before
// waiting for their durability. The actor clears Records first. An Append
// that the actor never finishes handling (it panicked, or was stopped with
// the message in its mailbox) is never released.
//
// Marker, when set, makes the Append a transaction marker instead (Records
// nil): the control batch that ends a producer's transaction here, which
// the transaction coordinator asks the leader for (WriteTxnMarkers).
//
// Verify, when set, is how the actor checks with the transaction
// coordinator that a transactional batch belongs to a transaction in
// progress that includes this partition (KIP-890: a late batch of a
// finished transaction must not start a transaction nobody will end). The
// actor calls it, on its own goroutine, for a transactional batch of a
// producer with no transaction in progress here, and holds the Append (and
// any later one of the same producer) until the answer: reply(nil) lets it
// go on, an error refuses it. Verify must not block; reply may be called
// from any goroutine, once. Nil means no verification (a writer inside the
// cluster that is trusted).
//
// Coordinator marks the records of a coordinator of this node (a group
// coordinator's transactional offset commits): the producer's epoch and
// transaction are checked, its sequence numbers are not (Kafka's
// AppendOrigin.COORDINATOR).
//
// Announced, when set, is the node Syncer's announcement of the Produce
// request the Append belongs to (Syncer.Announce): the actor reports the
// Append to it once, when the Append's log has asked for its sync or the
// Append is answered without one (refused, not the leader, restarting).
//
// Counter, when set, counts the records once the log has written them
// (not a duplicate's, nor a refused Append's): transport sets its topic's
// counters on a Produce's Appends.
type Append struct {
	Records     []byte
	Acks        int16
	Reply       func(AppendResult)
	Release     func()
	Marker      *Marker
	Verify      func(reply func(*kerr.Error))
	Coordinator bool
	Announced   *Announced
	Counter     AppendCounter

	// guard is the verification this Append passed (txns.go); held marks
	// an Append waiting for one, which the actor must not release yet.
	guard uint64
	held  bool
}

// AppendCounter counts what Appends wrote, for /metrics. The partition's
// actor calls Appended once per Append whose records the log wrote, on its
// goroutine, with their record count and bytes: it must be cheap and must
// not block.
type AppendCounter interface {
	Appended(records, bytes int64)
}

// AppendResult answers Append. Err is nil on success; a definite error
// (NOT_ENOUGH_REPLICAS, INVALID_RECORD, ...) means nothing was appended.
type AppendResult struct {
	BaseOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime, or a duplicate's
	LogStartOffset int64
	Err            *kerr.Error
	Message        string
	// ErrWithLogStart: Err is one that Kafka's log raises (the producer
	// state's sequence and epoch checks), whose answer carries
	// LogStartOffset, as Kafka's does; other errors answer -1.
	ErrWithLogStart bool
}

// SetConfig tells a partition actor the topic config now in force (after
// AlterConfigs). Sent by the partitions supervisor; no reply.
type SetConfig struct {
	Config configs.Topic
}

// DeleteRecords asks the actor to move the log start offset (DeleteRecords).
// Reply is called once, on the actor's goroutine.
type DeleteRecords struct {
	Offset int64 // -1 means the high watermark
	Reply  func(lowWatermark int64, err *kerr.Error)
}

// Host tells the partitions supervisor to host a partition (spawning its
// actor if needed, or updating its config). No reply.
type Host struct {
	Config Config
}

// Unhost tells the partitions supervisor to stop hosting a partition; with
// Delete its data is deleted too (the topic was deleted). No reply.
type Unhost struct {
	Topic     string
	Partition int32
	TopicID   image.TopicID
	Delete    bool
}

// synced is sent by a partition's syncer to its actor after an fsync of
// log.
type synced struct {
	log     *store.Log
	durable int64
	err     error
}

// tick drives a partition's periodic work (retention, compaction,
// checkpoints, flush.ms).
type tick struct{}

// compacted is sent by a partition's cleaner goroutine when a pass ends.
type compacted struct{ err error }
