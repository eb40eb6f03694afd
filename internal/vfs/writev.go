package vfs

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxIovecs is how many buffers one pwritev(2) takes (Linux's IOV_MAX).
const maxIovecs = 1024

// WritevAt writes bufs one after the other into f from offset off, as that
// many WriteAt calls at consecutive offsets would, and returns the bytes
// written. Like WriteAt it returns an error when it writes less than all.
//
// A file that lends its descriptor through syscall.Conn (the operating
// system's files do) gets one pwritev(2) per 1,024 buffers: on Linux a
// write into the page cache costs per call as well as per byte, so the
// many small record sets that queue up behind a write go out as one. The
// descriptor is borrowed for the call only (RawConn.Write), never kept.
// Other files (in memory, error-injecting) get one WriteAt per buffer, so
// an ErrorFS injects into each of them as it would into separate writes.
func WritevAt(f File, bufs [][]byte, off int64) (int, error) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return writeEachAt(f, bufs, off)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var total int
	var werr error
	err = raw.Write(func(fd uintptr) bool {
		total, werr = pwritev(int(fd), bufs, off)
		return true
	})
	if werr != nil {
		return total, os.NewSyscallError("pwritev", werr)
	}
	return total, err
}

// pwritev writes every byte of bufs at off, in as few calls as the kernel
// allows: it goes on after a short write and after EINTR, as *os.File's
// WriteAt does.
func pwritev(fd int, bufs [][]byte, off int64) (int, error) {
	total := 0
	for {
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
		if len(bufs) == 0 {
			return total, nil
		}
		batch := bufs[:min(len(bufs), maxIovecs)]
		n, err := unix.Pwritev(fd, batch, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, io.ErrShortWrite
		}
		total += n
		off += int64(n)
		bufs = advance(bufs, n)
	}
}

// advance returns what is left of bufs once their first n bytes are
// written. NB: it never writes into bufs, which is the caller's.
func advance(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n < len(bufs[0]) {
			return append([][]byte{bufs[0][n:]}, bufs[1:]...)
		}
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	return bufs
}

func writeEachAt(f File, bufs [][]byte, off int64) (int, error) {
	total := 0
	for _, b := range bufs {
		n, err := f.WriteAt(b, off)
		total += n
		off += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
