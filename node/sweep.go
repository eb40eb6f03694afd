package node

import (
	"path/filepath"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// metadataDir is the directory of the cluster metadata log, in
// metadata.log.dir or the first log dir.
const metadataDir = "__cluster_metadata-0"

// sweep deletes (partition.Trash) the partition directories in the log dirs
// that im does not place on this node: those of deleted topics and of
// replicas moved away, which the node left because it stopped or crashed
// before it had unhosted them, or before the image that deleted them was
// applied at all (a node unhosts only what it hosted). A directory of a
// partition im does place here but which records another topic's id is
// left to the hosting, which deletes it before it opens the log
// (store.TopicIDMismatchError).
//
// A directory that holds no file of a log is not the node's, whatever its
// name, and is left alone (store.IsLogDir).
//
// It runs once per start, on the first image that registers this run of
// the node, before anything is hosted: that image holds every topic
// created before the node started (the registration comes after them in
// the metadata log), so no directory of a live topic is taken for a
// deleted one; the images replayed before it may be older than the
// directories on disk.
func (n *Node) sweep(im *image.Image) {
	swept, foreign := 0, []string(nil)
	for _, logDir := range n.logDirs.Dirs() {
		names, err := n.files.List(logDir)
		if err != nil {
			n.log.Error().Err(err).Str("dir", logDir).Msg("listing the log dir for deleted partitions")
			continue
		}
		for _, name := range names {
			topic, p, ok := partitionDirName(name)
			if !ok {
				continue
			}
			if t := im.Topic(topic); t != nil && int(p) < len(t.Partitions) && hosts(t.Partitions[p], n.cfg.NodeID) {
				continue
			}
			dir := filepath.Join(logDir, name)
			if fi, err := n.files.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			if isLog, err := store.IsLogDir(n.files, dir); err != nil || !isLog {
				// Not a log (a user's backup-1, say): not the node's to delete.
				foreign = append(foreign, dir)
				continue
			}
			// The id names the deleted directory; one unreadable is zero.
			id, _, _ := store.ReadTopicID(n.files, dir)
			if err := n.trash.Delete(dir, id); err != nil {
				n.log.Error().Err(err).Str("dir", dir).Msg("deleting the directory of a partition not placed on this node")
				continue
			}
			n.logDirs.Forget(partition.Key{Topic: topic, Partition: p})
			swept++
		}
	}
	if len(foreign) > 0 {
		n.log.Warn().Strs("dirs", foreign).Msg("left alone: directories named like partitions that hold no log")
	}
	if swept > 0 {
		n.log.Info().Int("directories", swept).Msg("deleting the directories of partitions no longer placed on this node")
	}
}

// partitionDirName parses a partition directory's name, <topic>-<index>;
// the metadata log's and deleted partitions' are not.
func partitionDirName(name string) (string, int32, bool) {
	if name == metadataDir {
		return "", 0, false
	}
	return partition.ParseDirName(name)
}
