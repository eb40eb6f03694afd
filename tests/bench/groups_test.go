package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestGroupsSmoke runs the group coordinator failover mode on 50 groups,
// so that `make test` keeps it working: every group's offset is committed
// and read back after its coordinator's panic and after the node's
// restart, and ListGroups lists every group. Nothing is asserted on time.
func TestGroupsSmoke(t *testing.T) {
	skein, _ := binaries(t)
	c := groupsConfig{count: 50, commits: 2, restarts: 2, list: true, names: []string{"this"}, bins: map[string]string{"this": skein},
		host: "127.0.0.1", work: t.TempDir()}
	var out bytes.Buffer
	if err := runGroups(&out, c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, w := range []string{"50 groups, each with 2 offset commits", "| this |", "(50 groups) |"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}
