package txn

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Status is a transaction's state as Kafka writes it in TransactionLogValue:
// 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit,
// 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence. String gives Kafka's names,
// which DescribeTransactions and ListTransactions show.
//
// Dead and PrepareEpochFence are never written: Kafka writes a tombstone
// for an expired id, and fences an epoch by writing PrepareAbort.
type Status int8

// The statuses, numbered as in Kafka's TransactionState.
const (
	// Empty: no transaction; the id has a producer id and epoch.
	Empty Status = iota
	// Ongoing: partitions have been added; the timeout runs from StartMs.
	Ongoing
	// PrepareCommit: the commit is decided and durable; markers are
	// being written.
	PrepareCommit
	// PrepareAbort: the abort is decided and durable; markers are being
	// written.
	PrepareAbort
	// CompleteCommit: every commit marker is written.
	CompleteCommit
	// CompleteAbort: every abort marker is written.
	CompleteAbort
	// Dead: the id expired (Kafka's transient state; a tombstone on disk).
	Dead
	// PrepareEpochFence: Kafka's transient state while it fences an
	// epoch; never on disk.
	PrepareEpochFence
)

var statusNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return fmt.Sprintf("Status(%d)", int8(s))
	}
	return statusNames[s]
}

// ParseStatus returns the status Kafka names name (ListTransactions'
// state filters); false for an unknown name, which ListTransactions
// reports back in UnknownStateFilters.
func ParseStatus(name string) (Status, bool) {
	i := slices.Index(statusNames[:], name)
	return Status(i), i >= 0
}

// idle is Kafka's isExpirationAllowed: no transaction under way.
func (s Status) idle() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }

func (s Status) preparing() bool { return s == PrepareCommit || s == PrepareAbort }

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Metadata is a transactional id's durable state: what its
// __transaction_state record holds.
type Metadata struct {
	// ProducerID is the producer id in use; PrevProducerID the one before
	// the last InitProducerId or TV2 completion (Kafka's in-memory
	// previousProducerId: equal to ProducerID after a plain epoch bump,
	// the old id after a rotation, -1 at first); NextProducerID the id a
	// TV2 transaction prepared at an exhausted epoch moves to when it
	// completes, -1 otherwise.
	ProducerID, PrevProducerID, NextProducerID int64
	// Epoch is the producer epoch; LastEpoch the epoch before the last
	// bump, for KIP-360 retries of a bump whose answer was lost, -1 none.
	// NB: Kafka's record has no field for LastEpoch: it is -1 after a
	// restart, as in Kafka.
	Epoch, LastEpoch int16
	// TimeoutMs is the transaction timeout the producer asked for.
	TimeoutMs int32
	Status    Status
	// Partitions are the transaction's partitions, sorted by topic and
	// partition, without duplicates. While markers are written
	// (Prepare*), those whose marker is written are taken out, as Kafka
	// does, so DescribeTransactions shows the ones left.
	Partitions []TopicPartition
	// StartMs is when the transaction started (-1 when none); UpdateMs
	// when the state last changed, for id expiration.
	StartMs, UpdateMs int64
	// TV2 is set when the last EndTxn was v5+ (transaction version 2,
	// KIP-890 part 2): every EndTxn bumps the epoch.
	TV2 bool
}

func (m *Metadata) clone() Metadata {
	c := *m
	c.Partitions = slices.Clone(m.Partitions)
	return c
}

// epochExhausted is Kafka's isEpochExhausted: a client never gets
// MaxInt16, so that the coordinator can always fence it with one bump.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// bump is the next epoch. NB: MaxInt16 stays MaxInt16: only a fence can
// reach it, and a client never holds it.
func bump(e int16) int16 {
	if e == math.MaxInt16 {
		return e
	}
	return e + 1
}

// normalize returns parts sorted and without duplicates, in a new slice.
func normalize(parts []TopicPartition) []TopicPartition {
	out := slices.Clone(parts)
	slices.SortFunc(out, compareTP)
	return slices.Compact(out)
}

func union(a, b []TopicPartition) []TopicPartition {
	return normalize(append(slices.Clone(a), b...))
}

func contains(parts []TopicPartition, tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(parts, tp, compareTP)
	return ok
}
