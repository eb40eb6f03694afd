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
	"syscall"
	"time"
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
	addr string   // the Kafka listener, host:port
	log  *os.File // the child's output, kept for a failed run's post-mortem
	done chan struct{}
	err  error // the exit status, set before done closes
}

// startTimeout bounds how long a broker may take to announce its address.
const startTimeout = 30 * time.Second

// skeinTarget runs `skein node` from the binary at bin with the given
// durability, on loopback ports chosen by the kernel.
func skeinTarget(bin, durability string) target {
	return target{
		name: "skein-" + durability,
		start: func(dir, profile string) (*broker, error) {
			args := []string{"node",
				"--data-dir", filepath.Join(dir, "data"),
				"--listen", "127.0.0.1:0",
				"--admin-listen", "127.0.0.1:0",
				"--log-format", "json",
				"--durability", durability,
			}
			if profile != "" {
				args = append(args, "--cpuprofile", profile)
			}
			return startBroker(exec.Command(bin, args...), dir, skeinAddr)
		},
	}
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

func kfakeAddr(line string) (string, bool) {
	addr, ok := strings.CutPrefix(line, "listening on ")
	return addr, ok
}

// startBroker starts cmd with stdout and stderr copied to dir/broker.log and
// waits for the line from which addr parses the Kafka address.
func startBroker(cmd *exec.Cmd, dir string, addr func(string) (string, bool)) (*broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	b := &broker{cmd: cmd, log: logf, done: make(chan struct{})}
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
	found := make(chan string, 1)
	go func() {
		send := found
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if send != nil {
				if a, ok := addr(line); ok {
					send <- a
					send = nil
				}
			}
		}
		io.Copy(logf, pr) // a line over 1 MiB: keep draining
	}()
	select {
	case b.addr = <-found:
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
	return procCPU(b.cmd.Process.Pid)
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ). It is 100 on
// every Linux architecture Go supports; getconf confirms it where present.
var clockTick = func() time.Duration {
	hz := 100
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			hz = n
		}
	}
	return time.Second / time.Duration(hz)
}()

// procCPU reads utime+stime of pid from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// NB: the second field, the command name, is in parentheses and may
	// hold spaces; the fields after the last ')' start with the third,
	// state, so utime (14th) and stime (15th) are at 11 and 12.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// selfCPU returns the CPU time this process (the benchmark client) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
