package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/extension"
)

// cliKind is a kind of extension of this test binary only (the node's
// library kinds are not needed): its extensions do nothing.
const cliKind = "clitest-noop"

func init() {
	extension.Register(extension.Kind{
		Name: cliKind,
		Doc:  "does nothing (cli tests)",
		Settings: []extension.Setting{
			{Name: "greeting", Default: "hello", Doc: "what it would say"},
			{Name: "target", Required: true, Doc: "where it would say it"},
		},
		New: func(extension.Instance) (extension.Extension, error) { return cliNoop{}, nil },
	})
}

type cliNoop struct{}

func (cliNoop) Process([]extension.Record, extension.Output) error { return nil }

// The extension commands against one node: kinds lists the binary's kinds
// with their settings; create, list, describe and delete an instance; and
// the node's message for each mistake (a bad kind or settings, a name that
// exists, one that does not).
func TestExtensionCommands(t *testing.T) {
	n := startNodeProcess(t)
	addr, admin := n.Addr().String(), "--admin="+n.AdminAddr().String()

	out := ok(t, addr, "", "extension", "kinds", admin)
	for _, want := range [][]string{
		{"KIND", cliKind + ":", "does", "nothing"},
		{"source.topics", "yes"},
		{"source.start", "earliest"},
		{"greeting", "hello", "what"},
		{"target", "yes", "where"},
	} {
		if row(out, want...) == nil {
			t.Errorf("extension kinds lacks a row %v:\n%s", want, out)
		}
	}
	if out := ok(t, addr, "", "extension", "list", admin); !slices.Equal(table(out)[0], []string{"NAME", "KIND", "SETTINGS"}) || len(table(out)) != 1 {
		t.Errorf("extension list of none:\n%s", out)
	}

	create := []string{"extension", "create", "mirror", "--kind", cliKind, "--set", "source.topics=orders", "--set", "target=t", admin}
	if out := ok(t, addr, "", create...); out != "created extension mirror (kind "+cliKind+")\n" {
		t.Errorf("extension create printed %q", out)
	}
	// The first address of a list that answers is the one asked.
	out = ok(t, addr, "", "extension", "list", "--admin=127.0.0.1:1,"+n.AdminAddr().String())
	if r := row(out, "mirror"); !slices.Equal(r, []string{"mirror", cliKind, "source.topics=orders,target=t"}) {
		t.Errorf("extension list:\n%s", out)
	}
	out = ok(t, addr, "", "extension", "describe", "mirror", admin)
	for _, want := range [][]string{
		{"NAME", "mirror"}, {"KIND", cliKind},
		{"source.topics", "orders", "set"}, {"source.start", "earliest", "default"},
		{"greeting", "hello", "default"}, {"target", "t", "set"},
	} {
		if r := row(out, want[0]); !slices.Equal(r, want) {
			t.Errorf("extension describe: row %v, want %v:\n%s", r, want, out)
		}
	}

	fails(t, addr, 1, `skein: extension "mirror" exists`, "", create...)
	fails(t, addr, 1, `skein: no extension kind "nope" in this binary`, "", "extension", "create", "x", "--kind", "nope", "--set", "source.topics=o", admin)
	fails(t, addr, 1, "skein: kind "+cliKind+" needs the setting target", "", "extension", "create", "x", "--kind", cliKind, "--set", "source.topics=o", admin)
	fails(t, addr, 1, "skein: kind "+cliKind+" takes no setting colour", "", "extension", "create", "x", "--kind", cliKind, "--set", "source.topics=o", "--set", "target=t", "--set", "colour=red", admin)
	fails(t, addr, 1, `is illegal`, "", "extension", "create", "a/b", "--kind", cliKind, admin)
	fails(t, addr, 2, "give the kind with --kind", "", "extension", "create", "x", admin)
	fails(t, addr, 2, `--set "target": want key=value`, "", "extension", "create", "x", "--kind", cliKind, "--set", "target", admin)
	fails(t, addr, 1, `skein: no extension "nope"`, "", "extension", "describe", "nope", admin)

	if out := ok(t, addr, "", "extension", "delete", "mirror", admin); out != "deleted extension mirror\n" {
		t.Errorf("extension delete printed %q", out)
	}
	fails(t, addr, 1, `skein: no extension "mirror"`, "", "extension", "delete", "mirror", admin)
	if out := ok(t, addr, "", "extension", "list", admin); strings.Contains(out, "mirror") {
		t.Errorf("extension list after the delete:\n%s", out)
	}
	fails(t, addr, 1, "--admin 127.0.0.1:1", "", "extension", "list", "--admin=127.0.0.1:1")
}

// An instance at work, seen with Skein's own commands: `extension
// describe` shows each source partition's actor (its node, state, position,
// lag, records in and out), and the instance's position is a consumer
// group that `group describe` shows with its lag, as for any consumer.
func TestExtensionAtWork(t *testing.T) {
	n := startNodeProcess(t)
	addr, admin := n.Addr().String(), "--admin="+n.AdminAddr().String()
	ok(t, addr, "", "topic", "create", "orders", "-p", "2")
	ok(t, addr, "", "topic", "create", "copy", "-p", "2")
	ok(t, addr, "a\nb\nc\n", "produce", "orders", "-p", "0")
	ok(t, addr, "d\n", "produce", "orders", "-p", "1")
	ok(t, addr, "", "extension", "create", "r1", "--kind", "route", "--set", "source.topics=orders",
		"--set", "default.topic=copy", "--set", "partitioning=source", admin)

	var out string
	deadline := time.Now().Add(time.Minute)
	for {
		// The group exists once the instance first commits.
		r := skeinCmd(t, addr, "", "group", "describe", "skein-extension-r1")
		out = r.stdout
		if lag := row(out, "TOTAL-LAG"); r.code == 0 && slices.Equal(lag, []string{"TOTAL-LAG", "0"}) && row(out, "orders", "0") != nil && row(out, "orders", "1") != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance's group did not catch up within a minute:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range [][]string{{"orders", "0", "3", "3", "0"}, {"orders", "1", "1", "1", "0"}} {
		if r := row(out, want[:2]...); len(r) < 5 || !slices.Equal(r[:5], want) {
			t.Errorf("group describe: row %v, want %v\n%s", r, want, out)
		}
	}
	out = ok(t, addr, "", "extension", "describe", "r1", admin)
	for _, want := range [][]string{{"orders", "0", "1", "running", "3", "3", "0", "3", "3", "0"}, {"orders", "1", "1", "running", "1", "1", "0", "1", "1", "0"}} {
		if r := row(out, want[:2]...); !slices.Equal(r, want) {
			t.Errorf("extension describe: row %v, want %v\n%s", r, want, out)
		}
	}
	if r := row(out, "TOPIC"); !slices.Equal(r, []string{"TOPIC", "PARTITION", "NODE", "STATE", "POSITION", "END", "LAG", "PROCESSED", "EMITTED", "RESTARTS", "REASON"}) {
		t.Errorf("extension describe: header %v\n%s", r, out)
	}
}
