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
// developer's settings do not leak into the node under test, and with a
// profiles file that does not exist (SKEIN_CONFIG_FILE), so that no test
// reads the developer's ~/.config/skein/config.yaml; extra may name
// another.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			env = append(env, kv)
		}
	}
	env = append(env, envConfigFile+"="+filepath.Join(filepath.Dir(skein), "no-config.yaml"))
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

// TestUsageErrors: every kind of mistake in the command line exits 2 with
// one line on stderr saying what was wrong, with a did-you-mean for a
// mistyped command or config key; a failure of the cluster exits 1.
func TestUsageErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(file, []byte("log.retention.hour: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"topic", "creat", "foo"}, 2, `skein: unknown command "creat" for "skein topic"; did you mean "create"?`},
		{[]string{"tpoic", "list"}, 2, `skein: unknown command "tpoic" for "skein"; did you mean "topic"?`},
		{[]string{"group", "lst"}, 2, `skein: unknown command "lst" for "skein group"; did you mean "list"?`},
		{[]string{"chaos", "zap"}, 2, `skein: unknown command "zap" for "skein chaos"; the commands are `},
		{[]string{"topic", "list", "--no-such-flag"}, 2, "skein: unknown flag: --no-such-flag (see skein topic list --help)"},
		{[]string{"consume", "t", "-p", "x"}, 2, `skein: invalid argument "x" for "-p, --partition" flag`},
		{[]string{"produce", "--timeout"}, 2, "skein: flag needs an argument: --timeout"},
		{[]string{"topic", "describe"}, 2, "skein: topic describe: requires at least 1 arg(s), only received 0 (usage: skein topic describe NAME... [flags])"},
		{[]string{"produce", "a", "b"}, 2, "skein: produce: accepts 1 arg(s), received 2"},
		{[]string{"cluster", "info", "extra"}, 2, `skein: cluster info: unknown command "extra" for "skein cluster info"`},
		{[]string{"produce", "t", "--acks", "2"}, 2, `skein: --acks "2": want 0, 1 or all`},
		{[]string{"topic", "reassign", "t"}, 2, "skein: name the partitions with -p"},
		{[]string{"chaos", "run", "nope"}, 2, `skein: no scenario "nope"; there are: `},
		{[]string{"node", "--set", "log.segment.size=10"}, 2, "skein: configs: log.segment.size = 10: unknown key; did you mean log.segment.bytes? (in --set)"},
		{[]string{"node", "--config", file}, 2, "skein: configs: log.retention.hour = 1: unknown key; did you mean log.retention.hours? (in " + file + ")"},
		// Not the command line's fault: the cluster's.
		{[]string{"topic", "list", "--brokers", "127.0.0.1:1"}, 1, "skein: no broker answered at 127.0.0.1:1"},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, environ(), strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("skein %s: exit %d, stderr %q\nwant exit %d and one line starting %q", strings.Join(tc.args, " "), code, stderr.String(), tc.code, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("skein %s printed on stdout: %q", strings.Join(tc.args, " "), stdout.String())
		}
	}

	// A family of commands alone prints its help, and --help the exit
	// codes.
	for _, args := range [][]string{{"topic"}, {"--help"}} {
		var stdout, stderr strings.Builder
		if code := run(args, environ(), strings.NewReader(""), &stdout, &stderr); code != 0 || stderr.Len() != 0 || !strings.Contains(stdout.String(), "Usage:") {
			t.Errorf("skein %s: exit %d, stdout %q, stderr %q; want its help and exit 0", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
	var help strings.Builder
	run([]string{"--help"}, environ(), strings.NewReader(""), &help, &help)
	if !strings.Contains(help.String(), "Exit codes: 0 when") || !strings.Contains(help.String(), "2 for a mistake in the\ncommand line") {
		t.Errorf("skein --help does not document the exit codes:\n%s", help.String())
	}
}
