//go:build !linux

package chaos

import "syscall"

// procAttr puts a node in a process group of its own, so that a Ctrl-C to
// the run reaches the run, which stops its nodes itself.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
