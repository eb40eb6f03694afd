package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/tests/kafkaref"
	"github.com/skeinlog/skein/tests/procstat"
)

// target is one broker under test: how to start it as a child process.
type target struct {
	name string // column heading and file name stem
	// start runs the broker with its data under dir and returns it once it
	// listens.
	start func(dir string, profile string) (*broker, error)
}

// broker is a running broker child process.
type broker struct {
	cmd  *exec.Cmd
	addr string // the Kafka listener the clients use, host:port
	// sec is how the clients reach addr: nil for PLAINTEXT, else over
	// SASL_SSL with the run's CA and user.
	sec     *saslSSL
	line    string    // the log line that gave addr
	started time.Time // just before the process started
	log     *os.File  // the child's output, kept for a failed run's post-mortem
	done    chan struct{}
	err     error // the exit status, set before done closes

	// kafka is set for Apache Kafka, whose process kafkaref runs: it waits
	// for the JVM and stops it (log and done are nil then).
	kafka *kafkaref.Kafka
}

// clientOpts are the kgo options that reach the broker (its address, and
// over SASL_SSL its TLS and SASL), then opts.
func (b *broker) clientOpts(opts ...kgo.Opt) []kgo.Opt {
	return append(b.sec.clientOpts(b.addr), opts...)
}

// logName is the path of the file that holds the broker's output.
func (b *broker) logName() string {
	if b.kafka != nil {
		return b.kafka.Log()
	}
	return b.log.Name()
}

// startTimeout bounds how long a broker may take to announce its address.
const startTimeout = 30 * time.Second

// skeinTarget runs `skein node` from the binary at bin with the given
// durability, on loopback ports chosen by the kernel. With nofile above 0 the
// node runs under that open-file limit, soft and hard (see withNofile).
func skeinTarget(bin, durability string, nofile int) target {
	return skeinTargetOver(nil, bin, durability, nofile)
}

// skeinTargetOver is skeinTarget with the clients over sec. For SASL_SSL
// the node gets a Kafka-style properties file (--config) that declares two
// listeners on kernel-chosen loopback ports: PLAINTEXT, the inter-broker
// one, and SASL_SSL with sec's settings, which the clients use; its
// address comes from the listeners of the `node started` line.
func skeinTargetOver(sec *saslSSL, bin, durability string, nofile int) target {
	return target{
		name: "skein-" + durability,
		start: func(dir, profile string) (*broker, error) {
			args := []string{bin, "node",
				"--data-dir", filepath.Join(dir, "data"),
				"--admin-listen", "127.0.0.1:0",
				"--log-format", "json",
				"--durability", durability,
			}
			addr := skeinAddr
			if sec == nil {
				args = append(args, "--listen", "127.0.0.1:0")
			} else {
				props := sec.brokerProperties()
				props["listeners"] = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
				props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL"
				props["inter.broker.listener.name"] = "PLAINTEXT"
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, err
				}
				config := filepath.Join(dir, "skein.properties")
				if err := writeProperties(config, props); err != nil {
					return nil, err
				}
				args = append(args, "--config", config)
				addr = skeinListener("SASL_SSL")
			}
			if profile != "" {
				args = append(args, "--cpuprofile", profile)
			}
			args = withNofile(nofile, args)
			b, err := startBroker(exec.Command(args[0], args[1:]...), dir, addr)
			if err != nil {
				return nil, err
			}
			b.sec = sec
			return b, nil
		},
	}
}

// withNofile prefixes the command line args with util-linux's prlimit, which
// sets RLIMIT_NOFILE to nofile (soft and hard) and then execs the command, so
// that the broker starts under the limit and keeps the child's pid. Without
// prlimit on PATH it warns once and leaves the limit as it is; nofile 0
// leaves it too.
func withNofile(nofile int, args []string) []string {
	if nofile <= 0 {
		return args
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		prlimitWarning.Do(func() {
			fmt.Fprintf(os.Stderr, "bench: WARNING: prlimit not found (%v); the broker runs without the -nofile limit of %d\n", err, nofile)
		})
		return args
	}
	return append([]string{prlimit, fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--"}, args...)
}

var prlimitWarning sync.Once

// skeinAdmin reads the admin listener's address from the "node started"
// line.
func skeinAdmin(line string) string {
	var l struct {
		Admin string `json:"admin.listen"`
	}
	json.Unmarshal([]byte(line), &l)
	return l.Admin
}

// skeinAddr reads the Kafka address from the JSON "node started" line.
func skeinAddr(line string) (string, bool) {
	var l struct {
		Message string `json:"message"`
		Listen  string `json:"listen"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.Message != "node started" {
		return "", false
	}
	return l.Listen, l.Listen != ""
}

// kfakeTarget runs the kfake command of tests/bench/kfake from the binary at
// bin. kfake has no durability setting and no profiling flag: it keeps
// everything in memory.
func kfakeTarget(bin string) target {
	return target{
		name: "kfake",
		start: func(dir, _ string) (*broker, error) {
			return startBroker(exec.Command(bin), dir, kfakeAddr)
		},
	}
}

// kafkaTarget runs Apache Kafka, one combined KRaft node with a 1 GiB heap
// (tests/kafkaref), from the jars on classpath. Its durability is Kafka's
// default, as skein-replicated's: appends reach the page cache and fsync is
// left to the operating system (no flush.messages).
func kafkaTarget(classpath string) target {
	return kafkaTargetOver(nil, classpath)
}

// kafkaTargetOver is kafkaTarget with the clients over sec: for SASL_SSL a
// second listener, SASL_SSL with sec's settings (the same keys and files
// as Skein's), beside PLAINTEXT, which stays the inter-broker listener.
func kafkaTargetOver(sec *saslSSL, classpath string) target {
	return target{
		name: "kafka",
		start: func(dir, _ string) (*broker, error) {
			started := time.Now()
			if sec == nil {
				k, err := kafkaref.Start(dir, classpath, nil)
				if err != nil {
					return nil, err
				}
				return &broker{cmd: k.Cmd, addr: k.Addr(), started: started, kafka: k}, nil
			}
			k, err := kafkaref.StartListeners(dir, classpath, map[string]string{"SASL_SSL": "SASL_SSL"}, sec.brokerProperties())
			if err != nil {
				return nil, err
			}
			return &broker{cmd: k.Cmd, addr: k.Listener("SASL_SSL"), sec: sec, started: started, kafka: k}, nil
		},
	}
}

func kfakeAddr(line string) (string, bool) {
	addr, ok := strings.CutPrefix(line, "listening on ")
	return addr, ok
}

// startBroker starts cmd with stdout and stderr appended to dir/broker.log
// (a broker restarted on the same directory adds to it) and waits for the
// line from which addr parses the Kafka address.
func startBroker(cmd *exec.Cmd, dir string, addr func(string) (string, bool)) (*broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	b := &broker{cmd: cmd, log: logf, done: make(chan struct{}), started: time.Now()}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		b.err = cmd.Wait()
		pw.CloseWithError(errors.New("broker exited"))
		close(b.done)
	}()

	// One goroutine copies every line to the log for the child's whole life
	// (a full pipe would block it) and hands the address over once.
	found := make(chan [2]string, 1)
	go func() {
		send := found
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if send != nil {
				if a, ok := addr(line); ok {
					send <- [2]string{a, line}
					send = nil
				}
			}
		}
		io.Copy(logf, pr) // a line over 1 MiB: keep draining
	}()
	select {
	case f := <-found:
		b.addr, b.line = f[0], f[1]
		return b, nil
	case <-b.done:
		logf.Close()
		return nil, fmt.Errorf("%s exited before listening (%v); see %s", cmd.Path, b.err, logf.Name())
	case <-time.After(startTimeout):
		b.kill()
		return nil, fmt.Errorf("%s did not announce its address within %v; see %s", cmd.Path, startTimeout, logf.Name())
	}
}

// stop asks the broker to stop with SIGTERM and waits for it to exit, killing
// it after a grace period (Skein's own bound on a graceful stop is 30 s).
func (b *broker) stop() error {
	if b.kafka != nil {
		return b.kafka.Stop()
	}
	defer b.log.Close()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-b.done:
		return b.err
	case <-time.After(40 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
		return fmt.Errorf("%s did not stop within 40s after SIGTERM; killed", b.cmd.Path)
	}
}

func (b *broker) kill() {
	b.cmd.Process.Kill()
	<-b.done
	b.log.Close()
}

// cpu returns the CPU time the broker process has used so far, user plus
// system, over all its threads.
func (b *broker) cpu() (time.Duration, error) {
	return procstat.CPU(b.cmd.Process.Pid)
}

// procRSS reads the resident set size of pid, in bytes, from the VmRSS line
// of /proc/<pid>/status.
func procRSS(pid int) (int64, error) {
	v, err := procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(v) // "19248 kB"
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	return kb << 10, err
}

// procNofile reads pid's open-file limit, "soft/hard", from the "Max open
// files" line of /proc/<pid>/limits.
func procNofile(pid int) (string, error) {
	v, err := procField(fmt.Sprintf("/proc/%d/limits", pid), "Max open files")
	if err != nil {
		return "", err
	}
	f := strings.Fields(v) // "20000 20000 files"
	if len(f) < 2 {
		return "", fmt.Errorf("/proc/%d/limits: Max open files %q", pid, v)
	}
	return f[0] + "/" + f[1], nil
}

// procField returns the rest of the first line of file that starts with
// prefix.
func procField(file, prefix string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no %q line", file, prefix)
}

// procFDs counts pid's open file descriptors: the entries of /proc/<pid>/fd.
func procFDs(pid int) (int, error) {
	des, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(des), err
}

// selfCPU returns the CPU time this process (the benchmark client) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
