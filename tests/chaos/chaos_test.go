// Package chaos runs every `skein chaos run` scenario briefly against three
// `skein node` processes (four for reassign), as a user would from the command line: each run
// must end with the history checker finding nothing lost, duplicated,
// reordered or invented, and every partition led after the heal.
package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/chaos"
)

// skeinBin is the skein binary TestMain built. It is built without the
// race detector whatever the tests are: these runs check what the cluster
// does to the data (tests/cluster runs race-built nodes), and a race-built
// cluster of three on two cores would make the short runs mostly wait.
var skeinBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skein-chaos-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skeinBin = filepath.Join(dir, "skein")
	if out, err := exec.Command("go", "build", "-o", skeinBin, "github.com/skeinlog/skein/cmd/skein").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hostSets are the addresses of the clusters that run at once, one set
// each (tests/cluster uses others); a subtest takes one for its run.
var hostSets = func() chan string {
	ch := make(chan string, 2)
	// Four each: reassign moves partitions among four nodes.
	ch <- "127.0.0.231,127.0.0.232,127.0.0.233,127.0.0.234"
	ch <- "127.0.0.241,127.0.0.242,127.0.0.243,127.0.0.244"
	return ch
}()

// tuned are the timeouts of the short runs: failures are detected in
// seconds, so that each run sees several faults and their recoveries.
var tuned = []string{
	"--set", "broker.session.timeout.ms=3000", "--set", "broker.heartbeat.interval.ms=500",
	"--set", "replica.lag.time.max.ms=5000",
}

var verdictOK = regexp.MustCompile(`(?m)^verdict: ok: (\d+) acknowledged`)

func TestScenarios(t *testing.T) {
	for i, name := range chaos.ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hosts := <-hostSets
			defer func() { hostSets <- hosts }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			dir := t.TempDir()
			args := append([]string{"chaos", "run", name, "--duration", "12s", "--seed", fmt.Sprint(i + 1),
				"--hosts", hosts, "--dir", dir, "--rate", "500"}, tuned...)
			cmd := exec.CommandContext(ctx, skeinBin, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			m := verdictOK.FindStringSubmatch(out.String())
			if err != nil || m == nil || m[1] == "0" {
				t.Errorf("skein %s: %v\n%s", strings.Join(args, " "), err, out.String())
				for n := 1; n <= 3; n++ {
					t.Logf("node %d, the end of its log:\n%s", n, tail(filepath.Join(dir, fmt.Sprintf("node%d.log", n)), 30))
				}
				return
			}
			t.Logf("%s", m[0])
		})
	}
}

// tail returns the last n lines of the file at path, each cut to a
// readable length.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + " …"
		}
	}
	return strings.Join(lines, "\n")
}
