//go:build !linux

package node

import "golang.org/x/sys/unix"

// syncfs outside Linux (the release's darwin builds, for development) is
// sync(2), of every filesystem: it has no syncfs(2), and macOS's sync may
// return before the data reaches the disk, so a node there does not have
// durability fsync's guarantee.
func syncfs(int) error { return unix.Sync() }
