//go:build linux

package cli

import (
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nodeTimerSlack is how late the timers of a node's threads may fire
// (prctl(2) PR_SET_TIMERSLACK).
//
// NB: the Go runtime's monitor thread (sysmon) sleeps 20 µs at a time while
// any goroutine runs, from the first system call after the process was
// idle, and a node serving a client goes from idle to busy hundreds of
// times a second. On a two-vCPU VM each of its wake-ups cost 17 µs: it took
// 19% of the node's CPU under 100-byte records. With 1 ms of slack the
// kernel coalesces its sleeps: 15% less broker CPU per GB there, the same
// records/s (tests/bench/README.md). The runtime starts
// that thread before any code of ours runs, and a thread takes its slack
// from the thread that creates it, so the node sets the slack and executes
// itself again: the slack survives execve(2).
const nodeTimerSlack = time.Millisecond

// kernelTimerSlack is Linux's default timer slack, init's, which every
// process inherits unless something changed it.
const kernelTimerSlack = 50 * time.Microsecond

// relaxTimers executes the process again with nodeTimerSlack if it has the
// kernel's default slack; a slack that whoever started the node chose
// (systemd's TimerSlackNSec=) is kept. It returns only when it did not
// execute.
func relaxTimers() {
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || time.Duration(slack) != kernelTimerSlack {
		return
	}
	// The slack is the calling thread's: set it and execute from the same.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(nodeTimerSlack), 0, 0, 0) != nil {
		return
	}
	syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	// Not executed (no /proc): run as started, this thread as the others.
	unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(kernelTimerSlack), 0, 0, 0)
}
