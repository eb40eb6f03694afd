package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/internal/vfs"
)

// Checkpoint files are small text files, replaced atomically: written to a
// temporary name, synced, renamed over the old one, and the directory synced.
// A crash leaves either the old or the new file, never a mix.

const (
	checkpointFile  = "checkpoint"
	epochFile       = "leader-epoch-checkpoint"
	cleanMarkerFile = ".clean-shutdown"
	checkpointV0    = 0
)

// WriteFile replaces name in the log's directory with data durably (making
// a new log's directory first): written to a temporary name, synced,
// renamed over the old one, and the directory synced, so a crash leaves the
// old file or the new one. For state files beside a log (the controller's
// raft hard state and snapshot). A failed write of the file does not fail
// the log.
func (l *Log) WriteFile(name string, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.make(); err != nil {
		return err
	}
	return writeFileAtomic(l.fs, l.dir, name, data)
}

// writeFileAtomic replaces name in dir with data.
func writeFileAtomic(fsys vfs.FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	if err := writeSynced(fsys, tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(fsys, dir)
}

// writeSynced creates (or truncates) path with data, synced.
func writeSynced(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readFile returns the whole of a small file, or nil and no error if it does
// not exist.
func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// checkpoint is the state the log keeps beside its segments.
type checkpoint struct {
	RecoveryPoint  int64 // everything below is synced and indexed; recovery scans from here
	LogStartOffset int64
	HighWatermark  int64
}

func (c checkpoint) encode() []byte {
	return fmt.Appendf(nil, "%d\nrecovery-point %d\nlog-start-offset %d\nhigh-watermark %d\n",
		checkpointV0, c.RecoveryPoint, c.LogStartOffset, c.HighWatermark)
}

func parseCheckpoint(data []byte) (checkpoint, error) {
	var c checkpoint
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) == 0 || lines[0] != strconv.Itoa(checkpointV0) {
		return c, fmt.Errorf("store: checkpoint: unknown version line %q", lines[0])
	}
	seen := 0
	for _, line := range lines[1:] {
		key, val, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil || n < 0 {
			return c, fmt.Errorf("store: checkpoint: bad line %q", line)
		}
		switch key {
		case "recovery-point":
			c.RecoveryPoint = n
		case "log-start-offset":
			c.LogStartOffset = n
		case "high-watermark":
			c.HighWatermark = n
		default:
			return c, fmt.Errorf("store: checkpoint: unknown key %q", key)
		}
		seen++
	}
	if seen != 3 {
		return c, fmt.Errorf("store: checkpoint: %d of 3 entries", seen)
	}
	return c, nil
}

// writeCheckpoint persists the recovery point, log start offset and high
// watermark. The recovery point is the durable offset, but never inside the
// active segment unless it is sealed: the active segment's indexes are in
// memory, so after a crash recovery must rescan it.
func (l *Log) writeCheckpoint() error {
	return l.writeCheckpointAt(l.recoveryPoint())
}

// recoveryPoint is where recovery would scan from after a crash now: the
// durable offset, but not inside the active segment, whose indexes are in
// memory; the log end while the log is clean (its active segment sealed).
func (l *Log) recoveryPoint() int64 {
	if l.clean {
		return l.leo
	}
	return min(l.durable.Load(), l.active().base)
}

func (l *Log) writeCheckpointAt(recoveryPoint int64) error {
	if err := l.make(); err != nil {
		return err
	}
	c := checkpoint{RecoveryPoint: recoveryPoint, LogStartOffset: l.lso, HighWatermark: l.hw}
	if err := writeFileAtomic(l.fs, l.dir, checkpointFile, c.encode()); err != nil {
		return l.fail("write checkpoint", err)
	}
	l.checkpointed = c
	return nil
}

// Checkpoint persists the high watermark, log start offset and recovery
// point if any changed since the last checkpoint; the partition actor calls
// it periodically, so an idle partition costs no write.
func (l *Log) Checkpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	return l.checkpointIfChanged()
}

// WriteCheckpoint writes the checkpoint whether or not it changed: a write,
// a sync and a rename, which a partition that failed uses to learn that its
// disk takes them again before it serves.
func (l *Log) WriteCheckpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	return l.writeCheckpoint()
}

// epochEntry says that leader epoch Epoch wrote its first record at
// StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader epoch history of the log (KIP-101), in Kafka's
// leader-epoch-checkpoint format: a version line, a count line, then one
// "epoch startOffset" line per entry, both increasing.
type epochCache struct {
	entries []epochEntry
}

func (c *epochCache) latestEpoch() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

func (c *epochCache) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointV0, len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func parseEpochCache(data []byte) (epochCache, error) {
	var c epochCache
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 2 || lines[0] != strconv.Itoa(checkpointV0) {
		return c, fmt.Errorf("store: %s: bad header", epochFile)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return c, fmt.Errorf("store: %s: count %q does not match %d entries", epochFile, lines[1], len(lines)-2)
	}
	for _, line := range lines[2:] {
		var e epochEntry
		if _, err := fmt.Sscanf(line, "%d %d", &e.Epoch, &e.StartOffset); err != nil {
			return c, fmt.Errorf("store: %s: bad line %q", epochFile, line)
		}
		if k := len(c.entries); k > 0 && (e.Epoch <= c.entries[k-1].Epoch || e.StartOffset < c.entries[k-1].StartOffset) {
			return c, fmt.Errorf("store: %s: entries not increasing at %q", epochFile, line)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

// truncateFromEnd drops the entries that start at or after offset.
func (c *epochCache) truncateFromEnd(offset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= offset })
	changed := i < len(c.entries)
	// A copy, never a reslice: published views share the old slice, and an
	// append into its spare capacity would change what they see.
	c.entries = slices.Clone(c.entries[:i])
	return changed
}

// truncateFromStart drops the entries wholly below offset; the epoch in
// force at offset then starts there.
func (c *epochCache) truncateFromStart(offset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return false
	}
	keep := c.entries[i-1]
	changed := i > 1 || keep.StartOffset != offset
	keep.StartOffset = offset
	c.entries = append([]epochEntry{keep}, c.entries[i:]...)
	return changed
}

// assignEpoch records that epoch starts at offset and persists the history.
func (l *Log) assignEpoch(epoch int32, offset int64) error {
	l.epochs.truncateFromEnd(offset)
	l.epochs.entries = append(l.epochs.entries, epochEntry{Epoch: epoch, StartOffset: offset})
	return l.writeEpochs()
}

func (l *Log) writeEpochs() error {
	if err := l.make(); err != nil {
		return err
	}
	if err := writeFileAtomic(l.fs, l.dir, epochFile, l.epochs.encode()); err != nil {
		return l.fail("write leader epochs", err)
	}
	return nil
}

// LatestEpoch returns the newest leader epoch in the log, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.latestEpoch()
}

// LatestEpoch returns the newest leader epoch in the view's log, or -1.
func (v *View) LatestEpoch() int32 {
	if len(v.epochs) == 0 {
		return -1
	}
	return v.epochs[len(v.epochs)-1].Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch; see View.EndOffsetForEpoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.View().EndOffsetForEpoch(epoch)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279): for the
// largest epoch at most epoch, that epoch and the offset after its last
// record (the start offset of the next epoch, or the log end offset for the
// latest). For an epoch older than every epoch the log knows, it is epoch
// itself, ending where the log's first epoch starts, as Kafka answers: a
// follower whose records are all of an epoch this leader never had must
// truncate them (a leader that lost its leadership before its records were
// replicated, and a new leader that wrote others at those offsets). Both
// are -1 when the log knows no epoch at all.
func (v *View) EndOffsetForEpoch(epoch int32) (int32, int64) {
	es := v.epochs
	i := sort.Search(len(es), func(i int) bool { return es[i].Epoch > epoch })
	if len(es) == 0 || epoch < 0 {
		return -1, -1
	}
	if i == 0 {
		return epoch, es[0].StartOffset
	}
	if i == len(es) {
		return es[i-1].Epoch, v.LogEndOffset
	}
	return es[i-1].Epoch, es[i].StartOffset
}
