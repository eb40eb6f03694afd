package vfs

import "golang.org/x/sys/unix"

// fallocateKeepSize is fallocate(2) with FALLOC_FL_KEEP_SIZE.
func fallocateKeepSize(fd int, off, n int64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, n)
}
