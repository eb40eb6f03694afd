// Package vfs is the filesystem Skein's storage uses. Storage code takes an FS
// and never calls the os package for files, so that tests can run it on:
//
//   - Default, the operating system's filesystem;
//   - a crashable in-memory filesystem (NewCrashableMem) that, on CrashClone,
//     keeps only what was synced: file contents as of each file's last Sync,
//     and directory entries (creates, renames, removes) as of the last Sync of
//     their directory, optionally with a torn prefix of the unsynced tail;
//   - an error-injecting wrapper (NewErrorFS) that fails chosen operations.
//
// A Cache (NewCache) wraps any of them to bound the descriptors held open:
// its files open on demand and are closed least recently used first.
// Two calls reach past File to the operating system where a file has a
// descriptor: WritevAt (one pwritev for several buffers, else a WriteAt per
// buffer) and Preallocate (disk space reserved past a file's end, else
// nothing).
//
// The contract follows POSIX as Linux implements it: a file's data is durable
// only after File.Sync returns nil; a new, renamed or removed name is durable
// only after the directory that holds it is opened with OpenDir and synced.
// A failed Sync means the unsynced data may be lost for good (the kernel may
// already have dropped the dirty pages): callers must not retry and treat the
// data as persisted.
package vfs

import (
	"io"
	"io/fs"
)

// FileInfo describes a file; it is the standard library's fs.FileInfo.
type FileInfo = fs.FileInfo

// FileMode is the standard library's fs.FileMode.
type FileMode = fs.FileMode

// NoFd is what File.Fd returns for a file that has no operating-system
// descriptor (an in-memory file); sendfile cannot be used on it.
const NoFd = ^uintptr(0)

// File is an open file. Its methods behave as those of *os.File. A File is
// safe for concurrent ReadAt calls with one writer calling WriteAt at offsets
// beyond those being read, as *os.File is.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes the file's data durable.
	Sync() error
	// Truncate changes the size of the file, extending it with zeros.
	Truncate(size int64) error
	Stat() (FileInfo, error)
	// Fd returns the operating system's descriptor, or NoFd.
	Fd() uintptr
}

// FS is a filesystem. Names are slash-separated paths as filepath builds them
// on Linux.
type FS interface {
	// Create creates or truncates the named file, opened for reading and writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenReadWrite opens the named file for reading and writing, creating it
	// if it does not exist; an existing file is not truncated.
	OpenReadWrite(name string) (File, error)
	// OpenDir opens a directory so that Sync makes its entries durable.
	OpenDir(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything it contains.
	RemoveAll(name string) error
	// Rename atomically renames oldname to newname, replacing newname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm FileMode) error
	// List returns the names of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (FileInfo, error)
}
