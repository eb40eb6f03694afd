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

func newTxnListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var states []string
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
				rows := [][]string{{"TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"}}
				for _, l := range listed.Sorted() {
					rows = append(rows, []string{l.TxnID, strconv.Itoa(int(l.Coordinator)), strconv.FormatInt(l.ProducerID, 10), l.State})
				}
				if err := printTable(stdout, rows); err != nil {
					return err
				}
				return err // some coordinators did not answer
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "keep the ids in these states (comma-separated or repeated)")
	return cmd
}

func newTxnDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
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
				rows := [][]string{{"TRANSACTIONAL-ID", "COORDINATOR", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "STARTED", "PARTITIONS"}}
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
					started := "-"
					if d.StartTimestamp >= 0 && (d.State == "Ongoing" || d.State == "PrepareCommit" || d.State == "PrepareAbort") {
						age := time.Since(time.UnixMilli(d.StartTimestamp)).Round(time.Millisecond)
						started = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339) + " (" + age.String() + " ago)"
					}
					rows = append(rows, []string{d.TxnID, strconv.Itoa(int(d.Coordinator)), d.State, strconv.FormatInt(d.ProducerID, 10),
						strconv.Itoa(int(d.ProducerEpoch)), strconv.Itoa(int(d.TimeoutMillis)), started, orDash(topicsSet(d.Topics))})
				}
				if len(rows) > 1 {
					if err := printTable(stdout, rows); err != nil {
						return err
					}
				}
				return errors.Join(append(errs, err)...)
			})
		},
	}
}

func newProducerDescribeCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
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
				rows := [][]string{{"PARTITION", "LEADER", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "LAST-WRITE", "COORDINATOR-EPOCH", "TXN-START-OFFSET"}}
				for _, p := range described.SortedPartitions() {
					if p.Err != nil {
						errs = append(errs, fmt.Errorf("describe producers of %s-%d: %w", p.Topic, p.Partition, p.Err))
						continue
					}
					ps := p.ActiveProducers.Sorted()
					slices.SortFunc(ps, func(a, b kadm.DescribedProducer) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
					for _, s := range ps {
						start := "-"
						if s.CurrentTxnStartOffset >= 0 {
							start = strconv.FormatInt(s.CurrentTxnStartOffset, 10)
						}
						rows = append(rows, []string{strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.FormatInt(s.ProducerID, 10),
							strconv.Itoa(int(s.ProducerEpoch)), strconv.Itoa(int(s.LastSequence)),
							time.UnixMilli(s.LastTimestamp).UTC().Format(time.RFC3339), strconv.Itoa(int(s.CoordinatorEpoch)), start})
					}
				}
				if err := printTable(stdout, rows); err != nil {
					return err
				}
				return errors.Join(append(errs, err)...)
			})
		},
	}
}
