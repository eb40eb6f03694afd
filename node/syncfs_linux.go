package node

import "golang.org/x/sys/unix"

// syncfs is syncfs(2): every dirty page of the filesystem fd is on.
func syncfs(fd int) error { return unix.Syncfs(fd) }
