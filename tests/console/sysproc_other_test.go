//go:build !linux

package console

import "syscall"

// childAttr: only Linux has a parent-death signal; elsewhere a node the
// test process leaves behind must be killed by hand.
func childAttr() *syscall.SysProcAttr { return nil }
