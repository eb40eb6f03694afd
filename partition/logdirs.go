package partition

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/internal/vfs"
)

// LogDirs places the partitions of a node on its log dirs (Kafka's
// log.dirs, KIP-858's JBOD): a partition found on disk stays in the log
// dir that holds it; a new one goes to the log dir with the most free
// space, ties to the one with the fewest partitions.
//
// NB: Kafka 4 places a new partition by partition count alone
// (LogManager.nextLogDirs); Skein places by free space, so that a
// smaller or fuller disk takes fewer partitions. Free space is the
// filesystem's available bytes (statfs f_bavail), read at each decision;
// log dirs on one filesystem share its figure, so they tie and the count
// decides between them.
//
// A log dir is offline while one of its partitions is in the failed state
// for a cause of the disk (Failing, Working): DescribeLogDirs answers it
// KAFKA_STORAGE_ERROR and /metrics has skein_log_dir_offline.
//
// Concurrency: safe for concurrent use. The node's metadata actor places
// and forgets; partition actors report failures; transport and /metrics
// read.
type LogDirs struct {
	dirs []string // absolute, in log.dirs' order

	// Free returns the bytes available to the node on the filesystem of
	// dir, and an identity of that filesystem. Default: statfs(2).
	// Tests replace it before the first Place.
	Free func(dir string) (free int64, fsid [2]int32, err error)

	// Logger takes the lines saying a log dir went offline and came
	// back; zerolog's zero Logger drops them.
	Logger zerolog.Logger

	mu     sync.Mutex
	placed map[Key]string // partition -> its log dir
	// failing are, by log dir, its partitions in the failed state for a
	// cause of the disk (CauseIO, CauseDiskFull): while it has one, the
	// log dir is offline.
	failing map[string]map[Key]bool
}

// OpenLogDirs finds the partitions already in dirs (the directories named
// <topic>-<index>, other than skip's and deleted ones). A partition found
// in two log dirs is an error naming both: which copy is the log is not
// the node's to guess.
func OpenLogDirs(fsys vfs.FS, dirs []string, skip ...string) (*LogDirs, error) {
	d := &LogDirs{Free: statfsFree, placed: map[Key]string{}, failing: map[string]map[Key]bool{}}
	for _, dir := range dirs {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		d.dirs = append(d.dirs, dir)
		names, err := fsys.List(dir)
		if err != nil {
			return nil, fmt.Errorf("partition: listing log dir %s: %w", dir, err)
		}
		for _, name := range names {
			topic, p, ok := ParseDirName(name)
			if !ok || slices.Contains(skip, name) {
				continue
			}
			if fi, err := fsys.Stat(filepath.Join(dir, name)); err != nil || !fi.IsDir() {
				continue
			}
			k := Key{Topic: topic, Partition: p}
			if other, dup := d.placed[k]; dup {
				return nil, fmt.Errorf("partition: %s is in two log dirs, %s and %s: remove the copy that is not the log", name, filepath.Join(other, name), filepath.Join(dir, name))
			}
			d.placed[k] = dir
		}
	}
	return d, nil
}

// ParseDirName parses a partition directory's name, <topic>-<index>;
// deleted partitions' are not.
func ParseDirName(name string) (string, int32, bool) {
	if strings.HasSuffix(name, DeletedDirSuffix) {
		return "", 0, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// Dirs returns the log dirs, absolute, in log.dirs' order. The caller must
// not modify the slice.
func (d *LogDirs) Dirs() []string { return d.dirs }

// Of returns the log dir holding partition k, if it is placed.
func (d *LogDirs) Of(k Key) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir, ok := d.placed[k]
	return dir, ok
}

// Place returns the directory of partition k (Dir of its log dir),
// choosing a log dir for it if it has none.
func (d *LogDirs) Place(k Key) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir, ok := d.placed[k]
	if !ok {
		dir = d.choose()
		d.placed[k] = dir
	}
	return Dir(dir, k.Topic, k.Partition)
}

// choose picks the log dir for a new partition. A log dir whose free space
// cannot be read is chosen last: it is likely failing. Called with mu.
func (d *LogDirs) choose() string {
	if len(d.dirs) == 1 {
		return d.dirs[0]
	}
	count := map[string]int{}
	for _, dir := range d.placed {
		count[dir]++
	}
	type cand struct {
		dir   string
		free  int64
		count int
	}
	byFS := map[[2]int32]int64{}
	cands := make([]cand, 0, len(d.dirs))
	for _, dir := range d.dirs {
		free, fsid, err := d.Free(dir)
		if err != nil {
			free = -1
		} else if f, seen := byFS[fsid]; seen {
			// One filesystem, one figure: the bytes written between two
			// statfs calls must not decide.
			free = f
		} else {
			byFS[fsid] = free
		}
		cands = append(cands, cand{dir, free, count[dir]})
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if c.free > best.free || c.free == best.free && c.count < best.count {
			best = c
		}
	}
	return best.dir
}

// Forget removes partition k's placement: its data was deleted, and a
// partition of that name made later is placed anew.
func (d *LogDirs) Forget(k Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dir, ok := d.placed[k]; ok {
		d.working(dir, k, true)
	}
	delete(d.placed, k)
}

// Failing notes that partition k went into the failed state for cause.
// A cause of the disk (CauseIO, CauseDiskFull) takes its log dir offline
// until none of its partitions is failed; the first logs it. Running out
// of descriptors is the node's, not a log dir's. Safe on a nil LogDirs.
//
// NB: Kafka takes every partition of a failed log dir offline at once
// (LogDirFailureChannel) and the controller moves their leaders; here
// each partition fails as it meets the disk, retries, and the log dir is
// offline while any of them is failed. Its other partitions keep serving
// until they fail in their turn.
func (d *LogDirs) Failing(k Key, cause string, err error) {
	if d == nil || cause == CauseDescriptors {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dir, ok := d.placed[k]
	if !ok {
		return
	}
	set := d.failing[dir]
	if set == nil {
		set = map[Key]bool{}
		d.failing[dir] = set
	}
	if len(set) == 0 {
		d.Logger.Error().Err(err).Str("dir", dir).Str("topic", k.Topic).Int32("partition", k.Partition).Str("cause", cause).
			Msg("log dir offline: its failed partitions answer KAFKA_STORAGE_ERROR; the node serves its other log dirs")
	}
	set[k] = true
}

// Working notes that partition k's storage works again, or, quiet, that
// the partition stopped. The last of a log dir's failed partitions to
// recover brings it back online, logged unless quiet. Safe on a nil
// LogDirs.
func (d *LogDirs) Working(k Key, quiet bool) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if dir, ok := d.placed[k]; ok {
		d.working(dir, k, quiet)
	}
}

// working is Working with mu held.
func (d *LogDirs) working(dir string, k Key, quiet bool) {
	set := d.failing[dir]
	if !set[k] {
		return
	}
	delete(set, k)
	if len(set) == 0 && !quiet {
		d.Logger.Warn().Str("dir", dir).Msg("log dir back online: its partitions recovered")
	}
}

// Offline reports whether log dir dir is offline: a partition in it is
// failed for a cause of the disk.
func (d *LogDirs) Offline(dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.failing[dir]) > 0
}

// Placed returns the partitions placed in log dir dir.
func (d *LogDirs) Placed(dir string) []Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ks []Key
	for k, in := range d.placed {
		if in == dir {
			ks = append(ks, k)
		}
	}
	return ks
}

// statfsFree is Free by statfs(2).
func statfsFree(dir string) (int64, [2]int32, error) {
	_, free, fsid, err := Statfs(dir)
	return free, fsid, err
}

// Statfs returns the total and available bytes of the filesystem holding
// dir (f_blocks and f_bavail, as Kafka's TotalBytes and UsableBytes), and
// its identity.
func Statfs(dir string) (total, usable int64, fsid [2]int32, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fsid, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), st.Fsid.Val, nil
}
