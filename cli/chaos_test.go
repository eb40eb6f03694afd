package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/chaos"
	"github.com/skeinlog/skein/configs"
)

// waitOutput runs a command until done accepts its output, within
// deadline.
func waitOutput(t *testing.T, addr, what string, done func(out string) bool, args ...string) string {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		out := ok(t, addr, "", args...)
		if done(out) {
			return out
		}
		if time.Now().After(end) {
			t.Fatalf("skein %s: never %s; last:\n%s", strings.Join(args, " "), what, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The chaos commands against one node: list shows its actors and faults,
// each kind of fault is set and shows, heal removes them all, and a node
// that did not opt in refuses.
func TestChaosCommands(t *testing.T) {
	n := startNodeProcess(t, func(c *configs.Node) { c.ChaosEnable = true })
	addr, admin := n.Addr().String(), "--admin="+n.AdminAddr().String()
	ok(t, addr, "", "topic", "create", "t")

	out := ok(t, addr, "", "chaos", "list", admin)
	for _, want := range []string{"NODE 1", "faults enabled", "node/1/partitions/t-0", "node/1/controller", "no faults"} {
		if !strings.Contains(out, want) {
			t.Errorf("chaos list lacks %q:\n%s", want, out)
		}
	}

	// A panic restarts the partition actor; list counts it.
	if out := ok(t, addr, "", "chaos", "panic", "node/1/partitions/t-0", admin); !strings.Contains(out, "node 1: fault 1: panic node/1/partitions/t-0") {
		t.Fatalf("chaos panic printed:\n%s", out)
	}
	ok(t, addr, "v\n", "produce", "t")
	out = waitOutput(t, addr, "one restart of node/1/partitions/t-0", func(out string) bool {
		r := row(out, "node/1/partitions/t-0")
		return len(r) > 1 && r[len(r)-1] == "1" // the restarts column
	}, "chaos", "list", admin)
	if !strings.Contains(out, "no faults") {
		t.Fatalf("the panic fault outlived its one message:\n%s", out)
	}

	ok(t, addr, "", "chaos", "delay", "node/*/partitions/*", "--delay", "1ms", "--for", "1h", admin)
	ok(t, addr, "", "chaos", "drop", "node/1/groups/*", "--rate", "20%", "--message", "Heartbeat", admin)
	ok(t, addr, "", "chaos", "clock", "1", "--offset", "90s", admin)
	ok(t, addr, "", "chaos", "disk", "1", "--fail-syncs", admin)
	out = ok(t, addr, "", "chaos", "list", admin)
	for _, want := range []string{"node/*/partitions/*  delay delay 1ms", "node/1/groups/*", "rate 0.2", "offset 1m30s", "fail syncs"} {
		if !strings.Contains(out, want) {
			t.Errorf("chaos list lacks %q:\n%s", want, out)
		}
	}
	// -o json: the node, its actors and each fault.
	nodes := jsonOf[[]chaosNodeView](t, addr, "chaos", "list", admin)
	if len(nodes) != 1 || nodes[0].Node != 1 || !nodes[0].ChaosEnable || nodes[0].Admin != n.AdminAddr().String() || len(nodes[0].Actors) == 0 ||
		len(nodes[0].Faults) != 2 || nodes[0].Links == nil || len(nodes[0].Links) != 0 || nodes[0].Error != "" {
		t.Fatalf("chaos list -o json: %s", jsonText(nodes))
	}
	v := nodes[0]
	if f := v.Faults[0]; f.Actor != "node/*/partitions/*" || f.Kind != "delay" || f.Delay != "1ms" || f.Expires == "" {
		t.Errorf("chaos list -o json: the delay fault %+v", f)
	}
	if f := v.Faults[1]; f.Actor != "node/1/groups/*" || f.Kind != "drop" || f.Rate != 0.2 || f.Message != "Heartbeat" {
		t.Errorf("chaos list -o json: the drop fault %+v", f)
	}
	if v.Clock == nil || v.Clock.Offset != "1m30s" || v.Disk == nil || v.Disk.Fail != "syncs" {
		t.Errorf("chaos list -o json: clock %+v, disk %+v", v.Clock, v.Disk)
	}
	var restarts int64 = -1
	var find func(as []*chaos.Actor)
	find = func(as []*chaos.Actor) {
		for _, a := range as {
			if a.Name == "node/1/partitions/t-0" {
				restarts = a.Restarts
			}
			find(a.Children)
		}
	}
	if find(v.Actors); restarts != 1 {
		t.Errorf("chaos list -o json: node/1/partitions/t-0 restarted %d times, want 1", restarts)
	}
	events := yamlOf[[]chaosEvent](t, addr, "chaos", "events", admin)
	if !slices.ContainsFunc(events, func(e chaosEvent) bool {
		return e.Node == 1 && e.Actor == "node/1/partitions/t-0" && e.Type == "restarted" && !e.Time.IsZero()
	}) {
		t.Errorf("chaos events -o yaml: no restart of node/1/partitions/t-0 in %s", jsonText(events))
	}

	if out := ok(t, addr, "", "chaos", "heal", admin); !strings.Contains(out, "node 1: 4 faults removed") {
		t.Fatalf("chaos heal printed:\n%s", out)
	}
	if out := ok(t, addr, "", "chaos", "list", admin); !strings.Contains(out, "no faults") {
		t.Fatalf("faults left after heal:\n%s", out)
	}

	fails(t, addr, 1, "no node 2 among the admin addresses", "", "chaos", "cut", "1", "2", admin)
	fails(t, addr, 2, "give one of --fail-writes, --fail-syncs and --full", "", "chaos", "disk", "1", admin)
	fails(t, addr, 2, "not a fraction", "", "chaos", "lossy", "1", "2", "--drop", "120%", admin)

	closed := startNodeProcess(t)
	fails(t, addr, 1, "chaos.enable=true", "", "chaos", "panic", "node/1/controller", "--admin="+closed.AdminAddr().String())
}
