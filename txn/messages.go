package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
)

func init() {
	actors.Register[Verify](205)
	actors.Register[VerifyResult](206)
}

// StateTopic is the internal compacted topic holding the transaction
// coordinators' state.
const StateTopic = "__transaction_state"

// PartitionFor returns the __transaction_state partition of a
// transactional id (partition.ForKey: Kafka's abs(id.hashCode()) %
// partitions); the node leading it coordinates the id.
func PartitionFor(id string, partitions int32) int32 { return partition.ForKey(id, partitions) }

// The requests a transactional id's actor takes, sent by transport. Each
// Reply is called once, on the actor's goroutine; a request lost to a
// failing actor is never answered, so the sender bounds its wait.
type (
	// InitRequest is an InitProducerId with a transactional id.
	InitRequest struct {
		Req   *kmsg.InitProducerIDRequest
		Reply func(*kmsg.InitProducerIDResponse)
	}
	// AddRequest is an AddPartitionsToTxn of one transaction.
	AddRequest struct {
		ProducerID int64
		Epoch      int16
		Partitions []TopicPartition
		VerifyOnly bool
		Reply      func(AddResult)
	}
	// OffsetsRequest is an AddOffsetsToTxn.
	OffsetsRequest struct {
		ProducerID int64
		Epoch      int16
		Group      string
		Reply      func(*kerr.Error)
	}
	// EndRequest is an EndTxn; TV2 for v5+.
	EndRequest struct {
		ProducerID  int64
		Epoch       int16
		Commit, TV2 bool
		Reply       func(EndResult)
	}
	// DescribeRequest is DescribeTransactions for the actor's id.
	DescribeRequest struct {
		Reply func(kmsg.DescribeTransactionsResponseTransactionState)
	}
	// ListRequest is ListTransactions, sent with a request (actors.Ask):
	// the actor responds with its ListResult.
	ListRequest struct {
		Filter ListFilter
	}
	// ListResult is the actor's entry, when the filter keeps it (OK).
	ListResult struct {
		State kmsg.ListTransactionsResponseTransactionState
		OK    bool
	}
)

// Verify asks a transaction's coordinator, for a partition leader, whether
// the producer's transaction in progress includes a partition (KIP-890
// part 1), or, with Add, to add it (a Produce v12+ or TxnOffsetCommit v5+,
// KIP-890 part 2). Sent with a request to node/<coordinator>/txns;
// answered VerifyResult.
type Verify struct {
	Origin          actors.Origin `msgpack:"origin"`
	TransactionalID string        `msgpack:"txn"`
	ProducerID      int64         `msgpack:"pid"`
	Epoch           int16         `msgpack:"epoch"`
	Topic           string        `msgpack:"topic"`
	Partition       int32         `msgpack:"part"`
	Add             bool          `msgpack:"add"`
}

func (m *Verify) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// VerifyResult answers Verify: nil when the partition is (now) in the
// transaction.
type VerifyResult struct {
	Err *kerr.Error `msgpack:"err"`
}

func (m *VerifyResult) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
