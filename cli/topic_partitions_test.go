package cli

import (
	"encoding/json"
	"strconv"
	"testing"
)

// decodeJSON parses a command's -o json output into v.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("parsing the json output: %v\n%s", err, out)
	}
}

// TestTopicAddPartitions: --count raises the count (topic list shows it),
// --validate-only changes nothing, a lower count is refused before the
// broker is asked and an equal one is the broker's INVALID_PARTITIONS.
func TestTopicAddPartitions(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	partitions := func() int {
		out := ok(t, addr, "", "topic", "list")
		r := row(out, "orders")
		if len(r) != 3 {
			t.Fatalf("topic list: orders row %v\n%s", r, out)
		}
		n, _ := strconv.Atoi(r[1])
		return n
	}

	var added []addedPartitions
	decodeJSON(t, ok(t, addr, "", "topic", "add-partitions", "orders", "--count", "5", "--validate-only", "-o", "json"), &added)
	if len(added) != 1 || added[0] != (addedPartitions{Topic: "orders", Before: 2, Partitions: 5, ValidateOnly: true}) {
		t.Fatalf("add-partitions --validate-only: %+v", added)
	}
	if n := partitions(); n != 2 {
		t.Fatalf("after --validate-only the topic has %d partitions, want 2", n)
	}
	decodeJSON(t, ok(t, addr, "", "topic", "add-partitions", "orders", "--count", "5", "-o", "json"), &added)
	if len(added) != 1 || added[0] != (addedPartitions{Topic: "orders", Before: 2, Partitions: 5}) {
		t.Fatalf("add-partitions: %+v", added)
	}
	if n := partitions(); n != 5 {
		t.Fatalf("after add-partitions the topic has %d partitions, want 5", n)
	}
	// The new partitions take records.
	ok(t, addr, "x\n", "produce", "orders", "-p", "4")

	fails(t, addr, 1, "it has 5 partitions, more than --count 3: a topic's partitions can only be increased", "", "topic", "add-partitions", "orders", "--count", "3")
	fails(t, addr, 1, "INVALID_PARTITIONS", "", "topic", "add-partitions", "orders", "--count", "5")
	fails(t, addr, 1, "add partitions to nosuch: UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "add-partitions", "nosuch", "--count", "5")
	fails(t, addr, 2, "--count is required", "", "topic", "add-partitions", "orders")
}

// TestTopicTrimPrefix: trimming one partition to an offset moves its low
// watermark there (and topic describe's LOG-START-OFFSET), end empties the
// others, and an offset past the end is OFFSET_OUT_OF_RANGE.
func TestTopicTrimPrefix(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "logs", "-p", "2")
	ok(t, addr, "a\nb\nc\nd\ne\n", "produce", "logs", "-p", "0")
	ok(t, addr, "f\ng\n", "produce", "logs", "-p", "1")

	var trimmed []trimmedPartition
	decodeJSON(t, ok(t, addr, "", "topic", "trim-prefix", "logs", "--offset", "3", "-p", "0", "-o", "json"), &trimmed)
	if len(trimmed) != 1 || trimmed[0] != (trimmedPartition{Topic: "logs", Partition: 0, LowWatermark: 3}) {
		t.Fatalf("trim-prefix --offset 3 -p 0: %+v", trimmed)
	}
	out := ok(t, addr, "", "topic", "describe", "logs")
	if r := row(out, "0"); len(r) < 8 || r[6] != "3" || r[7] != "5" {
		t.Fatalf("describe after the trim: partition 0 %v, want log start offset 3 and high watermark 5\n%s", r, out)
	}
	if got := ok(t, addr, "", "consume", "logs", "-p", "0", "-e"); got != "d\ne\n" {
		t.Fatalf("consume after the trim: %q, want d and e", got)
	}

	decodeJSON(t, ok(t, addr, "", "topic", "trim-prefix", "logs", "--offset", "end", "-o", "json"), &trimmed)
	want := []trimmedPartition{{Topic: "logs", Partition: 0, LowWatermark: 5}, {Topic: "logs", Partition: 1, LowWatermark: 2}}
	if len(trimmed) != 2 || trimmed[0] != want[0] || trimmed[1] != want[1] {
		t.Fatalf("trim-prefix --offset end: %+v, want %+v", trimmed, want)
	}
	out = ok(t, addr, "", "topic", "trim-prefix", "logs", "--offset", "1", "-p", "1")
	if r := row(out, "logs", "1"); len(r) != 3 || r[2] != "2" {
		t.Fatalf("trim-prefix below the log start: row %v, want the low watermark 2 unchanged\n%s", r, out)
	}
	fails(t, addr, 1, "logs-1: OFFSET_OUT_OF_RANGE", "", "topic", "trim-prefix", "logs", "--offset", "9", "-p", "1")
	fails(t, addr, 1, "no partition 7", "", "topic", "trim-prefix", "logs", "--offset", "1", "-p", "7")
	fails(t, addr, 2, "--offset is required", "", "topic", "trim-prefix", "logs")
	fails(t, addr, 2, `--offset "x"`, "", "topic", "trim-prefix", "logs", "--offset", "x")
}
