package cli

// skein txn abort and find-hanging: a transaction left open on a partition
// that its coordinator no longer finishes (a hanging transaction holds back
// every read_committed consumer of the partition), found from the
// partitions' producers and aborted with a marker written to the partition,
// as kafka-transactions find-hanging and abort do.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// openTxn is a producer's transaction open on a partition.
type openTxn struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	Leader           int32  `json:"leader"`
	ProducerID       int64  `json:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch"`
	CoordinatorEpoch int32  `json:"coordinator_epoch"`
	StartOffset      int64  `json:"start_offset"`
	LastTimestamp    int64  `json:"last_timestamp"` // unix ms of its last write
	DurationMs       int64  `json:"duration_ms"`    // since its last write
	TransactionalID  string `json:"transactional_id,omitempty"`
	// Why it is hanging: no coordinator knows the producer id, or its
	// coordinator's transaction is another (not ongoing, another epoch,
	// or without this partition).
	Reason string `json:"reason,omitempty"`
}

func newTxnAbortCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		topic                   string
		partition               int32
		startOffset, producerID int64
		producerEpoch           int16
		coordinatorEpoch        int32
		out                     *output
	)
	cmd := &cobra.Command{
		Use:   "abort --topic T --partition P (--start-offset N | --producer-id ID --producer-epoch E [--coordinator-epoch E])",
		Short: "Abort a hanging transaction on a partition (WriteTxnMarkers)",
		Long: "Abort a transaction open on one partition by writing an abort marker there\n" +
			"(WriteTxnMarkers to the partition's leader), as kafka-transactions abort does:\n" +
			"for a hanging transaction, one its coordinator will never end (see `skein txn\n" +
			"find-hanging`), which holds back read_committed consumers of the partition.\n" +
			"Name it by --start-offset, the offset where it began (TXN-START-OFFSET of\n" +
			"`skein producer describe`), or by its producer's --producer-id and\n" +
			"--producer-epoch; --coordinator-epoch defaults to the one the partition\n" +
			"knows for the producer. Only this partition is aborted: a transaction its\n" +
			"coordinator still knows is ended through the coordinator, by its producer\n" +
			"or at its timeout; aborting one partition of it breaks its atomicity.",
		Example: "  skein txn abort --topic payments --partition 3 --start-offset 1180\n" +
			"  skein txn abort --topic payments --partition 3 --producer-id 12 --producer-epoch 0",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byOffset, byProducer := cmd.Flags().Changed("start-offset"), cmd.Flags().Changed("producer-id")
			switch {
			case topic == "" || !cmd.Flags().Changed("partition"):
				return usageError("name the partition with --topic and --partition")
			case byOffset == byProducer:
				return usageError("give --start-offset, or --producer-id and --producer-epoch")
			case byProducer && !cmd.Flags().Changed("producer-epoch"):
				return usageError("--producer-id needs --producer-epoch")
			}
			o := *out
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var set kadm.TopicsSet
				set.Add(topic, partition)
				described, err := adm.DescribeProducers(ctx, set)
				if err != nil && described == nil {
					return err
				}
				dp, ok := described[topic].Partitions[partition]
				switch {
				case !ok:
					return fmt.Errorf("%s-%d: not in the broker's answer to DescribeProducers", topic, partition)
				case dp.Err != nil:
					return fmt.Errorf("%s-%d: %w", topic, partition, dp.Err)
				}
				var found *kadm.DescribedProducer
				for _, p := range dp.ActiveProducers.Sorted() {
					if byOffset && p.CurrentTxnStartOffset == startOffset || byProducer && p.ProducerID == producerID {
						found = &p
						break
					}
				}
				t := openTxn{Topic: topic, Partition: partition, Leader: dp.Leader, StartOffset: -1}
				switch {
				case found != nil:
					t.ProducerID, t.ProducerEpoch, t.CoordinatorEpoch = found.ProducerID, found.ProducerEpoch, found.CoordinatorEpoch
					t.StartOffset, t.LastTimestamp = found.CurrentTxnStartOffset, found.LastTimestamp
					if found.CurrentTxnStartOffset < 0 && byOffset {
						found = nil
					}
				case byProducer:
					// The partition may have forgotten the producer;
					// the marker is written as asked.
					t.ProducerID, t.ProducerEpoch, t.CoordinatorEpoch = producerID, producerEpoch, max(coordinatorEpoch, 0)
				}
				if byOffset && found == nil {
					return fmt.Errorf("%s-%d: no transaction starts at offset %d (see skein producer describe %s %d)", topic, partition, startOffset, topic, partition)
				}
				if byProducer {
					t.ProducerEpoch = producerEpoch
					if cmd.Flags().Changed("coordinator-epoch") {
						t.CoordinatorEpoch = coordinatorEpoch
					}
				}
				resps, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{
					ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, Commit: false,
					CoordinatorEpoch: t.CoordinatorEpoch, Topics: set,
				})
				if err != nil && resps == nil {
					return err
				}
				r, ok := resps[t.ProducerID].Topics[topic].Partitions[partition]
				switch {
				case !ok && err != nil:
					return err
				case !ok:
					return fmt.Errorf("%s-%d: not in the broker's answer to WriteTxnMarkers", topic, partition)
				case r.Err != nil:
					return fmt.Errorf("abort %s-%d (producer %d, epoch %d): %w", topic, partition, t.ProducerID, t.ProducerEpoch, r.Err)
				}
				return o.write(stdout, t, func() error {
					_, err := fmt.Fprintf(stdout, "aborted the transaction of producer %d (epoch %d) on %s-%d\n", t.ProducerID, t.ProducerEpoch, topic, partition)
					return err
				})
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the partition's topic")
	cmd.Flags().Int32Var(&partition, "partition", 0, "the partition")
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the offset where the transaction began on the partition")
	cmd.Flags().Int64Var(&producerID, "producer-id", -1, "the transaction's producer id")
	cmd.Flags().Int16Var(&producerEpoch, "producer-epoch", -1, "the transaction's producer epoch")
	cmd.Flags().Int32Var(&coordinatorEpoch, "coordinator-epoch", -1, "the coordinator epoch of the marker (default the partition's for the producer)")
	out = addOutputFlag(cmd)
	return cmd
}

func newTxnFindHangingCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		brokers    []int32
		topics     []string
		maxTimeout time.Duration
		out        *output
	)
	cmd := &cobra.Command{
		Use:   "find-hanging [--broker N,...] [--topic T,...] [--max-transaction-timeout D]",
		Short: "Find transactions open on partitions that no coordinator will end",
		Long: "Find hanging transactions, as kafka-transactions find-hanging does: every\n" +
			"producer with a transaction open on a partition (DescribeProducers at the\n" +
			"partitions' leaders: of --broker's partitions, of --topic's, or of every\n" +
			"topic) whose last write is older than --max-transaction-timeout (the\n" +
			"brokers' transaction.max.timeout.ms, 15 minutes by default: no coordinator\n" +
			"lets a transaction run longer), and whose coordinator does not know it\n" +
			"(ListTransactions by producer id, then DescribeTransactions): no transactional\n" +
			"id has the producer id, or its transaction is not ongoing, has another epoch\n" +
			"or lacks the partition. Each is printed with what `skein txn abort` needs.\n" +
			"None found is exit 0.",
		Example: "  skein txn find-hanging --broker 2\n" +
			"  skein txn find-hanging --topic payments -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxTimeout < 0 {
				return usageError("--max-transaction-timeout must not be negative")
			}
			o := *out
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				meta, err := adm.Metadata(ctx, topics...)
				if err != nil {
					return err
				}
				set := kadm.TopicsSet{}
				var errs []error
				for _, td := range meta.Topics.Sorted() {
					if td.Err != nil {
						errs = append(errs, fmt.Errorf("topic %s: %w", td.Topic, td.Err))
						continue
					}
					for _, p := range td.Partitions.Sorted() {
						if len(brokers) == 0 || slices.Contains(brokers, p.Leader) {
							set.Add(td.Topic, p.Partition)
						}
					}
				}
				hanging, err := findHanging(ctx, adm, set, maxTimeout, time.Now())
				if err != nil {
					errs = append(errs, err)
				}
				werr := o.write(stdout, orEmpty(hanging), func() error {
					if len(hanging) == 0 {
						_, err := fmt.Fprintln(stdout, "no hanging transactions")
						return err
					}
					rows := [][]string{{"TOPIC", "PARTITION", "LEADER", "PRODUCER-ID", "EPOCH", "COORDINATOR-EPOCH", "START-OFFSET", "LAST-WRITE", "DURATION", "WHY"}}
					for _, h := range hanging {
						rows = append(rows, []string{h.Topic, strconv.Itoa(int(h.Partition)), strconv.Itoa(int(h.Leader)),
							strconv.FormatInt(h.ProducerID, 10), strconv.Itoa(int(h.ProducerEpoch)), strconv.Itoa(int(h.CoordinatorEpoch)),
							strconv.FormatInt(h.StartOffset, 10), time.UnixMilli(h.LastTimestamp).UTC().Format(time.RFC3339),
							(time.Duration(h.DurationMs) * time.Millisecond).String(), h.Reason})
					}
					return printTable(stdout, rows)
				})
				return errors.Join(append(errs, werr)...)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&brokers, "broker", nil, "look at the partitions these brokers lead (default all)")
	cmd.Flags().StringSliceVar(&topics, "topic", nil, "look at these topics' partitions (default every topic)")
	cmd.Flags().DurationVar(&maxTimeout, "max-transaction-timeout", 15*time.Minute, "the brokers' transaction.max.timeout.ms: open transactions younger than it are not hanging")
	out = addOutputFlag(cmd)
	return cmd
}

// findHanging returns the transactions open on the partitions of set for
// longer than maxTimeout that no coordinator knows, as Kafka's
// FindHangingTransactions decides.
func findHanging(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, maxTimeout time.Duration, now time.Time) ([]openTxn, error) {
	if len(set) == 0 {
		return nil, nil
	}
	var errs []error
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil && described == nil {
		return nil, err
	} else if err != nil {
		errs = append(errs, err)
	}
	var open []openTxn
	for _, dp := range described.SortedPartitions() {
		if dp.Err != nil {
			errs = append(errs, fmt.Errorf("describe producers of %s-%d: %w", dp.Topic, dp.Partition, dp.Err))
			continue
		}
		for _, p := range dp.ActiveProducers.Sorted() {
			age := now.UnixMilli() - p.LastTimestamp
			if p.CurrentTxnStartOffset < 0 || age <= maxTimeout.Milliseconds() {
				continue
			}
			open = append(open, openTxn{Topic: dp.Topic, Partition: dp.Partition, Leader: dp.Leader, ProducerID: p.ProducerID,
				ProducerEpoch: p.ProducerEpoch, CoordinatorEpoch: p.CoordinatorEpoch, StartOffset: p.CurrentTxnStartOffset,
				LastTimestamp: p.LastTimestamp, DurationMs: age})
		}
	}
	if len(open) == 0 {
		return nil, errors.Join(errs...)
	}
	var pids []int64
	for _, t := range open {
		pids = append(pids, t.ProducerID)
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil && listed == nil {
		return nil, errors.Join(append(errs, err)...)
	} else if err != nil {
		errs = append(errs, err) // a coordinator that did not answer: its producers look hanging
	}
	byPID := map[int64]string{}
	var ids []string
	for _, l := range listed.Sorted() {
		byPID[l.ProducerID] = l.TxnID
		ids = append(ids, l.TxnID)
	}
	txns := kadm.DescribedTransactions{}
	if len(ids) > 0 {
		if txns, err = adm.DescribeTransactions(ctx, ids...); err != nil && txns == nil {
			return nil, errors.Join(append(errs, err)...)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	var hanging []openTxn
	for _, t := range open {
		id, ok := byPID[t.ProducerID]
		if !ok {
			t.Reason = "no coordinator knows the producer id"
			hanging = append(hanging, t)
			continue
		}
		t.TransactionalID = id
		d, ok := txns[id]
		switch {
		case !ok || d.Err != nil:
			t.Reason = "its coordinator did not describe " + id
		case d.State != "Ongoing" && d.State != "PrepareCommit" && d.State != "PrepareAbort":
			t.Reason = id + " is " + d.State
		case d.ProducerEpoch != t.ProducerEpoch:
			t.Reason = fmt.Sprintf("%s is at epoch %d", id, d.ProducerEpoch)
		case !inSet(d.Topics, t.Topic, t.Partition):
			t.Reason = id + "'s transaction does not hold the partition"
		default:
			continue // its coordinator will end it
		}
		hanging = append(hanging, t)
	}
	slices.SortFunc(hanging, func(a, b openTxn) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.ProducerID, b.ProducerID))
	})
	return hanging, errors.Join(errs...)
}

// inSet reports whether set holds the partition.
func inSet(set kadm.TopicsSet, topic string, partition int32) bool {
	_, ok := set[topic][partition]
	return ok
}
