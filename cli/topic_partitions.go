package cli

// skein topic add-partitions and trim-prefix: a topic's partition count
// raised (CreatePartitions, as kafka-topics --alter --partitions) and its
// partitions' starts moved up (DeleteRecords, as kafka-delete-records and
// rpk topic trim-prefix).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// addedPartitions is one topic's answer to add-partitions.
type addedPartitions struct {
	Topic        string `json:"topic"`
	Before       int    `json:"partitions_before"`
	Partitions   int    `json:"partitions"`
	ValidateOnly bool   `json:"validate_only"`
}

func newTopicAddPartitionsCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		count        int
		validateOnly bool
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "add-partitions NAME... --count N",
		Short: "Raise topics' partition counts to N (CreatePartitions)",
		Long: "Raise each topic's partition count to --count, the total, as kafka-topics\n" +
			"--alter --partitions does; the controller places the new partitions' replicas\n" +
			"as it places a new topic's, with the topic's replication factor. A topic's\n" +
			"partitions can only be added, never removed: a count below a topic's is\n" +
			"refused before anything is asked of the cluster, one equal to it is the\n" +
			"broker's INVALID_PARTITIONS. Records keyed to a partition by their key's hash\n" +
			"go to other partitions once the count changes. --validate-only asks the\n" +
			"controller to check the change and make none.",
		Example: "  skein topic add-partitions orders --count 12\n" +
			"  skein topic add-partitions orders audit --count 6 --validate-only",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if count <= 0 {
				return usageError("--count is required: the topics' new total number of partitions")
			}
			o := *out
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				topics, err := adm.ListTopics(ctx, names...)
				if err != nil {
					return err
				}
				var (
					errs  []error
					grow  []string
					added []addedPartitions
				)
				before := map[string]int{}
				for _, name := range names {
					t, ok := topics[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("add partitions to %s: not in the broker's metadata", name))
					case t.Err != nil:
						errs = append(errs, fmt.Errorf("add partitions to %s: %w", name, t.Err))
					case len(t.Partitions) > count:
						errs = append(errs, fmt.Errorf("add partitions to %s: it has %d partitions, more than --count %d: a topic's partitions can only be increased", name, len(t.Partitions), count))
					default:
						before[name] = len(t.Partitions)
						grow = append(grow, name)
					}
				}
				if len(grow) > 0 {
					adm.SetTimeoutMillis(brokerWait(flags.timeout))
					update := adm.UpdatePartitions
					if validateOnly {
						update = adm.ValidateUpdatePartitions
					}
					resps, err := update(ctx, count, grow...)
					if err != nil {
						return errors.Join(append(errs, unanswered("partition change", flags.timeout, err))...)
					}
					errs = append(errs, eachAnswered("add partitions to", grow, resps,
						func(r kadm.CreatePartitionsResponse) error { return kafkaError(r.Err, r.ErrMessage) },
						func(name string, _ kadm.CreatePartitionsResponse) {
							added = append(added, addedPartitions{Topic: name, Before: before[name], Partitions: count, ValidateOnly: validateOnly})
						}))
				}
				werr := o.write(stdout, orEmpty(added), func() error {
					for _, a := range added {
						if a.ValidateOnly {
							fmt.Fprintf(stdout, "%s: %d partitions could become %d (validated, nothing changed)\n", a.Topic, a.Before, a.Partitions)
						} else {
							fmt.Fprintf(stdout, "%s: %d partitions, now %d\n", a.Topic, a.Before, a.Partitions)
						}
					}
					return nil
				})
				return errors.Join(append(errs, werr)...)
			})
		},
	}
	cmd.Flags().IntVar(&count, "count", 0, "the new total number of partitions of each topic")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change and make none")
	out = addOutputFlag(cmd)
	return cmd
}

// orEmpty makes a nil slice an empty one, which json prints as [] rather
// than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// trimmedPartition is one partition's answer to trim-prefix.
type trimmedPartition struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	LowWatermark int64  `json:"low_watermark"`
	Error        string `json:"error,omitempty"`
}

func newTopicTrimPrefixCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		offset     string
		partitions []int32
		out        *output
	)
	cmd := &cobra.Command{
		Use:   "trim-prefix NAME --offset N|end [-p N,...]",
		Short: "Delete the records of a topic's partitions below an offset (DeleteRecords)",
		Long: "Delete the records of the topic's partitions (all, or those of -p) below\n" +
			"--offset, as kafka-delete-records does: each partition's log start offset (its\n" +
			"low watermark) moves up to the offset at once, the records below it can no\n" +
			"longer be read, and retention removes the segments wholly below it. There is\n" +
			"no undoing it and nothing is asked first. --offset end trims up to the high\n" +
			"watermark, emptying the partitions. An offset above a partition's high\n" +
			"watermark is the broker's OFFSET_OUT_OF_RANGE for that partition; one below\n" +
			"its log start offset changes nothing. It prints each partition's new low\n" +
			"watermark.",
		Example: "  skein topic trim-prefix orders --offset 1000 -p 0\n" +
			"  skein topic trim-prefix orders --offset end",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var at int64
			switch offset {
			case "":
				return usageError("--offset is required: an offset, or end for the high watermark")
			case "end":
				at = -1 // DeleteRecords' "the high watermark"
			default:
				n, err := strconv.ParseInt(offset, 10, 64)
				if err != nil || n < 0 {
					return usageError(fmt.Sprintf("--offset %q: want an offset (0 or more) or end", offset))
				}
				at = n
			}
			o := *out
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				topics, err := adm.ListTopics(ctx, name)
				if err != nil {
					return err
				}
				t, ok := topics[name]
				switch {
				case !ok:
					return fmt.Errorf("trim topic %s: not in the broker's metadata", name)
				case t.Err != nil:
					return fmt.Errorf("trim topic %s: %w", name, t.Err)
				}
				parts := t.Partitions.Numbers()
				if len(partitions) > 0 {
					for _, p := range partitions {
						if !slices.Contains(parts, p) {
							return fmt.Errorf("trim topic %s: no partition %d: the topic has %d", name, p, len(parts))
						}
					}
					parts = partitions
				}
				slices.Sort(parts)
				parts = slices.Compact(parts)
				offsets := kadm.Offsets{}
				for _, p := range parts {
					offsets.Add(kadm.Offset{Topic: name, Partition: p, At: at, LeaderEpoch: -1})
				}
				resps, err := adm.DeleteRecords(ctx, offsets)
				if err != nil {
					return err
				}
				var (
					errs    []error
					trimmed []trimmedPartition
				)
				for _, p := range parts {
					r, ok := resps.Lookup(name, p)
					tp := trimmedPartition{Topic: name, Partition: p, LowWatermark: -1}
					switch {
					case !ok:
						tp.Error = "not in the broker's answer"
					case r.Err != nil:
						tp.Error = r.Err.Error()
					default:
						tp.LowWatermark = r.LowWatermark
					}
					if tp.Error != "" {
						errs = append(errs, fmt.Errorf("%s-%d: %s", name, p, tp.Error))
					}
					trimmed = append(trimmed, tp)
				}
				werr := o.write(stdout, trimmed, func() error {
					rows := [][]string{{"TOPIC", "PARTITION", "LOW-WATERMARK", "ERROR"}}
					for _, tp := range trimmed {
						low := "-"
						if tp.Error == "" {
							low = strconv.FormatInt(tp.LowWatermark, 10)
						}
						rows = append(rows, []string{tp.Topic, strconv.Itoa(int(tp.Partition)), low, tp.Error})
					}
					return printTable(stdout, dropEmptyLastColumn(rows))
				})
				return errors.Join(append(errs, werr)...)
			})
		},
	}
	cmd.Flags().StringVar(&offset, "offset", "", "delete the records below this offset; end: all of them, up to the high watermark")
	cmd.Flags().Int32SliceVarP(&partitions, "partition", "p", nil, "the partitions to trim (default all)")
	out = addOutputFlag(cmd)
	return cmd
}
