package cli

// skein txn list|describe and skein producer describe, on kadm: the
// transactions the coordinators hold and the producers the partitions know,
// as kafka-transactions shows them.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTxnCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("txn", "List, describe and abort transactions, and find hanging ones", environ, stdout, newTxnListCommand, newTxnDescribeCommand,
		newTxnAbortCommand, newTxnFindHangingCommand)
}

func newProducerCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("producer", "Describe the producers of partitions", environ, stdout, newProducerDescribeCommand)
}

// txnStates are the transaction states of ListTransactions' filter, by
// their lower case.
var txnStates = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"} {
		m[strings.ToLower(s)] = s
	}
	return m
}()

// txnListed is a transactional id of txn list, as -o json and yaml print
// it.
type txnListed struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	ProducerID      int64  `json:"producer_id"`
	State           string `json:"state"`
}

func newTxnListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		states []string
		out    *output
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List transactional ids with their coordinator, producer id and state",
		Long: "List the transactional ids every coordinator holds (ListTransactions), with\n" +
			"the node coordinating each, its producer id and the state of its\n" +
			"transaction. --state keeps the ids in one of the given states (Empty,\n" +
			"Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort; any\n" +
			"case).",
		Example: "  skein txn list --state ongoing",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var filter []string
			for _, s := range states {
				state, ok := txnStates[strings.ToLower(strings.TrimSpace(s))]
				if !ok {
					return usageError(fmt.Sprintf("--state %q: want Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit or CompleteAbort", s))
				}
				filter = append(filter, state)
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListTransactions(ctx, nil, filter)
				if err != nil && listed == nil {
					return err
				}
				txns := []txnListed{}
				for _, l := range listed.Sorted() {
					txns = append(txns, txnListed{l.TxnID, l.Coordinator, l.ProducerID, l.State})
				}
				if err := out.write(stdout, txns, func() error {
					rows := [][]string{{"TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"}}
					for _, l := range txns {
						rows = append(rows, []string{l.TransactionalID, strconv.Itoa(int(l.Coordinator)), strconv.FormatInt(l.ProducerID, 10), l.State})
					}
					return printTable(stdout, rows)
				}); err != nil {
					return err
				}
				return err // some coordinators did not answer
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "keep the ids in these states (comma-separated or repeated)")
	out = addOutputFlag(cmd)
	return cmd
}

// txnView is a transaction of txn describe, as -o json and yaml print
// it. StartTimestamp (Unix milliseconds) is set while the transaction is
// in progress (Ongoing, PrepareCommit, PrepareAbort).
type txnView struct {
	TransactionalID string            `json:"transactional_id"`
	Coordinator     int32             `json:"coordinator"`
	State           string            `json:"state"`
	ProducerID      int64             `json:"producer_id"`
	ProducerEpoch   int16             `json:"producer_epoch"`
	TimeoutMs       int32             `json:"timeout_ms"`
	StartTimestamp  *int64            `json:"start_timestamp,omitempty"`
	Partitions      []topicPartitions `json:"partitions"`
}

func newTxnDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID...",
		Short: "Show transactions: state, producer id and epoch, timeout, start, partitions",
		Long: "Show what each id's coordinator holds (DescribeTransactions): its state,\n" +
			"producer id and epoch, transaction timeout, when its transaction started\n" +
			"and how long ago, and the partitions in it.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeTransactions(ctx, ids...)
				if err != nil && described == nil {
					return err
				}
				var errs []error
				txns := []txnView{}
				for _, id := range ids {
					d, ok := described[id]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("describe transaction %s: not in the coordinator's response", id))
						continue
					case d.Err != nil:
						errs = append(errs, fmt.Errorf("describe transaction %s: %w", id, d.Err))
						continue
					}
					v := txnView{TransactionalID: d.TxnID, Coordinator: d.Coordinator, State: d.State, ProducerID: d.ProducerID,
						ProducerEpoch: d.ProducerEpoch, TimeoutMs: d.TimeoutMillis, Partitions: topicPartitionsOf(d.Topics)}
					if d.StartTimestamp >= 0 && (d.State == "Ongoing" || d.State == "PrepareCommit" || d.State == "PrepareAbort") {
						v.StartTimestamp = &d.StartTimestamp
					}
					txns = append(txns, v)
				}
				if werr := out.write(stdout, txns, func() error {
					if len(txns) == 0 {
						return nil
					}
					rows := [][]string{{"TRANSACTIONAL-ID", "COORDINATOR", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "STARTED", "PARTITIONS"}}
					for _, v := range txns {
						started := "-"
						if v.StartTimestamp != nil {
							age := time.Since(time.UnixMilli(*v.StartTimestamp)).Round(time.Millisecond)
							started = time.UnixMilli(*v.StartTimestamp).UTC().Format(time.RFC3339) + " (" + age.String() + " ago)"
						}
						rows = append(rows, []string{v.TransactionalID, strconv.Itoa(int(v.Coordinator)), v.State, strconv.FormatInt(v.ProducerID, 10),
							strconv.Itoa(int(v.ProducerEpoch)), strconv.Itoa(int(v.TimeoutMs)), started, topicPartitionsText(v.Partitions)})
					}
					return printTable(stdout, rows)
				}); werr != nil {
					return werr
				}
				return errors.Join(append(errs, err)...)
			})
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

// producersView is a partition's producers of producer describe, as -o
// json and yaml print them.
type producersView struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Leader    int32          `json:"leader"`
	Producers []producerView `json:"producers"`
}

// producerView is a producer a partition's leader knows.
// CurrentTxnStartOffset is -1 when it has no transaction in progress
// there; LastTimestamp is in Unix milliseconds.
type producerView struct {
	ProducerID            int64 `json:"producer_id"`
	ProducerEpoch         int16 `json:"producer_epoch"`
	LastSequence          int32 `json:"last_sequence"`
	LastTimestamp         int64 `json:"last_timestamp"`
	CoordinatorEpoch      int32 `json:"coordinator_epoch"`
	CurrentTxnStartOffset int64 `json:"current_txn_start_offset"`
}

func newProducerDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "describe TOPIC [PARTITION...]",
		Short: "Show the producers a partition's leader knows",
		Long: "Show, for each partition (all of the topic's if none is given), the\n" +
			"producers its leader knows (DescribeProducers): producer id and epoch,\n" +
			"last sequence, when it last wrote, the coordinator epoch of its last\n" +
			"transaction marker and the first offset of its transaction in progress\n" +
			"there (- when none): a transaction that stays open holds back\n" +
			"read_committed consumers from that offset.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			var parts []int32
			for _, a := range args[1:] {
				p, err := strconv.ParseInt(a, 10, 32)
				if err != nil || p < 0 {
					return usageError(fmt.Sprintf("partition %q: want a number", a))
				}
				parts = append(parts, int32(p))
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var set kadm.TopicsSet
				set.Add(topic, parts...)
				described, err := adm.DescribeProducers(ctx, set)
				if err != nil && described == nil {
					return err
				}
				var errs []error
				partitions := []producersView{}
				for _, p := range described.SortedPartitions() {
					if p.Err != nil {
						errs = append(errs, fmt.Errorf("describe producers of %s-%d: %w", p.Topic, p.Partition, p.Err))
						continue
					}
					ps := p.ActiveProducers.Sorted()
					slices.SortFunc(ps, func(a, b kadm.DescribedProducer) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
					v := producersView{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, Producers: []producerView{}}
					for _, s := range ps {
						v.Producers = append(v.Producers, producerView{s.ProducerID, s.ProducerEpoch, s.LastSequence, s.LastTimestamp, s.CoordinatorEpoch, s.CurrentTxnStartOffset})
					}
					partitions = append(partitions, v)
				}
				if werr := out.write(stdout, partitions, func() error {
					rows := [][]string{{"PARTITION", "LEADER", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "LAST-WRITE", "COORDINATOR-EPOCH", "TXN-START-OFFSET"}}
					for _, p := range partitions {
						for _, s := range p.Producers {
							start := "-"
							if s.CurrentTxnStartOffset >= 0 {
								start = strconv.FormatInt(s.CurrentTxnStartOffset, 10)
							}
							rows = append(rows, []string{strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.FormatInt(s.ProducerID, 10),
								strconv.Itoa(int(s.ProducerEpoch)), strconv.Itoa(int(s.LastSequence)),
								time.UnixMilli(s.LastTimestamp).UTC().Format(time.RFC3339), strconv.Itoa(int(s.CoordinatorEpoch)), start})
						}
					}
					return printTable(stdout, rows)
				}); werr != nil {
					return werr
				}
				return errors.Join(append(errs, err)...)
			})
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}
