package vfs

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// preallocator is a File that reserves space itself: a Cache's handle
// (which holds its descriptor for the call) and an ErrorFS's file (which
// asks its Injector first).
type preallocator interface {
	Preallocate(off, n int64) error
}

// Preallocate reserves disk space for the n bytes of f from off without
// changing its size: fallocate(2) with FALLOC_FL_KEEP_SIZE. Writes into
// the reserved range then find their blocks allocated, which spares ext4
// the delayed-allocation bookkeeping it does for every page a write
// dirties past them.
//
// Space reserved beyond the file's size stays reserved, across closes and
// crashes, until Truncate gives it back (a Truncate to the file's own size
// does). A file without a descriptor (in memory) has no space to reserve:
// Preallocate does nothing and returns nil. A filesystem that cannot
// reserve space returns an error wrapping EOPNOTSUPP.
func Preallocate(f File, off, n int64) error {
	if p, ok := f.(preallocator); ok {
		return p.Preallocate(off, n)
	}
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = raw.Control(func(fd uintptr) {
		for {
			ferr = fallocateKeepSize(int(fd), off, n)
			if ferr != unix.EINTR {
				return
			}
		}
	})
	if ferr != nil {
		return os.NewSyscallError("fallocate", ferr)
	}
	return err
}
