package tests

// `skein node`'s timer slack (cli/timers.go): the node runs every thread
// with 1 ms of slack, the Go runtime's monitor thread included, unless
// whoever started it chose a slack of its own.

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/internal/needroot"
)

// threadSlacks returns the timer slack, in ns, of every thread of the
// process pid. Reading another process's needs CAP_SYS_NICE (root, as CI
// runs).
func threadSlacks(t *testing.T, pid int) map[int]int {
	t.Helper()
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	slacks := map[int]int{}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", task.Name(), "timerslack_ns"))
		if os.IsNotExist(err) {
			continue // the thread exited since
		}
		if err != nil {
			t.Fatalf("reading thread %s's timer slack (needs CAP_SYS_NICE): %v", task.Name(), err)
		}
		ns, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		tid, _ := strconv.Atoi(task.Name())
		slacks[tid] = ns
	}
	return slacks
}

// TestNodeTimerSlack: a node started with the kernel's default slack runs
// all its threads with 1 ms, and one started with another slack keeps it.
func TestNodeTimerSlack(t *testing.T) {
	needroot.Require(t, "reading a child process's timer slack (CAP_SYS_NICE)")
	n := newChildNode(t)
	n.start()
	slacks := threadSlacks(t, n.cmd.Process.Pid)
	if len(slacks) < 2 {
		t.Fatalf("threads %v: want the main thread and the runtime's", slacks)
	}
	for tid, ns := range slacks {
		if ns != 1_000_000 {
			t.Fatalf("thread %d has a timer slack of %d ns, want 1 ms (all: %v)", tid, ns, slacks)
		}
	}
	n.terminate(30 * time.Second)

	// A child takes the slack of the thread that starts it.
	const chosen = 200_000
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, chosen, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // back to this thread's default
		n.start()
	}()
	for tid, ns := range threadSlacks(t, n.cmd.Process.Pid) {
		if ns != chosen {
			t.Fatalf("thread %d has a timer slack of %d ns, want the %d chosen by the node's starter", tid, ns, chosen)
		}
	}
}
