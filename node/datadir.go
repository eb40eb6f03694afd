package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/configs"
)

// lockFileName is the file in data.dir that a running node holds an
// exclusive lock on, as Kafka holds `.lock` in each of its log dirs: two
// nodes on one directory would each lead its partitions and overwrite each
// other's segments.
const lockFileName = ".lock"

// dirLock is a held data.dir lock, one file per log dir. The kernel
// releases it when the process ends, however it ends, so a crash leaves no
// stale lock.
type dirLock struct{ fs []*os.File }

// lockedDirs returns the directories a node locks: its log dirs, and
// metadata.log.dir when it is none of them.
func lockedDirs(cfg configs.Node) []string {
	dirs := cfg.LogDirs()
	meta, err := filepath.Abs(cfg.MetadataDir())
	if err != nil {
		return dirs
	}
	for _, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil && abs == meta {
			return dirs
		}
	}
	return append(dirs, meta)
}

// lockLogDirs creates each log dir if missing and takes its lock, all or
// none.
func lockLogDirs(dirs []string) (*dirLock, error) {
	all := &dirLock{}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			all.release()
			return nil, fmt.Errorf("node: creating data.dir %s: %w", dir, err)
		}
		l, err := lockDataDir(dir)
		if err != nil {
			all.release()
			return nil, err
		}
		all.fs = append(all.fs, l.fs...)
	}
	return all, nil
}

// lockDataDir takes data.dir's lock, or says which process holds it. It
// runs before the node reads or writes anything else in the directory.
// NB: flock(2), not fcntl locks: an fcntl lock belongs to the process, so
// a second node started in the same process (node/nodetest) would be
// granted it; a flock belongs to the open file, and conflicts there too.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: data.dir %s: opening its lock: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("node: data.dir %s is in use by another skein node (%s holds %s): stop it, or give this node its own data.dir", dir, holder(path), path)
		}
		return nil, fmt.Errorf("node: data.dir %s: locking %s: %w", dir, path, err)
	}
	// The holder's pid is for the message above; the lock itself is what
	// excludes, so a failure to write it is not fatal.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{fs: []*os.File{f}}, nil
}

// holder names the process that wrote its pid into the lock file.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if pid, perr := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && perr == nil {
		return "process " + strconv.Itoa(pid)
	}
	return "another process"
}

// release gives the lock up; nil releases nothing.
func (l *dirLock) release() {
	if l != nil {
		for _, f := range l.fs {
			f.Close()
		}
	}
}
