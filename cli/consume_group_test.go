package cli

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// committedOffsets are a group's committed offsets of topic by partition,
// as group seek's dry run shows them (-1 for none).
func committedOffsets(t *testing.T, addr, group, topic string) map[int32]int64 {
	t.Helper()
	var plan seekPlan
	decodeJSON(t, ok(t, addr, "", "group", "seek", group, "--to", "end", "--topics", topic, "-o", "json"), &plan)
	out := map[int32]int64{}
	for _, p := range plan.Partitions {
		out[p.Partition] = p.CurrentOffset
	}
	return out
}

// TestConsumeGroup: consume -g prints the records its group has not
// committed and commits what it printed: a second run prints only what
// came since, and -n commits no record it did not print.
func TestConsumeGroup(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	ok(t, addr, "a\nb\nc\n", "produce", "orders", "-p", "0")
	ok(t, addr, "d\ne\n", "produce", "orders", "-p", "1")

	out := ok(t, addr, "", "consume", "orders", "-g", "billing", "-e")
	if got := sorted(lines(out)); !slices.Equal(got, []string{"a\n", "b\n", "c\n", "d\n", "e\n"}) {
		t.Fatalf("consume -g billing -e: %q", out)
	}
	if got := committedOffsets(t, addr, "billing", "orders"); got[0] != 3 || got[1] != 2 {
		t.Fatalf("billing's committed offsets after consuming: %v, want 3 and 2", got)
	}

	ok(t, addr, "f\ng\n", "produce", "orders", "-p", "0")
	if out := ok(t, addr, "", "consume", "orders", "-g", "billing", "-n", "1"); out != "f\n" {
		t.Fatalf("consume -g billing -n 1: %q, want f", out)
	}
	if got := committedOffsets(t, addr, "billing", "orders"); got[0] != 4 || got[1] != 2 {
		t.Fatalf("billing's committed offsets after -n 1: %v, want 4 and 2 (g not printed, so not committed)", got)
	}
	if out := ok(t, addr, "", "consume", "orders", "-g", "billing", "-e"); out != "g\n" {
		t.Fatalf("consume -g billing -e again: %q, want only g", out)
	}
	// --from is where a group with no commits starts.
	if out := ok(t, addr, "", "consume", "orders", "-g", "audit", "--from", "end", "-e"); out != "" {
		t.Fatalf("consume -g audit --from end -e: %q, want nothing", out)
	}
	if got := committedOffsets(t, addr, "audit", "orders"); got[0] != -1 {
		t.Fatalf("audit's committed offsets: %v, want none (nothing printed)", got)
	}
	fails(t, addr, 2, "-p cannot be given with -g", "", "consume", "orders", "-g", "billing", "-p", "0")
}

// TestConsumeReadCommitted: --isolation read_committed hides an aborted
// transaction's records and stops -e before an open transaction, where
// read_uncommitted prints them all.
func TestConsumeReadCommitted(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "payments", "-p", "1")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("pay-1"), kgo.DefaultProduceTopic("payments"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	txn := func(value string, end *kgo.TransactionEndTry) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if end != nil {
			if err := p.EndTransaction(ctx, *end); err != nil {
				t.Fatal(err)
			}
		}
	}
	abort, commit := kgo.TryAbort, kgo.TryCommit
	txn("aborted", &abort)
	txn("committed", &commit)
	txn("open", nil) // left open

	if out := ok(t, addr, "", "consume", "payments", "-e", "--isolation", "read_committed"); out != "committed\n" {
		t.Fatalf("read_committed: %q, want only the committed record", out)
	}
	if out := ok(t, addr, "", "consume", "payments", "-e"); out != "aborted\ncommitted\nopen\n" {
		t.Fatalf("read_uncommitted: %q, want every record", out)
	}
	if out := ok(t, addr, "", "consume", "payments", "-e", "-g", "rc", "--isolation", "read_committed"); out != "committed\n" {
		t.Fatalf("read_committed in a group: %q", out)
	}
	fails(t, addr, 2, `--isolation "dirty"`, "", "consume", "payments", "--isolation", "dirty")
}
