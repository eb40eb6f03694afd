package console

import (
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// maxTransactions bounds the transactional ids described in one answer.
const maxTransactions = 1000

type transactionsJSON struct {
	Transactions []*transactionJSON `json:"transactions"`
	// Truncated says more transactional ids exist than were described.
	Truncated bool `json:"truncated"`
}

type transactionJSON struct {
	TransactionalID string `json:"transactional_id"`
	State           string `json:"state"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	TimeoutMs       int32  `json:"timeout_ms"`
	// StartMs is when the ongoing transaction began, -1 for none.
	StartMs     int64           `json:"start_ms"`
	Coordinator int32           `json:"coordinator"`
	Partitions  []topicPartJSON `json:"partitions"`
	Error       string          `json:"error,omitempty"`
}

type topicPartJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// transactions is GET /ui/api/transactions: every transactional id the
// user may describe (ListTransactions), described (DescribeTransactions).
func (a *api) transactions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil && len(listed) == 0 {
		fail(w, err)
		return
	}
	out := transactionsJSON{Transactions: []*transactionJSON{}}
	sorted := listed.Sorted()
	if len(sorted) > maxTransactions {
		sorted, out.Truncated = sorted[:maxTransactions], true
	}
	ids := make([]string, len(sorted))
	for i, l := range sorted {
		ids[i] = l.TxnID
	}
	var described kadm.DescribedTransactions
	if len(ids) > 0 {
		described, _ = adm.DescribeTransactions(ctx, ids...)
	}
	for _, l := range sorted {
		j := &transactionJSON{TransactionalID: l.TxnID, State: l.State, ProducerID: l.ProducerID, ProducerEpoch: -1,
			StartMs: -1, Coordinator: l.Coordinator, Partitions: []topicPartJSON{}}
		d, ok := described[l.TxnID]
		switch {
		case !ok:
			j.Error = "not described"
		case d.Err != nil:
			j.Error = errName(d.Err)
		default:
			j.State, j.ProducerID, j.ProducerEpoch, j.TimeoutMs, j.StartMs, j.Coordinator =
				d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, d.StartTimestamp, d.Coordinator
			for _, t := range d.Topics.Sorted() {
				for _, p := range t.Partitions {
					j.Partitions = append(j.Partitions, topicPartJSON{t.Topic, p})
				}
			}
		}
		out.Transactions = append(out.Transactions, j)
	}
	writeJSON(w, http.StatusOK, out)
}

type producersJSON struct {
	Topic      string                    `json:"topic"`
	Partitions []*producersPartitionJSON `json:"partitions"`
}

type producersPartitionJSON struct {
	Partition int32           `json:"partition"`
	Leader    int32           `json:"leader"`
	Producers []*producerJSON `json:"producers"`
	Error     string          `json:"error,omitempty"`
}

type producerJSON struct {
	ProducerID       int64 `json:"producer_id"`
	ProducerEpoch    int16 `json:"producer_epoch"`
	LastSequence     int32 `json:"last_sequence"`
	LastTimestamp    int64 `json:"last_timestamp"`
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
	// CurrentTxnStartOffset is the first offset of the producer's open
	// transaction on the partition, -1 for none.
	CurrentTxnStartOffset int64 `json:"current_txn_start_offset"`
}

// producers is GET /ui/api/producers?topic=T: the producers each
// partition's leader keeps state for (DescribeProducers).
func (a *api) producers(w http.ResponseWriter, r *http.Request) {
	topic := r.URL.Query().Get("topic")
	if topic == "" {
		writeError(w, http.StatusBadRequest, "console: topic is required")
		return
	}
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	details, err := adm.ListTopics(ctx, topic)
	d, ok := oneTopic(w, details, err, topic)
	if !ok {
		return
	}
	set := kadm.TopicsSet{}
	set.Add(topic, d.Partitions.Numbers()...)
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil && len(described) == 0 {
		fail(w, err)
		return
	}
	out := producersJSON{Topic: topic, Partitions: []*producersPartitionJSON{}}
	for _, p := range d.Partitions.Sorted() {
		j := &producersPartitionJSON{Partition: p.Partition, Leader: p.Leader, Producers: []*producerJSON{}}
		dp, ok := described[topic].Partitions[p.Partition]
		switch {
		case !ok:
			j.Error = "not described"
		case dp.Err != nil:
			j.Error = errName(dp.Err)
		default:
			for _, x := range dp.ActiveProducers.Sorted() {
				j.Producers = append(j.Producers, &producerJSON{ProducerID: x.ProducerID, ProducerEpoch: x.ProducerEpoch,
					LastSequence: x.LastSequence, LastTimestamp: x.LastTimestamp, CoordinatorEpoch: x.CoordinatorEpoch,
					CurrentTxnStartOffset: x.CurrentTxnStartOffset})
			}
		}
		out.Partitions = append(out.Partitions, j)
	}
	slices.SortFunc(out.Partitions, func(a, b *producersPartitionJSON) int { return int(a.Partition - b.Partition) })
	writeJSON(w, http.StatusOK, out)
}
