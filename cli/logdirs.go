package cli

// skein cluster log-dirs: each broker's log directories and the size of
// the partitions in them (DescribeLogDirs), as kafka-log-dirs --describe
// and rpk cluster logdirs describe show them.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// logDir is one broker's log directory.
type logDir struct {
	Broker      int32           `json:"broker"`
	Dir         string          `json:"dir"`
	Error       string          `json:"error,omitempty"`
	TotalBytes  int64           `json:"total_bytes"`  // -1: not reported
	UsableBytes int64           `json:"usable_bytes"` // -1: not reported
	Size        int64           `json:"size"`         // the partitions' sizes summed
	Partitions  []logDirReplica `json:"partitions"`
}

// logDirReplica is a partition's replica in a log directory.
type logDirReplica struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offset_lag"`
	IsFuture  bool   `json:"is_future"`
}

func newClusterLogDirsCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var (
		brokers []int32
		topics  []string
		out     *output
	)
	cmd := &cobra.Command{
		Use:   "log-dirs [--broker N,...] [--topic T,...]",
		Short: "Show the brokers' log directories with their space and the partitions' sizes",
		Long: "Show each broker's log directories (DescribeLogDirs): the directory, its\n" +
			"filesystem's total and usable bytes (- when the broker does not say), and\n" +
			"each partition replica in it with the size of its segment files and its\n" +
			"offset lag (how far the replica's log end is behind the high watermark; a\n" +
			"future replica's, behind the current one). --broker keeps those brokers,\n" +
			"--topic those topics' partitions. A Skein node has one log directory, its\n" +
			"data.dir.",
		Example: "  skein cluster log-dirs --topic orders\n" +
			"  skein cluster log-dirs --broker 2 -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := *out
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var set kadm.TopicsSet
				if len(topics) > 0 {
					listed, err := adm.ListTopics(ctx, topics...)
					if err != nil {
						return err
					}
					set = kadm.TopicsSet{}
					for _, t := range topics {
						td, ok := listed[t]
						switch {
						case !ok:
							return fmt.Errorf("topic %s: not in the broker's metadata", t)
						case td.Err != nil:
							return fmt.Errorf("topic %s: %w", t, td.Err)
						}
						set.Add(t, td.Partitions.Numbers()...)
					}
				}
				var (
					all  = kadm.DescribedAllLogDirs{}
					errs []error
				)
				if len(brokers) == 0 {
					var err error
					all, err = adm.DescribeAllLogDirs(ctx, set)
					if se, ok := errors.AsType[*kadm.ShardErrors](err); ok {
						for _, e := range se.Errs {
							errs = append(errs, fmt.Errorf("broker %d: %w", e.Broker.NodeID, e.Err))
						}
					} else if err != nil {
						return err
					}
				} else {
					for _, b := range brokers {
						d, err := adm.DescribeBrokerLogDirs(ctx, b, set)
						if err != nil {
							errs = append(errs, fmt.Errorf("broker %d: %w", b, err))
							continue
						}
						all[b] = d
					}
				}
				dirs := []logDir{}
				for _, d := range all.Sorted() {
					ld := logDir{Broker: d.Broker, Dir: d.Dir, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes, Partitions: []logDirReplica{}}
					if d.Err != nil {
						ld.Error = d.Err.Error()
						errs = append(errs, fmt.Errorf("broker %d, log dir %s: %w", d.Broker, d.Dir, d.Err))
					}
					for _, p := range d.Topics.Sorted() {
						ld.Size += p.Size
						ld.Partitions = append(ld.Partitions, logDirReplica{Topic: p.Topic, Partition: p.Partition, Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture})
					}
					slices.SortFunc(ld.Partitions, func(a, b logDirReplica) int {
						return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
					})
					dirs = append(dirs, ld)
				}
				werr := o.write(stdout, dirs, func() error { return printLogDirs(stdout, dirs) })
				return errors.Join(append(errs, werr)...)
			})
		},
	}
	cmd.Flags().Int32SliceVar(&brokers, "broker", nil, "the brokers to describe, by id (default every broker)")
	cmd.Flags().StringSliceVar(&topics, "topic", nil, "keep these topics' partitions (default all)")
	out = addOutputFlag(cmd)
	return cmd
}

// printLogDirs prints a table of the log directories, then one of the
// partitions in them.
func printLogDirs(w io.Writer, dirs []logDir) error {
	bytes := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	rows := [][]string{{"BROKER", "DIR", "TOTAL-BYTES", "USABLE-BYTES", "SIZE", "PARTITIONS", "ERROR"}}
	for _, d := range dirs {
		rows = append(rows, []string{strconv.Itoa(int(d.Broker)), d.Dir, bytes(d.TotalBytes), bytes(d.UsableBytes),
			strconv.FormatInt(d.Size, 10), strconv.Itoa(len(d.Partitions)), d.Error})
	}
	if err := printTable(w, dropEmptyLastColumn(rows)); err != nil {
		return err
	}
	rows = [][]string{{"BROKER", "TOPIC", "PARTITION", "SIZE", "OFFSET-LAG", "FUTURE"}}
	for _, d := range dirs {
		for _, p := range d.Partitions {
			future := "no"
			if p.IsFuture {
				future = "yes"
			}
			rows = append(rows, []string{strconv.Itoa(int(d.Broker)), p.Topic, strconv.Itoa(int(p.Partition)),
				strconv.FormatInt(p.Size, 10), strconv.FormatInt(p.OffsetLag, 10), future})
		}
	}
	if len(rows) == 1 {
		return nil
	}
	fmt.Fprintln(w)
	return printTable(w, rows)
}
