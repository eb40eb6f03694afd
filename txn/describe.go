package txn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers DescribeTransactions (KIP-664) for this id, as Kafka's
// handleDescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND when it has no
// state. While markers are written, the partitions are those still
// without one.
func (t *Txn) Describe() kmsg.DescribeTransactionsResponseTransactionState {
	d := kmsg.NewDescribeTransactionsResponseTransactionState()
	d.TransactionalID = t.id
	if !t.known {
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d
	}
	m := &t.m
	d.State, d.TimeoutMillis, d.StartTimestamp = m.Status.String(), m.TimeoutMs, m.StartMs
	d.ProducerID, d.ProducerEpoch = m.ProducerID, m.Epoch
	for _, tp := range m.Partitions { // sorted: one run per topic
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
			d.Topics = append(d.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
		}
		top := &d.Topics[len(d.Topics)-1]
		top.Partitions = append(top.Partitions, tp.Partition)
	}
	return d
}

// ListFilter is a ListTransactions request's filters (KIP-664, KIP-994).
type ListFilter struct {
	// ProducerIDs keeps only these producer ids; none keeps all.
	ProducerIDs []int64
	// States keeps only these states; none keeps all. Unknown state
	// names are the caller's to report (ParseStatus).
	States []Status
	// DurationMs keeps only transactions started more than DurationMs
	// ago; -1 keeps all.
	DurationMs int64
}

// List returns this id's ListTransactions entry and whether the filters
// keep it, as Kafka's listTransactionStates. NB: as in Kafka, an idle id
// (StartMs -1) passes every duration filter.
func (t *Txn) List(f ListFilter, now int64) (kmsg.ListTransactionsResponseTransactionState, bool) {
	s := kmsg.NewListTransactionsResponseTransactionState()
	m := &t.m
	switch {
	case !t.known:
		return s, false
	case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.ProducerID):
		return s, false
	case len(f.States) > 0 && !slices.Contains(f.States, m.Status):
		return s, false
	case f.DurationMs >= 0 && now-m.StartMs <= f.DurationMs:
		return s, false
	}
	s.TransactionalID, s.ProducerID, s.TransactionState = t.id, m.ProducerID, m.Status.String()
	return s, true
}
