package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/actors"
)

// TestTopicCreateReportsPartitionsStillOpening: a topic whose partitions
// open slower than the command's --timeout allows is reported created,
// with how many are still opening, and the command succeeds; it used to
// print "context deadline exceeded" for a topic it had created (the
// broker waited kadm's 15 s, beyond the CLI's 10 s).
func TestTopicCreateReportsPartitionsStillOpening(t *testing.T) {
	n := startNodeProcess(t)
	addr := n.Addr().String()
	// The partitions supervisor takes 3 s over each of the next two
	// partitions it is told to host (slow's).
	n.Faults().Add(actors.Fault{Actor: "*/partitions", Message: "Host", Kind: actors.FaultDelay, Delay: 3 * time.Second, Count: 2})
	out := ok(t, addr, "", "--timeout", "2s", "topic", "create", "slow", "-p", "2")
	if want := "created slow (2 partitions, replication factor 1); still opening 2 of its 2 partitions on broker 1\n"; out != want {
		t.Fatalf("topic create printed %q, want %q", out, want)
	}
	out = ok(t, addr, "", "topic", "create", "quick", "-p", "2")
	if want := "created quick (2 partitions, replication factor 1)\n"; out != want {
		t.Fatalf("topic create printed %q, want %q", out, want)
	}
	if out := ok(t, addr, "", "topic", "delete", "slow"); !strings.HasPrefix(out, "deleted slow") {
		t.Fatalf("topic delete printed %q", out)
	}
}
