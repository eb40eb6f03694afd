package cli

import (
	"testing"
)

// TestClusterLogDirs: after producing, log-dirs --topic lists the topic's
// partitions on the node's one log dir, the one written with a size above
// zero, and the filesystem's total and usable bytes.
func TestClusterLogDirs(t *testing.T) {
	addr := startNode(t)
	ok(t, addr, "", "topic", "create", "sized", "-p", "2")
	ok(t, addr, "", "topic", "create", "other", "-p", "1")
	ok(t, addr, "a\nb\nc\n", "produce", "sized", "-p", "1")

	var dirs []logDir
	decodeJSON(t, ok(t, addr, "", "cluster", "log-dirs", "--topic", "sized", "-o", "json"), &dirs)
	if len(dirs) != 1 || dirs[0].Broker != 1 || dirs[0].Dir == "" || dirs[0].Error != "" {
		t.Fatalf("log-dirs: %+v, want broker 1's one log dir", dirs)
	}
	d := dirs[0]
	if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("log dir space: total %d, usable %d", d.TotalBytes, d.UsableBytes)
	}
	if len(d.Partitions) != 2 || d.Partitions[0].Topic != "sized" || d.Partitions[0].Partition != 0 || d.Partitions[1].Partition != 1 {
		t.Fatalf("log-dirs --topic sized: partitions %+v", d.Partitions)
	}
	if p := d.Partitions[1]; p.Size <= 0 || p.OffsetLag != 0 || d.Size != d.Partitions[0].Size+p.Size {
		t.Fatalf("partition 1 after producing: %+v (dir size %d)", p, d.Size)
	}

	decodeJSON(t, ok(t, addr, "", "cluster", "log-dirs", "--broker", "1", "-o", "json"), &dirs)
	topics := map[string]int{}
	for _, p := range dirs[0].Partitions {
		topics[p.Topic]++
	}
	if topics["sized"] != 2 || topics["other"] != 1 {
		t.Fatalf("log-dirs --broker 1: partitions by topic %v", topics)
	}
	out := ok(t, addr, "", "cluster", "log-dirs", "--topic", "sized")
	if r := row(out, "1", "sized", "1"); len(r) != 6 || r[3] == "0" || r[5] != "no" {
		t.Fatalf("log-dirs text: partition row %v\n%s", r, out)
	}
	fails(t, addr, 1, "topic nosuch: UNKNOWN_TOPIC_OR_PARTITION", "", "cluster", "log-dirs", "--topic", "nosuch")
}
