package store

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skeinlog/skein/internal/vfs"
)

// PartitionMetadataFile records which topic a partition directory belongs
// to, in Kafka's format (KIP-516): "version: 0\ntopic_id: <id>\n", the id
// being the topic's UUID in unpadded URL-safe base64. It is written
// durably before the log's first segment (make), so a directory with a
// segment always has it (unless an older Skein made the directory).
const PartitionMetadataFile = "partition.metadata"

// TopicIDMismatchError is Open's refusal of a directory that records
// another topic's id: a partition of a deleted topic of the same name.
type TopicIDMismatchError struct {
	Dir         string
	Found, Want [16]byte
}

func (e *TopicIDMismatchError) Error() string {
	return fmt.Sprintf("store: %s holds topic %s, not %s", e.Dir, encodeTopicID(e.Found), encodeTopicID(e.Want))
}

func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func encodePartitionMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + encodeTopicID(id) + "\n")
}

func parsePartitionMetadata(data []byte) ([16]byte, error) {
	var id [16]byte
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "version: 0" || !strings.HasPrefix(lines[1], "topic_id: ") {
		return id, fmt.Errorf("store: %s: not version 0 partition metadata: %q", PartitionMetadataFile, data)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(lines[1], "topic_id: "))
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("store: %s: bad topic_id: %q", PartitionMetadataFile, lines[1])
	}
	copy(id[:], b)
	return id, nil
}

// ReadTopicID returns the topic id recorded in partition directory dir;
// ok is false when it records none.
func ReadTopicID(fsys vfs.FS, dir string) (id [16]byte, ok bool, err error) {
	data, err := readFile(fsys, filepath.Join(dir, PartitionMetadataFile))
	if err != nil || data == nil {
		return id, false, err
	}
	id, err = parsePartitionMetadata(data)
	return id, err == nil, err
}

// IsLogDir reports whether dir holds a file that only a log writes (its
// partition.metadata, a checkpoint or a segment), so that a directory the
// node did not make, which merely has a partition's name, is never taken
// for one.
func IsLogDir(fsys vfs.FS, dir string) (bool, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(names, func(n string) bool {
		_, segment := parseSegmentName(n)
		return segment || n == PartitionMetadataFile || n == checkpointFile || n == epochFile
	}), nil
}

// claimDir checks that the log's directory is the partition of topic id,
// and records id in it if it records none: a new directory, or one an
// older Skein made (see Config.TopicID).
func (l *Log) claimDir(names []string, id [16]byte) error {
	records := slices.ContainsFunc(names, func(n string) bool { _, ok := parseSegmentName(n); return ok })
	if slices.Contains(names, PartitionMetadataFile) {
		found, _, err := ReadTopicID(l.fs, l.dir)
		switch {
		case err == nil && found != id:
			return &TopicIDMismatchError{Dir: l.dir, Found: found, Want: id}
		case err == nil:
			return nil
		case records:
			return err
		}
		// A new directory's, torn by a crash: written again.
	}
	data := encodePartitionMetadata(id)
	if records {
		// An older Skein's directory, adopted: atomically, as it holds
		// records.
		return writeFileAtomic(l.fs, l.dir, PartitionMetadataFile, data)
	}
	// A new directory: written in place and synced, without the rename
	// of an atomic write (a rename excludes every other file operation
	// of the node's descriptor cache for its duration, and 100,000
	// partitions created at once queued behind one another's); the
	// directory's entries are synced by load before the log takes a
	// record, and a torn file in a directory without segments is written
	// again.
	return writeSynced(l.fs, filepath.Join(l.dir, PartitionMetadataFile), data)
}
