package cli

// skein consume: records of a topic's partitions to stdout, on kgo with
// direct partition assignment (no consumer group, nothing committed), or
// with -g as a member of a consumer group, committing what it printed.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newConsumeCommand(environ []string, stdout, stderr io.Writer) *cobra.Command {
	var (
		flags     clientFlags
		from      string
		count     int
		noFollow  bool
		format    string
		partition int32
		group     string
		isolation string
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print a topic's records",
		Long: "Print the records of a topic's partitions (or of -p's), from --from:\n" +
			"  beginning      the log start offset (the default)\n" +
			"  end            the high watermark: only records produced from now on\n" +
			"  N              offset N (an error if outside the partition's offsets)\n" +
			"  -N             N records before the end\n" +
			"  @MS            the first record with a timestamp at or after MS, unix\n" +
			"                 milliseconds (ListOffsets by timestamp)\n" +
			"  TIME, @TIME    the same for an RFC 3339 time, 2024-06-01T12:00:00Z\n" +
			"It follows the partitions until interrupted, or until -n records are printed;\n" +
			"-e (--no-follow) exits at the end the partitions had when it started, as kcat\n" +
			"-e does.\n\n" +
			"With -g it consumes as a member of the consumer group GROUP (kgo's group\n" +
			"consumer, the classic protocol): the group's coordinator assigns it\n" +
			"partitions, it starts each at the group's committed offset, or at --from\n" +
			"where the group has none, and commits the offsets of the records it has\n" +
			"printed (and flushed): every 5 s, when a partition is taken away, and before\n" +
			"it leaves the group on exit; so a record is printed at least once, never\n" +
			"skipped. -e then waits for every partition's end, so it suits a group it is\n" +
			"alone in; -p cannot be given with -g.\n\n" +
			"--isolation read_committed prints only committed transactions' records, and\n" +
			"-e stops at the last stable offset (before the first open transaction)\n" +
			"instead of the high watermark; read_uncommitted, the default, prints every\n" +
			"record, aborted transactions' too.\n\n" + formatHelp,
		Example: "  skein consume orders --from @1717243200000 -n 10 -f '%k %v (%p@%o)\\n'\n" +
			"  skein consume orders --from -5 -e\n" +
			"  skein consume orders -g billing --isolation read_committed",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := parseFormat(format)
			if err != nil {
				return usageError(err.Error())
			}
			start, err := parseFrom(from)
			if err != nil {
				return usageError(err.Error())
			}
			if count < 0 {
				return usageError("-n must be positive (0: no limit)")
			}
			if partition < -1 {
				return usageError(fmt.Sprintf("-p %d: want a partition number, or -1 for all", partition))
			}
			if group != "" && partition >= 0 {
				return usageError("-p cannot be given with -g: the group's coordinator assigns the partitions")
			}
			var committed bool
			switch isolation {
			case "read_uncommitted":
			case "read_committed":
				committed = true
			default:
				return usageError(fmt.Sprintf("--isolation %q: want read_uncommitted or read_committed", isolation))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			adm, err := flags.admin(ctx)
			if err != nil {
				return err
			}
			defer adm.Close()
			c := &consumer{flags: &flags, topic: args[0], format: f, count: count, follow: !noFollow,
				out: bufio.NewWriterSize(stdout, 64<<10), stderr: stderr, group: group, readCommitted: committed}
			err = c.run(ctx, adm, start, partition)
			if ferr := c.out.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return fmt.Errorf("consume %s: %w", c.topic, flags.gaveUp(err))
			}
			return nil
		},
	}
	flags.register(cmd, environ)
	cmd.Flags().StringVarP(&from, "from", "o", "beginning", "where to start: beginning, end, OFFSET, -N, @UNIX_MS, RFC 3339 time")
	cmd.Flags().IntVarP(&count, "count", "n", 0, "exit after printing this many records (0: no limit)")
	cmd.Flags().BoolVarP(&noFollow, "no-follow", "e", false, "exit at the end of the partitions instead of waiting for more")
	cmd.Flags().StringVarP(&format, "format", "f", `%v\n`, "record format (see above)")
	cmd.Flags().Int32VarP(&partition, "partition", "p", -1, "consume only this partition (-1: all)")
	cmd.Flags().StringVarP(&group, "group", "g", "", "consume as a member of this consumer group, committing what is printed")
	cmd.Flags().StringVar(&isolation, "isolation", "read_uncommitted", "read_uncommitted (every record) or read_committed (committed transactions' only)")
	return cmd
}

// startKind is where --from starts.
type startKind int

const (
	startBeginning startKind = iota
	startEnd
	startOffset   // at offset
	startRelative // offset records before the end
	startTime     // the first record at or after ms
)

type startSpec struct {
	kind   startKind
	offset int64
	ms     int64
}

// parseFrom parses --from. A bare integer is an offset, so a unix time needs
// the @ that rpk uses for it.
func parseFrom(s string) (startSpec, error) { return parseStart("--from", s) }

// parseStart parses a start position, the value of flag (consume --from,
// group seek --to), which its errors name.
func parseStart(flag, s string) (startSpec, error) {
	switch s {
	case "beginning", "start", "oldest":
		return startSpec{kind: startBeginning}, nil
	case "end", "newest":
		return startSpec{kind: startEnd}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return startSpec{kind: startRelative, offset: -n}, nil
		}
		return startSpec{kind: startOffset, offset: n}, nil
	}
	t := strings.TrimPrefix(s, "@")
	if ms, err := strconv.ParseInt(t, 10, 64); err == nil && t != s {
		if ms < 0 {
			return startSpec{}, fmt.Errorf("%s %s: a negative time", flag, s)
		}
		return startSpec{kind: startTime, ms: ms}, nil
	}
	if tm, err := time.Parse(time.RFC3339Nano, t); err == nil {
		if tm.UnixMilli() < 0 {
			return startSpec{}, fmt.Errorf("%s %s: before 1970", flag, s)
		}
		return startSpec{kind: startTime, ms: tm.UnixMilli()}, nil
	}
	return startSpec{}, fmt.Errorf("%s %q: want beginning, end, an offset, -N, @UNIX_MS or an RFC 3339 time", flag, s)
}

// consumer prints records until its count, the partitions' ends (without
// follow), an error or an interrupt.
type consumer struct {
	flags  *clientFlags
	topic  string
	format recordFormat
	count  int  // 0: no limit
	follow bool // false: stop at ends
	out    *bufio.Writer
	stderr io.Writer
	// group, when set, is the consumer group to consume in (-g).
	group string
	// readCommitted: --isolation read_committed.
	readCommitted bool

	printed int
	ends    map[int32]int64 // without follow, the partitions not yet read to their end
	marks   []*kgo.Record   // with a group, printed records not yet marked for commit
	buf     []byte
}

func (c *consumer) run(ctx context.Context, adm *kadm.Client, start startSpec, partition int32) error {
	offsets, ends, err := c.startOffsets(ctx, adm, start, partition)
	if err != nil {
		return err
	}
	if c.group != "" {
		// A member starts where its group committed.
		rctx, cancel := c.flags.requestContext(ctx)
		committed, err := adm.FetchOffsetsForTopics(rctx, c.group, c.topic)
		cancel()
		if err != nil {
			return fmt.Errorf("the offsets of group %s: %w", c.group, err)
		}
		for p := range offsets {
			if o, ok := committed.Lookup(c.topic, p); ok && o.Err == nil && o.At >= 0 {
				offsets[p] = o.At
			}
		}
	}
	if !c.follow {
		c.ends = map[int32]int64{}
		for p, end := range ends {
			if offsets[p] < end {
				c.ends[p] = end
			}
		}
		if len(c.ends) == 0 {
			return nil
		}
	}
	seeds, _ := c.flags.seeds() // checked by admin
	opts := append(c.flags.baseOpts(seeds),
		// NB: without follow, the end is an offset; a transaction marker
		// can be the last one, so keep control records to see it.
		kgo.KeepControlRecords(),
	)
	if c.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if c.group != "" {
		// The group's committed offsets win; --from is where a partition
		// without one starts. Only what was printed is marked, and
		// autocommit commits the marks (every 5 s, at a revocation and
		// when the client leaves).
		opts = append(opts, kgo.ConsumerGroup(c.group), kgo.ConsumeTopics(c.topic),
			kgo.ConsumeResetOffset(resetOffset(start)), kgo.AutoCommitMarks())
	} else {
		assign := map[int32]kgo.Offset{}
		for p, o := range offsets {
			assign[p] = kgo.NewOffset().At(o)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: assign}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if c.group != "" {
		defer c.commit(cl)
	}
	for {
		// NB: following waits for records as long as it is let; without
		// it, the ends are there to be read, and a partition whose leader
		// sends nothing for --timeout is given up on.
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if !c.follow {
			pollCtx, cancel = context.WithTimeout(ctx, c.flags.timeout)
		}
		fetches := cl.PollFetches(pollCtx)
		stalled := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			return nil // interrupted: a normal end when following
		}
		if stalled {
			return fmt.Errorf("gave up after %v (--timeout) without a record of partitions %s, short of their end offsets %s: their leaders did not answer",
				c.flags.timeout, int32List(slices.Sorted(maps.Keys(c.ends))), c.endsString())
		}
		for _, fe := range fetches.Errors() {
			var loss *kgo.ErrDataLoss
			if errors.As(fe.Err, &loss) {
				// kgo has already moved on; say so, as kcat does.
				fmt.Fprintf(c.stderr, "skein: %s[%d]: %v\n", fe.Topic, fe.Partition, fe.Err)
				continue
			}
			return fmt.Errorf("partition %d: %w", fe.Partition, fe.Err)
		}
		var printed []*kgo.Record
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			printed = append(printed, r)
			if c.record(r) {
				c.marks = printed
				return nil
			}
		}
		if err := c.out.Flush(); err != nil {
			return err
		}
		if c.group != "" {
			cl.MarkCommitRecords(printed...)
		}
	}
}

// commit flushes what was printed and commits its offsets, before the
// client leaves the group; a failure is said on stderr.
func (c *consumer) commit(cl *kgo.Client) {
	if c.out.Flush() != nil {
		return // not printed: not committed
	}
	cl.MarkCommitRecords(c.marks...)
	ctx, cancel := c.flags.requestContext(context.Background())
	defer cancel()
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		fmt.Fprintf(c.stderr, "skein: committing the offsets of group %s: %v\n", c.group, err)
	}
}

// resetOffset is where a group member starts a partition its group has no
// committed offset for: --from.
func resetOffset(start startSpec) kgo.Offset {
	switch start.kind {
	case startEnd:
		return kgo.NewOffset().AtEnd()
	case startOffset:
		return kgo.NewOffset().At(start.offset)
	case startRelative:
		return kgo.NewOffset().AtEnd().Relative(-start.offset)
	case startTime:
		return kgo.NewOffset().AfterMilli(start.ms)
	}
	return kgo.NewOffset().AtStart()
}

// endsString prints the ends not yet reached: "[0:5,2:7]".
func (c *consumer) endsString() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(c.ends)) {
		parts = append(parts, fmt.Sprintf("%d:%d", p, c.ends[p]))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// record prints r unless it is a control record, and reports whether the
// consumer is done.
func (c *consumer) record(r *kgo.Record) bool {
	if !r.Attrs.IsControl() {
		c.buf = c.format.append(c.buf[:0], r)
		c.out.Write(c.buf) // a failure shows at the next Flush
		c.printed++
		if c.count > 0 && c.printed >= c.count {
			return true
		}
	}
	if c.ends != nil {
		if end, ok := c.ends[r.Partition]; ok && r.Offset+1 >= end {
			delete(c.ends, r.Partition)
		}
		return len(c.ends) == 0
	}
	return false
}

// startOffsets resolves --from to an offset for each partition consumed, and
// returns their high watermarks too.
func (c *consumer) startOffsets(ctx context.Context, adm *kadm.Client, start startSpec, partition int32) (offsets, ends map[int32]int64, err error) {
	ctx, cancel := c.flags.requestContext(ctx)
	defer cancel()
	topics, err := adm.ListTopics(ctx, c.topic)
	if err != nil {
		return nil, nil, err
	}
	td, ok := topics[c.topic]
	switch {
	case !ok:
		return nil, nil, errors.New("not in the broker's metadata")
	case td.Err != nil:
		return nil, nil, td.Err
	}
	parts := td.Partitions.Numbers()
	if partition >= 0 {
		if !slices.Contains(parts, partition) {
			return nil, nil, fmt.Errorf("no partition %d: the topic has %d", partition, len(parts))
		}
		parts = []int32{partition}
	}
	list := func(l kadm.ListedOffsets, err error) (map[int32]int64, error) {
		if err != nil {
			return nil, err
		}
		m := make(map[int32]int64, len(parts))
		for _, p := range parts {
			o, ok := l.Lookup(c.topic, p)
			switch {
			case !ok:
				return nil, fmt.Errorf("partition %d: no offset in the ListOffsets response", p)
			case o.Err != nil:
				return nil, fmt.Errorf("partition %d: %w", p, o.Err)
			}
			m[p] = o.Offset
		}
		return m, nil
	}
	starts, err := list(adm.ListStartOffsets(ctx, c.topic))
	if err != nil {
		return nil, nil, err
	}
	// NB: read_committed reads up to the last stable offset, the end -e
	// waits for then.
	listEnds := adm.ListEndOffsets
	if c.readCommitted {
		listEnds = adm.ListCommittedOffsets
	}
	if ends, err = list(listEnds(ctx, c.topic)); err != nil {
		return nil, nil, err
	}
	offsets = make(map[int32]int64, len(parts))
	switch start.kind {
	case startBeginning:
		offsets = starts
	case startEnd:
		offsets = maps.Clone(ends)
	case startRelative:
		for _, p := range parts {
			offsets[p] = max(starts[p], ends[p]-start.offset)
		}
	case startOffset:
		for _, p := range parts {
			if start.offset < starts[p] || start.offset > ends[p] {
				return nil, nil, fmt.Errorf("partition %d: offset %d is out of range: the partition holds offsets %d up to its end %d",
					p, start.offset, starts[p], ends[p])
			}
			offsets[p] = start.offset
		}
	case startTime:
		// kadm answers the end offset for a partition with nothing at or
		// after the time, so following it waits for new records.
		if offsets, err = list(adm.ListOffsetsAfterMilli(ctx, start.ms, c.topic)); err != nil {
			return nil, nil, err
		}
	}
	return offsets, ends, nil
}
