package cli

import (
	"context"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnAbortAndFindHanging: on a cluster with no open transaction,
// find-hanging finds none; an open transaction its coordinator knows is
// not hanging even past the timeout; txn abort by start offset writes an
// abort marker to its partition, after which the partition has no
// transaction open and read_committed reads past it. The coordinator still
// holds the transaction as Ongoing: that partition of it is now hanging
// in reverse, which find-hanging does not report (its producer has no
// transaction open there).
func TestTxnAbortAndFindHanging(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "payments", "-p", "2")
	var hanging []openTxn
	decodeJSON(t, ok(t, addr, "", "txn", "find-hanging", "-o", "json"), &hanging)
	if len(hanging) != 0 {
		t.Fatalf("find-hanging on a clean cluster: %+v", hanging)
	}
	if out := ok(t, addr, "", "txn", "find-hanging"); out != "no hanging transactions\n" {
		t.Fatalf("find-hanging text: %q", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	ok(t, addr, "before\n", "produce", "payments", "-p", "1")
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("billing-1"), kgo.DefaultProduceTopic("payments"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("stuck"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ok(t, addr, "after\n", "produce", "payments", "-p", "1")
	// Open, and known to its coordinator: not hanging, however old.
	decodeJSON(t, ok(t, addr, "", "txn", "find-hanging", "--max-transaction-timeout", "0s", "--topic", "payments", "-o", "json"), &hanging)
	if len(hanging) != 0 {
		t.Fatalf("find-hanging with an ongoing transaction: %+v", hanging)
	}
	// read_committed stops before it.
	if out := ok(t, addr, "", "consume", "payments", "-p", "1", "-e", "--isolation", "read_committed"); out != "before\n" {
		t.Fatalf("read_committed with the transaction open: %q", out)
	}

	var aborted openTxn
	decodeJSON(t, ok(t, addr, "", "txn", "abort", "--topic", "payments", "--partition", "1", "--start-offset", "1", "-o", "json"), &aborted)
	if aborted.Topic != "payments" || aborted.Partition != 1 || aborted.StartOffset != 1 || aborted.ProducerID < 0 {
		t.Fatalf("txn abort: %+v", aborted)
	}
	out := ok(t, addr, "", "producer", "describe", "payments", "1")
	if r := row(out, "1", "1", strconv.FormatInt(aborted.ProducerID, 10)); len(r) != 8 || r[7] != "-" {
		t.Fatalf("producer describe after the abort: row %v, want no transaction in progress\n%s", r, out)
	}
	if out := ok(t, addr, "", "consume", "payments", "-p", "1", "-e", "--isolation", "read_committed"); out != "before\nafter\n" {
		t.Fatalf("read_committed after the abort: %q, want the records around the aborted one", out)
	}
	fails(t, addr, 1, "no transaction starts at offset 1", "", "txn", "abort", "--topic", "payments", "--partition", "1", "--start-offset", "1")
	fails(t, addr, 2, "give --start-offset, or --producer-id and --producer-epoch", "", "txn", "abort", "--topic", "payments", "--partition", "1")
	fails(t, addr, 2, "--producer-id needs --producer-epoch", "", "txn", "abort", "--topic", "payments", "--partition", "1", "--producer-id", "3")
}
