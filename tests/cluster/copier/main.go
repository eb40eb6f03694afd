// Command copier is the exactly-once copier of tests/cluster's
// TestTransactionalCopyUnderFaults, a process of its own so that the test
// can kill it with SIGKILL: it copies the records of one topic to another
// with franz-go's GroupTransactSession (consume in a group, produce, and
// commit the group's offsets in one transaction; read_committed, stable
// offsets required), until it is killed. The test builds it; it is no
// tool to run by hand.
//
// Each transaction is named by a tag, <name>.<session>.<n>, which every
// record it produces carries in its "txn" header. On stdout the copier
// writes one line per transaction before it produces anything, and one
// when the transaction has ended (or failed to):
//
//	TXN <tag> <records> <partition>:<first offset>-<last offset>...
//	END <tag> committed|aborted|unknown [error]
//
// committed and aborted are what GroupTransactSession.End answered without
// an error; unknown is an error, after which the outcome may be either.
// After an error the copier leaves the group and starts a new session with
// the same transactional id (InitProducerId fences what the old session
// left open, and the group's offsets are fetched again), as an application
// restarting would. franz-go's own log goes to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func main() {
	var (
		brokers    = flag.String("brokers", "", "seed brokers, comma separated")
		group      = flag.String("group", "", "consumer group")
		in         = flag.String("in", "", "topic to copy from")
		out        = flag.String("out", "", "topic to copy to")
		txnID      = flag.String("txn-id", "", "transactional id")
		name       = flag.String("name", "", "prefix of the transactions' tags")
		maxRecords = flag.Int("max-records", 750, "most records in one transaction")
		work       = flag.Duration("work", 0, "time spent on each record, the transaction open")
		tv1        = flag.Bool("tv1", false, "use transaction version 1 (cap Produce at v11, EndTxn at v4)")
	)
	flag.Parse()
	if *brokers == "" || *group == "" || *in == "" || *out == "" || *txnID == "" || *name == "" || *maxRecords < 1 {
		fmt.Fprintln(os.Stderr, "copier: -brokers, -group, -in, -out, -txn-id and -name are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.TransactionalID(*txnID), kgo.DefaultProduceTopic(*out),
		kgo.ConsumerGroup(*group), kgo.ConsumeTopics(*in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// A dead member's partitions wait for its session to expire:
		// short, so that a killed copier's work moves on soon.
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
		// Longer than any transaction here, failovers included: a
		// transaction aborted for its timeout would only slow the copy.
		kgo.TransactionTimeout(60 * time.Second),
		kgo.DialTimeout(2 * time.Second),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
			return time.Now().Format("15:04:05.000 ")
		})),
	}
	opts = append(opts, kgo.WithHooks(coordinatorLog{}))
	if *tv1 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(0, 11) // Produce
		v.SetMaxKeyVersion(26, 4) // EndTxn
		v.SetMaxKeyVersion(28, 4) // TxnOffsetCommit
		v.SetMaxKeyVersion(24, 3) // AddPartitionsToTxn
		opts = append(opts, kgo.MaxVersions(v))
	}
	for session := 0; ctx.Err() == nil; session++ {
		err := copySession(ctx, opts, fmt.Sprintf("%s.%d", *name, session), *maxRecords, *work)
		if ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "copier: session %d ended: %v; starting another\n", session, err)
			select { // a pause before the next session, not to spin on a down cluster
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// copySession copies in transactions until an error, which it returns.
func copySession(ctx context.Context, opts []kgo.Opt, name string, maxRecords int, work time.Duration) error {
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	for n := 0; ; n++ {
		// Transaction sizes spread evenly on a log scale from 1 to
		// maxRecords: many small ones, some large.
		limit := int(math.Round(math.Exp(rand.Float64() * math.Log(float64(maxRecords)))))
		fs := sess.PollRecords(ctx, max(limit, 1))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "copier: fetching %s-%d: %v\n", t, p, err)
		})
		records := fs.Records()
		if len(records) == 0 {
			n--
			continue
		}
		tag := fmt.Sprintf("%s.%d", name, n)
		fmt.Printf("TXN %s %d %s\n", tag, len(records), inputRanges(records))
		if err := sess.Begin(); err != nil {
			fmt.Printf("END %s unknown %v\n", tag, err)
			return err
		}
		e := kgo.AbortingFirstErrPromise(sess.Client())
		for _, r := range records {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{{Key: "txn", Value: []byte(tag)}}}, e.Promise())
		}
		if work > 0 {
			time.Sleep(time.Duration(len(records)) * work)
		}
		ferr := sess.Client().Flush(ctx)
		committed, err := sess.End(ctx, kgo.TransactionEndTry(ferr == nil && e.Err() == nil))
		switch {
		case err != nil:
			fmt.Printf("END %s unknown %v\n", tag, err)
			return err
		case committed:
			fmt.Printf("END %s committed\n", tag)
		default:
			fmt.Printf("END %s aborted %v\n", tag, errors.Join(ferr, e.Err()))
		}
	}
}

// inputRanges says which input offsets records are, by partition.
func inputRanges(records []*kgo.Record) string {
	first, last := map[int32]int64{}, map[int32]int64{}
	var parts []int32
	for _, r := range records {
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
			parts = append(parts, r.Partition)
		}
		last[r.Partition] = r.Offset
	}
	slices.Sort(parts)
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%d:%d-%d ", p, first[p], last[p])
	}
	return strings.TrimSpace(b.String())
}

// coordinatorLog logs, to stderr, which node answered each transaction
// and group offset request (or why none did): what a failed history's
// story needs.
type coordinatorLog struct{}

func (coordinatorLog) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	switch key {
	case 9, 22, 24, 25, 26, 28: // OffsetFetch, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
		fmt.Fprintf(os.Stderr, "%s copier: %s answered by node %d: %v\n", time.Now().Format("15:04:05.000"), kmsg.NameForKey(key), meta.NodeID, e2e.Err())
	}
}
