package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCustomSkein proves the README's way of adding extension kinds: it
// builds testdata/customskein, a main that imports a kind "upper" besides
// calling Main, runs `customskein node`, and, with that same binary as the
// client, finds upper among the node's kinds next to Skein's own, and runs
// an instance of it: what it writes is what was produced, upper-cased.
func TestCustomSkein(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "customskein")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/skeinlog/skein/cli/testdata/customskein").CombinedOutput(); err != nil {
		t.Fatalf("building customskein: %v\n%s", err, out)
	}
	addr, admin := startNodeBinary(t, bin)

	// skein runs a command of the custom binary against the node.
	skein := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = environ("SKEIN_BROKERS="+addr, "SKEIN_ADMIN="+admin)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("customskein %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}

	out := skein("", "extension", "kinds")
	for _, kind := range []string{"upper", "route", "mirror"} {
		if row(out, "KIND", kind+":") == nil {
			t.Errorf("extension kinds lacks %s:\n%s", kind, out)
		}
	}
	if row(out, "target", "yes", "the", "topic") == nil {
		t.Errorf("extension kinds lacks upper's setting target:\n%s", out)
	}

	skein("", "topic", "create", "words", "shouts", "-p", "1")
	skein("hello\nworld\n", "produce", "words")
	skein("", "extension", "create", "shout", "--kind", "upper", "--set", "source.topics=words", "--set", "target=shouts")
	if out := skein("", "consume", "shouts", "-n", "2"); out != "HELLO\nWORLD\n" {
		t.Errorf("shouts holds %q, want HELLO and WORLD", out)
	}
}

// startNodeBinary runs `bin node` on free loopback ports, with args
// besides, until the test ends, and returns its Kafka and admin
// addresses, which it logs as it starts.
func startNodeBinary(t *testing.T, bin string, args ...string) (addr, admin string) {
	t.Helper()
	name := filepath.Base(bin)
	cmd := exec.Command(bin, append([]string{"node", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The log is read to its end, so that the node never blocks writing
	// it; started carries the "node started" line's fields.
	started := make(chan map[string]any, 1)
	logged := make(chan []string, 1)
	go func() {
		var log []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log = append(log, sc.Text())
			var fields map[string]any
			if json.Unmarshal(sc.Bytes(), &fields) == nil && fields["message"] == "node started" {
				started <- fields
			}
		}
		close(started)
		logged <- log
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		var log []string
		select {
		case log = <-logged: // the node closed stderr: it exited
		case <-time.After(deadline):
			cmd.Process.Kill()
			log = <-logged
			t.Errorf("%s node did not stop within %v of SIGTERM", name, deadline)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s node exited with %v; log:\n%s", name, err, strings.Join(log, "\n"))
		}
	})
	select {
	case fields, ok := <-started:
		if !ok {
			t.Fatalf("%s node exited before it started; log:\n%s", name, strings.Join(<-logged, "\n"))
		}
		addr, _ = fields["listen"].(string)
		admin, _ = fields["admin.listen"].(string)
	case <-time.After(deadline):
		t.Fatalf("%s node did not start within %v", name, deadline)
	}
	return addr, admin
}
