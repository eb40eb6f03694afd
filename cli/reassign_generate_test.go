package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTopicReassignGenerate: --generate plans every partition onto the
// brokers given, keeping the replica count, with the same number of
// partitions on each, the same plan every time, and the current
// assignment beside it; --plan executes a saved plan.
func TestTopicReassignGenerate(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "orders", "-p", "4")
	ok(t, addr, "", "topic", "create", "audit", "-p", "2")

	var plan generatedPlan
	out := ok(t, addr, "", "topic", "reassign", "--generate", "--broker-ids", "3,1,2", "orders", "audit", "-o", "json")
	decodeJSON(t, out, &plan)
	if again := ok(t, addr, "", "topic", "reassign", "--generate", "--broker-ids", "1,2,3", "orders", "audit", "-o", "json"); again != out {
		t.Fatalf("the same input gave another plan:\n%s\n%s", out, again)
	}
	if plan.Current.Version != 1 || len(plan.Current.Partitions) != 6 || plan.Proposed.Version != 1 || len(plan.Proposed.Partitions) != 6 {
		t.Fatalf("plan: %+v", plan)
	}
	perBroker := map[int32]int{}
	for i, p := range plan.Proposed.Partitions {
		cur := plan.Current.Partitions[i]
		if cur.Topic != p.Topic || cur.Partition != p.Partition || !slices.Equal(cur.Replicas, []int32{1}) || len(p.Replicas) != 1 {
			t.Fatalf("partition %d: current %+v, proposed %+v", i, cur, p)
		}
		if !slices.Contains([]int32{1, 2, 3}, p.Replicas[0]) {
			t.Fatalf("%s-%d proposed on %v, outside --broker-ids", p.Topic, p.Partition, p.Replicas)
		}
		perBroker[p.Replicas[0]]++
	}
	if perBroker[1] != 2 || perBroker[2] != 2 || perBroker[3] != 2 {
		t.Fatalf("partitions per broker: %v, want 2 each", perBroker)
	}
	// Nothing changed.
	if out := ok(t, addr, "", "topic", "reassignments", "orders"); out != "no reassignment in progress\n" {
		t.Fatalf("reassignments after --generate: %q", out)
	}
	fails(t, addr, 2, "--replicas goes with NAME, not with --generate or --plan", "", "topic", "reassign", "--generate", "--broker-ids", "1", "orders", "--replicas", "1")
	fails(t, addr, 2, "--generate needs --broker-ids", "", "topic", "reassign", "--generate", "orders")

	// A plan onto the broker the partitions are on executes.
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"partitions":[{"topic":"audit","partition":1,"replicas":[1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, addr, "", "topic", "reassign", "--plan", file); out != "audit-1: reassigning to [1]\n" {
		t.Fatalf("reassign --plan: %q", out)
	}
	if err := os.WriteFile(file, []byte(`{"partitions":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, addr, 2, "not a plan of kafka-reassign-partitions' JSON", "", "topic", "reassign", "--plan", file)
}
