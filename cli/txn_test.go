package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnCommands: a transaction left open shows in skein txn list and
// describe, with its partitions, and in skein producer describe with the
// offset it started at; once committed, it is CompleteCommit and the
// partition's producer has no transaction in progress.
func TestTxnCommands(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "payments", "-p", "2")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("billing-1"), kgo.DefaultProduceTopic("payments"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := ok(t, addr, "", "txn", "list")
	r := row(out, "billing-1")
	if len(r) != 4 || r[1] != "1" || r[3] != "Ongoing" {
		t.Fatalf("txn list: row %v\n%s", r, out)
	}
	pid := r[2]
	if out := ok(t, addr, "", "txn", "list", "--state", "completecommit"); row(out, "billing-1") != nil {
		t.Fatalf("txn list --state completecommit:\n%s", out)
	}
	out = ok(t, addr, "", "txn", "describe", "billing-1")
	if r := row(out, "billing-1"); len(r) < 8 || r[2] != "Ongoing" || r[3] != pid || !strings.HasPrefix(r[len(r)-1], "payments") {
		t.Fatalf("txn describe: row %v\n%s", r, out)
	}
	out = ok(t, addr, "", "producer", "describe", "payments")
	if r := row(out, "1", "1", pid); len(r) != 8 || r[7] != "0" {
		t.Fatalf("producer describe: row %v, want partition 1's producer %s with a transaction from offset 0\n%s", r, pid, out)
	}

	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	for {
		out = ok(t, addr, "", "txn", "describe", "billing-1")
		if r := row(out, "billing-1"); len(r) > 2 && r[2] == "CompleteCommit" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the transaction never completed:\n%s", out)
		}
	}
	out = ok(t, addr, "", "producer", "describe", "payments", "1")
	if r := row(out, "1", "1", pid); len(r) != 8 || r[7] != "-" {
		t.Fatalf("producer describe after the commit: row %v\n%s", r, out)
	}
	if got := table(out); !slices.Equal(got[0], []string{"PARTITION", "LEADER", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "LAST-WRITE", "COORDINATOR-EPOCH", "TXN-START-OFFSET"}) {
		t.Fatalf("producer describe header: %v", got[0])
	}
	fails(t, addr, 1, "TRANSACTIONAL_ID_NOT_FOUND", "", "txn", "describe", "nobody")
}
