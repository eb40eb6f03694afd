//go:build !linux

package vfs

import "golang.org/x/sys/unix"

// fallocateKeepSize reserves nothing outside Linux (the release's darwin
// builds, for development): the filesystem "cannot reserve space", which
// callers already take as a filesystem without fallocate(2).
func fallocateKeepSize(fd int, off, n int64) error { return unix.EOPNOTSUPP }
