package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skein is the binary under test, built once by TestMain.
var skein string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skein-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skein = filepath.Join(dir, "skein")
	build := exec.Command("go", "build", "-o", skein, "github.com/skeinlog/skein/cmd/skein")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building skein:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// environ is the test's environment without SKEIN_* variables, so that the
// developer's settings do not leak into the node under test.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// deadline guards each wait on the child, so that a broken binary fails
// the test instead of hanging it. It is a timeout, not a synchronisation:
// every wait ends on an event (a log line, EOF, exit).
const deadline = 2 * time.Minute

// TestNodeStopsOnSignal runs `skein node` with no flags but --data-dir,
// waits for its effective-configuration line, signals it, and checks a
// graceful stop: exit code 0 and a "node stopped" line.
func TestNodeStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			cmd := exec.Command(skein, "node", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
			cmd.Env = environ()
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill() // if the test fails before Wait

			// stderr is a pipe, so log.format auto must give JSON lines.
			lines := make(chan map[string]any)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					var fields map[string]any
					if err := json.Unmarshal(sc.Bytes(), &fields); err != nil {
						fields = map[string]any{"not JSON": sc.Text()}
					}
					lines <- fields
				}
			}()
			var log []map[string]any
			next := func() (map[string]any, bool) {
				select {
				case l, ok := <-lines:
					if ok {
						log = append(log, l)
					}
					return l, ok
				case <-time.After(deadline):
					t.Fatalf("no log line within %v; log so far: %v", deadline, log)
					return nil, false
				}
			}

			for {
				l, ok := next()
				if !ok {
					t.Fatalf("stderr closed before the effective configuration was logged: %v", log)
				}
				if l["not JSON"] != nil {
					t.Fatalf("log line is not JSON: %v", l["not JSON"])
				}
				if l["message"] == "effective configuration" {
					if l["level"] != "info" || l["data.dir"] != dataDir || l["log.segment.bytes"] != "1073741824" || l["durability"] != "fsync" {
						t.Errorf("effective configuration line: %v", l)
					}
					break
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for {
				if _, ok := next(); !ok {
					break
				}
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err = <-waited:
			case <-time.After(deadline):
				t.Fatalf("skein node did not exit within %v of %v", deadline, sig)
			}
			if err != nil {
				t.Fatalf("skein node exited with %v after %v; log: %v", err, sig, log)
			}
			var started, stopped bool
			for _, l := range log {
				started = started || l["message"] == "node started"
				stopped = stopped || l["message"] == "node stopped"
			}
			if !started || !stopped {
				t.Errorf("started %v, stopped %v; log: %v", started, stopped, log)
			}
			if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
				t.Errorf("data.dir was not created: %v", err)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q, want nothing", stdout.String())
			}
		})
	}
}

// TestNodeBadConfig: a bad value exits non-zero with a message naming the
// key, whichever source gave it, before anything starts.
func TestNodeBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"bad flag value", nil, []string{"--node-id", "one"}, "skein: configs: node.id = one: not an integer"},
		{"invalid flag value", nil, []string{"--log-level", "loud"}, "skein: configs: log.level = loud: must be one of trace, debug, info, warn, error"},
		{"bad --set value", nil, []string{"--set", "log.segment.bytes=10"}, "skein: configs: log.segment.bytes = 10: must be at least 14"},
		{"unknown --set key", nil, []string{"--set", "log.segment.size=10"}, "skein: configs: log.segment.size = 10: unknown key"},
		{"bad env value", []string{"SKEIN_DURABILITY=never"}, nil, "skein: configs: durability = never: must be one of fsync, replicated"},
		{"unknown flag", nil, []string{"--no-such-flag"}, "skein: unknown flag: --no-such-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			cmd := exec.Command(skein, append([]string{"node", "--data-dir", dataDir}, tc.args...)...)
			cmd.Env = environ(tc.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero exit code; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output:\n%s\nwant it to contain %q", out, tc.want)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("data.dir exists after a configuration error: %v", err)
			}
		})
	}
}

// TestPrintConfig: --print-config prints YAML that, given back as --config,
// prints the same.
func TestPrintConfig(t *testing.T) {
	first := exec.Command(skein, "node", "--print-config", "--data-dir", "/var/lib/skein", "--set", "log.retention.hours=1")
	first.Env = environ("SKEIN_NUM_PARTITIONS=3")
	printed, err := first.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ndata.dir: /var/lib/skein\n", "\nnum.partitions: 3\n", "\nlog.retention.ms: 3600000\n"} {
		if !strings.Contains(string(printed), want) {
			t.Errorf("printed config lacks %q:\n%s", want, printed)
		}
	}
	file := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(file, printed, 0o644); err != nil {
		t.Fatal(err)
	}
	second := exec.Command(skein, "node", "--print-config", "--config", file)
	second.Env = environ()
	again, err := second.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(printed) {
		t.Errorf("printed from the printed file:\n%s\nwant\n%s", again, printed)
	}
}
