package console

import "syscall"

// childAttr makes the kernel kill a node when the test process dies
// without running its cleanups (go test's -timeout panics, or the test is
// itself killed), so that no node is left holding the fixed ports the next
// run needs.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
