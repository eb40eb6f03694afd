package chaos

import "syscall"

// procAttr puts a node in a process group of its own, so that a Ctrl-C to
// the run reaches the run, which stops its nodes itself, and makes the
// kernel kill the node if the run dies without doing so: no node is left
// holding the addresses the next run needs.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
